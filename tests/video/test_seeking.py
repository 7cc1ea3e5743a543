"""Seeking when sampling is sparse (videorl.video.seeking and the PyAV reader): the plan, and
the same frames whether the reader seeks or reads forward, on index-coded files (each frame's
content encodes its number) with long and short groups of pictures, B-frames and a variable
frame rate; for whole videos, clips, `frames_at` and `get_clip`."""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest
import torch

from videorl.video import backends
from videorl.video.backends import as_chw, pyav_reader
from videorl.video.decode import VideoConfig, decode_video, frames_at, resize_frames
from videorl.video.seeking import FrameIndex, plan_seeks

STEP = 5  # gray step of each digit
BASE = 50  # two base-50 digits: frames 0 .. 2499


def coded_frames(numbers: list[int], size: int = 64) -> np.ndarray:
    """Frames whose left half's gray is `STEP * (n % BASE)` and right half's
    `STEP * (n // BASE)`."""
    frames = np.empty((len(numbers), size, size, 3), np.uint8)
    for k, n in enumerate(numbers):
        frames[k, :, : size // 2] = STEP * (n % BASE)
        frames[k, :, size // 2 :] = STEP * (n // BASE)
    return frames


def numbers(frames: torch.Tensor) -> list[int]:
    """The number each `T x C x H x W` frame was drawn with (inner quarters, past the edge)."""
    w = frames.shape[-1]
    low = frames[..., w // 8 : 3 * w // 8].float().mean(dim=(1, 2, 3)) / STEP
    high = frames[..., 5 * w // 8 : 7 * w // 8].float().mean(dim=(1, 2, 3)) / STEP
    return [round(float(h)) * BASE + round(float(lo)) for lo, h in zip(low, high, strict=True)]


def write_coded(path, times: list[float], gop: int, bframes: int = 3, fps: int = 25):
    """An H.264 MP4 whose frame k is shown at `times[k]` seconds (ms precision) and encodes
    its source frame number `round(times[k] * fps)`; a keyframe every `gop` frames."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width = stream.height = 64
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, 1000)
        stream.codec_context.time_base = Fraction(1, 1000)
        stream.codec_context.thread_count = 1
        stream.options = {
            "crf": "10",
            "preset": "fast",
            "g": str(gop),
            "keyint_min": str(gop),
            "sc_threshold": "0",
            "bf": str(bframes),
        }
        for t, array in zip(times, coded_frames([round(t * fps) for t in times]), strict=True):
            frame = av.VideoFrame.from_ndarray(array, format="rgb24")
            frame.pts, frame.time_base = round(t * 1000), Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Index-coded files: 40 s at 25 fps with a keyframe every 250 frames, and every 8
    frames; and a variable-frame-rate one (frames dropped in bursts, 25 fps nominal)."""
    folder = tmp_path_factory.mktemp("seek")
    cfr = [k / 25 for k in range(1000)]
    rng = np.random.default_rng(0)
    kept = sorted({0, *rng.choice(np.arange(1, 1000), size=600, replace=False).tolist()})
    return {
        "long_gop": write_coded(folder / "long.mp4", cfr, gop=250),
        "short_gop": write_coded(folder / "short.mp4", cfr, gop=8, bframes=0),
        "vfr": write_coded(folder / "vfr.mp4", [k / 25 for k in kept], gop=100),
    }


NATIVE = VideoConfig(min_pixels=4, max_pixels=256 * 256, factor=2, fps=0.5, max_frames=16)
READERS = {mode: pyav_reader(mode) for mode in ("forward", "auto", "always")}


def read(path, indices, mode, stats=None):
    reader = pyav_reader(mode, stats) if stats is not None else READERS[mode]
    return reader(str(path), lambda info: list(indices), as_chw)[1]


# ----- the plan ------------------------------------------------------------------------------


def index_of(frame_numbers: list[int], keys: list[int]) -> FrameIndex:
    pts = np.asarray(frame_numbers, dtype=np.int64)
    is_key = np.isin(np.arange(len(pts)), keys)
    return FrameIndex.from_packets(pts.tolist(), is_key.tolist(), 0, 1.0, 1.0)


def test_plan_seeks_to_a_keyframe_past_what_was_decoded():
    index = index_of(list(range(1000)), list(range(0, 1000, 250)))
    assert plan_seeks(index, [10, 300, 320, 900]) == [None, 250, None, 750]
    assert plan_seeks(index, [250, 500]) == [250, 500]  # a wanted keyframe is its own
    assert plan_seeks(index, [0, 4, 8, 12]) == [None] * 4  # dense: read forward
    assert plan_seeks(index, [245, 255]) == [None, None]  # keyframe 250 skips < MIN_SKIP
    assert plan_seeks(index, [10, 300, 320], always=True) == [None, 250, 250]


def test_plan_follows_presentation_order_and_gaps():
    # decode order 0 2 1 3 ... (B-frames); frames 5-9 are missing (variable frame rate)
    shown = [0, 2, 1, 4, 3, 10, 12, 11, 14, 13] + list(range(15, 60))
    index = index_of(shown, [0, 5, 30])
    assert index.frame_index.tolist()[:8] == [0, 1, 2, 3, 4, 10, 11, 12]
    assert index.frame_of(7) == 5  # frame 10 stands in for the missing 7
    assert plan_seeks(index, [0, 7, 40, 58]) == [None, None, 30, None]
    assert plan_seeks(index, [0, 100]) == [None, None]  # past the end: the read reports it


# ----- real files ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["long_gop", "short_gop", "vfr"])
def test_seeking_returns_the_frames_reading_forward_returns(files, name):
    path = files[name]
    wanted = [3, 140, 141, 251, 250, 499, 500, 620, 737, 990, 999, 3]  # unsorted, repeated
    if name == "vfr":  # 601 frames over 40 s: numbered at its average rate, about 15 fps
        wanted = [w * 3 // 5 for w in wanted]
    forward = read(path, wanted, "forward")
    if name != "vfr":
        assert numbers(forward) == wanted
    for mode in ("auto", "always"):
        stats: dict[str, int] = {}
        assert torch.equal(read(path, wanted, mode, stats), forward), mode
        assert stats["seeks"] > 0 and stats["restarts"] == 0, (mode, stats)


def test_the_sparse_plan_seeks_on_a_long_file(files, monkeypatch):
    planned: list[list[int | None]] = []
    real = backends.plan_seeks

    def spy(*args, **kwargs):
        planned.append(real(*args, **kwargs))
        return planned[-1]

    monkeypatch.setattr(backends, "plan_seeks", spy)
    wanted = list(range(10, 1000, 62))
    stats: dict[str, int] = {}
    assert numbers(read(files["long_gop"], wanted, "auto", stats)) == wanted
    assert planned and sum(s is not None for s in planned[-1]) == 3  # keyframes 250, 500, 750
    forward: dict[str, int] = {}
    read(files["long_gop"], wanted, "forward", forward)
    # decoded 0-196, 250-444, 500-692, 750-940 (seeking for 258, 506, 754) against 0-940
    assert (stats["seeks"], stats["decoded"], forward["decoded"]) == (3, 776, 941)
    read(files["long_gop"], list(range(100, 140, 2)), "auto")  # dense: no index, no plan
    assert len(planned) == 1


def test_decode_video_clips_and_frames_at_agree_with_reading_forward(files, monkeypatch):
    def decode_all(mode):
        monkeypatch.setitem(backends.READERS, "pyav", READERS[mode])
        config = VideoConfig(min_pixels=4, max_pixels=32 * 32, factor=2, fps=0.5)
        whole = decode_video(files["long_gop"], config)
        clip = decode_video(files["vfr"], config, start=7.3, end=33.1)
        at = frames_at(str(files["long_gop"]), [900, 13, 505, 505, 2000], 24, 24)
        return whole, clip, at

    old, new = decode_all("forward"), decode_all("auto")
    for before, after in zip(old[:2], new[:2], strict=True):
        assert before.meta == after.meta
        assert torch.equal(before.frames, after.frames)
    assert torch.equal(old[2], new[2])
    assert numbers(old[0].frames) == list(old[0].meta.frame_indices)
    assert old[0].meta.num_frames == 20 and old[1].meta.num_frames == 12


def test_frames_are_resized_as_decoded_exactly_as_the_whole_batch_was(files):
    wanted = [0, 200, 400, 600, 800, 999]
    config = VideoConfig(min_pixels=4, max_pixels=40 * 40, factor=2, fps=6 / 40, max_frames=6)
    decoded = decode_video(files["long_gop"], config)
    assert list(decoded.meta.frame_indices) == [0, 166, 333, 500, 666, 833]
    full = read(files["long_gop"], decoded.meta.frame_indices, "forward")
    batch = resize_frames(full, decoded.meta.height, decoded.meta.width).contiguous()
    assert decoded.frames.shape[-2:] != full.shape[-2:]
    assert torch.equal(decoded.frames, batch)
    assert len(wanted) == decoded.meta.num_frames


def test_each_wanted_frame_is_converted_once(files):
    """Decoding holds the sampled frames only: the reader converts (resizes) one frame per
    distinct wanted index, whatever it decodes between them."""
    seen: list[tuple[int, ...]] = []

    def convert(frame):
        seen.append(frame.shape)
        return as_chw(frame)[:, :8, :8]

    for mode in ("forward", "auto"):
        seen.clear()
        _, out = READERS[mode](str(files["long_gop"]), lambda info: [5, 900, 5, 450], convert)
        assert len(seen) == 3 and tuple(out.shape) == (4, 3, 8, 8)


def test_the_container_index_stands_for_the_packets_only_without_b_frames(files):
    def indices(path):
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            fps = float(stream.average_rate)  # type: ignore[arg-type]  # the test clip's stream has a rate
            entries = backends._index_entries(stream, stream.start_time or 0)
            fast = backends._pyav_index(container, stream, fps)
            pts, keys = zip(
                *((p.pts, p.is_keyframe) for p in container.demux(stream) if p.size), strict=True
            )
            start, base = stream.start_time or 0, float(stream.time_base)  # type: ignore[arg-type]  # the test clip's stream has a time base
            slow = FrameIndex.from_packets(pts, keys, start, base, fps)
        return entries, fast, slow

    entries, fast, slow = indices(files["short_gop"])  # no B-frames: the MP4 index serves
    assert entries is not None and fast is not None
    assert np.array_equal(fast.pts, slow.pts) and np.array_equal(fast.keyframes, slow.keyframes)
    assert fast.keyframes.tolist() == list(range(0, 1000, 8))
    entries, fast, slow = indices(files["long_gop"])  # B-frames: its decode times do not
    assert entries is None and fast is not None and np.array_equal(fast.pts, slow.pts)


def test_a_seek_that_lands_past_its_frame_reads_forward_from_the_start(files, monkeypatch):
    # every seek aimed at the last keyframe (750): the first lands past frame 3
    monkeypatch.setattr(
        backends, "plan_seeks", lambda index, wanted, **_: [int(index.keyframes[-1])] * len(wanted)
    )
    wanted = [3, 140, 620, 900]
    stats: dict[str, int] = {}
    assert numbers(read(files["long_gop"], wanted, "auto", stats)) == wanted
    assert stats["restarts"] == 1 and stats["seeks"] == 1
