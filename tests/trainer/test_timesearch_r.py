"""configs/timesearch_r.yaml (issue 49 item 2): its published values, and its CPU variant
training on synthetic temporal grounding with seek_video_frames and the completeness check
(GRPO-CSV). A scripted policy makes the calls and answers, whatever a tiny model would
sample; the tool, the index, the check's prompts and the reward run for real."""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import pytest
import torch

from tests.trainer.runs import async_recipe_rows
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.models.generate import Generation
from videorl.rewards.calls import verification_answer
from videorl.rewards.timesearch import check_score
from videorl.rollout.engine import HFEngine
from videorl.rollout.verification import NO_FRAMES
from videorl.trainer.build import build_state
from videorl.trainer.step import STAGES, train_step

SCRIPT = "TimeSearch-R scripts/train.sh"
PUBLISHED = [
    ("rollout.n", 8, SCRIPT + " --num_generations 8"),
    ("model.freeze_vision", False, "train.py and the trainer freeze nothing"),
    ("rollout.max_turns", 8, "--max_interaction_turns 8"),
    ("rollout.max_new_tokens", 256, "--max_completion_length_per_turn 256"),
    ("rollout.max_total_tokens", 16000, "--max_completion_length 16000"),
    ("rollout.tools", ("seek_video_frames",), "--tool_name_list seek_video_frames"),
    ("rollout.frame_search.verify", True, "--use_counterfactual_reasoning true"),
    ("rollout.frame_search.fps", 2.0, "prepare_frame_cache.py --target_fps 2"),
    ("rollout.frame_search.max_frames", 768, "--max_frames 768"),
    ("rollout.frame_search.embedder", "hf:google/siglip-so400m-patch14-384", "README"),
    ("video.max_frames", 768, "--max_frames 768"),
    ("video.total_pixels", 10240 * 28 * 28, "--total_video_tokens 10240"),
    ("video.min_pixels", 12 * 28 * 28, "--min_per_frame_tokens 12"),
    ("video.max_pixels", 256 * 28 * 28, "--max_per_frame_tokens 256"),
    ("algorithm.estimator", "dr_grpo", "--scale_rewards false"),
    ("algorithm.loss.kl_coef", 0.005 / 2, "--beta 0.005 on the plug-in's halved reward"),
    ("data.think", True, "prompt v4"),
    ("data.seed", 42, "--data_seed 42"),
    ("trainer.epochs", 2, "--num_train_epochs 2"),
    ("trainer.save_every", 200, "--save_steps 200"),
    (
        "reward.plugins",
        {
            "video_qa": "videorl.rewards.timesearch:score",
            "temporal_grounding": "videorl.rewards.timesearch:score",
        },
        "v7",
    ),
]


@pytest.mark.parametrize("key, value, source", PUBLISHED, ids=lambda v: str(v)[:40])
def test_recipe_has_the_published_value(key, value, source):
    config = load_config(resolve_config_path("timesearch_r"))
    assert reduce(getattr, key.split("."), config) == value, source


@pytest.fixture(scope="module")
def tg_train(tmp_path_factory):
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize

    out = tmp_path_factory.mktemp("timesearch_data")
    made = synthesize(out, ["temporal_grounding"], n=4, seed=3, tg_events=("appear",))
    write_records(out / "train.jsonl", load_records(made).records)
    return out / "train.jsonl"


class ScriptedEngine(HFEngine):
    """Even samples search first; every turn then answers; the completeness check (its
    prompts carry the check's system turn) answers with the same window."""

    def __init__(self, loaded):
        super().__init__(loaded)
        self.calls, self.checks = 0, []

    def generate(self, prompts, params):
        tokenizer = self.loaded.tokenizer
        if prompts and NO_FRAMES in tokenizer.decode(prompts[0].input_ids):
            self.checks.append(list(prompts))
            return [self._gens(["0 to 1"], 1) for _ in prompts]
        self.calls += 1
        call = (
            '<think>find it</think><tool_call>{"name": "seek_video_frames", "arguments": '
            '{"query": "the red or green or blue square", "num_frames": 2}}</tool_call>'
        )
        answer = "<think>seen</think><answer>0 to 1</answer>"
        texts = [call if self.calls == 1 and k % 2 == 0 else answer for k in range(params.n)]
        return [self._gens(texts, params.n) for _ in prompts]

    def _gens(self, texts, n):
        eos = self.loaded.eos_token_ids[0]
        ids = [
            torch.tensor(self.loaded.tokenizer(t, add_special_tokens=False)["input_ids"] + [eos])
            for t in texts
        ]
        return Generation(ids, [], [False] * n)


def test_cpu_variant_trains_with_search_and_the_completeness_check(
    tiny_model_dir, tg_train, tmp_path
):
    model = tiny_model_dir("qwen2_5_vl")
    overrides = [
        f"model.path={model}",
        f"data.train={tg_train}",
        f"trainer.output_dir={tmp_path / 'run'}",
        "trainer.steps=1",
        "trainer.tensorboard=false",
    ]
    config = load_config(resolve_config_path("timesearch_r_quickstart"), overrides)
    state = build_state(config, None)
    state.engine = engine = ScriptedEngine(state.engine.loaded)
    seen = {}

    def spy_update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    try:
        metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=spy_update))
    finally:
        state.tools.close()
    assert metrics["tools/calls_per_row"] == 0.5 and metrics["tools/errors_per_row"] == 0.0
    assert torch.isfinite(torch.tensor(metrics["actor/loss"]))
    batch = seen["batch"]
    rows = batch.trajectories
    called = [row.calls == 1 for row in rows]
    # one check prompt per searching row, holding the searched frames as images only
    [checks] = engine.checks
    assert len(checks) == sum(called)
    for prompt in checks:
        types = prompt.mm_token_type_ids
        assert (types == 1).sum() > 0 and (types == 2).sum() == 0
    # the index was built once per video and cached under the run folder
    assert list((tmp_path / "run" / "frame_index").glob("*.pt"))
    for row, record, parts in zip(
        rows, batch.row_records(), batch.scored_components(), strict=True
    ):
        answer = verification_answer(row.calls_made())
        assert answer == ("0 to 1" if row.calls == 1 else NO_FRAMES)
        assert parts["check"] == check_score(record, answer, config.reward)
        raised = [1.0 if v > 0.5 else v for v in (parts["task"], parts["check"])]
        assert parts["complete"] == pytest.approx(raised[0] * raised[1])
        expected = (parts["format"] + 0.5 * parts["task"] + 0.5 * parts["complete"]) / 2
        assert parts["overall"] == pytest.approx(expected)
        assert parts["format"] == 1.0


def test_cpu_variant_trains_with_the_tiny_models_own_samples(tiny_model_dir, tg_train, tmp_path):
    """No script: the tiny model samples (it seldom calls); a step runs and every row's
    reward carries the check term (0 without searched frames)."""
    overrides = [
        f"model.path={tiny_model_dir('qwen2_5_vl')}",
        f"data.train={tg_train}",
        f"trainer.output_dir={tmp_path / 'run'}",
        "trainer.steps=1",
        "trainer.tensorboard=false",
        "rollout.max_new_tokens=16",
    ]
    config = load_config(resolve_config_path("timesearch_r_quickstart"), overrides)
    state = build_state(config, None)
    seen = {}

    def spy_update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    try:
        metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=spy_update))
    finally:
        state.tools.close()
    assert torch.isfinite(torch.tensor(metrics["actor/loss"]))
    for row, parts in zip(
        seen["batch"].trajectories, seen["batch"].scored_components(), strict=True
    ):
        assert row.verification is not None and "check" in parts
        if not any(o.ok and o.media for o in row.outcomes):
            assert row.verification == NO_FRAMES and parts["check"] == 0.0


@pytest.mark.slow  # spawns a rollout worker process
def test_cpu_variant_trains_in_async(tg_train, tiny_model_dir, tmp_path):
    """The search and its completeness check run in the rollout worker, a version behind."""
    rows = async_recipe_rows(
        "timesearch_r_quickstart", tiny_model_dir("qwen2_5_vl"), tg_train, tmp_path / "run"
    )
    assert sorted(rows) == [1, 2]
    assert rows[2]["async/staleness_max"] == 1
