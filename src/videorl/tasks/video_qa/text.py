"""An open-ended answer's check: the normalised exact match of its text."""

from __future__ import annotations

import re

_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{} "


def normalized_text(text: str) -> str:
    """Lower case, one space between words, no punctuation at either end."""
    return _SPACES.sub(" ", text.casefold()).strip(_EDGE_PUNCTUATION)


def text_match(payload: str, reference: str) -> float:
    """1 if the normalised texts are equal (and not empty), else 0."""
    answer = normalized_text(payload)
    return float(bool(answer) and answer == normalized_text(reference))
