"""What the vLLM rollout engine hands vLLM, and the settings it refuses. No vLLM import here.

A prompt goes to vLLM as its chat-templated token ids with one placeholder per video or image
(vLLM runs the model's own HF processor to expand them) plus the *already decoded* frames with
their metadata, so vLLM's processor sees exactly the frames and timestamps the HF processor saw
(docs/methods.md#video-contract: decode once; the actual sampled fps, not the requested one). vLLM
rejects a bare frame array for Qwen-VL models ("Video metadata is required"); a `(frames, metadata)`
pair with `do_sample_frames=False` keeps it from sampling the frames again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch

from videorl.config import RolloutConfig
from videorl.errors import ConfigError
from videorl.models.inputs import PromptEncoding, hf_video_metadata

# Head sizes of vLLM's CPU attention kernels (vllm/v1/attention/backends/cpu_attn.py, 0.32).
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
# Qwen3.5's gated delta net (linear attention) on vLLM's CPU build (0.32): its kernel asserts
# bfloat16 ("CPU GDN attention requires BF16") and rejects a head size of 32 ("Unexpected
# head dim size"); 64 and 128 (Qwen3.5's own) run
# (docs/development.md#vllm-parity-make-test-vllm).
CPU_LINEAR_ATTENTION_DTYPE = "bfloat16"
CPU_LINEAR_HEAD_SIZES = (64, 128)
LINEAR_HEAD_KEYS = ("linear_key_head_dim", "linear_value_head_dim")
# What vLLM's CPU build needs of a model type beyond the attention head size (`cpu_limits`).
CPU_CONDITIONS = {
    "qwen3_5": f"CPU: {CPU_LINEAR_ATTENTION_DTYPE} only, linear-attention head size "
    + " or ".join(map(str, CPU_LINEAR_HEAD_SIZES)),
}
# Model types whose vLLM implementation the parity tests cover (tests/vllm).
SUPPORTED_MODEL_TYPES = ("qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3", "qwen2")
# The architecture (config.json `architectures`, vLLM's model registry key) of each model
# type `videorl make-tiny` builds: what `videorl doctor` looks up in the installed vLLM.
ARCHITECTURES = {
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_5": "Qwen3_5ForConditionalGeneration",
    "qwen3": "Qwen3ForCausalLM",
}
LOGPROB_NOTE = (
    "log-probs are log softmax(z / T) of the raw logits z over the whole vocabulary, as the HF "
    "engine returns them, only when T == 1 (greedy included); at other temperatures vLLM returns "
    "them after its logits processors (banned vision tokens removed, top-k/top-p applied)"
)


@dataclass(frozen=True)
class VLLMSettings:
    """How the colocated vLLM engine is built: the run's `rollout.*` keys (`RolloutConfig`,
    the one source of them) plus what the run decides: the model folder, dtype and seed.

    `rollout.vllm_sleep_level`: 0 keeps weights and KV cache resident; 1 offloads weights to
    CPU and frees the KV cache between rollout and the next weight sync; 2 frees both (the
    sync reloads the weights anyway). Sleep needs a GPU; on CPU `check_vllm_support` refuses
    it. `rollout.vllm_cpu_kv_cache_gb` sizes the KV cache when vLLM runs on the CPU (its
    `VLLM_CPU_KVCACHE_SPACE`).
    """

    model_path: str
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    dtype: str = "bfloat16"
    seed: int = 0

    @property
    def sleep_level(self) -> int:
        return self.rollout.vllm_sleep_level

    @property
    def logprobs_mode(self) -> str:
        """`raw_logprobs` equals the HF engine's log-probs at temperature 1 (see LOGPROB_NOTE)."""
        return "raw_logprobs" if self.rollout.temperature == 1.0 else "processed_logprobs"

    def media_limits(self) -> dict[str, int]:
        """vLLM's `limit_mm_per_prompt`: `rollout.videos_per_prompt` and `images_per_prompt`,
        plus, with `rollout.tools`, what the tool turns of a multi-turn context may add: each
        model turn but the last makes up to `MultiTurnLimits.max_calls_per_turn` calls, each
        with one clip or image (the built-in tools; raise the two keys for tools that
        return more)."""
        from videorl.rollout.multiturn import MultiTurnLimits

        rollout = self.rollout
        extra = (rollout.max_turns - 1) * MultiTurnLimits.max_calls_per_turn if rollout.tools else 0
        return {
            "video": rollout.videos_per_prompt + extra,
            "image": rollout.images_per_prompt + extra,
        }

    def engine_args(self, *, sleep_mode_available: bool) -> dict[str, Any]:
        """The keyword arguments of `vllm.LLM` these settings decide."""
        rollout = self.rollout
        return {
            "model": self.model_path,
            "dtype": self.dtype,
            "seed": self.seed,
            "tensor_parallel_size": rollout.tensor_parallel_size,
            "gpu_memory_utilization": rollout.gpu_memory_utilization,
            "max_model_len": rollout.max_model_len,
            "limit_mm_per_prompt": self.media_limits(),
            "enable_sleep_mode": sleep_mode_available and self.sleep_level > 0,
            "enforce_eager": rollout.vllm_enforce_eager,
            "logprobs_mode": self.logprobs_mode,
        }


def video_item(video: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    """A decoded video as vLLM's `(frames, metadata)` item: the same uint8 `T x C x H x W` frames
    and the same `VideoMetadata` fields that `encode_prompt` gives the HF processor."""
    meta = hf_video_metadata(video.meta, int(video.frames.shape[0]))
    fields = {k: v for k, v in asdict(meta).items() if v is not None}
    fields["frames_indices"] = list(fields["frames_indices"])
    return video.frames, {**fields, "do_sample_frames": False}


def _is_image(media: Any) -> bool:
    return media.meta is None or bool(media.meta.is_image)


def vllm_request(prompt: PromptEncoding) -> dict[str, Any]:
    """The vLLM prompt for one encoded prompt: unexpanded token ids plus its decoded media.

    A multi-turn context (`rollout/multiturn.py`) adds its tool turns' clips and images after
    the prompt's video and image: vLLM matches each modality's items to that modality's
    placeholders in order, as the HF processor does."""
    source = prompt.source
    if source is None:
        raise ValueError(
            "this PromptEncoding carries no source (template token ids and decoded media); "
            "build it with models.inputs.encode_prompt so the vLLM engine can use it"
        )
    request: dict[str, Any] = {"prompt_token_ids": source.token_ids.tolist()}
    videos = [source.video] if source.video is not None and not source.video_as_images else []
    images = [source.image] if source.image is not None else []
    frames = (
        list(source.video.frames) if source.video is not None and source.video_as_images else []
    )
    for item in source.tool_media:
        (images if _is_image(item) else videos).append(item)
    media: dict[str, Any] = {}
    if videos:
        media["video"] = [video_item(v) for v in videos]
    if images or frames:  # a prompt video given as images (data.video_as_images) goes first
        media["image"] = frames + [i.frames[0] for i in images]
    if media:
        request["multi_modal_data"] = media
    return request


def check_media_limits(request: dict[str, Any], limits: dict[str, int]) -> None:
    """Refuse a request with more items of a modality than vLLM's `limit_mm_per_prompt`
    (`VLLMSettings.media_limits`), naming the key to raise (vLLM's own error does not)."""
    for kind, items in request.get("multi_modal_data", {}).items():
        if len(items) > limits.get(kind, 0):
            raise ConfigError(
                f"a prompt (with its tool turns) holds {len(items)} {kind}s, over vLLM's limit "
                f"of {limits.get(kind, 0)}: raise rollout.{kind}s_per_prompt (with rollout.tools "
                "it counts one item per tool call)"
            )


def allowed_token_ids(vocab_size: int, banned: Sequence[int]) -> list[int]:
    """Every token id of the model's vocabulary except the banned vision placeholders (vLLM's
    `logit_bias` is clamped to +-100, so an allow-list is the exact equivalent of HF's
    `suppress_tokens`)."""
    ban = {int(t) for t in banned}
    return [t for t in range(vocab_size) if t not in ban]


def text_config(model_path: str | Path) -> dict[str, Any]:
    config = json.loads((Path(model_path) / "config.json").read_text())
    return {**config, **config.get("text_config", {})}


def _processor_configs(model_path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The image and video processor settings saved with a model (either file layout)."""
    folder = Path(model_path)
    combined = folder / "processor_config.json"
    if combined.is_file():
        data = json.loads(combined.read_text())
        if "image_processor" in data or "video_processor" in data:
            return data.get("image_processor", {}), data.get("video_processor", {})

    def read(name: str) -> dict[str, Any]:
        path = folder / name
        return json.loads(path.read_text()) if path.is_file() else {}

    return read("preprocessor_config.json"), read("video_preprocessor_config.json")


NORMALIZATION_KEYS = ("do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std")


def device_normalization_safe(model_path: str | Path) -> bool:
    """Whether vLLM may normalize pixels on the device (`mm_device_do_normalize`).

    vLLM builds that normalization from the *image* processor's mean/std and applies it to
    videos too; where the video processor normalizes differently (the tiny Qwen3-VL: CLIP
    statistics for images, 0.5/0.5 for videos) the video features would differ from the HF
    path's, so the engine then leaves normalization to the HF processor."""
    image, video = _processor_configs(model_path)
    if not video:
        return True
    return all(image.get(k) == video.get(k) for k in NORMALIZATION_KEYS if k in image or k in video)


def cpu_limits(model_path: str | Path, dtype: str) -> list[str]:
    """Why vLLM's CPU build cannot run this model in `dtype` (empty: it can)."""
    config = text_config(model_path)
    heads = int(config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or config["hidden_size"] // heads)
    reasons = []
    if head_dim not in CPU_HEAD_SIZES:
        reasons.append(
            f"the model's attention head size is {head_dim}, which vLLM's CPU attention kernels "
            f"lack (they support {', '.join(map(str, CPU_HEAD_SIZES))}); use a model with a "
            "supported head size (`videorl make-tiny` builds head size 32)"
        )
    if "linear_attention" in config.get("layer_types", []):
        if dtype != CPU_LINEAR_ATTENTION_DTYPE:
            reasons.append(
                f"vLLM's CPU kernel of the gated delta net (linear attention) runs in "
                f"{CPU_LINEAR_ATTENTION_DTYPE} only, not {dtype}; set model.dtype: "
                f"{CPU_LINEAR_ATTENTION_DTYPE}"
            )
        sizes = {int(config.get(k) or head_dim) for k in LINEAR_HEAD_KEYS}
        if not sizes <= set(CPU_LINEAR_HEAD_SIZES):
            reasons.append(
                f"the gated delta net's head size is {'/'.join(map(str, sorted(sizes)))}: vLLM's "
                f"CPU kernel runs {' and '.join(map(str, CPU_LINEAR_HEAD_SIZES))} (tested; it "
                "rejects 32, the tiny models' size)"
            )
    return reasons


def check_vllm_support(settings: VLLMSettings, *, on_cpu: bool, world_size: int) -> None:
    """Refuse settings the vLLM engine cannot honour, naming the key and the fix."""
    config = text_config(settings.model_path)
    model_type = json.loads((Path(settings.model_path) / "config.json").read_text())["model_type"]
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigError(
            f"rollout.engine=vllm: model type {model_type!r} ({settings.model_path}) has no parity-tested "
            f"vLLM path; use one of {', '.join(SUPPORTED_MODEL_TYPES)} or set rollout.engine=hf"
        )
    heads = int(config["num_attention_heads"])
    if on_cpu and (reasons := cpu_limits(settings.model_path, settings.dtype)):
        raise ConfigError(
            f"rollout.engine=vllm on CPU: {'; '.join(reasons)}; or set rollout.engine=hf"
        )
    tp = settings.rollout.tensor_parallel_size
    if tp < 1 or world_size % tp:
        raise ConfigError(
            f"rollout.tensor_parallel_size={tp} must be >= 1 and divide the {world_size} training ranks "
            "(one vLLM engine per data-parallel rank or per tensor-parallel group of consecutive ranks)"
        )
    if heads % tp:
        raise ConfigError(
            f"rollout.tensor_parallel_size={tp} must divide the model's {heads} attention heads"
        )
    if on_cpu and settings.sleep_level:
        raise ConfigError(
            f"rollout.vllm_sleep_level={settings.sleep_level}: vLLM's sleep mode needs a GPU; set it to 0 on CPU"
        )
    rollout = settings.rollout
    if rollout.max_model_len <= rollout.response_budget:
        key = "max_total_tokens" if rollout.tools else "max_new_tokens"
        raise ConfigError(
            f"rollout.max_model_len={rollout.max_model_len} leaves no room for the prompt "
            f"with rollout.{key}={rollout.response_budget}; raise it above "
            f"prompt length + {key}"
        )


@cache
def installed_architectures() -> tuple[str, frozenset[str]] | None:
    """The installed vLLM's version and the architectures its model registry runs; None
    where vLLM does not import (what fails is then reported when the engine is built)."""
    try:
        from vllm.model_executor.models.registry import ModelRegistry

        import vllm
    except ImportError:
        return None
    return str(vllm.__version__), frozenset(ModelRegistry.get_supported_archs())


def vllm_missing_piece(model_path: str) -> str | None:
    """What keeps the vLLM engine from running this model, in a few words (None: nothing):
    vLLM itself, a parity test of the model type, or the architecture in the installed vLLM."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'videorl[vllm]')"
    config_file = Path(model_path) / "config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    model_type = config.get("model_type")
    if model_type is not None and model_type not in SUPPORTED_MODEL_TYPES:
        return (
            f"model type {model_type!r} has no parity-tested vLLM path (tests/vllm covers "
            f"{', '.join(SUPPORTED_MODEL_TYPES)})"
        )
    architecture = (config.get("architectures") or [None])[0]
    installed = installed_architectures()
    if installed is not None and architecture is not None and architecture not in installed[1]:
        return (
            f"the installed vLLM {installed[0]} has no {architecture} (model type "
            f"{model_type!r}); upgrade it (pip install -U 'videorl[vllm]')"
        )
    return None


def rollout_engine(engine: str, model_path: str, key: str = "rollout.engine") -> str:
    """The engine a run uses for `key` (`rollout.engine`, `algorithm.distill.teacher_engine`):
    its value, except that `vllm` falls back to `hf` with a one-line warning naming the
    missing piece (`vllm_missing_piece`); the GPU recipes select vLLM, as the published
    setups do."""
    import logging

    if engine != "vllm":
        return engine
    reason = vllm_missing_piece(model_path)
    if reason is None:
        return "vllm"
    logging.getLogger("videorl").warning(
        "%s=vllm: %s; using the HF engine (set %s=hf to silence)", key, reason, key
    )
    return "hf"
