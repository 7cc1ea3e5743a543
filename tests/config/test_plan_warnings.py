"""`--dry-run` warns of what would make a run pointless or fail: missing data (naming the
command that makes it), a warm-up longer than the run, validation past the last step."""

from __future__ import annotations

from tests.cli_runner import run_cli
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.config.plan import run_warnings


def test_the_quickstart_dry_run_in_a_fresh_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "train", "quickstart", "--dry-run", "trainer.steps=3")
    assert result.code == 0
    warnings = [line for line in result.lines if line.startswith("warning: ")]
    assert warnings[1:] == [
        (
            "warning: data.train runs/quickstart/data/train.jsonl does not exist; run `videorl "
            "synth --out runs/quickstart/data --families temporal_grounding --tg-events appear "
            "--n 256 --seed 0 --val 32 --tg-grid 1` first (it writes runs/quickstart/data; "
            "`videorl quickstart` runs every step)"
        ),
        (
            "warning: data.val runs/quickstart/data/val.jsonl does not exist; run `videorl synth "
            "--out runs/quickstart/data --families temporal_grounding --tg-events appear --n 256 "
            "--seed 0 --val 32 --tg-grid 1` first (it writes runs/quickstart/data; `videorl "
            "quickstart` runs every step)"
        ),
        (
            "warning: optim.warmup_steps=5 >= trainer.steps=3: the warm-up never ends, so the run "
            "never reaches optim.lr; lower optim.warmup_steps"
        ),
        (
            "warning: trainer.val_every=50 > trainer.steps=3: no validation runs; set "
            "trainer.val_every <= 3 (0: none)"
        ),
    ]
    assert warnings[0].startswith("warning: model path 'runs/quickstart/sft/final'")


def test_a_sound_run_has_no_warnings(tmp_path):
    (tmp_path / "train.jsonl").write_text("")
    config = load_config(
        resolve_config_path("quickstart"),
        [f"data.train={tmp_path / 'train.jsonl'}", "data.val=null", "trainer.val_every=0"],
    )
    assert run_warnings(config) == []
    hub = load_config(
        resolve_config_path("quickstart"), ["data.train=org/dataset", "data.val=null"]
    )
    assert run_warnings(hub) == []  # a Hub dataset id is not checked on disk
