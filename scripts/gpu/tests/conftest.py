"""The device the GPU tests run on: `VIDEORL_TEST_DEVICE` (cuda, cuda:N or cpu), else the
GPU when there is one; on a machine without one they skip. `scripts/gpu/check.sh --cpu`
runs them on the CPU (VIDEORL_TEST_DEVICE=cpu) so that they cannot rot in CI."""

from __future__ import annotations

import os

import pytest
import torch
from tests.conftest import tiny_model_dir  # noqa: F401  (the tiny models of tests/)

ENV = "VIDEORL_TEST_DEVICE"


@pytest.fixture(scope="session")
def device() -> str:
    wanted = os.environ.get(ENV)
    if wanted is None:
        if not torch.cuda.is_available():
            pytest.skip(f"no CUDA GPU (set {ENV}=cpu to run the GPU tests on the CPU)")
        return "cuda"
    if wanted.startswith("cuda") and not torch.cuda.is_available():
        pytest.fail(f"{ENV}={wanted} but torch sees no CUDA GPU (torch {torch.__version__})")
    return wanted


@pytest.fixture(scope="session")
def tg_records(tmp_path_factory):
    """A few synthetic temporal-grounding records with their videos."""
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize

    out = tmp_path_factory.mktemp("gpu_tg")
    records = load_records(synthesize(out, ["temporal_grounding"], n=4, seed=5)).records
    write_records(out / "train.jsonl", records)
    return out / "train.jsonl"
