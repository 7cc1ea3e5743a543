"""LongVT's `crop_video` (`videorl.rollout.tools.longvt`, configs/longvt.yaml): the window
resampled at 1 fps, at most 128 frames of at most 224 x 224 pixels, returned as images with
LongVT's text; LongVT's range checks are errors for the model."""

from __future__ import annotations

import pytest

from tests.video.conftest import frame_numbers, index_frames
from videorl.rollout.tools import TOOLS, ToolCall, ToolContext, ToolRunner, longvt, resolve_tools
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4
from videorl.video.media import MediaRef


@pytest.fixture
def ctx(tmp_path):
    """A 10 s index-coded 8 fps video of 280 x 336 px, its prompt at one frame per 4 s."""
    path = write_mp4(tmp_path / "v.mp4", index_frames(80, 280, 336), 8)
    config = VideoConfig(min_pixels=784, max_pixels=50176, fps=0.25, min_frames=2)
    return ToolContext(
        media=MediaRef(path=str(path)), video=decode_video(path, config), config=config
    )


def _call(ctx, **arguments):
    runner = ToolRunner(resolve_tools(["crop_video"]))
    try:
        return runner.run(ToolCall("", "crop_video", arguments), ctx)
    finally:
        runner.close()


def test_crop_video_is_registered_with_longvts_signature():
    spec = TOOLS["crop_video"]
    parameters = spec.schema()["function"]["parameters"]
    assert set(parameters["properties"]) == {"video_path", "start_time", "end_time"}
    assert parameters["required"] == ["start_time", "end_time"]
    assert spec.timeout_s == 120.0


def test_crop_video_returns_the_window_at_one_fps_as_images(ctx):
    outcome = _call(ctx, video_path="/elsewhere/v.mp4", start_time=2.0, end_time=6.0)
    assert outcome.ok, outcome.error
    assert outcome.text == longvt.RESULT_TEXT
    assert len(outcome.media) == 4  # 4 s at 1 fps
    assert all(m.meta.is_image and m.frames.shape[0] == 1 for m in outcome.media)
    # frames 1 s apart from the window start, 8 source frames per second
    assert [frame_numbers(m.frames)[0] for m in outcome.media] == [16, 24, 32, 40]
    # 280 x 336 = 94080 px is over 224 x 224: each frame shrinks under it
    height, width = outcome.media[0].frames.shape[-2:]
    assert height * width <= longvt.CLIP_MAX_PIXELS


def test_crop_video_is_bounded_to_128_frames(tmp_path):
    path = write_mp4(tmp_path / "long.mp4", index_frames(300, 32, 32), 2)  # 150 s at 2 fps
    config = VideoConfig(min_pixels=4, max_pixels=4096, factor=2, fps=0.1, min_frames=2)
    ctx = ToolContext(
        media=MediaRef(path=str(path)), video=decode_video(path, config), config=config
    )
    outcome = _call(ctx, start_time=0.0, end_time=150.0)
    assert outcome.ok, outcome.error
    assert len(outcome.media) == longvt.CLIP_MAX_FRAMES


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"start_time": -1.0, "end_time": 2.0}, "start_time must be >= 0"),
        ({"start_time": 3.0, "end_time": 3.0}, "must be greater than start_time"),
        ({"start_time": 10.0, "end_time": 12.0}, "exceeds the video's end"),
        ({"start_time": 8.0, "end_time": 11.0}, "end_time (11s) exceeds"),
        ({"start_time": 1.0}, "end_time is required"),
        ({"start_time": 1.0, "end_time": 2.0, "fps": 4}, "unknown"),
    ],
)
def test_crop_video_range_errors_go_back_to_the_model(ctx, arguments, message):
    outcome = _call(ctx, **arguments)
    assert not outcome.ok and message in (outcome.error or ""), outcome
    assert outcome.text.startswith("Error: ")
