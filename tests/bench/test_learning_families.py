"""bench/learning.py --families: each family's overrides make valid quickstart runs whose
answer budgets hold its longest annotation, the quick run writes a row per family beside the
recipe rows already in the results file, and docs/performance.md shows the saved rows."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bench import BENCH, bench_module


@pytest.fixture(scope="module")
def families():
    return bench_module("learning_families")


def test_every_video_family_has_metrics_controls_and_a_row(families):
    from videorl.data.families import families as registered

    video = [f.value for f in registered() if f.value != "math"]
    assert list(families.FAMILIES) == video
    assert set(families.METRICS) == set(families.CONTROLS) == set(video)
    assert families.parse_families("all") == video
    assert families.parse_families("video_qa,tracking") == ["tracking", "video_qa"]
    with pytest.raises(SystemExit, match="--families nope"):
        families.parse_families("nope")


def test_overrides_load_and_hold_the_longest_answer(families, tiny_model_dir, tmp_path):
    """The budgets fit every annotation (answer + EOS) of 24 + 8 synthetic records per
    family as the bench's model is taught it (its tokenizer, its box coordinates), in both
    quickstart recipes."""
    from transformers import AutoTokenizer

    from videorl.api import resolve_config_path
    from videorl.config import load_config
    from videorl.data.coordinates import model_convention, to_model_coordinates
    from videorl.data.loaders import load_records
    from videorl.data.synth import write_dataset
    from videorl.rewards.annotation import serialize_annotation

    write_dataset(tmp_path / "d", list(families.FAMILIES), n=24, val=8, seed=0)
    records = [*load_records(tmp_path / "d" / "train.jsonl").records]
    records += load_records(tmp_path / "d" / "val.jsonl").records
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir("qwen3_vl"))  # the bench's arch
    convention = model_convention("qwen3_vl")
    records = [to_model_coordinates(r, convention, (r.width or 0, r.height or 0)) for r in records]
    for family in families.FAMILIES:
        overrides = families.family_overrides(family)
        sft = load_config(resolve_config_path("sft_quickstart"), overrides)
        rl = load_config(resolve_config_path("quickstart"), overrides)
        longest = max(
            len(tokenizer.encode(serialize_annotation(r, think=False), add_special_tokens=False))
            + 1
            for r in records
            if r.family.value == family
        )
        budget = families.answer_tokens(family)
        assert tuple(sft.data.families) == tuple(rl.data.families) == (family,)
        assert rl.rollout.max_new_tokens == sft.rollout.max_new_tokens == budget, family
        assert longest <= budget <= 1.5 * longest + 8, (family, longest, budget)
        assert longest <= sft.sft.max_response_tokens, (family, longest)


@pytest.mark.slow
def test_quick_run_writes_a_row_per_family_beside_the_recipe_rows(tmp_path, families):
    out = tmp_path / "learning.json"
    out.write_text(json.dumps({"table": "kept"}))
    command = [sys.executable, str(BENCH / "learning.py"), "--quick", "--work", str(tmp_path)]
    done = subprocess.run(
        [*command, "--families", "spatial_grounding,spatio_temporal_grounding", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,  # ~30 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    saved = json.loads(out.read_text())
    assert saved["table"] == "kept"
    rows = saved["families"]
    assert list(rows) == ["spatial_grounding", "spatio_temporal_grounding"]
    grounding = rows["spatial_grounding"]
    assert grounding["overrides"] == families.family_overrides("spatial_grounding")
    assert grounding["blind"]["mIoU"] is not None  # synth's manifest
    for model in ("sft", "orarl"):
        assert 0 <= grounding[model]["mIoU"]["score"] <= 100
        assert set(grounding[model]["mIoU"]) == {"score", "gain_blank"}
        assert set(rows["spatio_temporal_grounding"][model]) == {"m_tIoU", "m_sIoU"}
    lines = done.stdout.splitlines()
    (image,) = [line for line in lines if line.startswith("| spatial_grounding | mIoU |")]
    assert image.split(" | ")[5:8] == ["-", "-", "-"]  # no video: frozen, reversed, shuffled
    assert sum(line.startswith("| spatio_temporal_grounding |") for line in lines) == 2


def test_markdown_shows_sft_to_orarl_and_dashes(families):
    scores = {"score": 50.0, "gain_frozen": 40.0, "gain_reversed": None}
    row = {
        "metrics": ["AO"],
        "sft_steps": 1600,
        "blind": {"AO": 8.1},
        "sft": {"AO": scores},
        "orarl": {"AO": {**scores, "score": 55.0, "gain_frozen": 44.5}},
    }
    lines = families.markdown({"tracking": row}).splitlines()
    assert lines[2] == "| tracking | AO | 1600 | 8.1 | 50.0 -> 55.0 | +40.0 -> +44.5 | - | - | - |"


def test_the_docs_show_the_saved_family_rows(families):
    learning = bench_module("learning")
    committed = bench_module("harness").marked_text(families.PAGE, families.MARKERS)
    assert committed == families.markdown(
        families.saved_rows(learning.RESULTS / "learning.json")
    ), "stale: PYTHONPATH=src python bench/learning.py --families all --write"


def test_sft_starts_from_a_new_tiny_model_unless_given_one(families, tmp_path):
    """`--start MODEL` (a curriculum: another family's SFT model) replaces the tiny model."""
    import argparse

    args = argparse.Namespace(work=tmp_path, start=None)
    assert families.start_model(args) == tmp_path / "model"
    args.start = tmp_path / "temporal_grounding" / "sft-800" / "final"
    assert families.start_model(args) == args.start
