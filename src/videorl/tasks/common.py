"""What several families' demo parts share: the placeholder box and reading a choice."""

from __future__ import annotations

from typing import Any

from videorl.data.records import Box
from videorl.eval import parsing

NO_BOX: Box = (0.0, 0.0, 0.0, 0.0)  # the placeholder answer of a question the demo asks


def choice_prediction(text: str, options: tuple[str, ...]) -> dict[str, Any]:
    return {"letter": parsing.parse_choice(text, options)}
