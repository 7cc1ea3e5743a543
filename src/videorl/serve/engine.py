"""`GenerationQueue`: one worker thread runs `models.generate` for queued prompts in batches.

Requests arrive on the event loop; their prompts are queued here and the loop awaits a
future, so generation never blocks it. The worker takes the oldest job, adds waiting jobs
with the same `SamplingParams` (up to `max_batch`), and generates them in one call. A job
with a `seed` runs alone after `torch.manual_seed(seed)`, so its answer is the one
in-process `generate` gives for that seed. With `early_exit` (`--early-exit-confidence`) an
answer-twice response stops after a confident first boxed answer (`rollout.early_exit`).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from videorl.models.generate import Generation, SamplingParams, generate
from videorl.models.inputs import PromptEncoding

logger = logging.getLogger(__name__)


@dataclass
class Job:
    prompt: PromptEncoding
    params: SamplingParams
    seed: int | None = None
    future: Future = field(default_factory=Future)

    def joins(self, other: Job) -> bool:
        return self.seed is None and other.seed is None and self.params == other.params


class GenerationQueue:
    """Batched generation on a worker thread; `batch_sizes` records each call's size."""

    def __init__(self, loaded: Any, max_batch: int = 8, early_exit: float | None = None) -> None:
        self.loaded = loaded
        self.max_batch = max_batch
        self.early_exit = early_exit  # answer-twice: stop after a1 at this confidence
        self.batch_sizes: list[int] = []
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._waiting: list[Job] = []
        self._worker = threading.Thread(target=self._run, name="videorl-generate", daemon=True)
        self._worker.start()

    def submit(self, prompt: PromptEncoding, params: SamplingParams, seed: int | None) -> Future:
        """Queue one prompt; the future resolves to its `Generation`."""
        job = Job(prompt, params, seed)
        self._jobs.put(job)
        return job.future

    def close(self) -> None:
        self._jobs.put(None)
        self._worker.join(timeout=30)

    def _next_batch(self) -> list[Job] | None:
        """The oldest job plus waiting jobs it can share a `generate` call with."""
        while True:  # take everything already queued, without blocking
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return None
            self._waiting.append(job)
        if not self._waiting:
            job = self._jobs.get()
            if job is None:
                return None
            self._waiting.append(job)
        first = self._waiting.pop(0)
        batch = [first]
        for job in list(self._waiting):
            if len(batch) < self.max_batch and first.joins(job):
                batch.append(job)
                self._waiting.remove(job)
        return batch

    def _generate(self, prompts: list[PromptEncoding], params: SamplingParams) -> list[Generation]:
        """`generate`; greedy with `n > 1` answers n copies of the one greedy response (HF
        refuses `num_return_sequences > 1` without sampling; OpenAI allows it)."""
        if params.temperature > 0 or params.n == 1:
            return self._call(prompts, params)
        results = self._call(prompts, dataclasses.replace(params, n=1))
        return [
            Generation(
                token_ids=r.token_ids * params.n,
                logprobs=r.logprobs * params.n,
                truncated=r.truncated * params.n,
            )
            for r in results
        ]

    def _call(self, prompts: list[PromptEncoding], params: SamplingParams) -> list[Generation]:
        if self.early_exit is None:
            return generate(self.loaded, prompts, params)
        from videorl.rollout.early_exit import generate_with_early_exit

        return generate_with_early_exit(self.loaded, prompts, params, self.early_exit)[0]

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            self.batch_sizes.append(len(batch))
            try:
                if batch[0].seed is not None:
                    torch.manual_seed(batch[0].seed)
                results = self._generate([job.prompt for job in batch], batch[0].params)
            except Exception as err:  # one failed batch must not stop the worker
                logger.exception("generation failed")
                for job in batch:
                    job.future.set_exception(err)
                continue
            for job, result in zip(batch, results, strict=True):
                job.future.set_result(result)


__all__ = ["Generation", "GenerationQueue", "Job"]
