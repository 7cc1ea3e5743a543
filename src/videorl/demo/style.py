"""The demo page's CSS for phone widths (`launch(css=PHONE_CSS)`).

At 640 px and below gradio already stacks the two columns and nothing overflows the page;
what is left unreadable is the drawings: the timeline (800 px wide, 13 px labels) and the
frame strip are scaled down to the column, about 0.39x in a 375 px phone's 311 px column,
their labels to 5 px. Below 640 px they keep their drawn size inside a box that scrolls
sideways, so their labels stay at 13 px (tests/demo/test_app.py checks this at 375 px in
headless Chromium). Gradio scopes custom rules to its container, so the page's own padding
(32 px a side) is not ours to change.
"""

from __future__ import annotations

PHONE_WIDTH = 640  # px: at and below it the rules apply
DRAWINGS = ("#timeline", "#frames")


def _each(suffix: str) -> str:
    return ", ".join(f"{drawing} {suffix}" for drawing in DRAWINGS)


PHONE_CSS = f"""
@media (max-width: {PHONE_WIDTH}px) {{
  {_each(".image-container")} {{ overflow-x: auto; }}
  {_each(".image-frame")}, {_each(".image-container button")} {{
    width: max-content !important; max-width: none !important; height: auto !important;
  }}
  {_each("img")} {{ width: auto !important; max-width: none !important; height: auto !important; }}
}}
"""
