"""A rollout worker process of `rollout.mode: async` (docs/async.md).

Spawned by the trainer (`trainer/async_rollout.py`) with `torch.multiprocessing`, it
pins itself to its cores (`rollout.pin_cores`), loads its own copy of the policy, then
serves draw requests in order: wait until the shared weights hold the version the request
names, copy them in, run the same draw as the synchronous loop (`trainer/draw.py`: decode,
rollout, rewards; the sampled tokens' log-probs recorded when the batch may train stale),
recompute the behaviour log-probs where sampling gave none (tools, over-sampled rounds,
`rollout.behaviour_logp: recompute`), and send the scored batch back. Requests and
results travel as files whose names go through bounded queues (`rollout/mailbox.py`): a
worker or trainer killed mid-send leaves no half message.

Randomness: a request that carries the trainer's random state (`max_staleness: 0`, where
the trainer waits for every draw) continues it and sends the state after the draw back, so
the run is the synchronous one bit for bit; any other draw seeds its own streams from
(seed, step, draw).

SIGINT is ignored here: the trainer decides when the run stops and closes its workers. A
worker whose trainer died (kill -9) exits at its next wait.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from videorl.config import Config
from videorl.data.records import TaskRecord
from videorl.models.loading import LoadedModel
from videorl.models.logprobs import logprobs_in_microbatches
from videorl.models.visual_cache import ExportedEmbeddings, tower_trainable
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.mailbox import Mailbox, remove_mailbox
from videorl.rollout.shared_weights import SharedWeights
from videorl.trainer.draw import REWARD_STAGES, DrawAt, Producer, no_grad_settings, scored_draw
from videorl.trainer.metrics import StageTimer
from videorl.trainer.oversample import CarriedGroup, oversampled_draw
from videorl.trainer.policy_setup import load_producer
from videorl.trainer.rng import derived_seed, isolated, rng_state, set_rng_state
from videorl.trainer.threads import pin_process


@dataclass(frozen=True)
class DrawRequest:
    """One draw for the trainer's `step` (`draw` 0: the step's batch, > 0: a refill) of
    `records`, at the sampler's `epoch`, on the weights of `version`."""

    step: int
    draw: int
    epoch: int
    records: list[TaskRecord]
    version: int
    rng: dict[str, Any] | None = None  # the trainer's random state to continue (staleness 0)
    behaviour_logp: bool = False  # the batch may train stale: add its behaviour log-probs
    # rollout.oversample > 1: the step's groups (0: all of `records`), and the carry to
    # start from (None: the worker's own, from its previous round)
    need: int = 0
    carry: list[CarriedGroup] | None = None


@dataclass(frozen=True)
class DrawResult:
    """A scored batch, the version that sampled it and the worker's timings."""

    step: int
    draw: int
    worker: int
    version: int
    batch: RolloutBatch
    idle_s: float  # waiting for a request or for weights since the previous result
    busy_s: float  # drawing this batch
    rng: dict[str, Any] | None = None
    stages: dict[str, float] = field(default_factory=dict)
    # the prompts' vision-tower outputs when the tower is frozen: the trainer's forwards
    # reuse them instead of encoding every video again (models/visual_cache.py)
    embeddings: ExportedEmbeddings | None = None
    carry: list[CarriedGroup] | None = None  # over-sampling: the groups cut, for the next round


@dataclass(frozen=True)
class WorkerFailure:
    """A worker's last message: what failed, in one line, and the traceback."""

    worker: int
    message: str
    details: str


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker is started with (picklable for `spawn`)."""

    index: int
    cfg: Config
    device: str
    threads: int
    weights: SharedWeights
    folder: str  # the mailbox folder of both directions (`rollout/mailbox.py`)
    requests: Any  # multiprocessing queue of DrawRequest file names (None: stop)
    results: Any  # multiprocessing queue of DrawResult | WorkerFailure file names
    cores: frozenset[int] | None = None  # pinned to these (rollout.pin_cores), or unpinned

    def inbox(self) -> Mailbox:
        return Mailbox(self.folder, self.requests, "trainer")

    def outbox(self) -> Mailbox:
        return Mailbox(self.folder, self.results, f"worker{self.index}")


def worker_main(spec: WorkerSpec) -> None:
    """The worker process's entry point."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if spec.cores:
        pin_process(spec.cores)
    torch.set_num_threads(spec.threads)
    outbox = spec.outbox()
    try:
        _serve(spec, outbox)
    except Exception as err:  # noqa: BLE001 - reported to the trainer, which stops in one line
        failure = WorkerFailure(spec.index, f"{type(err).__name__}: {err}", traceback.format_exc())
        outbox.post(outbox.write(failure), timeout=spec.cfg.rollout.queue_timeout_s)


def _trainer_alive() -> bool:
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()


def _serve(spec: WorkerSpec, outbox: Mailbox) -> None:
    producer = load_producer(spec.cfg, spec.device)
    try:
        _serve_requests(spec, producer, outbox)
    finally:
        if producer.pool is not None:
            producer.pool.close()


def _serve_requests(spec: WorkerSpec, producer: Producer, outbox: Mailbox) -> None:
    """Draw each request in turn until the stop message, or until the trainer is gone."""
    timeout = spec.cfg.rollout.queue_timeout_s
    inbox = spec.inbox()
    idle_since, loaded = time.perf_counter(), -1
    carry: list[CarriedGroup] = []
    while True:
        if not _trainer_alive():  # nobody reads the results: leave no files behind
            remove_mailbox(spec.folder)
            return
        try:
            request: DrawRequest | None = inbox.receive(timeout=1.0)
        except queue.Empty:
            continue
        if request is None:
            return
        if not spec.weights.wait_for(request.version, timeout_s=timeout, alive=_trainer_alive):
            if not _trainer_alive():
                continue
            raise TimeoutError(
                f"no weights of version {request.version} within "
                f"rollout.queue_timeout_s={timeout:g} s"
            )
        if request.version != loaded:
            spec.weights.load_into(producer.policy.model, request.version)
            loaded = request.version
        started = time.perf_counter()
        if request.carry is not None:
            carry = request.carry
        result = _draw(spec.index, producer, request, loaded, carry)
        carry = result.carry or []
        done = time.perf_counter()
        result = replace(result, idle_s=started - idle_since, busy_s=done - started)
        _post(outbox, outbox.write(result), timeout)
        idle_since = time.perf_counter()


def _post(outbox: Mailbox, name: str, timeout_s: float) -> None:
    """Send a result, waiting while the trainer's queue is full (it trains meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while _trainer_alive():
        try:
            outbox.post(name, timeout=1.0)
            return
        except queue.Full:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the trainer took no rollouts within rollout.queue_timeout_s={timeout_s:g} s"
                ) from None


def _draw(
    index: int,
    producer: Producer,
    request: DrawRequest,
    version: int,
    carry: list[CarriedGroup],
) -> DrawResult:
    """Run the request's draw on the worker's weights (`version`), from `carry` when the
    run over-samples."""
    timer = StageTimer()
    rng_after = None
    if request.rng is not None:
        set_rng_state(request.rng)
        batch, carry = _scored(producer, timer, request, version, carry)
        rng_after = rng_state()
    else:
        with isolated(derived_seed(producer.cfg.trainer.seed, request.step, request.draw)):
            batch, carry = _scored(producer, timer, request, version, carry)
    if producer.cfg.rollout.oversample == 1:
        if request.behaviour_logp and batch.num_rows and not _has_behaviour(batch):
            with timer("behaviour"):
                batch = with_behaviour_logp(batch, producer)
        batch = replace(batch, versions=torch.full((batch.num_rows,), version, dtype=torch.long))
    embeddings = frozen_embeddings(producer.policy, batch)
    producer.visual_caches.clear()
    return DrawResult(
        request.step,
        request.draw,
        index,
        version,
        batch,
        idle_s=0.0,
        busy_s=0.0,
        rng=rng_after,
        stages=dict(timer.seconds),
        embeddings=embeddings,
        carry=carry,
    )


def frozen_embeddings(policy: LoadedModel, batch: RolloutBatch) -> ExportedEmbeddings | None:
    """The batch's prompt embeddings from the policy's cache, when its tower is frozen (a
    trainable tower moves with the trainer's updates: the trainer encodes itself)."""
    cache = policy.visual_cache
    if cache is None or tower_trainable(policy.model):
        return None
    return cache.export(batch.prompts)


def _scored(
    producer: Producer,
    timer: StageTimer,
    request: DrawRequest,
    version: int,
    carry: list[CarriedGroup],
) -> tuple[RolloutBatch, list[CarriedGroup]]:
    """The synchronous loop's draw, or an over-sampled round (`trainer/oversample.py`)."""
    if producer.cfg.rollout.oversample == 1:
        at = DrawAt(request.step, request.epoch, request.draw)
        batch = scored_draw(producer, timer, REWARD_STAGES, request.records, at)
        return batch, []
    need = request.need or len(request.records)
    return oversampled_draw(
        producer,
        timer,
        REWARD_STAGES,
        carry,
        request.records,
        need=need,
        step=request.step,
        version=version,
    )


def _has_behaviour(batch: RolloutBatch) -> bool:
    """Whether the draw kept its rows' sampling log-probs (`rollout.behaviour_logp: sampling`)."""
    logp = batch.behaviour_logp
    return logp is not None and logp.shape[0] == batch.num_rows


def with_behaviour_logp(batch: RolloutBatch, producer: Producer) -> RolloutBatch:
    """The batch with each row's log-probs under the weights that sampled it (no grad, as
    the trainer's old log-probs: multi-turn rows over their whole trajectory)."""
    logp = logprobs_in_microbatches(
        producer.logprob_model,
        batch.row_prompts(),
        batch.responses,
        response_token_types=batch.response_token_types(),
        **no_grad_settings(producer.cfg),
    )
    return replace(batch, behaviour_logp=logp)
