"""Video controls: same shape and metadata, the evidence removed or scrambled as named."""

from __future__ import annotations

import pytest
import torch

from videorl.errors import ConfigError
from videorl.video.controls import BLANK_VALUE, apply_control, parse_controls, permutation
from videorl.video.decode import DecodedVideo
from videorl.video.meta import VideoMeta


def _video(frames: int) -> DecodedVideo:
    # frame k is filled with the value k + 1, so every frame is distinguishable
    data = torch.arange(1, frames + 1, dtype=torch.uint8).view(frames, 1, 1, 1)
    meta = VideoMeta(
        source_fps=2.0,
        duration=frames / 2,
        frame_indices=tuple(range(frames)),
        timestamps=tuple(k / 2 for k in range(frames)),
        fps=2.0,
        width=4,
        height=4,
    )
    return DecodedVideo(frames=data.expand(frames, 3, 4, 4).contiguous(), meta=meta)


def _values(video: DecodedVideo) -> list[int]:
    return [int(frame[0, 0, 0]) for frame in video.frames]


def test_each_control_keeps_shape_and_metadata_and_changes_what_it_names():
    video = _video(6)
    controlled = {
        c: apply_control(video, c, key="rec-1")
        for c in parse_controls("frozen,reversed,shuffled,blank")
    }
    for out in controlled.values():
        assert out.frames.shape == video.frames.shape and out.frames.dtype == torch.uint8
        assert out.meta == video.meta
    assert _values(controlled["frozen"]) == [1] * 6
    assert _values(controlled["reversed"]) == [6, 5, 4, 3, 2, 1]
    shuffled = _values(controlled["shuffled"])
    assert sorted(shuffled) == [1, 2, 3, 4, 5, 6] and shuffled != [1, 2, 3, 4, 5, 6]
    assert shuffled == _values(apply_control(video, "shuffled", key="rec-1"))  # seeded
    assert (controlled["blank"].frames == BLANK_VALUE).all()
    assert _values(video) == [1, 2, 3, 4, 5, 6]  # the decoded media is not modified


def test_a_drawn_identity_permutation_is_rolled():
    for key in (str(k) for k in range(200)):  # 2 frames: half the keys draw the identity
        assert permutation(2, key).tolist() == [1, 0]


def test_images_change_under_blank_only():
    image = _video(1)
    for control in ("frozen", "reversed", "shuffled"):
        assert apply_control(image, control) is image
    assert (apply_control(image, "blank").frames == BLANK_VALUE).all()


def test_unknown_control_is_one_line_naming_the_choices():
    assert parse_controls(" frozen, ,reversed,frozen") == ("frozen", "reversed")
    assert parse_controls(None) == ()
    with pytest.raises(ConfigError, match="'mirror' is unknown; choose from frozen, reversed"):
        parse_controls("frozen,mirror")
