"""`videorl score` scores a dump of responses with the training reward (the example of
docs/methods.md#temporal-iou)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_score_command_writes_components(tmp_path):
    record = {
        "id": "a",
        "family": "tg",
        "problem": "x",
        "answer": {"windows": [[2, 6]]},
        "video": "v.mp4",
        "duration": 10,
    }
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "p.jsonl").write_text(
        json.dumps({"id": "a", "response": "<answer>3 to 7</answer>"}) + "\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "videorl",
            "score",
            "--records",
            "r.jsonl",
            "--responses",
            "p.jsonl",
            "--out",
            "o.jsonl",
            "reward.tg_shaping=iou_v2",
        ],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    row = json.loads((tmp_path / "o.jsonl").read_text())
    assert row["components"]["iou"] == 0.6
    assert abs(row["overall"] - 0.486) < 1e-9
