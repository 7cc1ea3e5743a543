"""The tool registry, the runner's error handling and the built-in video tools."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from tests.video.conftest import LEVEL, frame_numbers, index_frames
from videorl.errors import ConfigError
from videorl.rollout.tools import (
    TOOLS,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    ToolRunner,
    VideoToolLimits,
    parse_tool_calls,
    register_tool,
    resolve_tools,
)
from videorl.video.controls import BLANK_VALUE, apply_control, media_key, permutation
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4
from videorl.video.media import MediaRef

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}},
    "required": ["n"],
    "additionalProperties": False,
}


@pytest.fixture
def scratch_tools():
    """Registers test tools and removes them afterwards."""
    before = dict(TOOLS)
    yield
    TOOLS.clear()
    TOOLS.update(before)


def test_register_tool_checks_its_signature(scratch_tools):
    @register_tool(description="double n", parameters=SCHEMA)
    def double(ctx, n):
        return str(2 * n)

    assert TOOLS["double"].schema()["function"]["parameters"] == SCHEMA
    with pytest.raises(ConfigError, match="already registered"):
        register_tool("double", description="", parameters=SCHEMA)(double)
    with pytest.raises(ConfigError, match="unsupported keywords"):
        register_tool("odd", description="", parameters={"type": "object", "oneOf": []})(double)
    with pytest.raises(ConfigError, match="type object"):
        register_tool("odd", description="", parameters={"type": "string"})(double)
    with pytest.raises(ConfigError, match="undeclared"):
        register_tool("odd", description="", parameters={"type": "object", "required": ["x"]})(
            double
        )
    with pytest.raises(ConfigError, match=r"^tool odd timeout_s=0\.0 must be > 0$"):
        register_tool("odd", description="", parameters=SCHEMA, timeout_s=0)(double)
    with pytest.raises(ConfigError, match="unknown tools"):
        resolve_tools(["get_clip", "nope"])
    assert [t.name for t in resolve_tools(["get_clip", "double"])] == ["get_clip", "double"]


def test_every_bad_call_is_an_error_message_never_an_exception(scratch_tools):
    @register_tool(description="double n", parameters=SCHEMA)
    def double(ctx, n):
        if n == 13:
            raise ToolError("13 is unlucky")
        if n == 7:
            raise RuntimeError("a bug")
        return str(2 * n)

    released = threading.Event()  # the slow tool returns only after the runs: no race

    @register_tool(description="slow", parameters={"type": "object"}, timeout_s=0.05)
    def slow(ctx):
        released.wait()
        return "late"

    runner = ToolRunner(resolve_tools(["double", "slow"]))
    ctx = ToolContext()

    def run(text):
        return runner.run(parse_tool_calls(text)[0], ctx)

    assert run('<tool_call>{"name": "double", "arguments": {"n": 4}}</tool_call>').text == "8"
    errors = {
        '<tool_call>{"name": "triple", "arguments": {"n": 4}}</tool_call>': "unknown tool",
        '<tool_call>{"name": "double", "arguments": {"n": 4}</tool_call>': "not valid JSON",
        "<tool_call>[1, 2]</tool_call>": '"name"',
        '<tool_call>{"name": "double", "arguments": {}}</tool_call>': "arguments.n is required",
        '<tool_call>{"name": "double", "arguments": {"n": "4"}}</tool_call>': "must be integer",
        '<tool_call>{"name": "double", "arguments": {"n": -1}}</tool_call>': "must be >= 0",
        '<tool_call>{"name": "double", "arguments": {"n": 1, "m": 2}}</tool_call>': "unknown fi",
        '<tool_call>{"name": "double", "arguments": {"n": 13}}</tool_call>': "13 is unlucky",
        '<tool_call>{"name": "double", "arguments": {"n": 7}}</tool_call>': "RuntimeError",
        '<tool_call>{"name": "slow", "arguments": {}}</tool_call>': "longer than its limit",
        '<tool_call>{"name": "double", "arguments": ': "not closed",
    }
    for text, message in errors.items():
        outcome = run(text)
        assert not outcome.ok and message in outcome.error, (text, outcome)
        assert outcome.text.startswith("Error: ")
    released.set()
    runner.close()


def test_parse_tool_calls_reads_qwen_format():
    text = (
        "<think>look closer</think>\n<tool_call>\n"
        '{"name": "get_clip", "arguments": {"start": 1, "end": 2.5}}\n</tool_call>'
        '<tool_call>{"name": "get_frame", "arguments": "{\\"time\\": 3}"}</tool_call>'
    )
    calls = parse_tool_calls(text)
    assert [(c.name, c.arguments, c.error) for c in calls] == [
        ("get_clip", {"start": 1, "end": 2.5}, None),
        ("get_frame", {"time": 3}, None),
    ]
    assert parse_tool_calls("<answer>B</answer>") == []


@pytest.fixture
def video_ctx(tmp_path):
    """A 10 s index-coded video at 8 fps, its prompt sampled at one frame per 4 s."""
    path = write_mp4(tmp_path / "v.mp4", index_frames(80, 64, 96), 8)
    config = VideoConfig(min_pixels=4, max_pixels=256 * 256, factor=2, fps=0.25, min_frames=2)
    video = decode_video(path, config)
    return ToolContext(media=MediaRef(path=str(path)), video=video, config=config)


def _call(ctx, name, **arguments):
    return ToolRunner(resolve_tools([name])).run(ToolCall("", name, arguments), ctx)


def test_get_clip_redecodes_the_window_at_the_asked_rate(video_ctx):
    assert len(video_ctx.video.meta.timestamps) == 2  # the prompt sees 2 frames of 10 s
    outcome = _call(video_ctx, "get_clip", start=4.0, end=6.0, fps=4.0)
    assert outcome.ok, outcome.error
    (clip,) = outcome.media
    assert frame_numbers(clip.frames) == [32, 34, 36, 38, 40, 42, 44, 46]
    assert clip.meta.clip_start == pytest.approx(4.0)
    assert "8 frames at 4.00 fps" in outcome.text and "4.00, 4.25" in outcome.text
    # the same call again (another row or turn) is not decoded again within the step
    assert _call(video_ctx, "get_clip", start=4.0, end=6.0, fps=4.0).media[0] is clip
    assert video_ctx.decodes.decodes == 1 and video_ctx.decodes.hits == 1


def test_get_clip_is_bounded_and_checks_times(video_ctx):
    video_ctx.limits = VideoToolLimits(max_frames=4, max_fps=8.0)
    (clip,) = _call(video_ctx, "get_clip", start=0.0, end=10.0, fps=8.0).media
    assert clip.frames.shape[0] == 4
    for arguments, message in [
        ({"start": 11.0, "end": 12.0}, "outside the video"),
        ({"start": 3.0, "end": 2.0}, "greater than start"),
        ({"start": 1.0, "end": 2.0, "fps": 30.0}, "above the limit"),
        ({"start": -1.0, "end": 2.0}, "must be >= 0"),
    ]:
        outcome = _call(video_ctx, "get_clip", **arguments)
        assert message in (outcome.error or ""), (arguments, outcome)


def test_video_tool_max_frames_sets_the_clip_limit(video_ctx):
    config = replace(video_ctx.config, tool_max_frames=6)
    ctx = ToolContext(media=video_ctx.media, video=video_ctx.video, config=config)
    assert ctx.limits.max_frames == 6
    (clip,) = _call(ctx, "get_clip", start=0.0, end=10.0, fps=8.0).media
    assert clip.frames.shape[0] == 6
    with pytest.raises(ConfigError, match="video.tool_max_frames=5"):
        VideoConfig(tool_max_frames=5)


def _under(video_ctx, control: str) -> ToolContext:
    return replace(video_ctx, control=control, decodes=type(video_ctx.decodes)())


def test_tools_read_the_controlled_video_not_a_control_of_their_clip(video_ctx):
    """Under a temporal control a clip of any window, a frame or a crop shows what the
    controlled video shows at those times (frames 0-79 of a 10 s, 8 fps video; the prompt
    sampled frames 0 and 40): frozen shows the prompt's first frame everywhere, reversed
    frame 79 - i at frame i."""
    assert video_ctx.video.meta.frame_indices == (0, 40)
    frozen = _under(video_ctx, "frozen")
    (clip,) = _call(frozen, "get_clip", start=4.0, end=6.0, fps=2.0).media
    assert frame_numbers(clip.frames) == [0, 0, 0, 0]  # not the window's own first frame, 32
    (image,) = _call(frozen, "get_frame", time=5.0).media
    assert round(float(image.frames.float().mean()) / LEVEL) == 0
    reversed_ = _under(video_ctx, "reversed")
    outcome = _call(reversed_, "get_clip", start=1.0, end=3.0, fps=2.0)
    assert frame_numbers(outcome.media[0].frames) == [71, 67, 63, 59]  # 79 - (8, 12, 16, 20)
    assert outcome.media[0].meta == _call(video_ctx, "get_clip", start=1.0, end=3.0).media[0].meta
    assert "times in seconds: 1.00, 1.50, 2.00, 2.50" in outcome.text  # the asked times
    (image,) = _call(reversed_, "get_frame", time=2.0).media
    assert round(float(image.frames.float().mean()) / LEVEL) == 63
    region = _call(reversed_, "crop", time=2.0, box=[0, 0, 10, 10]).media[0]
    assert round(float(region.frames.float().mean()) / LEVEL) == 63
    blank = _under(video_ctx, "blank")
    (image,) = _call(blank, "get_frame", time=5.0).media
    assert int(image.frames.min()) == int(image.frames.max()) == BLANK_VALUE


def test_shuffled_tools_move_the_video_in_the_prompts_segments(tmp_path):
    """64 frames, a prompt of 8 frames at 0, 8, .., 56: under shuffled the video is cut into 8
    segments moved as the prompt's permutation moves its frames, so a tool at a prompt frame's
    time sees what the shuffled prompt showed there, and a clip keeps each segment's order."""
    path = write_mp4(tmp_path / "v.mp4", index_frames(64, 32, 32), 8)  # 8 s
    config = VideoConfig(min_pixels=4, max_pixels=64 * 64, factor=2, fps=1.0, min_frames=2)
    media = MediaRef(path=str(path))
    prompt = decode_video(path, config)
    assert prompt.meta.frame_indices == tuple(range(0, 64, 8))
    ctx = ToolContext(media=media, video=prompt, config=config, control="shuffled")
    shown = frame_numbers(apply_control(prompt, "shuffled", media_key(media)).frames)
    for k, index in enumerate(prompt.meta.frame_indices):
        (image,) = _call(ctx, "get_frame", time=index / 8).media
        assert round(float(image.frames.float().mean()) / LEVEL) == shown[k]
    (clip,) = _call(ctx, "get_clip", start=0.0, end=8.0, fps=8.0).media
    order = permutation(8, media_key(media)).tolist()
    moved = [i + (order[i // 8] - i // 8) * 8 for i in clip.meta.frame_indices]
    assert frame_numbers(clip.frames) == moved != sorted(moved)


def test_a_tool_without_control_support_gets_its_output_controlled(scratch_tools, video_ctx):
    @register_tool(description="a still", parameters={"type": "object"})
    def still(ctx):
        return ToolResult("a frame", (_call(video_ctx, "get_frame", time=5.0).media[0],))

    frozen = _under(video_ctx, "frozen")
    assert "cannot change" in (_call(frozen, "still").error or "")
    (image,) = _call(_under(video_ctx, "blank"), "still").media
    assert int(image.frames.min()) == int(image.frames.max()) == BLANK_VALUE


def test_get_frame_and_crop_return_images(video_ctx):
    outcome = _call(video_ctx, "get_frame", time=5.0)
    (image,) = outcome.media
    assert image.meta.is_image and image.frames.shape[0] == 1
    assert round(float(image.frames.float().mean()) / LEVEL) == 40
    assert "outside" in _call(video_ctx, "get_frame", time=10.0).error
    shown = video_ctx.video.meta
    outcome = _call(video_ctx, "crop", time=2.0, box=[0, 0, shown.width / 2, shown.height / 2])
    (region,) = outcome.media
    assert region.meta.is_image
    assert round(float(region.frames.float().mean()) / LEVEL) == 16
    assert region.frames.shape[-1] / region.frames.shape[-2] == pytest.approx(1.5, rel=0.1)
    bad = _call(video_ctx, "crop", time=2.0, box=[10, 10, 5, 20])
    assert "must satisfy" in bad.error


def test_tools_refuse_rows_without_a_video():
    assert "no video" in _call(ToolContext(), "get_frame", time=1.0).error
