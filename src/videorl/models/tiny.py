"""Tiny random-init models built offline, saved like real checkpoints.

No weights can be downloaded on the machines videorl is tested on, so tests, the quickstart
and the benchmarks build small models from config dicts: a byte-level BPE tokenizer trained
in-process with the family's special tokens and chat template, the real processor classes,
`save_pretrained`, and everything downstream loads them with `from_pretrained`.

Attention head size is 32 (default) or 64 (bench size): vLLM's CPU attention kernels
support only 32, 64, 80, 96, 112, 128 and up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from videorl.errors import ConfigError

ARCHS = ("qwen2_5_vl", "qwen3_vl", "qwen3_5", "qwen3")
SIZES = ("tiny", "bench")

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
VISION_TOKENS = (
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

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


@dataclass(frozen=True)
class TinySpec:
    """Sizes of a tiny model. Head size = hidden / heads (32 or 64)."""

    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vision_hidden: int
    vision_depth: int
    vision_heads: int


SPECS = {
    "tiny": TinySpec(1024, 64, 4, 2, 1, 128, 64, 2, 2),
    "bench": TinySpec(2048, 512, 8, 8, 2, 1408, 256, 4, 4),
}


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


def _hf_tokenizer(arch: str, spec: TinySpec):
    import json

    from transformers import Qwen2Tokenizer

    trained = train_tokenizer(spec.vocab, think_tokens=arch != "qwen2_5_vl")
    state = json.loads(trained.to_str())
    tokenizer = Qwen2Tokenizer(
        vocab=state["model"]["vocab"],
        merges=[
            tuple(m) if isinstance(m, list) else tuple(m.split(" "))
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


def _rope(arch: str, head_dim: int) -> dict:
    """Multimodal RoPE sections: they must sum to the rotary half-dimension."""
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


def _config(arch: str, spec: TinySpec, tokenizer):
    from transformers import Qwen2_5_VLConfig, Qwen3_5Config, Qwen3Config, Qwen3VLConfig

    head_dim = spec.hidden // spec.heads
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": spec.hidden,
        "intermediate_size": spec.intermediate,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "max_position_embeddings": 8192,
        "rope_parameters": _rope(arch, head_dim),
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    if arch == "qwen3":
        return Qwen3Config(**text, head_dim=head_dim, tie_word_embeddings=False)
    vision = {
        "depth": spec.vision_depth,
        "hidden_size": spec.vision_hidden,
        "intermediate_size": 2 * spec.vision_hidden,
        "num_heads": spec.vision_heads,
        "out_hidden_size": spec.hidden,
    }
    tokens = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }
    if arch == "qwen2_5_vl":
        vision.update(patch_size=14, window_size=112, fullatt_block_indexes=[spec.vision_depth - 1])
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **tokens)
    vision.update(patch_size=16, num_position_embeddings=256)
    if arch == "qwen3_vl":
        vision.update(deepstack_visual_indexes=[0])
        return Qwen3VLConfig(
            text_config={**text, "head_dim": head_dim}, vision_config=vision, **tokens
        )
    text.update(
        head_dim=head_dim,
        linear_key_head_dim=head_dim,
        linear_value_head_dim=head_dim,
        linear_num_key_heads=spec.kv_heads,
        linear_num_value_heads=spec.heads,
        layer_types=["linear_attention", "full_attention"] * (spec.layers // 2),
    )
    return Qwen3_5Config(text_config=text, vision_config=vision, **tokens)


def _processor(arch: str, tokenizer):
    from transformers import (
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    patch = 14 if arch == "qwen2_5_vl" else 16
    factor = patch * 2
    pixels = {"shortest_edge": 4 * factor * factor, "longest_edge": 16 * factor * factor}
    image = Qwen2VLImageProcessor(
        patch_size=patch, temporal_patch_size=2, merge_size=2, size=pixels
    )
    if arch == "qwen2_5_vl":
        video = Qwen2VLVideoProcessor(
            patch_size=patch, temporal_patch_size=2, merge_size=2, size=pixels
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
            "longest_edge": 64 * pixels["longest_edge"],
        },
    )
    return Qwen3VLProcessor(
        image_processor=image,
        tokenizer=tokenizer,
        video_processor=video,
        chat_template=CHAT_TEMPLATE,
    )


def build_tiny_model(arch: str, out_dir: str | Path, *, size: str = "tiny", seed: int = 0) -> Path:
    """Build a random-init `arch` model of `size`, save it with its tokenizer/processor."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, GenerationConfig

    if arch not in ARCHS:
        raise ConfigError(f"--arch {arch!r} is not buildable; choose one of {', '.join(ARCHS)}")
    if size not in SPECS:
        raise ConfigError(f"--size {size!r} is unknown; choose one of {', '.join(SPECS)}")
    spec = SPECS[size]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    tokenizer = _hf_tokenizer(arch, spec)
    config = _config(arch, spec, tokenizer)
    factory = AutoModelForCausalLM if arch == "qwen3" else AutoModelForImageTextToText
    model = factory.from_config(config, dtype=torch.float32)
    eos = [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]
    model.generation_config = GenerationConfig(
        eos_token_id=eos, pad_token_id=eos[1], bos_token_id=eos[1], do_sample=True, temperature=1.0
    )
    model.save_pretrained(out)
    if arch == "qwen3":
        tokenizer.save_pretrained(out)
    else:
        _processor(arch, tokenizer).save_pretrained(out)
    return out


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
