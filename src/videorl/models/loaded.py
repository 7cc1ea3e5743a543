"""A loaded checkpoint: the model with the objects that turn prompts into its inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

# The Qwen-VL placeholder tokens of images and videos: a prompt's, never a sample's.
VISION_TOKENS = (
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
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
        model: Any = self.model  # a transformers model: methods nn.Module does not declare
        ids = model.generation_config.eos_token_id
        ids = [ids] if isinstance(ids, int) else list(ids or [])
        return ids or [self.tokenizer.eos_token_id]

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.eos_token_ids[0])
