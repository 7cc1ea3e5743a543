"""`GenerationQueue` batches waiting prompts with equal sampling settings; seeded ones alone."""

from __future__ import annotations

import threading

import pytest
import torch

from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.serve import engine
from videorl.serve.app import _Admission
from videorl.serve.schema import RequestError


def test_waiting_prompts_share_a_call(monkeypatch):
    release, calls = threading.Event(), []

    def fake_generate(loaded, prompts, params):
        calls.append(([int(p.input_ids[0]) for p in prompts], params.n))
        release.wait(timeout=30)
        return [
            Generation([p.input_ids] * params.n, [torch.zeros(1)] * params.n, [False] * params.n)
            for p in prompts
        ]

    monkeypatch.setattr(engine, "generate", fake_generate)
    queue = engine.GenerationQueue(loaded=None, max_batch=2)
    greedy, sampled = SamplingParams(temperature=0.0), SamplingParams(temperature=1.0)

    def prompt(i):
        return PromptEncoding(input_ids=torch.tensor([i]))

    futures = [queue.submit(prompt(0), greedy, None)]
    while not calls:  # the worker holds the first job
        threading.Event().wait(0.01)
    futures += [
        queue.submit(prompt(1), greedy, None),
        queue.submit(prompt(2), greedy, 5),
        queue.submit(prompt(3), sampled, None),
        queue.submit(prompt(4), greedy, None),
        queue.submit(prompt(5), greedy, None),
        queue.submit(prompt(6), SamplingParams(temperature=0.0, n=3), None),
    ]
    release.set()
    results = [f.result(timeout=30) for f in futures]
    queue.close()
    assert [ids for ids, _ in calls] == [[0], [1, 4], [2], [3], [5], [6]]
    assert [int(r.token_ids[0][0]) for r in results] == [0, 1, 2, 3, 4, 5, 6]
    assert calls[-1][1] == 1 and len(results[-1].token_ids) == 3  # greedy n=3: one call, 3 copies
    assert queue.batch_sizes == [1, 2, 1, 1, 1, 1]


def test_admission_refuses_past_the_limit():
    admission = _Admission(limit=1)
    with admission.slot():
        with pytest.raises(RequestError, match="--max-queue") as refused, admission.slot():
            pass
        assert refused.value.status == 503
    with admission.slot():
        assert admission.active == 1
