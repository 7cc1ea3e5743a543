"""A training run that stops at a known point, so that a test can signal it there.

No sleeping "long enough": the worker (`loop_worker.py`) reads `PAUSE_ENV` = "STEP:FOLDER";
right after the checkpoint of step STEP is written, every rank writes its pid to
`FOLDER/paused-RANK` and waits until `FOLDER/go` exists; a rank that handles a SIGINT
writes `FOLDER/interrupted-RANK`. The test waits for every rank's marker
(`PausePoint.wait`), sends its signal while the run is held there, waits until every rank
has handled it (`wait_interrupted`), then `release`s the run. What the run saved is
therefore exactly steps 1..STEP, however busy the machine is.

torchrun starts each worker in a session of its own (`start_new_session`), so a signal to
the launcher's process group does not reach the workers: Ctrl-C reaches them only when the
agent forwards it, later, and SIGKILL not at all (they would live on as orphans and go on
writing checkpoints). `kill_all` kills the launcher's group and every worker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

PAUSE_ENV = "VIDEORL_TEST_PAUSE_AFTER_SAVE"
POLL_S = 0.05  # how often a waiting side looks for the other's file (not a timing guess)
DEADLINE_S = 900  # a run that never reaches the point fails the test instead of hanging it


class PausePoint:
    """The test's side: where the run pauses, and the files that say so."""

    def __init__(self, folder: Path, step: int, ranks: int) -> None:
        self.folder, self.step, self.ranks = Path(folder), step, ranks
        self.folder.mkdir(parents=True, exist_ok=True)
        stale = [*self.folder.glob("paused-*"), *self.folder.glob("interrupted-*")]
        for marker in [*stale, self.folder / "go"]:
            marker.unlink(missing_ok=True)

    def env(self) -> dict[str, str]:
        return {PAUSE_ENV: f"{self.step}:{self.folder}"}

    def wait(self, proc: subprocess.Popen) -> None:
        """Block until every rank is held after step `step`'s checkpoint."""
        self._wait_for("paused", proc)

    def wait_interrupted(self, proc: subprocess.Popen) -> None:
        """Block until every rank's SIGINT handler has run."""
        self._wait_for("interrupted", proc)

    def _wait_for(self, marker: str, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while len(list(self.folder.glob(f"{marker}-*"))) < self.ranks:
            assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before {marker}"
            assert time.monotonic() < deadline, f"no rank {marker} after step {self.step}"
            time.sleep(POLL_S)

    def worker_pids(self) -> list[int]:
        return [int(path.read_text()) for path in sorted(self.folder.glob("paused-*"))]

    def kill_all(self, proc: subprocess.Popen) -> None:
        """SIGKILL the launcher's process group and every held worker; wait until all died."""
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in self.worker_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)
        for pid in self.worker_pids():
            deadline = time.monotonic() + 60
            while _running(pid):
                assert time.monotonic() < deadline, f"worker {pid} survived SIGKILL"
                time.sleep(POLL_S)

    def release(self) -> None:
        (self.folder / "go").touch()


def _running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie (a killed orphan waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def install_from_env() -> None:
    """The worker's side: wrap `Checkpointer.save` to hold the run after the named step."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    step_text, folder_text = spec.split(":", 1)
    step, folder = int(step_text), Path(folder_text)

    from videorl.trainer.checkpoint import Checkpointer
    from videorl.trainer.interrupt import StopRequest

    real_save, real_handle = Checkpointer.save, StopRequest.handle
    rank = int(os.environ.get("RANK", "0"))

    def save_then_pause(self, state):
        path = real_save(self, state)
        if state.step == step:
            (folder / f"paused-{rank}").write_text(str(os.getpid()))
            deadline = time.monotonic() + DEADLINE_S
            while not (folder / "go").exists() and time.monotonic() < deadline:
                time.sleep(POLL_S)
        return path

    def handle_then_mark(self, signum, frame):
        try:
            real_handle(self, signum, frame)
        finally:
            (folder / f"interrupted-{rank}").touch()

    Checkpointer.save = save_then_pause  # type: ignore[method-assign]  # patched on purpose in this worker
    StopRequest.handle = handle_then_mark  # type: ignore[method-assign]  # patched on purpose in this worker
