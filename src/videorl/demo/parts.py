"""What the web demo needs of a family, as its `tasks/<family>/demo.py` registers it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from videorl.data.families import PartTable
from videorl.data.records import Answer
from videorl.video.meta import VideoMeta


@dataclass(frozen=True)
class Pictures:
    """The pictures of an answer; None where the family has none."""

    timeline: Image.Image | None = None
    frames: Image.Image | None = None
    options: str | None = None


@dataclass(frozen=True)
class DemoParts:
    """`label` ("temporal grounding"), `placeholder` (the query box's hint), `expected` (the
    answer format named when a reply does not parse), `options` (the question takes
    options), `blank(options, meta)` (the answer fields of a typed question: a placeholder
    answer and extra record fields), `parse(text, options)` (the `Prediction` fields read
    from a reply) and `view(result)` (answer text, truth text, pictures)."""

    label: str
    placeholder: str
    expected: str
    blank: Callable[[tuple[str, ...], VideoMeta], tuple[Answer, dict[str, Any]]]
    parse: Callable[[str, tuple[str, ...]], dict[str, Any]]
    # `view` takes the demo's `Result` (`demo/inference.py`, which reads these parts)
    view: Callable[[Any], tuple[str, str, Pictures]]
    options: bool = False


FAMILY_DEMOS: PartTable[DemoParts] = PartTable("demo", "demo")
