"""Answer producers for evaluation: anything with `respond(items) -> texts`.

An item is a record and its decoded media (`DecodedVideo`, or None for text-only math);
the backend returns the raw response text of each item, in order. `HFBackend` runs the
checkpoint in-process with batched greedy `generate`; `openai_backend.EndpointBackend`
asks an OpenAI-compatible server (vLLM, `videorl serve`). Both build the prompt the
checkpoint was trained with, from its run's settings (`inference.RunSettings`).

An `HFBackend` given `tools` (`videorl eval --tools`) answers with the trainer's multi-turn
loop (`rollout.multiturn.answer_with_tools`, greedy; validation inside training calls it
too): the prompt lists the tools, each call
runs on the record's original media, and the answer is the final model turn; its
`respond_with_tools` also returns each answer's calls, errors and turns (`ToolUse`).
With `early_exit` (`--early-exit-confidence`) an answer-twice response stops after its first
boxed answer when that answer is confident enough (`rollout.early_exit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from videorl.data.records import TaskRecord
from videorl.inference import RunSettings

if TYPE_CHECKING:
    from videorl.models.inputs import PromptEncoding
    from videorl.rollout.multiturn import MultiTurnLimits, ToolUse
    from videorl.rollout.tools import ToolRunner

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
        tools: ToolRunner | None = None,
        limits: MultiTurnLimits | None = None,
        early_exit: float | None = None,
    ) -> None:
        self.loaded = loaded
        self.early_exit = early_exit  # answer-twice: stop after a1 at this confidence
        self.exits: list[Any] = []  # each gated answer's `rollout.early_exit.Exit`
        self.settings = settings or RunSettings()
        self.max_new_tokens = max_new_tokens  # one model turn with tools
        self.label = label
        self.tools = tools
        self.limits = limits
        # record id -> the digest of the input its prompt gave the model (`models/fingerprint.py`)
        self.input_fingerprints: dict[str, str] = {}

    @classmethod
    def from_path(
        cls,
        path: str,
        settings: RunSettings,
        *,
        device: str = "auto",
        max_new_tokens: int = 256,
        tools: ToolRunner | None = None,
        limits: MultiTurnLimits | None = None,
        early_exit: float | None = None,
    ) -> HFBackend:
        """Load the checkpoint at `path` for inference (bf16 on GPU, fp32 on CPU)."""
        from videorl.inference import load_for_inference

        loaded = load_for_inference(path, device)
        return cls(
            loaded,
            settings,
            max_new_tokens=max_new_tokens,
            label=str(path),
            tools=tools,
            limits=limits,
            early_exit=early_exit,
        )

    @property
    def coordinates(self) -> str | None:
        """The model family's box convention under the run's `data.coordinates`: `abs`,
        `norm1000`, or None (the record's own)."""
        return self.settings.convention(self.loaded.model_type)

    def without_tools(self) -> HFBackend:
        """The same model and settings answering in one turn, from prompts without tools."""
        return HFBackend(
            self.loaded,
            self.settings,
            max_new_tokens=self.max_new_tokens,
            label=self.label,
            early_exit=self.early_exit,
        )

    def encode(self, items: Sequence[Item]) -> list[PromptEncoding]:
        """The prompt of each (record, media) item, as training encodes it (listing the
        tools when the backend has them); its input fingerprint's digest is kept by id."""
        from videorl.models.fingerprint import fingerprint

        tools = self.tools.schemas() if self.tools is not None else ()
        prompts = []
        for record, media in items:
            prompts.append(self.settings.encode(self.loaded, record, media, tools=tools))
            self.input_fingerprints[record.id] = fingerprint(prompts[-1], [media]).digest
        return prompts

    def respond(self, items: Sequence[Item]) -> list[str]:
        from videorl.models.generate import SamplingParams, generate

        if not items:
            return []
        params = SamplingParams(n=1, max_new_tokens=self.max_new_tokens, temperature=0.0)
        if self.early_exit is not None:
            from videorl.rollout.early_exit import generate_with_early_exit

            generations, exits = generate_with_early_exit(
                self.loaded, self.encode(items), params, self.early_exit
            )
            self.exits += [found for [found] in exits]
        else:
            generations = generate(self.loaded, self.encode(items), params)
        tokenizer = self.loaded.tokenizer
        return [tokenizer.decode(g.token_ids[0], skip_special_tokens=True) for g in generations]

    def exit_summary(self) -> dict[str, float]:
        """What early exit did to the answers generated so far: the threshold, how many
        answers, the share that stopped after a1, and the tokens per answer."""
        count = len(self.exits)
        return {
            "threshold": float(self.early_exit or 0.0),
            "answers": count,
            "exit_rate": sum(e.exited for e in self.exits) / count if count else 0.0,
            "tokens_per_answer": sum(e.tokens for e in self.exits) / count if count else 0.0,
        }

    def respond_with_tools(
        self, items: Sequence[Item], control: str | None = None
    ) -> list[tuple[str, ToolUse]]:
        """Greedy multi-turn answers with `tools`: each item's final model turn and what
        its trajectory did. The tools read each record's original media (their outputs
        under the video `control`, if any); a window is decoded once per batch."""
        from videorl.models.generate import SamplingParams
        from videorl.rollout.multiturn import MultiTurnLimits, answer_with_tools

        if self.tools is None:
            raise ValueError("respond_with_tools needs a backend with tools")
        if not items:
            return []
        params = SamplingParams(n=1, max_new_tokens=self.max_new_tokens, temperature=0.0)
        groups = answer_with_tools(
            self.loaded,
            [record for record, _ in items],
            self.encode(items),
            [media for _, media in items],
            self.tools,
            params,
            self.limits or MultiTurnLimits(),
            video_config=self.settings.video,
            template_kwargs=self.settings.template_kwargs(),
            control=control,
        )
        return [(row.text, row.use) for [row] in groups]


def answer_items(
    backend: Backend, items: Sequence[Item], control: str | None = None
) -> list[tuple[str, ToolUse | None]]:
    """Each item's response text, and its tool use when the backend answers with tools
    (whose outputs are put under the video `control` the items' media are under)."""
    if getattr(backend, "tools", None) is not None:
        return list(backend.respond_with_tools(items, control))  # type: ignore[attr-defined]
    return [(text, None) for text in backend.respond(items)]
