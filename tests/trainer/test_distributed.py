"""Data parallelism on 2 CPU processes (gloo): equal to one process, sharded checkpoints
merge and resume at another world size, and a rank with only bad samples does not hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from videorl.models.loading import load_model

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`

WORKER = Path(__file__).with_name("dist_update_worker.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }


@pytest.mark.parametrize("packing", ["false", "true"])
def test_two_ranks_equal_one_process(tiny_model_dir, tmp_path, packing):
    """Padded on 1 process vs 2 FSDP ranks, padded or padding-free packed."""
    model = tiny_model_dir("qwen2_5_vl")
    single, double = tmp_path / "one.pt", tmp_path / "two.pt"
    subprocess.run(
        [sys.executable, str(WORKER), model, str(single), "4096"],
        check=True,
        env=_env(),
        timeout=300,
    )
    # a small token budget gives the two ranks different numbers of micro-batches
    subprocess.run(
        [*TORCHRUN, str(WORKER), model, str(double), "160", packing],
        check=True,
        env=_env(),
        timeout=300,
    )
    one, two = torch.load(single), torch.load(double)
    assert abs(one["loss"] - two["loss"]) < 1e-5
    for key, value in one["weights"].items():
        torch.testing.assert_close(two["weights"][key], value, atol=1e-5, rtol=0, msg=key)
    before = load_model(model).model.state_dict()
    assert any(not torch.equal(before[k], one["weights"][k]) for k in before)


def _train(overrides: list[str], *, ranks: int, extra: Sequence[str] = ()) -> None:
    launcher = TORCHRUN if ranks == 2 else [sys.executable]
    command = [*launcher, "-m", "videorl", "train", "quickstart", *overrides, *extra]
    subprocess.run(command, check=True, env=_env(), timeout=600, capture_output=True)


def test_sharded_checkpoint_merges_and_resumes_on_one_rank(make_config, tmp_path):
    out = tmp_path / "run"
    _, overrides = make_config(
        "grpo", "trainer.steps=2", "trainer.save_every=1", "data.prompts_per_step=2", output=out
    )
    _train(overrides, ranks=2)
    checkpoint = out / "step-000002"
    assert (checkpoint / "dcp").is_dir() and (checkpoint / "model_meta" / "config.json").is_file()
    merged = tmp_path / "merged"
    subprocess.run(
        [sys.executable, "-m", "videorl", "merge", str(checkpoint), str(merged)],
        check=True,
        env=_env(),
        timeout=300,
        capture_output=True,
    )
    merged_weights = load_model(merged).model.state_dict()
    final_weights = load_model(out / "final").model.state_dict()
    for key, value in final_weights.items():
        assert torch.equal(merged_weights[key], value), key
    _, resume_overrides = make_config(
        "grpo", "trainer.steps=3", "trainer.save_every=1", "data.prompts_per_step=2", output=out
    )
    _train(resume_overrides, ranks=1, extra=["--resume", "auto"])
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]


def test_rank_with_only_bad_samples_does_not_deadlock(make_config, tg_data, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(tg_data, data)
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    for row in rows[1:]:  # all videos but one are corrupt
        path = Path(row["video"]["path"])
        (path if path.is_absolute() else data / path).write_bytes(b"\x00not a video" * 64)
    out = tmp_path / "run"
    _, overrides = make_config(
        "grpo",
        "trainer.steps=3",
        f"data.train={data / 'train.jsonl'}",
        "data.prompts_per_step=2",
        output=out,
    )
    _train(overrides, ranks=2)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 3
    assert sum(m["data/skipped_media"] for m in metrics) > 0
