"""The quickstart as a newcomer meets it: each missing piece names the command that makes
it, and `videorl quickstart` runs the README's steps (what `make quickstart` calls)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cli_runner import run_cli
from videorl.api import load_config, resolve_config_path
from videorl.data.synth import synthesize, write_dataset
from videorl.quickstart import STEPS, TOOLS_STEPS, made_by, next_command, seeded

ROOT = Path(__file__).resolve().parents[1]
SYNTH = (
    "videorl synth --out runs/quickstart/data --families temporal_grounding --tg-events "
    "appear --n 256 --seed 0 --val 32 --tg-grid 1"
)
TAIL = "; `videorl quickstart` runs every step)"


def test_train_quickstart_in_a_fresh_folder_names_synth(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "train", "quickstart")
    assert result.code == 2
    assert result.lines == [
        (
            "error: data file not found: runs/quickstart/data/train.jsonl; run "
            f"`{SYNTH}` first (it writes runs/quickstart/data{TAIL}"
        )
    ]


def test_train_quickstart_after_synth_names_the_sft_command(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "runs/quickstart/data", ["tg"], n=2, val=1, seed=0)
    result = run_cli(capsys, monkeypatch, "train", "quickstart")
    assert result.code == 2
    assert result.lines[-1] == (
        "error: model path 'runs/quickstart/sft/final' does not exist; run `videorl sft "
        f"sft_quickstart` first (it writes runs/quickstart/sft{TAIL}"
    )
    assert not (tmp_path / "runs/quickstart/train").exists()


def test_a_recipe_that_keeps_fewer_families_than_the_data_says_so(tmp_path, capsys, monkeypatch):
    """Three families of data under the one-family quickstart recipe: a line says how many
    records the filter keeps and how to keep them all (`data.families=all`, accepted)."""
    data = synthesize(tmp_path / "data", ["tg", "sg", "qa"], n=2, seed=0)
    args = ("train", "quickstart", f"data.train={data}", "data.val=null")
    missing_model = "model.path=/nonexistent/model"  # stops the run right after the data
    result = run_cli(capsys, monkeypatch, *args, missing_model)
    assert result.code == 2
    assert (
        "warning: data.families=['temporal_grounding'] keeps 2 of the 6 records of "
        f"{data} (left out: spatial_grounding 2, video_qa 2); set data.families=all to use "
        "every family"
    ) in result.lines
    every = run_cli(capsys, monkeypatch, *args, "data.families=all", missing_model)
    assert every.code == 2 and "keeps" not in every.output
    assert every.lines[-1].startswith("error: model path '/nonexistent/model'")


def test_the_recipes_read_what_the_steps_write():
    """quickstart.yaml trains the SFT step's model on the synth step's data; sft_quickstart
    starts from make-tiny's model: the names in the errors are the right commands."""
    for recipe, model_step in (("sft_quickstart", "make-tiny"), ("quickstart", "sft")):
        config = yaml.safe_load(resolve_config_path(recipe).read_text())
        assert made_by(config["model"]["path"]).argv[0] == model_step
        for split in ("train", "val"):
            assert made_by(config["data"][split]).argv[0] == "synth"
        assert made_by(config["trainer"]["output_dir"]).argv[:2] == (
            "train" if recipe == "quickstart" else "sft",
            recipe,
        )
    assert next_command("runs/elsewhere/final") == ""
    assert made_by(Path.cwd() / "runs/quickstart/model/config.json").argv[0] == "make-tiny"


def test_videorl_quickstart_runs_the_steps_in_order_and_stops_at_a_failure(capsys, monkeypatch):
    ran: list[list[str]] = []

    def fake_call(argv):  # no env: the steps inherit the user's OMP_NUM_THREADS
        ran.append(argv[3:])  # after python -m videorl
        return 3 if argv[3] == "train" else 0

    monkeypatch.setattr(subprocess, "call", fake_call)
    result = run_cli(capsys, monkeypatch, "quickstart", "--overwrite")
    assert result.code == 3
    assert [step[0] for step in ran] == ["make-tiny", "synth", "sft", "train"]
    assert ran[2] == ["sft", "sft_quickstart", "--overwrite"]
    ran.clear()
    monkeypatch.setattr(subprocess, "call", lambda argv: ran.append(argv[3:]) or 0)  # type: ignore[func-returns-value]  # records the call, then returns the stub's value
    done = run_cli(capsys, monkeypatch, "quickstart")
    assert done.code == 0 and ran == [list(step.argv) for step in STEPS]
    assert "curves: runs/quickstart/train/reward_curves.png" in done.output


def test_make_quickstart_calls_videorl_quickstart_on_every_core():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\nquickstart: setup\n", 1)[1].split("\n\n", 1)[0]
    assert target.strip() == "$(PY) -m videorl quickstart --overwrite"


@pytest.mark.parametrize("spelling", ["all", "tg,sg"])
def test_data_families_takes_synths_spelling(spelling):
    from videorl.config import load_config

    expected = () if spelling == "all" else ("tg", "sg")
    assert load_config(None, [f"data.families={spelling}"]).data.families == expected


TOOLS_TAIL = "; `videorl quickstart --tools` runs every step)"


def test_train_tools_quickstart_in_a_fresh_folder_names_its_synth(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "train", "tools_quickstart")
    assert result.code == 2
    # the tools quickstart keeps the 0.5 s grid its numbers were measured on (docs/tools.md)
    synth = SYNTH.replace("runs/quickstart/", "runs/tools_quickstart/").replace(" --tg-grid 1", "")
    assert result.lines == [
        (
            "error: data file not found: runs/tools_quickstart/data/train.jsonl; run "
            f"`{synth}` first (it writes runs/tools_quickstart/data{TOOLS_TAIL}"
        )
    ]


def test_train_tools_quickstart_after_synth_names_the_tool_sft_stage(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "runs/tools_quickstart/data", ["tg"], n=2, val=1, seed=0)
    result = run_cli(capsys, monkeypatch, "train", "tools_quickstart")
    assert result.code == 2
    assert result.lines[-1] == (
        "error: model path 'runs/tools_quickstart/sft-mix/final' does not exist; run "
        "`videorl sft sft_quickstart model.path=runs/tools_quickstart/sft-read/final "
        "data.train=runs/tools_quickstart/data/train.jsonl data.val=null video.fps=0.25 "
        "video.min_frames=2 video.max_frames=4 video.tool_max_frames=32 "
        "sft.target=tool_trajectory 'rollout.tools=[get_clip]' sft.max_response_tokens=1024 "
        "trainer.val_every=0 sft.tool_call_fraction=0.75 optim.schedule=constant "
        "optim.warmup_steps=5 optim.lr=1e-3 trainer.steps=60 "
        "trainer.save_every=60 trainer.output_dir=runs/tools_quickstart/sft-mix` first (it "
        f"writes runs/tools_quickstart/sft-mix{TOOLS_TAIL}"
    )
    # each stage's input is the stage before's output, the first's the seeing model's
    assert made_by("runs/tools_quickstart/sft-read/final").argv[2] == (
        "model.path=runs/tools_quickstart/seeing/final"
    )
    assert made_by("runs/tools_quickstart/seeing/final").argv[2] == (
        "model.path=runs/tools_quickstart/model"
    )


def test_videorl_quickstart_tools_runs_the_tools_steps(capsys, monkeypatch):
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda argv: ran.append(argv[3:]) or 0)  # type: ignore[func-returns-value]  # records the call, then returns the stub's value
    done = run_cli(capsys, monkeypatch, "quickstart", "--tools", "--overwrite")
    assert done.code == 0 and ran == [[*step.argv, "--overwrite"] for step in TOOLS_STEPS]
    assert [step[0] for step in ran] == ["make-tiny", "synth", "sft", "sft", "sft", "train", "eval"]
    assert "report: runs/tools_quickstart/eval/report.md" in done.output


def test_make_tools_quickstart_calls_videorl_quickstart_tools():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\ntools-quickstart: setup\n", 1)[1].split("\n\n", 1)[0]
    assert target.strip() == "$(ONE_THREAD) $(PY) -m videorl quickstart --tools --overwrite"


def test_the_tools_quickstart_decays_its_long_sft_stages_like_sft_quickstart():
    """Seeing and reading (800 and 400 steps) take sft_quickstart's cosine decay; the 60-step
    mix, shorter than that recipe's 80-step warm-up, keeps a constant rate."""
    seeing, read, mix = (step.argv for step in TOOLS_STEPS if step.argv[0] == "sft")
    assert not any(arg.startswith("optim.") for arg in (*seeing, *read))
    assert "trainer.steps=800" in seeing  # as measured; the quickstart's SFT now runs 1600
    assert {"optim.schedule=constant", "optim.warmup_steps=5"} <= set(mix)
    assert load_config(resolve_config_path("sft_quickstart")).optim.schedule == "cosine"


def test_quickstart_seed_reaches_every_command_that_draws(capsys, monkeypatch):
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda argv: ran.append(argv[3:]) or 0)  # type: ignore[func-returns-value]  # records the call, then returns the stub's value
    assert run_cli(capsys, monkeypatch, "quickstart", "--seed", "7").code == 0
    tiny, synth, sft, train, *evals = ran
    assert tiny[-2:] == ["--seed", "7"]
    assert synth[synth.index("--seed") + 1] == "7" and synth.count("--seed") == 1
    for run in (sft, train):
        assert run[-2:] == ["trainer.seed=7", "data.seed=7"]
    assert [e[:2] for e in evals[:2]] == [["eval", "--model"]] * 2
    assert all(not any("seed" in arg for arg in e) for e in evals)
    assert seeded(STEPS, 0) == STEPS
