"""What the demo shows for an answered question: the family's view (`DemoParts.view`, in
`tasks/<family>/demo.py`) built from the frame, box and timeline helpers here; a response
that does not parse says so, with the format the family expects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from videorl.data.records import (
    LETTERS,
)
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, Pictures
from videorl.demo.render import (
    MODEL,
    TRUTH,
    LabeledBox,
    draw_boxes,
    frame_strip,
    to_height,
)
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.payload import Box, key_value

MAX_TILES = 4
BOXES_TITLE = "Boxes: model orange, truth green"
NO_BOXES_TITLE = "Frames across the video (no box in the answer)"


@dataclass(frozen=True)
class View:
    """The answer text (markdown), the reasoning, the raw response and the pictures."""

    answer: str
    reasoning: str
    response: str
    pictures: Pictures


def short_number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def box_text(box: Box) -> str:
    return "[" + ", ".join(short_number(v) for v in box) + "]"


def window_text(window: tuple[float, float]) -> str:
    return f"{short_number(window[0])} s to {short_number(window[1])} s"


def _frame(result: Result, index: int) -> np.ndarray:
    return result.video.frames[index].permute(1, 2, 0).numpy()


def nearest_frame(timestamps: Sequence[float], t: float) -> int:
    """Index of the sampled frame closest to time `t`."""
    return int(np.argmin(np.abs(np.asarray(timestamps) - t)))


def spread(items: Sequence, k: int = MAX_TILES) -> list:
    """At most `k` items, evenly spread, first and last kept."""
    if len(items) <= k:
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, k).round().astype(int)]


def keyframes(
    result: Result, window: tuple[float, float] | None, title: str | None = None
) -> Image.Image:
    """Frames from inside the window (the nearest one when none falls inside); frames
    across the whole video without a window."""
    times = result.video.meta.timestamps
    if window is None:
        indices = spread(range(len(times)))
    else:
        inside = [i for i, t in enumerate(times) if window[0] <= t <= window[1]]
        indices = spread(inside) or [nearest_frame(times, sum(window) / 2)]
    tiles = [to_height(_frame(result, i))[0] for i in indices]
    return frame_strip(tiles, [f"{short_number(times[i])} s" for i in indices], title)


def _source_size(result: Result) -> tuple[float, float]:
    """The frame size that the record's boxes are in: the record's `width x height` (the
    file's, or the model input's after `to_model_coordinates`), 1000 x 1000 for norm1000."""
    if result.record.box_format == "norm1000":
        return (1000.0, 1000.0)
    meta = result.video.meta
    return (
        float(result.record.width or meta.source_width),
        float(result.record.height or meta.source_height),
    )


def boxed_frames(
    result: Result,
    at_times: Sequence[float],
    names: Sequence[str],
    model: Sequence[Box | None],
    truth: Sequence[Box | None],
) -> Image.Image:
    """The sampled frame nearest each time with the model's and the true box."""
    times = result.video.meta.timestamps
    tiles, captions = [], []
    for t, name, predicted, true in zip(at_times, names, model, truth, strict=True):
        index = nearest_frame(times, t)
        boxes = [
            LabeledBox(b, colour, label)
            for b, colour, label in ((true, TRUTH, "truth"), (predicted, MODEL, "model"))
            if b is not None
        ]
        tiles.append(draw_boxes(_frame(result, index), boxes, _source_size(result)))
        captions.append(f"{name} (shown {short_number(times[index])} s)")
    return frame_strip(tiles, captions, BOXES_TITLE)


def _reward_line(result: Result, think: bool) -> str:
    scored = score_response(
        result.record, result.prediction.response, RewardConfig(think_required=think)
    )
    parts = ", ".join(f"{k} {v:.2f}" for k, v in scored.components.items() if k != "overall")
    return f" · reward **{scored.overall:.2f}** ({parts})"


def truth_boxes(result: Result, boxes: dict[str, Box]) -> dict[float, Box]:
    if not result.has_truth:
        return {}
    keyed = {key_value(k): b for k, b in boxes.items()}
    return {k: b for k, b in keyed.items() if isinstance(k, float)}


def keyed_frames(
    result: Result,
    predicted: dict[float, Box],
    truth: dict[float, Box],
    seconds_per_key: float,
    unit: str,
) -> Image.Image | None:
    """Boxes keyed by frame number (tracking) or second (spatio-temporal grounding) on the
    frames they belong to, at most `MAX_TILES` keys; None without any box."""
    keys = spread(sorted(set(truth) | set(predicted)))
    if not keys:
        return None
    return boxed_frames(
        result,
        [k * seconds_per_key for k in keys],
        [f"{unit} {short_number(k)}" for k in keys],
        [predicted.get(k) for k in keys],
        [truth.get(k) for k in keys],
    )


def option_text(letter: str | None, options: Sequence[str]) -> str:
    """`B. red`, or "" for no letter or a letter past the options."""
    index = LETTERS.find(letter) if letter else -1
    return f"{letter}. {options[index]}" if 0 <= index < len(options) else ""


def build_view(result: Result, think: bool) -> View:
    """The answer text and pictures for `result`; an unparseable answer is said plainly."""
    demo = FAMILY_DEMOS.get(result.record.family)
    assert demo is not None, result.record.family
    answer, truth, pictures = demo.view(result)
    if answer:
        text = f"**Answer:** {answer}"
    else:
        text = (
            f"**No parseable answer.** The model's reply does not contain "
            f"`{demo.expected}`; its raw reply is below."
        )
    if truth:
        text += f"\n\n**Ground truth:** {truth}" + _reward_line(result, think)
    if result.input_fingerprint:  # the digest training, eval and serve record for this input
        text += f"\n\nInput fingerprint `{result.input_fingerprint}`"
    reasoning = result.prediction.reasoning
    return View(
        answer=text,
        reasoning=reasoning if reasoning is not None else "(no <think> block in the reply)",
        response=result.prediction.response,
        pictures=pictures,
    )
