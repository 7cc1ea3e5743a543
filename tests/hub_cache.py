"""Put a local model folder into a Hugging Face Hub cache, as `hf download` would leave it.

    HF_HOME/hub/models--ORG--NAME/
        blobs/<sha256 of each file>
        snapshots/<commit>/<file> -> ../../blobs/<sha256>
        refs/main                  (the commit)

and point huggingface_hub at that cache in offline mode (in this process and, through the
environment, in subprocesses).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def add_to_hub_cache(folder: str | Path, hf_home: Path, repo_id: str, commit: str = COMMIT) -> Path:
    """Copy `folder` into `hf_home`'s Hub cache as `repo_id` at `commit`; return the snapshot."""
    repo = hf_home / "hub" / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for source in sorted(Path(folder).iterdir()):
        if not source.is_file():
            continue
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        blob = repo / "blobs" / digest
        if not blob.exists():
            shutil.copyfile(source, blob)
        link = snapshot / source.name
        if not link.exists():
            link.symlink_to(Path("..") / ".." / "blobs" / digest)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@contextmanager
def offline_hub(hf_home: Path) -> Iterator[Path]:
    """HF_HOME=hf_home and HF_HUB_OFFLINE=1 for this process (huggingface_hub reads its
    constants at import, so they are patched too) and for subprocesses."""
    import pytest
    from huggingface_hub import constants

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HOME", str(hf_home))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.delenv("HF_HUB_CACHE", raising=False)
        patch.delenv("TRANSFORMERS_CACHE", raising=False)
        patch.setattr(constants, "HF_HOME", str(hf_home))
        patch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
        patch.setattr(constants, "HF_HUB_OFFLINE", True)
        yield hf_home


def environment(hf_home: Path) -> dict[str, str]:
    """The environment of a subprocess that sees only this cache, offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "TRANSFORMERS_CACHE")}
    return {**env, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
