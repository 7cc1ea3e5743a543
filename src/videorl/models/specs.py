"""Model sizes for `videorl make-tiny`: the tiny and bench layouts, and real-scale presets
with the published dimensions of the released Qwen2.5-VL, Qwen3-VL and Qwen3.5 checkpoints.

Each preset copies the released config.json (layers, hidden, heads, KV heads, head size,
intermediate, vision tower depth and width, tied embeddings, vocabulary size as embedding
rows); `published_params` is the checkpoint's parameter count from its model card, which a
test compares with the count of the model these dimensions build.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from videorl.errors import ConfigError

ARCHS = ("qwen2_5_vl", "qwen3_vl", "qwen3_5", "qwen3")
SIZES = ("tiny", "bench")  # any arch; the real-scale presets are per arch (PRESETS)


@dataclass(frozen=True)
class TinySpec:
    """Sizes of a model. Head size = hidden / heads (32 or 64) unless `head_dim` is given.

    The optional fields default to the tiny layout; presets set them from released configs.
    """

    vocab: int  # tokenizer size to train (ours; the corpus may stop it earlier)
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vision_hidden: int
    vision_depth: int
    vision_heads: int
    head_dim: int | None = None
    vision_intermediate: int | None = None  # None: 2 x vision_hidden
    embedding_rows: int | None = None  # the published vocab_size; None: the tokenizer's size
    tie_embeddings: bool | None = None  # None: the config class's default
    linear_heads: tuple[int, int] | None = None  # Qwen3.5 gated delta net (key, value) heads
    linear_head_dim: int | None = None  # Qwen3.5 gated delta net head size
    full_attention_every: int = 2  # Qwen3.5: every k-th layer is full attention
    mrope_section: tuple[int, int, int] | None = None  # None: derived from the head size
    vision_full_attention: tuple[int, ...] | None = None  # Qwen2.5-VL; None: the last block
    deepstack: tuple[int, ...] = (0,)  # Qwen3-VL deepstack_visual_indexes
    vision_positions: int = 256  # Qwen3-VL / Qwen3.5 num_position_embeddings
    max_positions: int = 8192
    published: bool = False  # the released processor's pixel limits
    published_params: int | None = None  # parameters of the released checkpoint (model card)
    source: str = ""

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden // self.heads


SPECS = {
    "tiny": TinySpec(1024, 64, 4, 2, 1, 128, 64, 2, 2),
    "bench": TinySpec(2048, 512, 8, 8, 2, 1408, 256, 4, 4),
}


# The keyword groups the presets share, typed (their keys and value types).
class _Qwen2_5VLVision(TypedDict):
    vision_hidden: int
    vision_depth: int
    vision_heads: int
    vision_intermediate: int
    vision_full_attention: tuple[int, ...]


class _Qwen3Vision(TypedDict):
    vision_hidden: int
    vision_depth: int
    vision_heads: int
    vision_intermediate: int
    vision_positions: int


class _Qwen3VLText(TypedDict):
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    embedding_rows: int
    mrope_section: tuple[int, int, int]


class _Qwen3_5Text(TypedDict):
    heads: int
    kv_heads: int
    head_dim: int
    linear_heads: tuple[int, int]
    linear_head_dim: int
    full_attention_every: int
    mrope_section: tuple[int, int, int]
    embedding_rows: int


class _Preset(TypedDict):
    vocab: int
    max_positions: int
    published: bool


_QWEN2_5_VL_VISION: _Qwen2_5VLVision = {
    "vision_hidden": 1280,
    "vision_depth": 32,
    "vision_heads": 16,
    "vision_intermediate": 3420,
    "vision_full_attention": (7, 15, 23, 31),
}
_QWEN3_VISION_SMALL: _Qwen3Vision = {  # Qwen3-VL-4B, Qwen3.5-4B
    "vision_hidden": 1024,
    "vision_depth": 24,
    "vision_heads": 16,
    "vision_intermediate": 4096,
    "vision_positions": 2304,
}
_QWEN3_VISION_LARGE: _Qwen3Vision = {  # Qwen3-VL-8B, Qwen3.5-9B
    "vision_hidden": 1152,
    "vision_depth": 27,
    "vision_heads": 16,
    "vision_intermediate": 4304,
    "vision_positions": 2304,
}
_QWEN3_VL_TEXT: _Qwen3VLText = {  # Qwen3-VL-4B, Qwen3-VL-8B
    "layers": 36,
    "heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "embedding_rows": 151936,
    "mrope_section": (24, 20, 20),
}
_QWEN3_5_TEXT: _Qwen3_5Text = {
    "heads": 16,
    "kv_heads": 4,
    "head_dim": 256,
    "linear_heads": (16, 32),
    "linear_head_dim": 128,
    "full_attention_every": 4,
    "mrope_section": (11, 11, 10),
    "embedding_rows": 248320,
}
_PRESET: _Preset = {"vocab": 2048, "max_positions": 32768, "published": True}


def _sized(
    arch: str,
    source: str,
    columns: str,
    rows: dict[str, tuple[Any, ...]],
    *shared: Mapping[str, Any],
) -> dict[tuple[str, str], TinySpec]:
    """One preset per row of `rows` (size -> values of the TinySpec fields `columns`, where
    a `vision` column holds a vision tower group), over the `shared` keyword groups."""
    common = {key: value for group in shared for key, value in group.items()}
    specs = {}
    for size, row in rows.items():
        fields = dict(zip(columns.split(), row, strict=True))
        vision = fields.pop("vision", {})
        specs[arch, size] = TinySpec(
            **_PRESET, **common, **vision, **fields, source=source.format(size.upper())
        )
    return specs


# Published dimensions (config.json of the released checkpoints on the Hugging Face Hub);
# published_params: the checkpoint's parameter count on its model card, where it is known.
PRESETS: dict[tuple[str, str], TinySpec] = {
    **_sized(
        "qwen2_5_vl",
        "Qwen/Qwen2.5-VL-{}-Instruct",
        "hidden layers heads kv_heads intermediate embedding_rows tie_embeddings published_params",
        {
            "3b": (2048, 36, 16, 2, 11008, 151936, True, 3_754_622_976),
            "7b": (3584, 28, 28, 4, 18944, 152064, False, 8_292_166_656),
        },
        _QWEN2_5_VL_VISION,
        {"mrope_section": (16, 24, 24)},
    ),
    **_sized(
        "qwen3_vl",
        "Qwen/Qwen3-VL-{}-Instruct",
        "hidden intermediate vision deepstack tie_embeddings published_params",
        {
            "4b": (2560, 9728, _QWEN3_VISION_SMALL, (5, 11, 17), True, 4_437_815_808),
            "8b": (4096, 12288, _QWEN3_VISION_LARGE, (8, 16, 24), False, 8_767_123_696),
        },
        _QWEN3_VL_TEXT,
    ),
    **_sized(
        "qwen3_5",
        "Qwen/Qwen3.5-{}",
        "hidden intermediate vision tie_embeddings",
        {
            "4b": (2560, 9216, _QWEN3_VISION_SMALL, True),
            "9b": (4096, 12288, _QWEN3_VISION_LARGE, False),
        },
        _QWEN3_5_TEXT,
        {"layers": 32, "deepstack": ()},
    ),
}


def sizes_for(arch: str) -> list[str]:
    return [*SPECS, *(size for a, size in PRESETS if a == arch)]


def model_spec(
    arch: str, size: str, *, layers: int | None = None, vision_depth: int | None = None
) -> TinySpec:
    """The spec of `arch` at `size`, optionally shrunk in depth (same widths)."""
    if arch not in ARCHS:
        raise ConfigError(f"--arch {arch!r} is not buildable; choose one of {', '.join(ARCHS)}")
    spec = SPECS.get(size) or PRESETS.get((arch, size))
    if spec is None:
        raise ConfigError(
            f"--size {size!r} is unknown for {arch}; choose one of {', '.join(sizes_for(arch))}"
        )
    for name, value in (("layers", layers), ("vision-depth", vision_depth)):
        if value is not None and value < 1:
            raise ConfigError(f"--{name} {value} must be >= 1")
    if layers is not None:
        if arch == "qwen3_5" and layers % spec.full_attention_every:
            raise ConfigError(
                f"--layers {layers} must be a multiple of {spec.full_attention_every} for "
                f"qwen3_5 at {size} (one full-attention layer per {spec.full_attention_every})"
            )
        spec = replace(spec, layers=layers)
    if vision_depth is not None:
        keep = tuple(i for i in spec.vision_full_attention or () if i < vision_depth)
        spec = replace(
            spec,
            vision_depth=vision_depth,
            vision_full_attention=keep or None,
            deepstack=tuple(i for i in spec.deepstack if i < vision_depth),
        )
    return spec
