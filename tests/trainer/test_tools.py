"""Multi-turn rollouts with tools through `train_step` (docs/tools.md): a scripted policy
calls `get_clip` in half of its rows, so the wiring is proven whatever a tiny model samples.

Checked for GRPO, GSPO and DAPO's settings on Dr.GRPO: the update's forwards see exactly the
tokens, token types and frames of the rollout's last generation call; tool-turn tokens are
out of the loss mask and the advantages; the trainer's no-grad log-probs over the whole
trajectory equal a direct forward of the rollout's inputs; the reward receives the calls;
the `tools/*` metrics count them.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.models.inputs import collate
from videorl.models.logprobs import response_logprobs
from videorl.reduction import logged
from videorl.rollout.multiturn import loss_inputs
from videorl.rollout.scripted import ScriptedEngine
from videorl.trainer import update as update_module
from videorl.trainer.build import build_state, tool_runner
from videorl.trainer.step import STAGES, train_step

CALL = '<tool_call>{"name": "get_clip", "arguments": {"start": 1, "end": 3, "fps": 4}}</tool_call>'
ANSWER = "<answer>1 to 3</answer>"
TOOLS = [
    "rollout.tools=[get_clip]",
    "rollout.max_turns=3",
    "rollout.max_total_tokens=400",
]
TOOL_REWARD = {"temporal_grounding": "tests.trainer.tool_reward:reward"}
LOSSES = {
    "grpo": [],
    "gspo": ["algorithm.loss.name=gspo"],
    "dapo_dr_grpo": [
        "algorithm.estimator=dr_grpo",
        "algorithm.loss.clip_high=0.28",
        "algorithm.loss.aggregation=token-mean",
        "reward.overlong.enabled=true",
        "reward.overlong.buffer_len=64",
    ],
}


# the first turn of an even-numbered sample calls `get_clip`, every other turn answers
SCRIPT = [[CALL, ANSWER], [ANSWER]]


def step_with_spies(config):
    """One `train_step` of `config` with the scripted engine; returns the state, the engine
    and what the update saw (its batch, its forwards' rows, its old log-probs and
    micro-batches, and direct forwards of each trajectory before the update)."""
    state = build_state(config, None)
    engine = ScriptedEngine(state.engine.loaded, SCRIPT)
    state.engine = engine
    seen: dict = {"forwards": []}
    real_rows_logprobs = update_module.rows_logprobs

    def spy_forward(loaded, prompts, responses, *, temperature, response_token_types=None):
        seen["forwards"].append((list(prompts), list(responses), response_token_types))
        return real_rows_logprobs(
            loaded,
            prompts,
            responses,
            temperature=temperature,
            response_token_types=response_token_types,
        )

    def spy_update(ctx, batch):
        rows = list(range(batch.num_rows))
        old = update_module._logprobs(ctx, ctx.policy, batch, rows)
        seen.update(batch=batch, ctx=ctx, old_logp=old)
        seen["direct"] = [_direct_logprobs(ctx.policy, t) for t in batch.trajectories]
        seen["micros"] = update_module.plan_micro_batches(ctx, batch, rows, old, None, set())
        return STAGES.update(ctx, batch)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(update_module, "rows_logprobs", spy_forward)
        try:
            result = train_step(
                state, state.sampler.next_batch(), replace(STAGES, update=spy_update)
            )
            metrics = logged(result.metrics)  # as the loop logs them
        finally:
            state.tools.close()
    return state, engine, seen, metrics


@pytest.fixture(scope="module")
def stepped(build_config, tmp_path_factory):
    """One step per loss setting (`LOSSES`) with the scripted engine."""
    out = {}
    for name, extra in LOSSES.items():
        config, _ = build_config("grpo", tmp_path_factory.mktemp(name) / "run", *TOOLS, *extra)
        config = replace(config, reward=replace(config.reward, plugins=TOOL_REWARD))
        out[name] = step_with_spies(config)
    return out


@pytest.mark.parametrize("name", list(LOSSES))
def test_tool_rows_train_with_masked_tool_tokens(stepped, name):
    state, _, seen, metrics = stepped[name]
    batch = seen["batch"]
    n = state.cfg.rollout.n
    calling = [i for i in range(batch.num_rows) if i % n % 2 == 0]
    assert batch.trajectories is not None and len(batch.trajectories) == batch.num_rows
    # metrics: half the rows made one call each, which ran; they took two turns
    assert metrics["tools/calls_per_row"] == 0.5 and metrics["tools/errors_per_row"] == 0
    assert metrics["tools/turns_mean"] == 1.5 and metrics["tools/turns_max"] == 2
    assert metrics["tools/seconds/get_clip"] > 0
    # the reward saw the calls (the plug-in pays a row that called get_clip)
    assert batch.rewards.tolist() == [float(i in calling) for i in range(batch.num_rows)]
    assert [c["calls"] for c in batch.components] == batch.rewards.tolist()
    mask, advantages = batch.response_mask(), batch.token_advantages()
    for i, trajectory in enumerate(batch.trajectories):
        assert trajectory.text == ANSWER and batch.texts[i] == ANSWER
        length = trajectory.response_ids.numel()
        assert torch.equal(mask[i, :length], trajectory.loss_mask)
        if i in calling:
            assert trajectory.calls == 1 and len(trajectory.media) == 2  # prompt video + clip
            tool = trajectory.loss_mask == 0
            assert tool.sum() > 0 and (trajectory.response_token_types[tool] == 2).any()
            assert (advantages[i, :length][tool] == 0).all()
            assert (advantages[i, :length][~tool] != 0).all()
        else:
            assert trajectory.calls == 0 and bool(trajectory.loss_mask.all())
    # the update's micro-batches carry that mask to the loss
    for micro in seen["micros"]:
        for j, response in enumerate(micro.responses):
            i = next(k for k, r in enumerate(batch.responses) if r is response)
            assert torch.equal(micro.loss_mask[j], mask[i, : micro.loss_mask.shape[1]])


@pytest.mark.parametrize("name", list(LOSSES))
def test_the_update_sees_the_frames_of_the_last_generation_call(stepped, name):
    state, engine, seen, _ = stepped[name]
    batch, pad = seen["batch"], state.policy.pad_token_id
    n = state.cfg.rollout.n
    calling = [i for i in range(batch.num_rows) if i % n % 2 == 0]
    # the second generation call continued exactly the calling rows, in row order
    contexts = engine.calls[1]
    assert len(contexts) == len(calling)
    # the rows of the update's loss forwards (micro-batches), by response tensor
    forwards = {
        id(response): (prompt, response, row_types)
        for prompts, responses, types in seen["forwards"]
        for prompt, response, row_types in zip(prompts, responses, types, strict=True)
    }
    assert len(forwards) == batch.num_rows
    for row, context in zip(calling, contexts, strict=True):
        prompt, response, types = forwards[id(batch.responses[row])]
        inputs, _ = collate([prompt], [response], pad, [types])
        generated, _ = collate([context], None, pad)
        width = generated["input_ids"].shape[1]
        for key in ("input_ids", "mm_token_type_ids"):
            assert torch.equal(inputs[key][:, :width], generated[key]), key
        for key in ("pixel_values_videos", "video_grid_thw"):
            assert torch.equal(inputs[key], generated[key]), key
        assert inputs["video_grid_thw"].shape[0] == 2  # the prompt's video and the clip


def _direct_logprobs(policy, trajectory) -> torch.Tensor:
    """[R] log-probs of the trajectory's tokens from the rollout's own inputs (`loss_inputs`:
    the tensors the generation calls saw), before the update."""
    inputs, mask = loss_inputs([trajectory], policy.pad_token_id)
    targets = inputs["input_ids"][:, -mask.shape[1] :]
    with torch.no_grad():
        logp, _ = response_logprobs(policy.model, inputs, targets, temperature=1.0)
    return logp[0]


@pytest.mark.parametrize("name", list(LOSSES))
def test_trainer_logprobs_of_a_trajectory_equal_the_rollout_forward(stepped, name):
    _, _, seen, _ = stepped[name]
    batch, old_logp = seen["batch"], seen["old_logp"]
    for i, trajectory in enumerate(batch.trajectories):
        model_tokens = trajectory.loss_mask.bool()
        torch.testing.assert_close(
            old_logp[i, : model_tokens.numel()][model_tokens],
            seen["direct"][i][model_tokens],
            atol=1e-4,
            rtol=0,
        )


def test_tool_names_and_combinations_are_checked(make_config):
    config, _ = make_config("grpo", "rollout.tools=[get_clip, zoom_everything]")
    with pytest.raises(ConfigError, match=r"rollout.tools .*'zoom_everything'.*get_clip"):
        tool_runner(config)
    with pytest.raises(ConfigError, match="rollout.tool_modules: cannot import 'no_such_mod'"):
        tool_runner(
            load_config(None, ["rollout.tools=[crop]", "rollout.tool_modules=[no_such_mod]"])
        )
    # the vLLM engine takes multi-turn contexts (tests/vllm/test_multiturn_parity.py)
    assert load_config(None, ["rollout.tools=[crop]", "rollout.engine=vllm"]).rollout.tools
    with pytest.raises(ConfigError, match="reward.sensitivity.enabled"):
        make_config("grpo", "rollout.tools=[crop]", "reward.sensitivity.enabled=true")
    with pytest.raises(ConfigError, match="rollout.max_total_tokens=32"):
        make_config(
            "grpo",
            "rollout.tools=[crop]",
            "rollout.max_total_tokens=32",
            "reward.overlong.enabled=true",
            "reward.overlong.buffer_len=64",
        )
