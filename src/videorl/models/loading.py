"""Load policy, reference and teacher models with their processors, like real checkpoints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from videorl.errors import ConfigError
from videorl.models import varlen_attention
from videorl.models.mrope import use_reference_rope_index
from videorl.models.packing import resolve_packing
from videorl.models.tiny import VISION_TOKENS

VISION_MODEL_TYPES = (
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_5",
    "qwen2_vl",
    "qwen3_vl_moe",
    "qwen3_5_moe",
)


@dataclass
class LoadedModel:
    """A model with the objects that turn prompts into its inputs."""

    model: torch.nn.Module
    tokenizer: Any
    processor: Any | None
    model_type: str
    packing: bool = False  # log-prob / training forwards use padding-free packed rows
    visual_cache: Any = None  # VisualEmbeddingCache: encode each video once per step
    share_prompts: bool = False  # rows of one prompt share its forward (models/shared_prompt.py)

    @property
    def is_vision(self) -> bool:
        return self.processor is not None and hasattr(self.processor, "video_processor")

    @property
    def banned_token_ids(self) -> list[int]:
        """Vision placeholder tokens: a random or drifting model may emit them; never sample them."""
        vocab = self.tokenizer.get_vocab()
        return [vocab[t] for t in VISION_TOKENS if t in vocab]

    @property
    def eos_token_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        ids = [ids] if isinstance(ids, int) else list(ids or [])
        return ids or [self.tokenizer.eos_token_id]

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.eos_token_ids[0])


def read_model_type(path: str | Path) -> str:
    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        raise ConfigError(
            f"model path {str(path)!r} has no config.json; give a Hugging Face model folder "
            "(build one offline with `videorl make-tiny --arch qwen2_5_vl OUT`)"
        )
    return json.loads(config_file.read_text())["model_type"]


def load_model(
    path: str | Path,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    attn_implementation: str = "sdpa",
    packing: str | bool = False,
) -> LoadedModel:
    """Load a causal LM or vision-language model and its tokenizer/processor from `path`.

    `packing` ("auto", True, False) decides whether log-prob and training forwards pack rows
    without padding (see `models/packing.py`).
    """
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
        AutoProcessor,
        AutoTokenizer,
    )

    model_type = read_model_type(path)
    if model_type in VISION_MODEL_TYPES:
        processor = AutoProcessor.from_pretrained(path)
        tokenizer = processor.tokenizer
        model_class = AutoModelForImageTextToText
    else:
        processor = None
        tokenizer = AutoTokenizer.from_pretrained(path)
        model_class = AutoModelForCausalLM
    if attn_implementation == varlen_attention.NAME:
        varlen_attention.register()
    try:
        model = model_class.from_pretrained(
            path, dtype=dtype, attn_implementation=attn_implementation
        )
    except (ImportError, ValueError) as err:
        if attn_implementation == "sdpa":
            raise
        raise ConfigError(
            f"model.attn_implementation={attn_implementation!r} cannot be used here ({err}); "
            "use sdpa or sdpa_varlen (any device) or install its kernels (flash_attention_2 "
            "needs the flash-attn package and a CUDA GPU)"
        ) from err
    use_reference_rope_index(model)
    try:
        packed = resolve_packing(model, packing)
    except ValueError as err:
        raise ConfigError(
            f"model.packing=true is not possible for {path}: {err}; set model.packing to auto or false"
        ) from err
    tokenizer.padding_side = "left"
    return LoadedModel(
        model=model.to(device),
        tokenizer=tokenizer,
        processor=processor,
        model_type=model_type,
        packing=packed,
    )


def check_same_tokenizer(student: LoadedModel, teacher: LoadedModel) -> None:
    """Distillation compares token log-probs, so both models must share one vocabulary."""
    a, b = student.tokenizer.get_vocab(), teacher.tokenizer.get_vocab()
    if a != b:
        only_a = len(set(a) - set(b))
        only_b = len(set(b) - set(a))
        raise ConfigError(
            f"teacher tokenizer differs from the student's ({len(a)} vs {len(b)} tokens; "
            f"{only_a} only in the student, {only_b} only in the teacher): on-policy "
            "distillation needs a teacher with the same tokenizer; choose a teacher of the same family"
        )
