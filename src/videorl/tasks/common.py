"""What several families' modules share: the demo's placeholder box and helpers."""

from __future__ import annotations

from typing import Any

from videorl.data.records import Box
from videorl.eval import parsing

NO_BOX: Box = (0.0, 0.0, 0.0, 0.0)  # the placeholder answer of a question the demo asks


def demo_view(name: str) -> Any:
    """The demo's view builder `name` (`demo/views.py`), imported on use: the demo alone
    needs the model stack that module imports."""
    from videorl.demo import views

    return getattr(views, name)


def choice_prediction(text: str, options: tuple[str, ...]) -> dict[str, Any]:
    return {"letter": parsing.parse_choice(text, options)}
