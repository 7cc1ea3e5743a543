"""`rollout.mode: async`: the trainer's side of the rollout workers (docs/async.md).

Processes: the trainer (this process) and `rollout.workers` workers it spawns with
`torch.multiprocessing` (`trainer/rollout_worker.py`), each with its own model copy, its
own CPU threads or device. The trainer draws the prompts of the next `max_staleness + 1`
steps from its sampler ahead of time and queues one request per step; any free worker
takes the next, waits for the weights the request names (`version_for`: version
`step - max_staleness`, or the first published after it), draws and sends the scored batch
back. The trainer takes the batch of its step, trains,
and publishes its new weights every `rollout.sync_every` steps. So while step t trains,
the workers already generate steps t + 1 .. t + k with the weights of t - k + 1 or later,
and a batch trains at most k versions after the weights that sampled it.

Faults: every wait has `rollout.queue_timeout_s`; a worker that died or failed stops the
run with one line naming it (the last whole step is saved, as at Ctrl-C). Requests in flight
are dropped when the run stops; the checkpoint's sampler position is the one after the
last trained step, so on resume their prompts are drawn again, once.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
import torch.multiprocessing as mp

from videorl.config import Config
from videorl.data.records import TaskRecord
from videorl.distributed import shard_indices
from videorl.errors import ConfigError, RolloutWorkerError
from videorl.models.loading import LoadedModel
from videorl.reduction import MetricValue, maxed
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.mailbox import Mailbox, mailbox_folder, remove_mailbox
from videorl.rollout.shared_weights import SharedWeights
from videorl.trainer.oversample import CarriedGroup, carry_state
from videorl.trainer.rng import rng_state, set_rng_state
from videorl.trainer.rollout_worker import (
    DrawRequest,
    DrawResult,
    WorkerFailure,
    WorkerSpec,
    worker_main,
)
from videorl.trainer.threads import (
    available_cores,
    core_blocks,
    local_ranks,
    pin_process,
    process_cores,
)

_CLOSE_S = 10.0  # how long closing waits for the workers to stop before terminating them

if TYPE_CHECKING:
    from videorl.data.sampler import TaskGroupedSampler
    from videorl.distributed import DistInfo


def worker_devices(cfg: Config, info: DistInfo) -> list[str]:
    """This rank's workers' devices: `rollout.devices` gives one per worker of each local
    rank (rank r's workers take entries r * workers ..), or every worker uses the rank's
    device (a CPU)."""
    workers, devices = cfg.rollout.workers, cfg.rollout.devices
    if not devices:
        return [info.device] * workers
    ranks = local_ranks()
    if len(devices) != workers * ranks:
        raise ConfigError(
            f"rollout.devices={list(devices)} with {ranks} local trainer ranks of "
            f"rollout.workers={workers} each: give {workers * ranks} devices, rank r's "
            f"workers taking entries r * {workers} onwards"
        )
    start = info.local_rank * workers
    return list(devices[start : start + workers])


def worker_threads(cfg: Config) -> tuple[int, int]:
    """(trainer, worker) CPU threads of one trainer rank: `rollout.worker_threads` for each
    of its workers (0: the rank's share of the available cores split evenly between it and
    its workers) and the trainer's share of what is left; `trainer.cpu_threads` > 0 sets
    the trainer's."""
    cores = max(1, available_cores() // local_ranks())
    share = max(1, cores // (cfg.rollout.workers + 1))
    worker = cfg.rollout.worker_threads or share
    trainer = cfg.trainer.cpu_threads or max(1, cores - worker * cfg.rollout.workers)
    return trainer, worker


def core_layout(
    cfg: Config, info: DistInfo, devices: Sequence[str], trainer: int, worker: int
) -> list[frozenset[int]] | None:
    """`rollout.pin_cores`: the cores of the trainer, then of each worker (as many
    as their threads), when all of them run on the CPU and the rank's cores hold them."""
    on_cpu = all(d.startswith("cpu") for d in [info.device, *devices])
    if not cfg.rollout.pin_cores or not on_cpu or not hasattr(os, "sched_setaffinity"):
        return None
    sizes = [trainer] + [worker] * len(devices)
    return core_blocks(sizes, process_cores(), info.local_rank, local_ranks())


def _row_versions(result: DrawResult) -> torch.Tensor:
    """The version of each row's oldest token (the draw's, for a batch without rows)."""
    versions = result.batch.versions
    if versions is None or not versions.numel():
        return torch.tensor([float(result.version)])
    return versions.double()


def steps_ahead(cfg: Config) -> int:
    """How many steps ahead the workers sample: `max_staleness`, or one less when
    over-sampled groups carry their tokens (`partial: continue`), whose first tokens train one
    round later."""
    rollout = cfg.rollout
    carried = rollout.oversample > 1 and rollout.partial == "continue"
    return rollout.max_staleness - 1 if carried else rollout.max_staleness


class AsyncRollouts:
    """The workers, their queues and the shared weights, and what is in flight."""

    def __init__(
        self,
        cfg: Config,
        model: torch.nn.Module,
        version: int,
        info: DistInfo,
        restored: dict[int, dict[str, torch.Tensor]] | None = None,
        carry: list[CarriedGroup] | None = None,
    ) -> None:
        """Spawn the workers; `model` holds the trainer's weights (`version`: its step),
        `restored` the older versions a checkpoint kept (`held_versions`) and `carry` the
        groups its over-sampled round had cut (`saved_carry`; None: a fresh run)."""
        self.cfg, self.k = cfg, cfg.rollout.max_staleness
        self.ahead = steps_ahead(cfg)
        if cfg.rollout.oversample > 1 and info.world_size > 1:
            raise ConfigError(
                f"rollout.oversample={cfg.rollout.oversample} with {info.world_size} trainer "
                "ranks: each rank's carried groups are not checkpointed yet; set "
                "rollout.oversample=1 or train on one rank"
            )
        context = mp.get_context("spawn")
        self.weights = SharedWeights(model, context, slots=self.k + 1)
        for old, state in (restored or {}).items():
            self.weights.publish_state(state, old)
        self.weights.publish(model, version)
        # the run's first weights: a resumed run's oldest restored version stands for them
        self.start_version = min([version, *(restored or {})])
        slots = self.k + 2
        self.folder = mailbox_folder()
        self.requests = context.Queue(maxsize=slots)
        self.results = context.Queue(maxsize=slots)
        self.outbox = Mailbox(self.folder, self.requests, "trainer")
        self.inbox = Mailbox(self.folder, self.results, "trainer")
        # the trainer's threads and cores before the run, restored at close
        self.placement = (torch.get_num_threads(), process_cores())
        self.pinned = False
        self.workers = self._spawn(cfg, info, context)
        self.submitted: dict[int, dict[str, Any]] = {}  # step -> sampler state before its draw
        self.restored_carry = carry
        self.carry_after: dict[int, list[CarriedGroup] | None] = {}  # step -> its round's cuts
        self.sent_first = False
        self.ready: dict[tuple[int, int], DrawResult] = {}
        self.wait_s = 0.0
        self.worker_busy_s = 0.0
        self.worker_idle_s = 0.0

    def _spawn(self, cfg: Config, info: DistInfo, context: Any) -> list[Any]:
        """Start the workers, each on its device with its threads and cores (the trainer
        takes the rest of the cores, the first block when pinned)."""
        trainer_threads, threads = worker_threads(cfg)
        if info.device.startswith("cpu"):
            torch.set_num_threads(trainer_threads)
        devices = worker_devices(cfg, info)
        blocks = core_layout(cfg, info, devices, trainer_threads, threads)
        workers = [
            context.Process(
                target=worker_main,
                args=(
                    WorkerSpec(
                        i,
                        cfg,
                        devices[i],
                        threads,
                        self.weights,
                        self.folder,
                        self.requests,
                        self.results,
                        blocks[i + 1] if blocks else None,
                    ),
                ),
                name=f"videorl-rollout-{i}",
                # not a daemon: a worker starts processes of its own (reward.workers > 1);
                # `close` stops it, and one whose trainer died exits at its next wait
                daemon=False,
            )
            for i in range(cfg.rollout.workers)
        ]
        for worker in workers:
            worker.start()
        if blocks:
            pin_process(blocks[0])
            self.pinned = True
        return workers

    # -- prompts -------------------------------------------------------------------------

    def next_indices(
        self,
        step: int,
        sampler: TaskGroupedSampler,
        records: Sequence[TaskRecord],
        info: DistInfo,
    ) -> list[int]:
        """Step `step`'s prompts, after queueing the requests of steps `step` .. `step + k`
        (drawn from `sampler` in step order; none past the run's last step)."""
        for ahead in range(step, min(step + self.ahead + 1, self.cfg.trainer.steps)):
            if ahead not in self.submitted:
                before = sampler.state_dict()
                indices = sampler.next_batch()
                mine = [records[i] for i in shard_indices(indices, info)]
                self.submitted[ahead] = {"sampler": before, "indices": indices}
                self._put(self._first_round(ahead, mine, sampler, records, info))
        return self.submitted[step]["indices"]

    def _first_round(
        self,
        step: int,
        mine: list[TaskRecord],
        sampler: TaskGroupedSampler,
        records: Sequence[TaskRecord],
        info: DistInfo,
    ) -> DrawRequest:
        """Step `step`'s request; an over-sampling run's first one also hands the worker its
        carry: the checkpoint's, or, in a fresh run, `oversample - 1` more steps' prompts."""
        request = self._request(step, 0, sampler.epoch, mine)
        if self.cfg.rollout.oversample == 1 or self.sent_first:
            return request
        self.sent_first = True
        carry = self.restored_carry
        if carry is None:
            extra = [
                i for _ in range(self.cfg.rollout.oversample - 1) for i in sampler.next_batch()
            ]
            carry = [CarriedGroup(records[i], cuts=0) for i in shard_indices(extra, info)]
        return replace(request, carry=carry)

    def _request(self, step: int, draw: int, epoch: int, records: list[TaskRecord]) -> DrawRequest:
        """Staleness 0: the trainer waits for this very draw, so it hands over its random
        state and the worker continues it (the synchronous run's stream)."""
        return DrawRequest(
            step=step,
            draw=draw,
            epoch=epoch,
            records=records,
            version=self.version_for(step),
            rng=rng_state() if self.ahead == 0 else None,
            behaviour_logp=self.k > 0,
            need=len(records),
        )

    def version_for(self, step: int) -> int:
        """The weights that sample step `step`'s batch: the first version published at or
        after `step - k` (every `sync_every`-th, and the run's start), so a batch trains at
        most k versions after them, and which ones depends on the step alone."""
        every = self.cfg.rollout.sync_every
        oldest = step - self.ahead
        if oldest <= self.start_version:
            return self.start_version
        return every * math.ceil(oldest / every)

    def held_versions(self, step: int) -> dict[int, dict[str, torch.Tensor]]:
        """The versions before `step` that steps `step` .. `step + k` are sampled by: what a
        checkpoint keeps so that its resumed run samples them with the same weights."""
        return self.weights.held(range(max(step - self.ahead, 0), step))

    def saved_carry(self, step: int) -> list[dict[str, Any]] | None:
        """The groups cut by the round before step `step`'s, as a checkpoint keeps them so
        that its resumed run's rounds are the same (None: no round has run yet)."""
        carry = self.carry_after.get(step - 1)
        return carry_state(carry if carry is not None else self.restored_carry)

    def sampler_state(self, step: int, sampler: Any) -> dict[str, Any]:
        """The sampler as it was before step `step`'s prompts were drawn ahead (drawn steps
        run on from the oldest untrained one: none drawn, `sampler` is there)."""
        if step in self.submitted:
            return self.submitted[step]["sampler"]
        return sampler.state_dict()

    # -- results -------------------------------------------------------------------------

    def take(
        self,
        step: int,
        draw: int,
        *,
        epoch: int,
        records: Sequence[TaskRecord],
        policy: LoadedModel,
    ) -> RolloutBatch:
        """Step `step`'s batch of draw `draw` (0: queued ahead; a refill of `records` at
        the sampler's `epoch` is queued now), its staleness in the metrics; the worker's
        embeddings of its prompts go into `policy`'s visual cache (a frozen tower)."""
        if draw > 0:
            self._put(self._request(step, draw, epoch, list(records)))
        depth = len(self.ready)
        started = time.perf_counter()
        result = self._result(step, draw)
        self.wait_s += time.perf_counter() - started
        self.submitted = {s: v for s, v in self.submitted.items() if s >= step}
        if result.rng is not None:
            set_rng_state(result.rng)
        if result.embeddings is not None and policy.visual_cache is not None:
            policy.visual_cache.adopt(result.batch.prompts, result.embeddings)
        if draw == 0 and result.carry is not None:  # kept for this step's checkpoint and the next's
            self.carry_after = {step - 1: self.carry_after.get(step - 1), step: result.carry}
        staleness = step - _row_versions(result)
        self.worker_busy_s += result.busy_s
        self.worker_idle_s += result.idle_s
        metrics: dict[str, MetricValue] = {
            "async/staleness_mean": float(staleness.mean()),
            "async/staleness_max": maxed(float(staleness.max())),
            "async/queue_depth": float(depth + self.results.qsize()),
            **{f"async/worker_{k}_s": v for k, v in result.stages.items()},
        }
        return result.batch.with_metrics(**metrics)

    def _result(self, step: int, draw: int) -> DrawResult:
        deadline = time.monotonic() + self.cfg.rollout.queue_timeout_s
        while (step, draw) not in self.ready:
            try:
                message = self.inbox.receive(timeout=1.0)
            except queue.Empty:
                self._check_workers(deadline, step)
                continue
            if isinstance(message, WorkerFailure):
                print(message.details, file=sys.stderr, end="")
                raise RolloutWorkerError(
                    f"rollout worker {message.worker} failed: {message.message} "
                    "(the traceback is above); resume with --resume auto"
                )
            self.ready[(message.step, message.draw)] = message
        return self.ready.pop((step, draw))

    def _check_workers(self, deadline: float, step: int) -> None:
        for i, worker in enumerate(self.workers):
            if not worker.is_alive():
                raise RolloutWorkerError(
                    f"rollout worker {i} died (exit code {worker.exitcode}) while step {step} "
                    "waited for its rollouts; resume with --resume auto"
                )
        if time.monotonic() > deadline:
            raise RolloutWorkerError(
                f"no rollouts for step {step} within rollout.queue_timeout_s="
                f"{self.cfg.rollout.queue_timeout_s:g} s; raise it or check the workers"
            )

    def _put(self, request: DrawRequest) -> None:
        deadline = time.monotonic() + self.cfg.rollout.queue_timeout_s
        name = self.outbox.write(request)
        while True:
            try:
                self.outbox.post(name, timeout=1.0)
                return
            except queue.Full:
                self._check_workers(deadline, request.step)

    # -- weights and metrics --------------------------------------------------------------

    def publish(self, model: torch.nn.Module, version: int) -> None:
        """The weights after an update, every `rollout.sync_every` versions."""
        if version % self.cfg.rollout.sync_every == 0:
            self.weights.publish(model, version)

    def step_metrics(self, step_s: float) -> dict[str, float]:
        """`async/trainer_idle`: the step's share of wall time spent waiting for rollouts;
        `async/rollout_idle`: the workers' share of time waiting for requests or weights,
        over the batches taken this step."""
        worker_total = self.worker_busy_s + self.worker_idle_s
        metrics = {
            "async/trainer_idle": self.wait_s / step_s if step_s > 0 else 0.0,
            "async/rollout_idle": self.worker_idle_s / worker_total if worker_total else 0.0,
        }
        self.wait_s = self.worker_busy_s = self.worker_idle_s = 0.0
        return metrics

    def close(self) -> None:
        """Stop the workers: a stop message each; results still arriving are drained (a
        worker exits only once its queue's last message is written), then what is left
        after `_CLOSE_S` is terminated."""
        for _ in self.workers:
            try:
                self.requests.put_nowait(None)
            except queue.Full:
                break
        deadline = time.monotonic() + _CLOSE_S
        while any(w.is_alive() for w in self.workers) and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                self.results.get(timeout=0.1)
        for worker in self.workers:
            if worker.is_alive():
                worker.terminate()
            worker.join(timeout=_CLOSE_S)
        remove_mailbox(self.folder)
        threads, cores = self.placement
        torch.set_num_threads(threads)
        if self.pinned:
            pin_process(cores)
