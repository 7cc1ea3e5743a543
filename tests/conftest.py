"""Shared fixtures: tiny offline models are built once per test session."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests never download: a Hub id resolves from the local cache only (no network timeouts).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Build (once) and return the folder of a tiny model of the given architecture."""
    from videorl.models.tiny import build_tiny_model

    cache: dict[str, str] = {}

    def get(arch: str = "qwen2_5_vl") -> str:
        if arch not in cache:
            cache[arch] = str(build_tiny_model(arch, tmp_path_factory.mktemp(f"tiny_{arch}")))
        return cache[arch]

    return get
