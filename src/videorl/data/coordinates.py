"""Spatial coordinates as each model family reads and writes them, applied to a record's
boxes and points so that prompts, annotation rows and rewards agree (issue 16).

| model family | convention |
|---|---|
| Qwen2.5-VL (`qwen2_5_vl`, `qwen2_vl`) | `abs`: pixels of the *resized* frame the model sees |
| Qwen3-VL, Qwen3.5 (`qwen3_vl*`, `qwen3_5*`) | `norm1000`: 0..1000 on both axes |

A record states its boxes in its own `box_format`: `abs` pixels of its `width x height`
source frame, or `norm1000`. `to_model_coordinates` rewrites the answer (and a tracking
record's `extra.first_box`) into the model's convention: with source size (W, H) and model
input size (W', H'), abs -> abs is `x * W' / W`, `y * H' / H`; abs -> norm1000 is
`x * 1000 / W`, `y * 1000 / H`; norm1000 -> abs is `x * W' / 1000`, `y * H' / 1000`.
The record's `width`/`height` become the model input's, so the prompt names the frame the
model sees. Records it cannot convert (abs without a source size, a segmentation record with
a mask, whose pixels are the source frame's) are returned unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal, get_args

from videorl.data.records import (
    BoxAnswer,
    SegmentationAnswer,
    SpatioTemporalAnswer,
    TaskRecord,
    TrackingAnswer,
)
from videorl.errors import ConfigError

CoordinateMode = Literal["auto", "record"]
COORDINATE_MODES: tuple[str, ...] = get_args(CoordinateMode)
ABSOLUTE_MODELS = ("qwen2_5_vl", "qwen2_vl")
NORMALIZED_MODELS = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")


def check_coordinates(mode: str, key: str = "data.coordinates") -> str:
    if mode not in COORDINATE_MODES:
        raise ConfigError(
            f"{key}={mode!r} is unknown; use auto (the model family's convention) or record "
            "(the record's own box_format)"
        )
    return mode


def check_model_type(model_type: str, key: str = "model_type") -> str:
    """`model_type` if its box convention is known, else a one-line `ConfigError` naming `key`."""
    if model_type not in ABSOLUTE_MODELS + NORMALIZED_MODELS:
        raise ConfigError(
            f"{key}={model_type!r} has no known box convention; use one of "
            f"{', '.join(ABSOLUTE_MODELS + NORMALIZED_MODELS)} (config.json's model_type)"
        )
    return model_type


def model_convention(model_type: str, mode: str = "auto") -> str | None:
    """`abs`, `norm1000`, or None (keep the record's own) for a model type under `mode`."""
    if check_coordinates(mode) == "record":
        return None
    if model_type in ABSOLUTE_MODELS:
        return "abs"
    if model_type in NORMALIZED_MODELS:
        return "norm1000"
    return None


def _mapper(record: TaskRecord, target: str, size: tuple[int, int]) -> Callable | None:
    """(x, y) -> (x', y') from the record's frame to `target` at model input `size`."""
    width, height = size
    if record.box_format == "norm1000":
        src_w = src_h = 1000.0
    elif record.width and record.height:
        src_w, src_h = float(record.width), float(record.height)
    else:
        return None
    dst_w, dst_h = (1000.0, 1000.0) if target == "norm1000" else (float(width), float(height))
    sx, sy = dst_w / src_w, dst_h / src_h
    return lambda x, y: (round(x * sx, 2), round(y * sy, 2))


def _box(move: Callable, box: Sequence[float]) -> tuple[float, float, float, float]:
    x1, y1 = move(box[0], box[1])
    x2, y2 = move(box[2], box[3])
    return (x1, y1, x2, y2)


def _answer(answer: Any, move: Callable) -> Any:
    if isinstance(answer, BoxAnswer):
        return BoxAnswer(_box(move, answer.box))
    if isinstance(answer, SegmentationAnswer):
        return replace(
            answer,
            box=_box(move, answer.box),
            positive_points=tuple(move(*p) for p in answer.positive_points),
            negative_points=tuple(move(*p) for p in answer.negative_points),
        )
    if isinstance(answer, TrackingAnswer):
        return TrackingAnswer({k: _box(move, b) for k, b in answer.boxes.items()})
    if isinstance(answer, SpatioTemporalAnswer):
        return replace(answer, boxes={k: _box(move, b) for k, b in answer.boxes.items()})
    return None


def to_model_coordinates(
    record: TaskRecord, target: str | None, size: tuple[int, int] | None
) -> TaskRecord:
    """`record` with its boxes and points in `target` (`abs` at model input `size` =
    (width, height), or `norm1000`); unchanged when `target` is None or nothing converts."""
    if target is None or size is None:
        return record
    if isinstance(record.answer, SegmentationAnswer) and (
        record.answer.mask_rle is not None or record.answer.frame_masks is not None
    ):
        return record
    move = _mapper(record, target, size)
    if move is None:
        return record
    answer = _answer(record.answer, move)
    if answer is None:
        return record
    extra = dict(record.extra)
    if extra.get("first_box"):
        extra["first_box"] = list(_box(move, extra["first_box"]))
    width, height = size
    if target == "norm1000":
        return replace(record, answer=answer, box_format="norm1000", extra=extra)
    return replace(
        record, answer=answer, box_format="abs", width=int(width), height=int(height), extra=extra
    )


def frame_size(media: object) -> tuple[int, int] | None:
    """(width, height) of decoded frames `T x C x H x W`, else None."""
    frames = getattr(media, "frames", None)
    if frames is None or frames.dim() != 4:
        return None
    return int(frames.shape[-1]), int(frames.shape[-2])
