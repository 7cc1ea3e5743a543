"""What the installed vLLM offers the rollout engine, found by feature detection, and the
in-process backend of vLLM's native weight-transfer API. Imported only where vLLM is.

vLLM's RL API (`LLM.init_weight_transfer_engine`, `start_weight_update`, `update_weights`,
`finish_weight_update`, vLLM >= 0.2x) moves weights through a pluggable backend: NCCL, CUDA
IPC, ... . videorl's engine core runs in the trainer's own process
(`VLLM_ENABLE_V1_MULTIPROCESSING=0`), so the backend registered here hands the worker the
trainer's tensors themselves: no copy, no socket, no CUDA IPC handle, on a GPU and on the
CPU alike. The worker then does what vLLM's checkpoint-format backends do: layerwise reload
(`initialize_layerwise_reload` at start, the model's own `load_weights` per chunk,
`finalize_layerwise_reload` at finish, which repacks fused and CPU-packed layers).

Generation is paused around a sync with vLLM's engine-core pause (`LLM.sleep(level=0,
mode="keep")` and `wake_up(tags=["scheduling"])`: the synchronous `LLM`'s form of
`AsyncLLM.pause_generation` / `resume_generation`, the same `pause_scheduler` underneath).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from vllm.distributed.weight_transfer.base import (
    WeightTransferEngine,
    WeightTransferInitInfo,
    WeightTransferUpdateInfo,
)

# The backend name videorl registers with vLLM's WeightTransferEngineFactory.
BACKEND = "videorl_inprocess"
# Weights per `update_weights` call: the API's unit is a chunk; layerwise reload finishes a
# layer as soon as all its weights have arrived.
CHUNK_TENSORS = 64


@dataclass
class InProcessInitInfo(WeightTransferInitInfo):
    """Nothing to rendezvous: trainer and worker share one process."""


@dataclass
class InProcessUpdateInfo(WeightTransferUpdateInfo):
    """One chunk: `(checkpoint name, tensor)` pairs, the tensors themselves."""

    weights: list[tuple[str, torch.Tensor]]


class InProcessWeightTransferEngine(WeightTransferEngine[InProcessInitInfo, InProcessUpdateInfo]):
    """vLLM's weight-transfer backend for an engine core in the trainer's process."""

    init_info_cls = InProcessInitInfo
    update_info_cls = InProcessUpdateInfo

    def init_transfer_engine(self, init_info: InProcessInitInfo) -> None:
        pass

    def start_weight_update(self) -> None:
        from vllm.model_executor.model_loader.reload import initialize_layerwise_reload

        initialize_layerwise_reload(self.model)

    def update_weights(self, update_info: dict[str, Any]) -> None:
        self.receive_weights(self.parse_update_info(update_info))
        if self.device.type == "cuda":  # the base class syncs any accelerator; a CPU has none
            torch.cuda.synchronize(self.device)

    def receive_weights(self, update_info: InProcessUpdateInfo) -> None:
        self.model.load_weights(update_info.weights)

    def finish_weight_update(self) -> None:
        from vllm.model_executor.model_loader.reload import finalize_layerwise_reload

        finalize_layerwise_reload(self.model, self.model_config)

    def shutdown(self) -> None:
        pass


def register_backend() -> str:
    """Register the in-process backend with vLLM's factory (once per process); its name."""
    from vllm.distributed.weight_transfer.factory import WeightTransferEngineFactory

    with contextlib.suppress(ValueError):  # "already registered": a second engine here
        WeightTransferEngineFactory.register_engine(BACKEND, InProcessWeightTransferEngine)
    return BACKEND


@dataclass(frozen=True)
class SyncFeatures:
    """What the installed `vllm.LLM` offers a weight sync."""

    native_weight_transfer: bool  # init_weight_transfer_engine / start / update / finish
    pause: bool  # sleep(level=0, mode=...) and wake_up(tags=["scheduling"])


def sync_features(llm_class: Any) -> SyncFeatures:
    """Feature detection on the `LLM` class (no engine built)."""
    transfer = all(
        callable(getattr(llm_class, name, None))
        for name in (
            "init_weight_transfer_engine",
            "start_weight_update",
            "update_weights",
            "finish_weight_update",
        )
    )
    try:
        import vllm.distributed.weight_transfer.factory  # noqa: F401
        from vllm.config.weight_transfer import WeightTransferConfig  # noqa: F401
    except ImportError:
        transfer = False
    sleep = getattr(llm_class, "sleep", None)
    pause = callable(sleep) and "mode" in inspect.signature(sleep).parameters
    return SyncFeatures(native_weight_transfer=transfer, pause=pause)


def chunks(
    weights: list[tuple[str, torch.Tensor]], size: int = CHUNK_TENSORS
) -> Iterator[list[tuple[str, torch.Tensor]]]:
    for start in range(0, len(weights), size):
        yield weights[start : start + size]
