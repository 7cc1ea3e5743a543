"""Decoding real encoded files (videorl.video.decode)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from videorl.errors import ConfigError, MediaError
from videorl.video import backends
from videorl.video.backends import SourceInfo
from videorl.video.decode import (
    VideoConfig,
    decode_video,
    frames_from_array,
    load_image,
)
from videorl.video.encode import write_image
from videorl.video.sampling import fit_resolution, frame_pixel_cap

from .conftest import frame_numbers, index_frames


def test_whole_video_frames_and_metadata(make_video, native):
    decoded = decode_video(make_video(10.0), native)
    meta = decoded.meta
    assert decoded.frames.dtype == torch.uint8
    assert tuple(decoded.frames.shape) == (20, 3, 64, 64)
    assert meta.source_fps == 8.0 and meta.duration == 10.0 and meta.fps == 2.0
    assert meta.frame_indices == tuple(range(0, 80, 4))
    assert meta.timestamps == tuple(k / 2 for k in range(20))
    assert (meta.width, meta.height, meta.source_width, meta.source_height) == (64, 64, 64, 64)
    assert frame_numbers(decoded.frames) == list(meta.frame_indices)  # the right frames


def test_clip_decodes_the_planned_frames_relative_to_the_clip(make_video, native):
    decoded = decode_video(make_video(10.0), native, start=3.0, end=7.5)
    meta = decoded.meta
    assert meta.frame_indices == (24, 28, 33, 37, 42, 46, 51, 55)
    assert meta.clip_start == 3.0 and meta.duration == 4.5
    assert meta.fps == pytest.approx(8 / 4.5)
    assert meta.timestamps[0] == 0.0 and meta.timestamps[-1] == pytest.approx(55 / 8 - 3)
    assert frame_numbers(decoded.frames) == list(meta.frame_indices)


def test_frame_cap_and_odd_durations_keep_even_counts(make_video):
    path = make_video(3.5, fps=10)  # 35 frames; 7 wanted at 2 fps
    config = VideoConfig(min_pixels=4, max_pixels=64 * 64, factor=2, max_frames=4)
    assert decode_video(path, config).meta.num_frames == 4
    config = VideoConfig(min_pixels=4, max_pixels=64 * 64, factor=2)
    meta = decode_video(path, config).meta
    assert meta.num_frames == 6 and meta.fps == pytest.approx(6 / 3.5)


def test_resize_follows_pixel_range_and_total_budget(make_video):
    path = make_video(4.0, height=64, width=96)
    small = VideoConfig(min_pixels=4 * 28 * 28, max_pixels=768 * 28 * 28)
    decoded = decode_video(path, small)
    assert (decoded.meta.height, decoded.meta.width) == (56, 84)
    assert tuple(decoded.frames.shape[2:]) == (56, 84)
    # a tight total budget shrinks each frame: 8 frames share 8 * 28 * 28 * 2 pixels
    tight = VideoConfig(min_pixels=28 * 28, max_pixels=768 * 28 * 28, total_pixels=4 * 28 * 28 * 8)
    decoded = decode_video(path, tight)
    cap = frame_pixel_cap(
        8, min_pixels=28 * 28, max_pixels=768 * 28 * 28, total_pixels=4 * 28 * 28 * 8
    )
    assert (decoded.meta.height, decoded.meta.width) == fit_resolution(
        64, 96, min_pixels=28 * 28, max_pixels=cap
    )
    assert decoded.meta.height * decoded.meta.width <= cap


def test_stream_shorter_than_declared_is_replanned(make_video, native, monkeypatch):
    real = backends._pyav_info

    def inflated(container, stream):
        info = real(container, stream)
        return SourceInfo(num_frames=info.num_frames + 40, fps=info.fps)

    monkeypatch.setattr(backends, "_pyav_info", inflated)
    decoded = decode_video(make_video(4.0), native)  # 32 real frames, 72 declared
    assert decoded.meta.duration == 4.0
    assert max(decoded.meta.frame_indices) < 32
    assert frame_numbers(decoded.frames) == list(decoded.meta.frame_indices)


def test_inline_frames_sample_like_a_file(make_video, native):
    from_file = decode_video(make_video(5.0), native)
    inline = frames_from_array(index_frames(40), 8.0, native)
    assert inline.meta == from_file.meta
    assert frame_numbers(inline.frames) == list(inline.meta.frame_indices)
    with pytest.raises(MediaError, match="no fps"):
        frames_from_array(index_frames(4), None, native)


def test_load_image(tmp_path, native):
    image = np.zeros((48, 80, 3), np.uint8)
    image[:, :40] = (200, 10, 10)
    decoded = load_image(write_image(tmp_path / "a.png", image), native)
    assert tuple(decoded.frames.shape) == (1, 3, 48, 80)
    assert decoded.meta.is_image and decoded.meta.fps == 0.0
    assert decoded.frames[0, :, 0, 0].tolist() == [200, 10, 10]


def test_zero_length_file_names_the_path_and_the_fix(tmp_path, native):
    path = tmp_path / "empty.mp4"
    path.write_bytes(b"")
    with pytest.raises(MediaError, match="empty") as err:
        decode_video(path, native)
    assert str(path) in str(err.value) and "re-encode" in str(err.value)


def test_corrupt_file_names_the_path_and_the_fix(tmp_path, make_video, native):
    path = tmp_path / "corrupt.mp4"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes())
    with pytest.raises(MediaError, match="corrupt") as err:
        decode_video(path, native)
    assert str(path) in str(err.value) and "ffmpeg" in str(err.value)
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(make_video(4.0).read_bytes()[:1500])
    with pytest.raises(MediaError, match=str(truncated)):
        decode_video(truncated, native)


def test_missing_and_broken_images(tmp_path, native):
    with pytest.raises(MediaError, match="not found.*video_root"):
        decode_video(tmp_path / "nope.mp4", native)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png at all")
    with pytest.raises(MediaError, match="bad.png"):
        load_image(bad, native)


def test_clip_outside_the_video_is_a_media_error(make_video, native):
    with pytest.raises(MediaError, match="holds no frame"):
        decode_video(make_video(2.0), native, start=5.0, end=6.0)


def test_config_validation_names_key_and_fix():
    with pytest.raises(ConfigError, match=r"video\.fps=0"):
        VideoConfig(fps=0)
    with pytest.raises(ConfigError, match=r"video\.max_frames"):
        VideoConfig(min_frames=8, max_frames=4)
    with pytest.raises(ConfigError, match="choose one of"):
        VideoConfig(backend="opencv")  # type: ignore[arg-type]  # a bad value on purpose
    for name in ("decord", "torchcodec"):
        if not backends.backend_available(name):
            with pytest.raises(ConfigError, match="not installed"):
                VideoConfig(backend=name)


@pytest.mark.skipif(
    not (backends.backend_available("torchcodec") or backends.backend_available("decord")),
    reason="no optional backend installed",
)
def test_optional_backends_agree_with_pyav(make_video, native):
    path = make_video(5.0)
    reference = decode_video(path, native)
    for name in ("torchcodec", "decord"):
        if backends.backend_available(name):
            other = decode_video(path, VideoConfig(**{**native.__dict__, "backend": name}))
            assert other.meta == reference.meta
            assert frame_numbers(other.frames) == frame_numbers(reference.frames)


def test_pyav_reader_gives_the_pixels_of_pyavs_own_rgb_conversion(make_video):
    """The reader converts with one reused reformatter (2-4x faster on small frames than
    `frame.to_ndarray(format="rgb24")`, which builds a scaler per frame): same pixels."""
    import av

    path = make_video(2.0, height=48, width=80)
    with av.open(str(path)) as container:
        expected = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    plan = lambda info: list(range(info.num_frames))
    _, frames = backends.read_pyav(str(path), plan, convert=lambda a: torch.from_numpy(a.copy()))
    assert len(frames) == len(expected) == 16
    for got, want in zip(frames, expected, strict=True):
        assert np.array_equal(got.numpy(), want)
