"""The pieces of a sub-agent call (`rollout/subagents.py`): ParaVT's prompt with the call's
window, its frames (at most 16, images stacked as one input of images), and the result the
main row reads (cut to 512 tokens plus " [truncated]")."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from videorl.rollout.subagents import MAX_FRAMES, as_frames, shown, summary_prompt
from videorl.video.decode import VideoConfig, frames_from_array


class CharTokenizer:
    """One token per character."""

    def encode(self, text, add_special_tokens=False):
        return list(text)

    def decode(self, ids, skip_special_tokens=True):
        return "".join(ids)


def image(value: int, height: int = 32, width: int = 32):
    frame = np.full((1, height, width, 3), value, dtype=np.uint8)
    return frames_from_array(frame, None, VideoConfig())


def test_the_prompt_states_the_window_as_paravt_does():
    text = summary_prompt(65.0, 72.5)
    assert text.startswith("You are analyzing a video segment from 01:05 to 01:12 (duration: 7.5")
    assert text.endswith("Summary:")
    assert summary_prompt(None, None).startswith("You are analyzing a video segment.\n")


def test_images_are_stacked_in_order_and_capped_at_sixteen():
    video, as_images = as_frames([image(v) for v in range(20)])
    assert as_images and video is not None
    assert video.frames.shape[0] == MAX_FRAMES == 16
    values = [int(frame[0, 0, 0]) for frame in video.frames]
    assert values[0] == 0 and values[-1] == 19 and values == sorted(values)  # evenly, in order
    few, _ = as_frames([image(v) for v in (7, 9)])
    assert few is not None and [int(f[0, 0, 0]) for f in few.frames] == [7, 9]


def test_media_a_prompt_cannot_hold_stay_with_the_main_row():
    assert as_frames([]) == (None, False)
    assert as_frames([image(1), image(2, 32, 96)]) == (None, False)  # two frame sizes


def test_the_main_row_reads_at_most_512_tokens():
    loaded = SimpleNamespace(tokenizer=CharTokenizer())
    assert shown(loaded, "a" * 512) == "a" * 512  # type: ignore[arg-type]  # a stand-in with only what is read
    assert shown(loaded, "b" * 600) == "b" * 512 + " [truncated]"  # type: ignore[arg-type]  # a stand-in with only what is read
