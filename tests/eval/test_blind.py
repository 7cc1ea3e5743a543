"""The blind best: the best prompt-only answer, fitted on train, scored on val."""

from __future__ import annotations

import json
from dataclasses import replace

from videorl.data.loaders import load_records
from videorl.data.records import ChoiceAnswer, TemporalAnswer
from videorl.data.synth import write_dataset
from videorl.eval.blind import blind_best
from videorl.tasks.temporal_grounding.evaluation import best_fixed_span, blind_temporal
from videorl.tasks.video_qa.evaluation import blind_choice


def test_synthetic_temporal_grounding_cannot_be_answered_from_the_prompt(tmp_path):
    write_dataset(tmp_path / "d", ["tg"], n=96, val=64, seed=0)
    train = load_records(tmp_path / "d" / "train.jsonl").records
    val = load_records(tmp_path / "d" / "val.jsonl").records
    found = blind_temporal(train, val)
    assert found["mIoU"] <= 15.0, found
    durations = [r.duration for r in train + val]
    lengths = [e - s for r in train + val for s, e in r.answer.windows]
    assert min(durations) >= 8 and max(durations) <= 16  # type: ignore[operator, type-var]  # synthesised records carry it
    assert min(lengths) >= 1 and max(lengths) <= 1.5


def test_a_fixed_span_is_found_when_the_prompt_does_give_it_away(synth_tg):
    records = [
        replace(r, answer=TemporalAnswer(((0.4 * r.duration, 0.6 * r.duration),)))  # type: ignore[operator]  # synthesised records carry it
        for r in load_records(synth_tg).records
    ]
    assert best_fixed_span(records) == (0.4, 0.6)
    assert blind_temporal(records, records)["mIoU"] == 100.0


def test_records_without_a_duration_are_left_out_of_the_fixed_span(synth_tg):
    records = [
        replace(r, answer=TemporalAnswer(((0.4 * r.duration, 0.6 * r.duration),)))  # type: ignore[operator]  # synthesised records carry it
        for r in load_records(synth_tg).records
    ]
    untimed = [replace(r, duration=None) for r in records]
    assert blind_temporal(records + untimed[:2], records)["mIoU"] == 100.0
    assert blind_temporal(untimed, records) == {}  # no stated duration: no fixed span
    assert blind_best(untimed, untimed) == {}


def test_choice_blind_best_learns_the_most_frequent_option_text(synth_all):
    qa = next(r for r in load_records(synth_all).records if r.family.value == "video_qa")
    options = ("red", "green", "blue", "white")
    same = [
        replace(qa, options=options[k:] + options[:k], answer=ChoiceAnswer("ABCD"[-k % 4]))
        for k in range(4)
    ]
    assert {r.options["ABCD".index(r.answer.letter)] for r in same} == {"red"}
    assert blind_choice(same, same)["accuracy"] == 100.0
    assert set(blind_best(same, same)) == {"video_qa"}


def test_synth_cli_writes_the_blind_best_into_the_manifest(tmp_path, capsys, monkeypatch):
    from tests.cli_runner import run_cli

    out = tmp_path / "d"
    result = run_cli(
        capsys, monkeypatch, "synth", "--out", out, "--families", "tg", "--n", "8", "--val", "4"
    )
    assert result.code == 0, result.output
    assert "blind best, temporal_grounding (val)" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["blind_best"]["temporal_grounding"]) >= {"mIoU", "R1@0.3", "answer"}
