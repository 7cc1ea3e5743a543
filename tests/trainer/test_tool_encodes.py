"""Multi-turn tool rollouts encode each visual input once: the prompt's video once per
group, each clip once, in generation and in every later forward of the trajectory
(`visual_cache.note_parts`), with the log-probs of a full re-encode; `tools/vision_encodes_per_row`
counts them."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.trainer.test_tools import SCRIPT, TOOL_REWARD, TOOLS
from videorl.models import visual_cache
from videorl.models.logprobs import logprobs_in_microbatches
from videorl.models.split_vision import vision_tower
from videorl.rollout.scripted import ScriptedEngine
from videorl.trainer.build import build_state
from videorl.trainer.step import STAGES, train_step


def _step(config, merges: bool = True):
    """One train step with the scripted engine (even samples call get_clip once); returns
    its metrics, its batch, the items the cache encoded over the step and the policy."""
    state = build_state(config, None)
    # each generation call encodes its contexts' media first, as HF `generate` does
    state.engine = ScriptedEngine(state.engine.loaded, SCRIPT, encode_media=True)
    seen = {}

    def update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    cache = state.policy.visual_cache
    assert cache is not None
    runs: list[int] = []  # items per run of any vision tower of the step
    towers = {id(t): t for m in (state.policy, state.logprob_model) if (t := vision_tower(m.model))}

    def count(_module, args, kwargs, _output):
        grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
        runs.append(int(grid.shape[0]))

    hooks = [t.register_forward_hook(count, with_kwargs=True) for t in towers.values()]
    with pytest.MonkeyPatch.context() as patch:
        if not merges:  # what a trajectory cost before: a merged context is one new tensor
            patch.setattr("videorl.rollout.multiturn.note_merges", lambda *args: None)
        try:
            metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=update))
        finally:
            state.tools.close()
            for hook in hooks:
                hook.remove()
    assert sum(runs) == cache.encoded_items  # every tower run went through the cache
    return metrics, seen["batch"], cache.encoded_items, state


@pytest.fixture(scope="module")
def config(build_config, tmp_path_factory):
    config, _ = build_config("grpo", tmp_path_factory.mktemp("encodes") / "run", *TOOLS)
    return replace(config, reward=replace(config.reward, plugins=TOOL_REWARD))


def test_each_clip_and_prompt_video_is_encoded_once(config):
    metrics, batch, encoded, _ = _step(config)
    groups, rows = batch.num_groups, batch.num_rows
    clips = sum(t.calls for t in batch.trajectories)
    assert groups == 2 and rows == 8 and clips == 4  # half the rows call get_clip once
    # generation: each group's video once, each clip once (turn 2 reuses the prompt's)
    assert metrics["tools/vision_encodes_per_row"] == (groups + clips) / rows == 0.75
    assert encoded == groups + clips  # and no later forward of the step encoded again
    before, _, before_encoded, _ = _step(config, merges=False)
    # before: the second turn re-encoded each calling row's prompt video with its clip
    assert before["tools/vision_encodes_per_row"] == (groups + 2 * clips) / rows
    assert before_encoded > encoded


def test_trajectory_logprobs_equal_a_full_re_encode(config):
    _, batch, _, state = _step(config)
    policy = state.logprob_model
    prompts, types = batch.row_prompts(), batch.response_token_types()
    calling = [i for i, t in enumerate(batch.trajectories) if t.calls]

    def logprobs(model):
        return logprobs_in_microbatches(
            model,
            [prompts[i] for i in calling],
            [batch.responses[i] for i in calling],
            temperature=1.0,
            token_budget=100_000,
            response_token_types=[types[i] for i in calling],
        )

    stored = logprobs(policy)  # the prompt video's and the clips' stored embeddings
    assert all(
        len(visual_cache.leaves(p.vision["pixel_values_videos"], p.vision["video_grid_thw"])) == 2
        for p in (prompts[i] for i in calling)
    )
    full = logprobs(replace(policy, visual_cache=None))  # the pixels, through the tower
    torch.testing.assert_close(stored, full, rtol=1e-4, atol=1e-4)
