"""The vLLM rollout engine: colocated fast generation behind the HF engine's interface.

One vLLM engine lives in each training process (the optional `vllm` extra), in-process
(`VLLM_ENABLE_V1_MULTIPROCESSING=0`) so that weights can be pushed to it directly. Under
torchrun it is built with vLLM's `external_launcher`: one engine per data-parallel rank, or
one per tensor-parallel group of consecutive ranks (the group's ranks pool their prompts,
since vLLM needs the same requests on every rank of a group).

- `generate` / `continue_prefixes` return what the HF engine returns: token ids with EOS kept,
  the sampled tokens' log-probs (`vllm_support.LOGPROB_NOTE`), and a truncation flag; vision
  placeholder tokens are never sampled.
- Video goes in as the already-decoded frames plus their metadata (`vllm_support.video_item`).
- A multi-turn context (`rollout/multiturn.py`, `rollout.tools`) goes in like a prompt: its
  tokens before the processor expanded the media placeholders, and every media item (the
  prompt's, then the tool turns' clips and images); vLLM expands them itself. Every request's
  expanded tokens are checked against the HF encoding's (`_check_prompt`), so the tokens
  vLLM samples after are those the loss forward scores.
- `sync_weights` gathers the policy's full state dict (checkpoint names; vLLM repacks its
  fused and CPU-packed layers itself) and pushes it with generation paused, by one of two
  paths chosen by feature detection (`vllm_transfer.sync_features`): `native`, vLLM's
  weight-transfer API (`start_weight_update` / `update_weights` per chunk /
  `finish_weight_update`) with videorl's in-process backend, where the installed vLLM has it;
  `reload`, the worker's `reload_weights`, otherwise. Either way it then resets the encoder,
  multi-modal and prefix caches, which hold results of the old weights (a stale encoder-cache
  entry makes the next video request fail with a cache miss).
- `token_logprobs` scores given responses (vLLM's prompt log-probs): the distillation
  teacher on vLLM (`algorithm.distill.teacher_engine: vllm`).
- `sleep` frees the KV cache (and weights, level 2) between the rollout and the next sync.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import torch

from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding, with_prefix
from videorl.models.loading import LoadedModel, local_snapshot
from videorl.rollout.vllm_support import (
    VLLMSettings,
    allowed_token_ids,
    check_media_limits,
    check_vllm_support,
    device_normalization_safe,
    vllm_request,
)

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from videorl.config import Config
    from videorl.distributed import DistInfo

log = logging.getLogger(__name__)


def _group_ranks(tp: int) -> tuple[int, list[list[int]]]:
    """This rank's tensor-parallel group index and all groups (consecutive ranks)."""
    import torch.distributed as dist

    world, rank = dist.get_world_size(), dist.get_rank()
    return rank // tp, [list(range(start, start + tp)) for start in range(0, world, tp)]


class VLLMEngine:
    """Rollouts with vLLM; `loaded` is the HF model that scores them (the policy or its copy)."""

    def __init__(self, loaded: LoadedModel, settings: VLLMSettings) -> None:
        # in-process engine core: weights are pushed to it directly, and torchrun's
        # external launcher requires it
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault(
            "VLLM_CPU_KVCACHE_SPACE", f"{settings.rollout.vllm_cpu_kv_cache_gb:g}"
        )
        from vllm.platforms import current_platform

        from videorl.rollout.vllm_transfer import register_backend, sync_features
        from vllm import LLM

        self.loaded = loaded
        self._group: ProcessGroup | None = None
        self._lockstep = False
        extra: dict[str, Any] = {}
        if (
            torch.distributed.is_available()
            and torch.distributed.is_initialized()
            and torch.distributed.get_world_size() > 1
        ):
            world, tp = torch.distributed.get_world_size(), settings.rollout.tensor_parallel_size
            extra = {
                "distributed_executor_backend": "external_launcher",
                "data_parallel_size": world // tp,
            }
            self._lockstep = world // tp > 1
            # one seed per group (vLLM needs it equal within a group), another per data-parallel rank
            settings = replace(settings, seed=settings.seed + torch.distributed.get_rank() // tp)
            if tp > 1:
                index, groups = _group_ranks(tp)
                made = [torch.distributed.new_group(ranks, backend="gloo") for ranks in groups]
                # this rank's own group, never GroupMember.NON_GROUP_MEMBER
                self._group = cast("ProcessGroup", made[index])
        if not device_normalization_safe(settings.model_path):
            log.info(
                "%s: image and video processors normalize differently; vLLM normalizes pixels on the host",
                settings.model_path,
            )
            extra["mm_device_do_normalize"] = False
        self.settings = settings
        self.features = sync_features(LLM)
        # "native": vLLM's weight-transfer API; "reload": the worker's reload_weights
        self.sync_path = "native" if self.features.native_weight_transfer else "reload"
        if self.sync_path == "native":
            extra["weight_transfer_config"] = {"backend": register_backend()}
        on_gpu = current_platform.is_sleep_mode_available()
        self.llm = LLM(**settings.engine_args(sleep_mode_available=on_gpu), **extra)
        if self.sync_path == "native":
            self.llm.init_weight_transfer_engine({"init_info": {}})
        vocab = self.llm.llm_engine.model_config.get_vocab_size()
        self._allowed = allowed_token_ids(vocab, loaded.banned_token_ids)
        self._eos = list(loaded.eos_token_ids)
        self._asleep = False

    # --- generation -------------------------------------------------------------------------

    def _sampling(self, params: SamplingParams, max_tokens: int, n: int) -> Any:
        from vllm import SamplingParams as VSamplingParams

        return VSamplingParams(
            n=n,
            temperature=max(0.0, params.temperature),
            top_p=params.top_p,
            top_k=params.top_k,
            max_tokens=max_tokens,
            logprobs=0 if params.logprobs else None,
            stop_token_ids=self._eos,
            allowed_token_ids=self._allowed,
            detokenize=False,
        )

    def _run(self, requests: list[dict[str, Any]], sampling: list[Any]) -> list[Any]:
        """vLLM outputs for this rank's requests; a tensor-parallel group runs the union.

        Data-parallel engines step in lockstep (vLLM all-reduces "unfinished?" every step), so
        under torchrun every rank makes the same sequence of calls, with no requests if need be.
        """
        if self._group is not None:
            size = torch.distributed.get_world_size(self._group)
            pooled: list[Any] = [None] * size
            torch.distributed.all_gather_object(pooled, (requests, sampling), group=self._group)
            start = sum(len(r) for r, _ in pooled[: torch.distributed.get_rank(self._group)])
            every = [x for r, _ in pooled for x in r]
            outputs = self._generate(every, [s for _, ss in pooled for s in ss])
            return outputs[start : start + len(requests)]
        return self._generate(requests, sampling)

    def _generate(self, requests: list[dict[str, Any]], sampling: list[Any]) -> list[Any]:
        if not requests and not self._lockstep:
            return []
        return self.llm.generate(requests, sampling, use_tqdm=False)

    def _wake(self) -> None:
        if self._asleep:
            if self.settings.sleep_level == 2:
                raise RuntimeError(
                    "the vLLM engine dropped its weights (rollout.vllm_sleep_level=2); "
                    "call sync_weights before generating again"
                )
            self.llm.wake_up()
            self._asleep = False

    @property
    def lockstep(self) -> bool:
        """Whether this engine's calls must pair one for one with other ranks': data-parallel
        engines (vLLM all-reduces every step) or a tensor-parallel group (its ranks pool
        their requests). A multi-turn rollout then pads its turns (`generate_tool_groups`)."""
        return self._lockstep or self._group is not None

    @staticmethod
    def _check_prompt(prompt: PromptEncoding, output: Any) -> None:
        """vLLM's expanded prompt must be the HF processor's tokens: otherwise it samples
        after another context than the one the loss forward scores."""
        got = output.prompt_token_ids
        if got is None:
            return
        expected = prompt.input_ids.tolist()
        if list(got) != expected:
            at = next(
                (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                min(len(got), len(expected)),
            )
            raise RuntimeError(
                f"vLLM expanded the prompt's media placeholders into other tokens than the HF "
                f"processor ({len(got)} vs {len(expected)} tokens, first difference at {at}); "
                "its samples would not be scored over the context they were drawn from"
            )

    def _to_generation(self, output: Any) -> Generation:
        ids, lps, cut = [], [], []
        for completion in sorted(output.outputs, key=lambda c: c.index):
            tokens = torch.tensor(list(completion.token_ids), dtype=torch.long)
            logprobs = [
                step[int(t)].logprob
                for t, step in zip(completion.token_ids, completion.logprobs or [], strict=False)
            ]
            ids.append(tokens)
            lps.append(torch.tensor(logprobs, dtype=torch.float32))
            cut.append(not (tokens.numel() and int(tokens[-1]) in self._eos))
        return Generation(token_ids=ids, logprobs=lps, truncated=cut)

    def generate(
        self, prompts: Sequence[PromptEncoding], params: SamplingParams
    ) -> list[Generation]:
        """`params.n` responses per prompt in one batched vLLM call."""
        self._wake()
        sampling = self._sampling(params, params.max_new_tokens, params.n)
        requests = [vllm_request(p) for p in prompts]
        limits = self.settings.media_limits()
        for request in requests:
            check_media_limits(request, limits)
        outputs = self._run(requests, [sampling] * len(prompts))
        for prompt, output in zip(prompts, outputs, strict=True):
            self._check_prompt(prompt, output)
        return [self._to_generation(o) for o in outputs]

    def continue_prefixes(
        self,
        prompts: Sequence[PromptEncoding],
        prefixes: Sequence[torch.Tensor],
        params: SamplingParams,
    ) -> list[Generation]:
        """One continuation per (prompt, prefix) within the remaining budget; the returned
        response includes the prefix (log-prob 0 on forced tokens, as in the HF engine)."""
        self._wake()
        requests, sampling, budgets, extended = [], [], [], []
        for prompt, prefix in zip(prompts, prefixes, strict=True):
            budget = max(0, params.max_new_tokens - prefix.numel())
            budgets.append(budget)
            if budget:
                extended.append(with_prefix(prompt, prefix))
                requests.append(vllm_request(extended[-1]))
                sampling.append(self._sampling(params, budget, 1))
        outputs = self._run(requests, sampling)
        for prompt, output in zip(extended, outputs, strict=True):
            self._check_prompt(prompt, output)
        continued = iter([self._to_generation(o) for o in outputs])
        out = []
        for prefix, budget in zip(prefixes, budgets, strict=True):
            prefix = prefix.to(torch.long)[: params.max_new_tokens]
            gen = next(continued) if budget else None
            tokens = torch.cat([prefix, gen.token_ids[0]]) if gen else prefix
            logprobs = torch.zeros(0)
            if params.logprobs:  # forced prefix tokens were not sampled: log-prob 0
                logprobs = torch.cat(
                    [torch.zeros(prefix.numel()), gen.logprobs[0] if gen else torch.zeros(0)]
                )
            truncated = gen.truncated if gen else [True]
            out.append(Generation(token_ids=[tokens], logprobs=[logprobs], truncated=truncated))
        return out

    def token_logprobs(
        self, prompts: Sequence[PromptEncoding], responses: Sequence[torch.Tensor]
    ) -> list[torch.Tensor]:
        """Each response's per-token log-probs under vLLM's model, log softmax of the raw
        logits (temperature 1): vLLM's prompt log-probs of prompt + response, the response's
        part. What the HF teacher's `logprobs_in_microbatches(..., temperature=1)` returns."""
        from vllm import SamplingParams as VSamplingParams

        self._wake()
        # one token is generated (vLLM runs a request to at least one); its output is unused
        params = VSamplingParams(max_tokens=1, temperature=0, prompt_logprobs=0, detokenize=False)
        extended = [
            with_prefix(prompt, response.to(torch.long))
            for prompt, response in zip(prompts, responses, strict=True)
        ]
        outputs = self._run([vllm_request(p) for p in extended], [params] * len(extended))
        for prompt, output in zip(extended, outputs, strict=True):
            self._check_prompt(prompt, output)
        out = []
        for output, response in zip(outputs, responses, strict=True):
            n = int(response.numel())
            steps = output.prompt_logprobs[len(output.prompt_logprobs) - n :] if n else []
            ids = response.tolist()
            out.append(
                torch.tensor(
                    [step[t].logprob for step, t in zip(steps, ids, strict=True)],
                    dtype=torch.float32,
                )
            )
        return out

    # --- weights and memory -----------------------------------------------------------------

    def sleep(self) -> None:
        """Free vLLM's KV cache (level 1: and offload weights to CPU; level 2: drop them, so the
        next call must be `sync_weights`) until the next call; a no-op with `sleep_level=0`."""
        if self.settings.sleep_level and not self._asleep:
            self.llm.sleep(level=self.settings.sleep_level)
            self._asleep = True

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Push the policy's full (gathered, under FSDP) weights into vLLM and the scoring copy."""
        from videorl.distributed import full_state_dict
        from videorl.models.lora import is_peft, merged_state_dict

        # LoRA: vLLM gets the merged weights W + scale * B A under the base model's names
        state = merged_state_dict(policy) if is_peft(policy) else full_state_dict(policy)
        if policy is not self.loaded.model:
            self.loaded.model.load_state_dict(state)
        weights = list(state.items())
        if self._asleep:  # asleep, the scheduler is paused already; waking it all resumes it
            self.llm.wake_up(tags=["weights"])
            self._push(weights)
            self.llm.wake_up(tags=["kv_cache"])
            self._asleep = False
            self.reset_caches()
            return
        pause = self.features.pause
        if pause:  # no request runs between here and the resume, on the old or new weights
            self.llm.sleep(level=0, mode="keep")
        try:
            self._push(weights)
            self.reset_caches()
        finally:
            if pause:
                self.llm.wake_up(tags=["scheduling"])

    def _push(self, weights: list[tuple[str, torch.Tensor]]) -> None:
        """The weights into vLLM's model, by `self.sync_path`."""
        if self.sync_path == "native":
            from videorl.rollout.vllm_transfer import chunks

            self.llm.start_weight_update()
            for chunk in chunks(weights):
                self.llm.update_weights({"update_info": {"weights": chunk}})
            self.llm.finish_weight_update()
        else:
            self.llm.collective_rpc(
                "reload_weights",
                kwargs={"weights_iterator": weights, "is_checkpoint_format": True},
            )

    def close(self) -> None:
        """Shut the in-process engine core down (frees its KV cache; a new engine may follow)."""
        self.llm.llm_engine.engine_core.shutdown()

    def reset_caches(self) -> None:
        """Drop everything computed with the old weights: encoder outputs (scheduler and
        worker side), processed multi-modal inputs, and prefix KV blocks."""
        self.llm.llm_engine.reset_encoder_cache()
        self.llm.reset_mm_cache()
        self.llm.reset_prefix_cache()


def build_vllm_engine(cfg: Config, loaded: LoadedModel, info: DistInfo) -> VLLMEngine:
    """The engine for `rollout.engine: vllm`, after refusing what it cannot honour."""
    on_gpu = "cuda" in info.device
    settings = VLLMSettings(
        model_path=str(local_snapshot(cfg.model.path, cfg.model.revision)),
        rollout=cfg.rollout,
        dtype="bfloat16" if on_gpu and cfg.trainer.bf16 else cfg.model.dtype,
        seed=cfg.trainer.seed,
    )
    check_vllm_support(settings, on_cpu=not on_gpu, world_size=info.world_size)
    return VLLMEngine(loaded, settings)


def build_vllm_teacher(cfg: Config, teacher: LoadedModel, info: DistInfo) -> VLLMEngine:
    """The teacher's engine for `algorithm.distill.teacher_engine: vllm`: the rollout's vLLM
    settings (memory share, lengths, parallelism) with the teacher's weights, never asleep
    (it only scores, `token_logprobs`, and is never synced)."""
    assert cfg.model.teacher_path, "Config validation requires it for distillation"
    on_gpu = "cuda" in info.device
    settings = VLLMSettings(
        model_path=str(local_snapshot(cfg.model.teacher_path)),
        rollout=replace(cfg.rollout, vllm_sleep_level=0),
        dtype="bfloat16" if on_gpu and cfg.trainer.bf16 else cfg.model.dtype,
        seed=cfg.trainer.seed,
    )
    check_vllm_support(settings, on_cpu=not on_gpu, world_size=info.world_size)
    return VLLMEngine(teacher, settings)
