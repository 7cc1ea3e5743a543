"""Messages between the trainer and its rollout workers that survive either side's death.

A message (a draw request, a scored batch) is written with `torch.save` to a file of the
mailbox's folder (under /dev/shm where it exists: memory, not disk) and renamed into place;
only its name, a few bytes, goes through the `multiprocessing` queue. A pipe write of under
PIPE_BUF bytes is atomic, so a process killed while sending leaves either the whole name
or nothing: never half a message that would block the reader for good, as a batch pickled
into the pipe itself would (and a batch larger than the pipe's buffer would also block its
sender until read). `None` through the queue means "stop".
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

SHARED_MEMORY = Path("/dev/shm")


def mailbox_folder() -> str:
    """A fresh folder for one run's messages."""
    root = SHARED_MEMORY if SHARED_MEMORY.is_dir() else None
    return tempfile.mkdtemp(prefix="videorl-rollouts-", dir=root)


class Mailbox:
    """One direction of messages: files in `folder`, their names through `queue`."""

    def __init__(self, folder: str, queue: Any, sender: str) -> None:
        self.folder, self.queue, self.sender = folder, queue, sender
        self._count = itertools.count()

    def write(self, message: Any) -> str:
        """Store `message` under a new name (not yet sent) and return the name."""
        name = f"{self.sender}-{next(self._count)}.pt"
        path = os.path.join(self.folder, name)
        torch.save(message, path + ".part")
        os.replace(path + ".part", path)
        return name

    def post(self, name: str | None, timeout: float) -> None:
        """Send a written message's name (None: stop); `queue.Full` after `timeout`."""
        self.queue.put(name, timeout=timeout)

    def receive(self, timeout: float) -> Any:
        """The next message (None: stop); `queue.Empty` after `timeout`."""
        name = self.queue.get(timeout=timeout)
        if name is None:
            return None
        path = os.path.join(self.folder, name)
        message = torch.load(path, weights_only=False)
        os.remove(path)
        return message


def remove_mailbox(folder: str) -> None:
    """Delete the folder and whatever messages are left in it."""
    shutil.rmtree(folder, ignore_errors=True)
