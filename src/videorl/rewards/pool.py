"""A pool of scoring processes with a per-sample deadline (issue 4.7).

Each worker scores one sample at a time; the parent tracks a deadline per busy worker. A
sample past its deadline has its worker killed and replaced (killing is the only way to stop
arbitrary code: a C-level regex, a sympy simplification, a user plug-in) and scores 0 with
reason `timeout`; a worker that dies scores its sample 0 with reason `crash`. Workers start
from a fork server, not by forking the trainer (whose threads and GPU state must not be
copied), and stay up across calls: hold one pool for a run. As with any fork-server or spawn
pool, a script that builds one needs the `if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Self

from videorl.data.records import TaskRecord
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.config import RewardConfig
from videorl.rewards.result import RewardResult, failed
from videorl.rewards.router import score_response

# Imported once in the fork server, so that new workers start warm.
_PRELOAD = ["__main__", "videorl.rewards.pool", "math_verify"]
_READY = "ready"
# The first worker waits for the fork server to import its modules (seconds on a busy host);
# deadlines start only once a worker is ready, so that start-up never times a sample out.
STARTUP_TIMEOUT_S = 120.0
MAX_CHUNK = 64


def _context() -> ForkServerContext | SpawnContext:
    if "forkserver" in mp.get_all_start_methods():
        context = mp.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        return context
    return mp.get_context("spawn")


def use_one_thread() -> None:
    """Scoring workers run one thread each (many workers share the trainer's cores), unless
    the user set `OMP_NUM_THREADS`: for libraries imported later, and for torch if loaded."""
    if os.environ.get("OMP_NUM_THREADS", "").strip():
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _serve(conn: Connection, config: RewardConfig) -> None:
    """Worker loop: receive a chunk `(items, records)` with items `(index, record key,
    response, tool calls)` and pickled records by key; send back `(index, result)` per sample, so that
    the parent can time each sample."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
    use_one_thread()
    conn.send(_READY)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if message is None:
            return
        items, pickled = message
        records = {key: pickle.loads(data) for key, data in pickled.items()}
        for index, key, response, calls in items:
            conn.send((index, score_response(records[key], response, config, calls)))


def strip_frames(record: TaskRecord) -> TaskRecord:
    """The record without inline frames (megabytes that no reward reads), as sent to a
    worker; a path-based media reference is kept for plug-ins."""
    media = {
        name: replace(ref, frames=None, path=ref.path or "<inline frames>")
        for name in ("video", "image")
        if (ref := getattr(record, name)) is not None and ref.frames is not None
    }
    return replace(record, **media) if media else record


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection


@dataclass
class _Chunk:
    """Samples given to one worker: those not yet returned, and the deadline of the first."""

    worker: _Worker
    pending: deque[int]
    deadline: float


@dataclass
class _Run:
    """The state of one `ScoringPool.score` call."""

    records: Sequence[TaskRecord]
    responses: Sequence[str]
    calls: Sequence[Sequence[ToolCallMade]]
    idle: list[_Worker]
    busy: dict[Connection, _Chunk] = field(default_factory=dict)
    queue: deque[int] = field(init=False)
    results: list[RewardResult | None] = field(init=False)
    retried: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.queue = deque(range(len(self.records)))
        self.results = [None] * len(self.records)


class ScoringPool:
    """`num_workers` scoring processes (default `config.workers`) for `config`."""

    def __init__(self, config: RewardConfig, num_workers: int | None = None) -> None:
        self.config = config
        self.size = max(1, num_workers if num_workers is not None else config.workers)
        self._context = _context()
        launched = [self._launch() for _ in range(self.size)]  # start together, then wait
        self._workers = [self._await_ready(worker) for worker in launched]

    def _launch(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_serve, args=(child, self.config), daemon=True, name="videorl-reward"
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _await_ready(self, worker: _Worker) -> _Worker:
        try:
            ready = worker.conn.poll(STARTUP_TIMEOUT_S) and worker.conn.recv() == _READY
        except (EOFError, OSError):  # the worker died while starting
            ready = False
        if not ready:
            self._stop(worker)
            raise RuntimeError(
                f"a reward worker did not start within {STARTUP_TIMEOUT_S} s; "
                "check that videorl imports in a fresh process, or set reward.num_workers=1"
            )
        return worker

    def _stop(self, worker: _Worker) -> None:
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=5)
        worker.conn.close()

    def _restart(self, worker: _Worker) -> _Worker:
        self._stop(worker)
        fresh = self._await_ready(self._launch())
        self._workers[self._workers.index(worker)] = fresh
        return fresh

    def score(
        self,
        records: Sequence[TaskRecord],
        responses: Sequence[str],
        calls: Sequence[Sequence[ToolCallMade]] | None = None,
    ) -> list[RewardResult]:
        """Results in batch order; never raises for a bad sample. `calls`: each row's tool
        calls (multi-turn rollouts), for the plug-ins that take them."""
        if len(records) != len(responses):
            raise ValueError(
                f"{len(records)} records but {len(responses)} responses; give one response per record"
            )
        calls = [()] * len(records) if calls is None else calls
        run = _Run(records, responses, calls, idle=list(self._workers))
        while run.queue or run.busy:
            self._dispatch(run)
            if run.busy:
                self._collect(run)
                self._expire(run)
        return run.results  # type: ignore[return-value]  # every index was settled

    def _chunk_size(self, run: _Run) -> int:
        # Several samples per message amortize the round trip (cheap families score in tens
        # of microseconds); a quarter of each worker's share keeps the load balanced.
        return max(1, min(MAX_CHUNK, math.ceil(len(run.queue) / (4 * self.size))))

    def _pickle_records(self, run: _Run, chunk: list[int]) -> tuple[list[tuple], dict[int, bytes]]:
        """The chunk's items and its distinct records pickled once each (a group's rollouts
        share one record); a sample whose record cannot be pickled scores 0 here."""
        items, pickled = [], {}
        for index in chunk:
            record = run.records[index]
            key = id(record)
            if key not in pickled:
                try:
                    pickled[key] = pickle.dumps(strip_frames(record), pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable `extra` value
                    detail = f"cannot send sample {index}: {type(exc).__name__}: {exc}"
                    run.results[index] = failed("exception", detail)
                    continue
            items.append((index, key, run.responses[index], tuple(run.calls[index])))
        return items, pickled

    def _dispatch(self, run: _Run) -> None:
        """Give chunks of queued samples to idle workers."""
        while run.queue and run.idle:
            worker = run.idle.pop()
            chunk = [run.queue.popleft() for _ in range(self._chunk_size(run))]
            items, pickled = self._pickle_records(run, chunk)
            if not items:
                run.idle.append(worker)
                continue
            try:
                worker.conn.send((items, pickled))
            except OSError:  # the worker died while idle: one retry on a fresh one
                run.idle.append(self._restart(worker))
                for index, *_ in reversed(items):
                    if index in run.retried:
                        run.results[index] = failed("crash", "scoring worker could not be reached")
                    else:
                        run.retried.add(index)
                        run.queue.appendleft(index)
                continue
            pending = deque(index for index, *_ in items)
            run.busy[worker.conn] = _Chunk(
                worker, pending, time.monotonic() + self.config.timeout_s
            )

    def _collect(self, run: _Run) -> None:
        """Wait until a result arrives or the nearest deadline passes; take what arrived.
        Each result restarts the clock for the worker's next sample."""
        nearest = min(chunk.deadline for chunk in run.busy.values())
        for conn in wait(list(run.busy), timeout=max(0.0, nearest - time.monotonic())):
            chunk = run.busy[conn]  # type: ignore[index]
            try:
                while chunk.pending and chunk.worker.conn.poll():
                    done, result = chunk.worker.conn.recv()
                    run.results[done] = result
                    chunk.pending.remove(done)
                    chunk.deadline = time.monotonic() + self.config.timeout_s
            except (EOFError, OSError):  # the worker died mid-sample
                chunk.worker.process.join(timeout=1)
                code = chunk.worker.process.exitcode
                self._fail_head(run, chunk, "crash", f"scoring worker exited with code {code}")
                continue
            if not chunk.pending:
                del run.busy[conn]  # type: ignore[arg-type]
                run.idle.append(chunk.worker)

    def _expire(self, run: _Run) -> None:
        """Score 0 every sample past its deadline and replace its worker."""
        now = time.monotonic()
        for chunk in list(run.busy.values()):
            if now >= chunk.deadline:
                detail = f"a sample took over {self.config.timeout_s} s"
                self._fail_head(run, chunk, "timeout", detail)

    def _fail_head(self, run: _Run, chunk: _Chunk, reason: str, detail: str) -> None:
        """The sample the worker was on scores 0; the rest of its chunk goes back to the
        queue; the worker is replaced."""
        del run.busy[chunk.worker.conn]
        head = chunk.pending.popleft()
        run.results[head] = failed(reason, f"sample {head}: {detail}")
        run.queue.extendleft(reversed(chunk.pending))
        run.idle.append(self._restart(chunk.worker))

    def close(self) -> None:
        """Stop the workers (also done at interpreter exit: they are daemons)."""
        for worker in self._workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
            worker.process.join(timeout=1)
            self._stop(worker)
        self._workers = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
