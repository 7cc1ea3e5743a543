"""Sub-agent rollouts (`rollout.subagents`, docs/tools.md#sub-agents): the calls of a listed
tool are answered by the same policy reading the call's frames in its own context, their
texts land in the main row's tool turn in call order; with `rollout.include_subagent_in_loss`
each sub-agent trajectory trains as a row whose prompt is masked and whose tokens take the
advantage of the calling turn, and without it (ParaVT's default) nothing of it trains."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.cli_runner import run_cli
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.data.records import ChoiceAnswer
from videorl.errors import ConfigError
from videorl.models.generate import Generation
from videorl.rollout.engine import HFEngine
from videorl.trainer.build import build_state
from videorl.trainer.metrics import read_metrics
from videorl.trainer.step import STAGES, train_step

pytestmark = pytest.mark.slow  # tiny-model train steps, ~10 s each on one thread

CROPS = (
    "<think>two windows</think>"
    '<tool_call>{"name": "crop_video", "arguments": {"start_time": 0, "end_time": 1}}</tool_call>'
    '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}</tool_call>'
)
ANSWER = "<think>the summaries say red</think><answer>A</answer>"
WRONG = "<think>no idea</think><answer>B</answer>"
SUMMARY = "a red square appears"  # each sub-agent writes its window's start after it


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize
    from videorl.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("subagents")
    model = build_tiny_model("qwen3_vl", root / "model")
    records = load_records(synthesize(root / "data", ["video_qa"], n=4, seed=4)).records
    write_records(root / "train.jsonl", [replace(r, answer=ChoiceAnswer("A")) for r in records])
    return str(model), root / "train.jsonl"


def config_for(inputs, out, *extra: str):
    model, train = inputs
    overrides = [
        f"model.path={model}",
        f"data.train={train}",
        f"trainer.output_dir={out}",
        "trainer.steps=1",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        "rollout.subagents=[crop_video]",
        "rollout.subagent_max_new_tokens=24",
        *extra,
    ]
    return load_config(resolve_config_path("paravt_quickstart"), overrides)


class Scripted(HFEngine):
    """Main rows: rows 0 and 2 of a prompt call two crops, rows 1 and 3 answer (A, B); after
    the crops, row 0 answers A and row 2 B. Sub-agents (their prompt ends with ParaVT's
    "Summary:") write SUMMARY and the window they read."""

    def __init__(self, loaded):
        super().__init__(loaded)
        self.turn, self.subagent_calls = 0, []

    def _ids(self, text: str) -> torch.Tensor:
        ids = self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        return torch.tensor([*ids, self.loaded.eos_token_ids[0]])

    def generate(self, prompts, params):
        tail = [self.loaded.tokenizer.decode(p.input_ids) for p in prompts]
        if prompts and all("Summary:" in t for t in tail):
            self.subagent_calls.append((len(prompts), params.max_new_tokens))
            texts = [f"{SUMMARY} ({'00:00' if '00:00 to' in t else '00:01'})" for t in tail]
            return [Generation([self._ids(t)], [], [False]) for t in texts]
        self.turn += 1
        if self.turn == 1:
            first = [CROPS, ANSWER, CROPS, WRONG]
            return [Generation([self._ids(t) for t in first], [], [False] * 4) for _ in prompts]
        texts = [(ANSWER, WRONG)[k % 2] for k in range(len(prompts))]
        return [Generation([self._ids(t)], [], [False]) for t in texts]


def one_step(config):
    state = build_state(config, None)
    state.engine = Scripted(state.engine.loaded)
    seen = {}

    def spy_update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    try:
        metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=spy_update))
    finally:
        state.tools.close()
    return metrics, seen["batch"], state.engine


def test_subagents_answer_the_calls_in_order_and_do_not_train_by_default(inputs, tmp_path):
    config = config_for(inputs, tmp_path / "run")
    assert not config.rollout.include_subagent_in_loss  # ParaVT's published default
    metrics, batch, engine = one_step(config)
    assert engine.subagent_calls == [(2, 24)] * 4  # per calling row: its two crops in one call
    assert batch.num_rows == 8 and metrics["actor/rows"] == 8.0  # main rows only
    tokenizer = engine.loaded.tokenizer
    for k, row in enumerate(batch.trajectories):
        if k % 2:
            assert not row.subagents
            continue
        assert [sub.turn for sub in row.subagents] == [1, 1]
        assert [sub.text for sub in row.subagents] == [f"{SUMMARY} (00:00)", f"{SUMMARY} (00:01)"]
        assert len(row.media) == 1  # the prompt's video only: the frames went to the sub-agents
        tool_turn = tokenizer.decode(row.response_ids[row.loss_mask == 0])
        first, second = tool_turn.index("(00:00)"), tool_turn.index("(00:01)")
        assert first < second  # the results in call order
        frames = [sub.prompt.mm_token_type_ids for sub in row.subagents]
        assert all(types is not None and int((types == 1).sum()) > 0 for types in frames)
        assert [o.text for o in row.outcomes] == [s.text for s in row.subagents]


def test_included_subagent_rows_train_with_the_calling_turns_advantage(inputs, tmp_path):
    config = config_for(inputs, tmp_path / "run", "rollout.include_subagent_in_loss=true")
    metrics, batch, _ = one_step(config)
    main = 8
    assert batch.num_rows == main + 8 and metrics["actor/rows"] == 16.0  # 4 callers x 2
    assert metrics["subagents/rows"] == 8.0
    advantages, mask, prompts = batch.token_advantages(), batch.response_mask(), batch.row_prompts()
    callers = [k for k in range(main) if batch.trajectories[k].subagents]
    subs = [(k, sub) for k in callers for sub in batch.trajectories[k].subagents]
    for j, (parent, sub) in enumerate(subs, start=main):
        length = sub.response_ids.numel()
        assert torch.equal(batch.responses[j], sub.response_ids)
        assert mask[j, :length].eq(1).all() and mask[j, length:].eq(0).all()  # output trained
        assert torch.equal(prompts[j].input_ids, sub.prompt.input_ids)  # prompt: context only
        parent_adv = advantages[parent][mask[parent] > 0][0]  # the calling turn's (turn 1)
        assert torch.allclose(advantages[j, :length], parent_adv.expand(length))
        assert advantages[j, length:].eq(0).all()
    # the main rows are unchanged: their tool turns (the summaries) stay out of the loss
    for k in callers:
        row = batch.trajectories[k]
        assert mask[k, : row.loss_mask.numel()].tolist() == row.loss_mask.tolist()
    assert advantages[callers[0]][mask[callers[0]] > 0].abs().sum() > 0  # a real signal


def test_a_subagent_tool_outside_the_tools_is_a_one_line_error(inputs, tmp_path):
    with pytest.raises(ConfigError, match=r"rollout.subagents names \['get_clip'\]"):
        config_for(inputs, tmp_path / "run", "rollout.subagents=[get_clip]")
    with pytest.raises(ConfigError, match="rollout.subagents is empty"):
        config_for(
            inputs, tmp_path, "rollout.subagents=[]", "rollout.include_subagent_in_loss=true"
        )


def test_the_recipe_trains_with_subagents_in_the_loss(capsys, monkeypatch, inputs, tmp_path):
    """A real (random) tiny policy: two steps run whether or not it calls crop_video."""
    model, train = inputs
    out = tmp_path / "train"
    overrides = [
        f"model.path={model}",
        f"data.train={train}",
        f"trainer.output_dir={out}",
        "trainer.steps=2",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        "rollout.max_new_tokens=32",
        "rollout.subagents=[crop_video]",
        "rollout.subagent_max_new_tokens=16",
        "rollout.include_subagent_in_loss=true",
    ]
    result = run_cli(capsys, monkeypatch, "train", "paravt_quickstart", *overrides)
    assert result.code == 0, result.output
    assert [row["step"] for row in read_metrics(out / "metrics.jsonl")] == [1, 2]


def test_dry_run_names_the_subagents_and_what_trains(capsys, monkeypatch, inputs, tmp_path):
    from videorl import cli

    monkeypatch.setattr(cli.console, "_width", 400)  # one table row per line
    model, train = inputs
    base = [f"model.path={model}", f"data.train={train}", f"trainer.output_dir={tmp_path}"]
    on = ["rollout.subagents=[crop_video]", "--dry-run"]
    result = run_cli(capsys, monkeypatch, "train", "paravt_quickstart", *base, *on)
    assert result.code == 0, result.output
    assert "crop_video answered by sub-agents of the policy (<= 96 tokens, not trained)" in (
        result.output
    )
    result = run_cli(
        capsys, monkeypatch, "train", "paravt_quickstart", *base, *on,
        "rollout.include_subagent_in_loss=true",
    )  # fmt: skip
    assert "trained with the calling turn's advantage, prompts masked" in result.output
