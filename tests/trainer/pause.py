"""A training run that stops at a known point, so that a test can signal it there.

No sleeping "long enough": the worker (`loop_worker.py`) reads `PAUSE_ENV` = "STEP:FOLDER";
right after the checkpoint of step STEP is written, every rank writes `FOLDER/paused-RANK`
and waits until `FOLDER/go` exists. The test waits for every rank's marker
(`PausePoint.wait`), sends its signal (SIGKILL or SIGINT) while the run is held there, then
`release`s it. What the run saved before the signal is therefore exactly steps 1..STEP,
however busy the machine is.
"""

from __future__ import annotations

import os
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
        for marker in [*self.folder.glob("paused-*"), self.folder / "go"]:
            marker.unlink(missing_ok=True)

    def env(self) -> dict[str, str]:
        return {PAUSE_ENV: f"{self.step}:{self.folder}"}

    def wait(self, proc: subprocess.Popen) -> None:
        """Block until every rank is held after step `step`'s checkpoint."""
        deadline = time.monotonic() + DEADLINE_S
        while len(list(self.folder.glob("paused-*"))) < self.ranks:
            assert proc.poll() is None, (
                f"the run ended (rc {proc.returncode}) before step {self.step}"
            )
            assert time.monotonic() < deadline, f"no pause after step {self.step}"
            time.sleep(POLL_S)

    def release(self) -> None:
        (self.folder / "go").touch()


def install_from_env() -> None:
    """The worker's side: wrap `Checkpointer.save` to hold the run after the named step."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    step_text, folder_text = spec.split(":", 1)
    step, folder = int(step_text), Path(folder_text)

    from videorl.trainer.checkpoint import Checkpointer

    real_save = Checkpointer.save

    def save_then_pause(self, state):
        path = real_save(self, state)
        if state.step == step:
            (folder / f"paused-{state.info.rank}").touch()
            deadline = time.monotonic() + DEADLINE_S
            while not (folder / "go").exists() and time.monotonic() < deadline:
                time.sleep(POLL_S)
        return path

    Checkpointer.save = save_then_pause
