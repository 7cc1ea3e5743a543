"""Tiny random-init models built offline, saved like real checkpoints.

No weights can be downloaded on the machines videorl is tested on, so tests, the quickstart
and the benchmarks build small models from config dicts: a byte-level BPE tokenizer trained
in-process with the family's special tokens and chat template, the real processor classes,
`save_pretrained`, and everything downstream loads them with `from_pretrained`.

Attention head size is 32 (default) or 64 (bench size): vLLM's CPU attention kernels
support only 32, 64, 80, 96, 112, 128 and up.

Real-scale presets (`--size 3b|7b` for Qwen2.5-VL, `4b|8b` for Qwen3-VL and Qwen3.5, 9b for
Qwen3.5) have the published dimensions of the released configs (layers, hidden, heads, KV
heads, head size, intermediate, vision tower depth and width, tied embeddings, the published
vocabulary size as embedding rows) and random weights; our small tokenizer uses only the
first few hundred of those rows. `device="cuda"` builds them directly on the GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from videorl.errors import ConfigError
from videorl.models.specs import (  # noqa: F401  (ARCHS, SIZES, PRESETS: the public names)
    ARCHS,
    PRESETS,
    SIZES,
    SPECS,
    TinySpec,
    model_spec,
    sizes_for,
)
from videorl.models.vision_warmup import WarmupReport, WarmupSettings, warm_up_vision

if TYPE_CHECKING:
    from transformers import PreTrainedModel

_PRETOKENIZE = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
THINK_TOKENS = ("<think>", "</think>")

# The Qwen-VL chat template (images and videos as content parts), shared by all four archs.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Text the tokenizer is trained on: the answer protocol, numbers, JSON and prompt words.
_CORPUS = (
    [
        "<think>\nI need to find the specific moment when the red square appears.\n</think>",
        "<answer>2.5 to 7</answer> <answer>8.50s to 12.40s</answer> <answer>B</answer>",
        '<answer>{"boxes": {"0": [10, 20, 30, 40]}, "time": [1.5, 3.0]}</answer>',
        '{"bbox_2d": [12, 34, 56, 78], "positive_points": [[1, 2]], "negative_points": [[3, 4]]}',
        "From 0.0 to 2.5, a blue circle moves left. From 2.5 to 5.0, the square turns green.",
        "When does the shape change colour? Give the start and end time in seconds.",
        "Which option is correct? A. red B. green C. blue D. yellow. Answer with the letter.",
        "How many objects are there? What is the distance in meters between the two objects?",
        "Track the object and give its box in each listed frame. Output the bounding box.",
        "Solve the problem and put the final answer in \\boxed{42}. The answer is 3 + 4 = 7.",
        "Tom has 12 apples and gives 5 to Ann. How many apples does Tom have left?",
    ]
    + [" ".join(str(i) for i in range(k, k + 50)) for k in range(0, 1000, 50)]
    + [" ".join(f"{i / 10:.1f}" for i in range(k, k + 40)) for k in range(0, 400, 40)]
)


def train_tokenizer(vocab_size: int, think_tokens: bool) -> Tokenizer:
    """Byte-level BPE with the Qwen pre-tokenizer, trained on a small in-process corpus."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 4, trainer=trainer)
    if think_tokens:
        tokenizer.add_tokens(list(THINK_TOKENS))
    return tokenizer


def _hf_tokenizer(arch: str, spec: TinySpec) -> Any:
    import json

    from transformers import Qwen2Tokenizer

    trained = train_tokenizer(spec.vocab, think_tokens=arch != "qwen2_5_vl")
    state = json.loads(trained.to_str())
    tokenizer = Qwen2Tokenizer(
        vocab=state["model"]["vocab"],
        # transformers annotates merges as list[str]; its tokenizers BPE takes (a, b) pairs
        merges=[
            tuple(m) if isinstance(m, list) else tuple(m.split(" "))  # type: ignore[misc]
            for m in state["model"]["merges"]
        ],
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
    )
    if arch != "qwen2_5_vl":
        tokenizer.add_tokens(list(THINK_TOKENS))
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _rope(arch: str, head_dim: int, section: tuple[int, int, int] | None = None) -> dict:
    """Multimodal RoPE sections: they must sum to the rotary half-dimension (`section`, when
    given, is the published one)."""
    rope = _derived_rope(arch, head_dim)
    if section is not None and "mrope_section" in rope:
        rope["mrope_section"] = list(section)
    return rope


def _derived_rope(arch: str, head_dim: int) -> dict:
    if arch == "qwen2_5_vl":
        half = head_dim // 2
        return {
            "rope_type": "default",
            "rope_theta": 1e6,
            "mrope_section": [half // 4, 3 * half // 8, 3 * half // 8],
        }
    if arch == "qwen3_vl":
        half = head_dim // 2
        t = half - 2 * (5 * half // 16)
        return {
            "rope_type": "default",
            "rope_theta": 5e6,
            "mrope_section": [t, 5 * half // 16, 5 * half // 16],
            "mrope_interleaved": True,
        }
    if arch == "qwen3_5":
        half = int(head_dim * 0.25) // 2
        return {
            "rope_type": "default",
            "rope_theta": 1e7,
            "mrope_section": [half - 2 * (half // 4), half // 4, half // 4],
            "mrope_interleaved": True,
            "partial_rotary_factor": 0.25,
        }
    return {"rope_type": "default", "rope_theta": 1e6}


def _config(arch: str, spec: TinySpec, tokenizer: Any) -> Any:
    from transformers import Qwen2_5_VLConfig, Qwen3_5Config, Qwen3Config, Qwen3VLConfig

    head_dim = spec.head_size
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = {
        "vocab_size": max(spec.embedding_rows or 0, len(tokenizer)),
        "hidden_size": spec.hidden,
        "intermediate_size": spec.intermediate,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "max_position_embeddings": spec.max_positions,
        "rope_parameters": _rope(arch, head_dim, spec.mrope_section),
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    tie = {} if spec.tie_embeddings is None else {"tie_word_embeddings": spec.tie_embeddings}
    text.update(tie)
    if arch == "qwen3":
        return Qwen3Config(**{**text, "tie_word_embeddings": False}, head_dim=head_dim)
    vision: dict[str, Any] = {
        "depth": spec.vision_depth,
        "hidden_size": spec.vision_hidden,
        "intermediate_size": spec.vision_intermediate or 2 * spec.vision_hidden,
        "num_heads": spec.vision_heads,
        "out_hidden_size": spec.hidden,
    }
    tokens = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        **tie,
    }
    if arch == "qwen2_5_vl":
        full = list(spec.vision_full_attention or (spec.vision_depth - 1,))
        vision.update(patch_size=14, window_size=112, fullatt_block_indexes=full)
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **tokens)
    vision.update(patch_size=16, num_position_embeddings=spec.vision_positions)
    if arch == "qwen3_vl":
        vision.update(deepstack_visual_indexes=list(spec.deepstack))
        return Qwen3VLConfig(
            text_config={**text, "head_dim": head_dim}, vision_config=vision, **tokens
        )
    key_heads, value_heads = spec.linear_heads or (spec.kv_heads, spec.heads)
    every = spec.full_attention_every
    text.update(
        head_dim=head_dim,
        linear_key_head_dim=spec.linear_head_dim or head_dim,
        linear_value_head_dim=spec.linear_head_dim or head_dim,
        linear_num_key_heads=key_heads,
        linear_num_value_heads=value_heads,
        layer_types=(["linear_attention"] * (every - 1) + ["full_attention"])
        * (spec.layers // every),
    )
    if spec.published:
        vision.update(deepstack_visual_indexes=list(spec.deepstack))
    return Qwen3_5Config(text_config=text, vision_config=vision, **tokens)


def _processor(arch: str, tokenizer: Any, published: bool = False) -> Any:
    from transformers import (
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    patch = 14 if arch == "qwen2_5_vl" else 16
    factor = patch * 2
    # tiny: small frames; published: the released processors' limits (in merged patches:
    # images up to 16384, Qwen2.5-VL video frames up to 768 each, Qwen3 videos 24576 in all)
    longest = {"image": 16384, "frame": 768, "video": 24576} if published else None
    pixels = {
        "shortest_edge": 4 * factor * factor,
        "longest_edge": (longest["image"] if longest else 16) * factor * factor,
    }
    video_pixels = {
        "shortest_edge": pixels["shortest_edge"],
        "longest_edge": (longest["frame"] * factor * factor) if longest else pixels["longest_edge"],
    }
    image = Qwen2VLImageProcessor(
        patch_size=patch, temporal_patch_size=2, merge_size=2, size=pixels
    )
    video: Qwen2VLVideoProcessor | Qwen3VLVideoProcessor
    if arch == "qwen2_5_vl":
        video = Qwen2VLVideoProcessor(
            patch_size=patch, temporal_patch_size=2, merge_size=2, size=video_pixels
        )
        return Qwen2_5_VLProcessor(
            image_processor=image,
            tokenizer=tokenizer,
            video_processor=video,
            chat_template=CHAT_TEMPLATE,
        )
    video = Qwen3VLVideoProcessor(
        patch_size=patch,
        temporal_patch_size=2,
        merge_size=2,
        size={
            "shortest_edge": pixels["shortest_edge"],
            "longest_edge": (longest["video"] * factor * factor)
            if longest
            else 64 * pixels["longest_edge"],
        },
    )
    return Qwen3VLProcessor(
        image_processor=image,
        tokenizer=tokenizer,
        video_processor=video,
        chat_template=CHAT_TEMPLATE,
    )


@dataclass(frozen=True)
class BuiltModel:
    """What `build_model` wrote."""

    path: Path
    params: int
    embedding_rows: int
    tokenizer_size: int
    seconds: float
    vision_warmup: WarmupReport | None = None


def _model_class(arch: str) -> type[Any]:
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    return AutoModelForCausalLM if arch == "qwen3" else AutoModelForImageTextToText


def make_model(
    arch: str,
    size: str = "tiny",
    *,
    seed: int = 0,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    layers: int | None = None,
    vision_depth: int | None = None,
    small_vocab: bool = False,
    attn_implementation: str = "sdpa",
) -> tuple[PreTrainedModel, Any]:
    """A random-init `arch` model of `size` with its processor (tokenizer for text-only),
    in memory. The weights are created and initialized on `device` (no CPU pass on a GPU);
    `small_vocab` sizes the embeddings to our tokenizer instead of the published vocabulary."""
    from transformers import GenerationConfig

    from videorl.models import varlen_attention

    if attn_implementation == varlen_attention.NAME:
        varlen_attention.register()

    spec = model_spec(arch, size, layers=layers, vision_depth=vision_depth)
    if small_vocab:
        spec = replace(spec, embedding_rows=None)
    if arch == "qwen3_5":
        from videorl.versions import require

        require("transformers", ">=5.2", "the qwen3_5 architecture")
    torch.manual_seed(seed)
    tokenizer = _hf_tokenizer(arch, spec)
    config = _config(arch, spec, tokenizer)
    with torch.device(device):
        model = _model_class(arch).from_config(
            config, dtype=dtype, attn_implementation=attn_implementation
        )
    eos = [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]
    model.generation_config = GenerationConfig(
        eos_token_id=eos, pad_token_id=eos[1], bos_token_id=eos[1], do_sample=True, temperature=1.0
    )
    if arch == "qwen3":
        return model, tokenizer
    return model, _processor(arch, tokenizer, published=spec.published)


def build_model(
    arch: str,
    out_dir: str | Path,
    *,
    size: str = "tiny",
    vision_warmup: WarmupSettings | None = None,
    **options: Any,
) -> BuiltModel:
    """`make_model(arch, size, **options)` (seed, device, dtype, layers, vision_depth,
    small_vocab), its vision tower warmed up when `vision_warmup` is given
    (`models/vision_warmup.py`), saved like a real checkpoint (weights, config,
    tokenizer/processor)."""
    warm = vision_warmup is not None and vision_warmup.steps > 0
    if warm and arch == "qwen3":
        raise ConfigError("--vision-warmup: qwen3 is text-only; it has no vision tower")
    started = time.perf_counter()
    model, processor = make_model(arch, size, **options)
    warmup = (
        warm_up_vision(model, processor, vision_warmup)
        if warm and vision_warmup is not None  # warm: vision_warmup is set
        else None
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    tokenizer = getattr(processor, "tokenizer", processor)
    return BuiltModel(
        path=out,
        params=count_parameters(model),
        embedding_rows=int(model.config.get_text_config().vocab_size),
        tokenizer_size=len(tokenizer),
        seconds=time.perf_counter() - started,
        vision_warmup=warmup,
    )


def build_tiny_model(arch: str, out_dir: str | Path, *, size: str = "tiny", seed: int = 0) -> Path:
    """Build a random-init `arch` model of `size`, save it with its tokenizer/processor."""
    return build_model(arch, out_dir, size=size, seed=seed).path


def preset_parameters(
    arch: str, size: str, *, layers: int | None = None, vision_depth: int | None = None
) -> int:
    """Parameter count of `arch` at `size`, from a model on the meta device (no memory)."""
    spec = model_spec(arch, size, layers=layers, vision_depth=vision_depth)
    config = _config(arch, spec, _hf_tokenizer(arch, spec))
    with torch.device("meta"):
        model = _model_class(arch).from_config(config)
    return count_parameters(model)


def count_parameters(model: torch.nn.Module) -> int:
    """Distinct parameters (tied embeddings count once)."""
    return sum(p.numel() for p in model.parameters())
