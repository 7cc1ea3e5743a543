"""Answer producers for evaluation: anything with `respond(items) -> texts`.

An item is a record and its decoded media (`DecodedVideo`, or None for text-only math);
the backend returns the raw response text of each item, in order. `HFBackend` runs the
checkpoint in-process with batched greedy `generate`; `openai_backend.EndpointBackend`
asks an OpenAI-compatible server (vLLM, `videorl serve`). Both build the prompt the
checkpoint was trained with, from its run's settings (`inference.RunSettings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from videorl.data.records import TaskRecord
from videorl.inference import RunSettings

if TYPE_CHECKING:
    from videorl.models.inputs import PromptEncoding

Item = tuple[TaskRecord, Any]  # (record, DecodedVideo | None)


class Backend(Protocol):
    """Produces one response text per (record, media) item."""

    label: str

    def respond(self, items: Sequence[Item]) -> list[str]: ...


class HFBackend:
    """Greedy decoding (temperature 0) with Hugging Face `generate`, one call per batch; the
    prompts are built with `settings` (the checkpoint's run settings, `inference`)."""

    def __init__(
        self,
        loaded: Any,
        settings: RunSettings | None = None,
        *,
        max_new_tokens: int = 256,
        label: str = "hf",
    ) -> None:
        self.loaded = loaded
        self.settings = settings or RunSettings()
        self.max_new_tokens = max_new_tokens
        self.label = label

    @classmethod
    def from_path(
        cls, path: str, settings: RunSettings, *, device: str = "auto", max_new_tokens: int = 256
    ) -> HFBackend:
        """Load the checkpoint at `path` for inference (bf16 on GPU, fp32 on CPU)."""
        from videorl.inference import load_for_inference

        loaded = load_for_inference(path, device)
        return cls(loaded, settings, max_new_tokens=max_new_tokens, label=str(path))

    @property
    def coordinates(self) -> str | None:
        """The model family's box convention under the run's `data.coordinates`: `abs`,
        `norm1000`, or None (the record's own)."""
        return self.settings.convention(self.loaded.model_type)

    def encode(self, items: Sequence[Item]) -> list[PromptEncoding]:
        """The prompt of each (record, media) item, as training encodes it."""
        return [self.settings.encode(self.loaded, record, media) for record, media in items]

    def respond(self, items: Sequence[Item]) -> list[str]:
        from videorl.models.generate import SamplingParams, generate

        if not items:
            return []
        params = SamplingParams(n=1, max_new_tokens=self.max_new_tokens, temperature=0.0)
        generations = generate(self.loaded, self.encode(items), params)
        tokenizer = self.loaded.tokenizer
        return [tokenizer.decode(g.token_ids[0], skip_special_tokens=True) for g in generations]
