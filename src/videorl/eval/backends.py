"""Answer producers for evaluation: anything with `respond(items) -> texts`.

An item is a record and its decoded media (`DecodedVideo`, or None for text-only math);
the backend returns the raw response text of each item, in order. `HFBackend` runs the
checkpoint in-process with batched greedy `generate`; `openai_backend.EndpointBackend`
asks an OpenAI-compatible server (vLLM, `videorl serve`). Both build the same prompt
(`data.prompts.build_prompt`) with the same `think` setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from videorl.data.records import TaskRecord

Item = tuple[TaskRecord, Any]  # (record, DecodedVideo | None)


class Backend(Protocol):
    """Produces one response text per (record, media) item."""

    label: str

    def respond(self, items: Sequence[Item]) -> list[str]: ...


def pick_device(device: str) -> str:
    """`auto` -> `cuda` when available, else `cpu`; anything else as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class HFBackend:
    """Greedy decoding (temperature 0) with Hugging Face `generate`, one call per batch."""

    def __init__(
        self,
        loaded: Any,
        *,
        max_new_tokens: int = 256,
        think: bool = False,
        label: str = "hf",
        prompt_style: str = "videorl",
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.loaded = loaded
        self.max_new_tokens = max_new_tokens
        self.think = think
        self.label = label
        self.prompt_style = prompt_style
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    @classmethod
    def from_path(
        cls,
        path: str,
        *,
        device: str = "auto",
        max_new_tokens: int = 256,
        think: bool = False,
        prompt_style: str = "videorl",
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> HFBackend:
        """Load the checkpoint at `path` (bf16 on GPU, fp32 on CPU)."""
        import torch

        from videorl.models.loading import load_model

        device = pick_device(device)
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        return cls(
            load_model(path, dtype=dtype, device=device),
            max_new_tokens=max_new_tokens,
            think=think,
            label=str(path),
            prompt_style=prompt_style,
            chat_template_kwargs=chat_template_kwargs,
        )

    @property
    def coordinates(self) -> str | None:
        """The model family's box convention (`data.coordinates` auto): `abs`, `norm1000`."""
        from videorl.data.coordinates import model_convention

        return model_convention(getattr(self.loaded, "model_type", ""))

    def respond(self, items: Sequence[Item]) -> list[str]:
        from videorl.models.generate import SamplingParams, generate
        from videorl.rollout.prompting import encode_record

        if not items:
            return []
        prompts = [
            encode_record(
                self.loaded,
                record,
                media,
                self.think,
                self.chat_template_kwargs,
                style=self.prompt_style,
            )
            for record, media in items
        ]
        params = SamplingParams(n=1, max_new_tokens=self.max_new_tokens, temperature=0.0)
        generations = generate(self.loaded, prompts, params)
        tokenizer = self.loaded.tokenizer
        return [tokenizer.decode(g.token_ids[0], skip_special_tokens=True) for g in generations]
