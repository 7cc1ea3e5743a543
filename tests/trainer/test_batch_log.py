"""A training run with stdout redirected to a file (nohup, sbatch) logs one line per step;
the transformers FutureWarnings about the video pixel cap and checkpointing are gone."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from videorl.trainer.progress import StepProgress, step_line

from .conftest import SMALL

LINE = re.compile(
    r"^step (\d+)/(\d+)  reward -?\d+\.\d{3}  loss -?\d+\.\d{4}  tok/s \d+  "
    r"s/step \d+\.\d{2}  ETA \S+$"
)


@pytest.mark.slow
def test_redirected_run_logs_one_line_per_step(tiny_model_dir, tg_data, tmp_path):
    log, errors = tmp_path / "train.log", tmp_path / "train.err"
    command = [
        sys.executable,
        "-m",
        "videorl",
        "train",
        "quickstart",
        f"model.path={tiny_model_dir('qwen2_5_vl')}",
        f"data.train={tg_data / 'train.jsonl'}",
        "data.val=null",
        f"trainer.output_dir={tmp_path / 'run'}",
        *SMALL,
        "trainer.steps=2",
        "model.gradient_checkpointing=true",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "always"}
    with log.open("w") as out, errors.open("w") as err:
        assert (
            subprocess.run(
                command, check=False, stdout=out, stderr=err, env=env, timeout=600
            ).returncode
            == 0
        )
    steps = [m.group(1, 2) for m in map(LINE.match, log.read_text().splitlines()) if m]
    assert steps == [("1", "2"), ("2", "2")], log.read_text()
    assert "\x1b[" not in log.read_text()  # no terminal escapes in a file
    stderr = errors.read_text()
    assert "cap_pixels_per_frame" not in stderr and "gradient_checkpointing" not in stderr, stderr


def test_log_every_and_the_last_step():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False)
    with StepProgress(console, total=5, log_every=2) as progress:
        for step in range(1, 6):
            progress.update(
                step, {"reward/mean": 0.5, "actor/loss": 0.01, "perf/tokens_per_s": 9.0}
            )
    lines = buffer.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == ["2/5", "4/5", "5/5"]
    assert all(LINE.match(line) for line in lines)


def test_a_terminal_keeps_the_bar():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    with StepProgress(console, total=3) as progress:
        for step in range(1, 4):
            progress.update(step, {"reward/mean": 0.5, "actor/loss": 0.01})
    text = buffer.getvalue()
    assert "step 3/3" in text and "reward 0.500" in text and "\x1b[" in text
    assert "s/step" not in text  # the plain log line is for files only


def test_step_line_fields():
    metrics = {"reward/mean": 0.262, "actor/loss": 0.0131, "perf/tokens_per_s": 812.4}
    line = step_line(12, 200, {**metrics, "perf/step_s": 0.74}, mean_step_s=0.75)
    assert line == "step 12/200  reward 0.262  loss 0.0131  tok/s 812  s/step 0.74  ETA 2m21s"
    assert step_line(1, 2, {}, mean_step_s=3.0).endswith("s/step 3.00  ETA 3s")
    sft_step = step_line(5, 9, {"actor/loss": 0.5}, mean_step_s=1.0)  # no reward this step
    assert sft_step.startswith("step 5/9  loss 0.5000  tok/s") and "reward" not in sft_step
