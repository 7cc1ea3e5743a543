"""A family is one module (or folder): this test module registers a toy family (count the shapes) with
its answer type, prompt, reward, evaluation and synthetic generator, and runs it through
synth -> one training step -> eval with nothing else changed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest

from tests.cli_runner import run_cli
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.data.families import TASKS, Family, TaskFamily, register_family
from videorl.data.records import TaskRecord, finite_number, require
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw, synthesize
from videorl.data.synth_tasks import appearing, frame_size, save_video, scatter
from videorl.eval.metrics.choice import mean_percent
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward


@dataclass(frozen=True)
class CountAnswer:
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count}


def answer(data: dict[str, Any], where: str) -> CountAnswer:
    return CountAnswer(int(finite_number(require(data, "count", where), f"{where}.count")))


def prompt(record: TaskRecord) -> str:
    return f"How many {record.problem} are in the video? Answer as <answer>N</answer>."


def _count(text: str) -> int | None:
    found = re.fullmatch(r"\s*(\d+)\s*", text)
    return None if found is None else int(found.group(1))


def reward(record: TaskRecord, payload: str, config: Any) -> dict[str, float]:
    return {"task": float(_count(payload) == record.answer_as(CountAnswer).count)}


def serialize(record: TaskRecord) -> str:
    return str(record.answer_as(CountAnswer).count)


def eval_score(record: TaskRecord, text: str) -> tuple[Any, dict[str, float]]:
    count = _count(text)
    correct = float(count == record.answer_as(CountAnswer).count)
    return count, {"score": correct, "correct": correct}


def summary(samples: Any) -> dict[str, float]:
    return {"accuracy": mean_percent([s.values["correct"] for s in samples])}


def synth(draw: SynthDraw) -> TaskRecord:
    width, height = frame_size(draw.rng)
    shapes = scatter(draw.rng, width, height, 1 + draw.index % 3)
    video = save_video(draw.out, draw.rid, width, height, 2.0, appearing(shapes, first=0.0))
    return TaskRecord(
        id=draw.rid,
        family=Family("toy_count"),
        problem="shapes",
        answer=CountAnswer(len(shapes)),  # type: ignore[arg-type]  # a user family's answer is outside the built-in union
        video=video,
        duration=2.0,
        width=width,
        height=height,
        source="synth",
    )


TOY = TaskFamily(name="toy_count", short="toy", answer=answer, prompt=prompt)


@pytest.fixture
def toy():
    """The toy family, registered for this test and removed after it."""
    family = register_family(TOY)
    FAMILY_REWARDS.register(family, FamilyReward(reward, serialize))
    FAMILY_EVALS.register(family, FamilyEval(eval_score, summary))
    FAMILY_SYNTHS.register(family, synth)
    yield family
    for table in (FAMILY_REWARDS, FAMILY_EVALS, FAMILY_SYNTHS):
        table.unregister(family)
    TASKS.pop(family.value)


def test_a_toy_family_runs_synth_train_and_eval(toy, tiny_model_dir, tmp_path, capsys, monkeypatch):
    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    records = synthesize(tmp_path / "data", ["toy"], n=4, seed=0)
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r["family"] for r in rows] == ["toy_count"] * 4
    assert [r["answer"]["count"] for r in rows] == [1, 2, 3, 1]

    config = load_config(
        resolve_config_path("quickstart"),
        [
            f"model.path={tiny_model_dir('qwen2_5_vl')}",
            f"data.train={records}",
            "data.val=null",
            "data.families=[toy_count]",
            "data.prompts_per_step=2",
            "rollout.n=4",
            "algorithm.pruning.pos_quota=1",
            "algorithm.pruning.neg_quota=0",
            "video.max_frames=4",
            "trainer.val_every=0",
            "trainer.tensorboard=false",
            f"trainer.output_dir={tmp_path / 'train'}",
        ],
    )
    state = build_state(config, None)
    metrics = train_step(state, next(iter(state.sampler)))
    # the annotation row is the toy's serializer in the tagged protocol: its reward is 1
    assert metrics["reward/annotation/toy/mean"] == 1.0
    assert "reward/toy/mean" in metrics

    predictions = tmp_path / "predictions.jsonl"
    answers = ["<answer>1</answer>", "<answer>2</answer>", "<answer>9</answer>", "no idea"]
    predictions.write_text(
        "".join(
            json.dumps({"id": r["id"], "response": a}) + "\n"
            for r, a in zip(rows, answers, strict=True)
        )
    )
    out = tmp_path / "eval"
    result = run_cli(
        capsys,
        monkeypatch,
        "eval",
        "--predictions",
        predictions,
        "--benchmark",
        records,
        "--out",
        out,
    )
    assert result.code == 0, result.output
    toy_metrics = json.loads((out / "metrics.json").read_text())["families"]["toy_count"]
    assert toy_metrics["metrics"] == {"accuracy": 50.0}
    assert toy_metrics["counts"]["ok"] == 3 and toy_metrics["counts"]["unparsed"] == 1
