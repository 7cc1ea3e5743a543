"""configs/paravt_quickstart.yaml and configs/framethinker_quickstart.yaml train on a CPU from a
tiny Qwen3-VL and `videorl synth` video-QA data; scripted policies check the mechanisms in a
real `train_step`: two crop_video calls of one turn land in call order and ParaVT's reward
sees them, and FrameThinker's per-turn credit reaches each turn's tokens."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.cli_runner import run_cli
from tests.trainer.runs import ASYNC_ONE_BEHIND
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.data.records import ChoiceAnswer
from videorl.models.generate import Generation
from videorl.rollout.engine import HFEngine
from videorl.trainer.build import build_state
from videorl.trainer.metrics import read_metrics
from videorl.trainer.step import STAGES, train_step

pytestmark = pytest.mark.slow  # tiny-model training runs, ~10-30 s each on one thread


def crop(start: float, end: float) -> str:
    return (
        '<tool_call>{"name": "crop_video", "arguments": '
        f'{{"start_time": {start}, "end_time": {end}}}}}</tool_call>'
    )


TWO_CROPS = "<think>look at both halves</think>" + crop(0, 1) + crop(1, 2)
SELECT = (
    "<think>the first shape comes on early: frames 0 and 12</think><tool_call>"
    '{"name": "select_frames", "arguments": {"start_frame": 0, "end_frame": 12}}</tool_call>'
)


def answer(letter: str) -> str:
    return f"<think>I saw it on screen</think><answer>{letter}</answer>"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tiny Qwen3-VL and four synthetic video-QA records whose answer is A (so a scripted
    answer's score is known), as `videorl make-tiny` and `videorl synth` make them."""
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize
    from videorl.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("agent_quickstarts")
    model = build_tiny_model("qwen3_vl", root / "model")
    records = load_records(synthesize(root / "data", ["video_qa"], n=4, seed=2)).records
    write_records(root / "train.jsonl", [replace(r, answer=ChoiceAnswer("A")) for r in records])
    return str(model), root / "train.jsonl"


def overrides(inputs, out, *extra: str) -> list[str]:
    model, train = inputs
    return [
        f"model.path={model}",
        f"data.train={train}",
        f"trainer.output_dir={out}",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        *extra,
    ]


@pytest.mark.parametrize("recipe", ["paravt_quickstart", "framethinker_quickstart"])
def test_the_recipe_trains_two_steps_on_cpu(capsys, monkeypatch, inputs, tmp_path, recipe):
    out = tmp_path / "train"
    extra = ("trainer.steps=2", "rollout.max_new_tokens=32")
    result = run_cli(capsys, monkeypatch, "train", recipe, *overrides(inputs, out, *extra))
    assert result.code == 0, result.output
    rows = read_metrics(out / "metrics.jsonl")
    assert [row["step"] for row in rows] == [1, 2]
    assert all("tools/calls_per_row" in row and "reward/mean" in row for row in rows)


@pytest.mark.parametrize("recipe", ["paravt_quickstart", "framethinker_quickstart"])
def test_the_recipe_trains_in_async(capsys, monkeypatch, inputs, tmp_path, recipe):
    """The tools (and ParaVT's sub-agents) run in the rollout worker, a version behind."""
    out = tmp_path / "train"
    extra = ("trainer.steps=2", "rollout.max_new_tokens=32", *ASYNC_ONE_BEHIND)
    result = run_cli(capsys, monkeypatch, "train", recipe, *overrides(inputs, out, *extra))
    assert result.code == 0, result.output
    rows = read_metrics(out / "metrics.jsonl")
    assert [row["step"] for row in rows] == [1, 2]
    assert rows[-1]["async/staleness_max"] == 1
    assert all("tools/calls_per_row" in row for row in rows)


class Scripted(HFEngine):
    """Turn 1 of prompt row k writes `first[k]`; each later turn writes the next of `later`,
    in the order the rows call (one model turn per active row)."""

    def __init__(self, loaded, first: list[str], later: list[str]):
        super().__init__(loaded)
        self.first, self.later, self.calls = first, later, 0

    def generate(self, prompts, params):
        self.calls += 1
        eos, tokenizer = self.loaded.eos_token_ids[0], self.loaded.tokenizer

        def ids(text: str) -> torch.Tensor:
            return torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"] + [eos])

        if self.calls == 1:
            return [
                Generation([ids(t) for t in self.first], [], [False] * params.n) for _ in prompts
            ]
        texts = [self.later[k % len(self.later)] for k in range(len(prompts))]
        return [Generation([ids(t)], [], [False]) for t in texts]


def one_step(config, first, later):
    """One `train_step` with the scripted policy; returns (metrics, the batch the update got)."""
    state = build_state(config, None)
    state.engine = Scripted(state.engine.loaded, first, later)
    seen = {}

    def spy_update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    try:
        metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=spy_update))
    finally:
        state.tools.close()
    return metrics, seen["batch"]


def test_paravt_two_crops_of_one_turn_land_in_call_order_and_are_scored(inputs, tmp_path):
    config = load_config(
        resolve_config_path("paravt_quickstart"),
        overrides(inputs, tmp_path / "run", "trainer.steps=1", "rollout.max_new_tokens=96"),
    )
    first = [TWO_CROPS, answer("A"), TWO_CROPS, answer("B")]
    metrics, batch = one_step(config, first, [answer("A"), answer("B")])
    assert metrics["tools/calls_per_row"] == 1.0 and metrics["tools/errors_per_row"] == 0.0
    pairs = zip(batch.trajectories, batch.scored_components(), strict=True)
    for k, (row, parts) in enumerate(pairs):
        if k % 2:  # answered directly: no tool reward
            assert row.calls == 0 and parts["tool"] == 0.0
            continue
        assert [o.call.arguments for o in row.outcomes] == [
            {"start_time": 0, "end_time": 1},
            {"start_time": 1, "end_time": 2},
        ]
        assert row.call_turns == [1, 1] and len(row.media) > 2  # both crops' frames, in order
        correct = row.text.endswith("<answer>A</answer>")
        assert parts["tool"] == pytest.approx((0.3 + 0.5 * correct) / 0.8)
        assert parts["task"] == float(correct)


def test_framethinker_credit_reaches_each_turns_tokens_in_a_train_step(inputs, tmp_path):
    """Rows: select + A (R = 1.02), A (R = 1), select + B (0), B (0), with R in units of 1.52.
    Turn 1 of the selecting rows takes A(R), turn 2 A(R - 0.02) (algorithms/turns.py)."""
    config = load_config(
        resolve_config_path("framethinker_quickstart"),
        overrides(inputs, tmp_path / "run", "trainer.steps=1", "rollout.max_new_tokens=96"),
    )
    first = [SELECT, answer("A"), SELECT, answer("B")]
    _, batch = one_step(config, first, [answer("A"), answer("B")])
    rewards = batch.scored_rewards().view(-1, 4)
    expected = torch.tensor([1.02, 1.0, 0.0, 0.0]) / 1.52
    assert torch.allclose(rewards, expected.expand_as(rewards), atol=1e-6)
    mean, std = float(expected.mean()), float(expected.std())
    advantages, mask = batch.token_advantages(), batch.response_mask()
    for k, row in enumerate(batch.trajectories):
        turns = row.token_turns()
        adv = advantages[k, : turns.numel()]
        model = mask[k, : turns.numel()] > 0
        r = float(expected[k % 4])
        assert torch.allclose(adv[model & (turns == 1)], torch.tensor((r - mean) / std), atol=1e-4)
        if k % 4 in (0, 2):  # the selecting rows: the answer turn without the bonus
            later = float(r - (0.02 / 1.52 if k % 4 == 0 else 0.0))
            assert row.calls == 1 and row.errors == 0
            assert torch.allclose(adv[model & (turns == 2)], torch.tensor((later - mean) / std))
        assert (adv[~model] == 0).all()  # the tool turn's tokens are context only


def test_one_call_per_turn_turns_the_second_crop_into_an_error(inputs, tmp_path):
    """`rollout.max_calls_per_turn=1`, the bench's sequential arm: the second crop of a turn
    is not run; the model is told so."""
    config = load_config(
        resolve_config_path("paravt_quickstart"),
        overrides(inputs, tmp_path / "run", "trainer.steps=1", "rollout.max_calls_per_turn=1"),
    )
    first = [TWO_CROPS, answer("A"), TWO_CROPS, answer("B")]
    metrics, batch = one_step(config, first, [answer("A")])
    assert metrics["tools/errors_per_row"] == 0.5  # one of the two calls of half the rows
    row = batch.trajectories[0]
    assert [o.ok for o in row.outcomes] == [True, False]
    assert row.outcomes[1].error == "at most 1 tool calls per turn"
