"""Benches run in this process quiet it for good (`bench/harness.py: quiet`: the `videorl`
logger at ERROR, library warnings off, a fixed torch thread count). Each bench test module
gets the process back as it found it, so a later test that expects a warning still sees it."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator

import pytest
import torch
import transformers


@pytest.fixture(scope="module", autouse=True)
def process_as_found() -> Iterator[None]:
    logger = logging.getLogger("videorl")
    level, threads = logger.level, torch.get_num_threads()
    verbosity = transformers.logging.get_verbosity()
    progress_bar = transformers.utils.logging.is_progress_bar_enabled()
    tokenizers = os.environ.get("TOKENIZERS_PARALLELISM")
    with warnings.catch_warnings():  # restores the filters on leaving
        yield
    logger.setLevel(level)
    torch.set_num_threads(threads)
    transformers.logging.set_verbosity(verbosity)
    if progress_bar:
        transformers.logging.enable_progress_bar()
    if tokenizers is None:
        os.environ.pop("TOKENIZERS_PARALLELISM", None)
    else:
        os.environ["TOKENIZERS_PARALLELISM"] = tokenizers
