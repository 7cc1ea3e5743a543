"""`video.image_max_pixels` / `video.image_min_pixels`: images get a pixel bound apart from
video frames (issue 31, item 7a).

Published: HVision-NKU/OraRL `configs/orarl_4b.yaml` (and 9B) lines 11 and 16-17:
`video_max_pixels 786432`, `min_pixels 4096` (the image minimum falls back to it,
`verl/trainer/config.py: DataConfig.post_init`), `image_max_pixels 1048576`; images are
resized by `verl/utils/dataset.py: process_image` (lines 329-351). tulerfeng/Video-R1
`src/qwen-vl-utils/src/qwen_vl_utils/vision_process.py` lines 26-27 and 131-139: images
`smart_resize`d into `MIN_PIXELS 4*28*28 .. MAX_PIXELS 256*28*28`, video frames (lines 32-33)
at 128*28*28.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.video.decode import VideoConfig, frames_from_array, load_image


def _image(tmp_path, width: int, height: int) -> str:
    path = tmp_path / f"img_{width}x{height}.png"
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(path)
    return str(path)


def test_orarl_images_get_their_own_bound(tmp_path):
    video = load_config(resolve_config_path("orarl")).video
    assert (video.image_max_pixels, video.max_pixels) == (1048576, 786432)
    assert video.image_pixel_bounds() == (4096, 1048576)  # min_pixels 4096 for both
    image = load_image(_image(tmp_path, 2000, 1500), video)
    # smart_resize at factor 32 under 1048576 px: 1152 x 864 = 995328 px. Under the video
    # frames' bound (786432) it would be 1024 x 768, the size before issue 31.
    assert (image.meta.width, image.meta.height) == (1152, 864)
    assert image.frames.shape[-2:] == (864, 1152)
    frames_only = VideoConfig(**{**video.__dict__, "image_max_pixels": None})
    shared = load_image(_image(tmp_path, 2000, 1500), frames_only)
    assert (shared.meta.width, shared.meta.height) == (1024, 768)
    # OraRL's process_image (dataset.py:340-343): factor sqrt(1048576 / 3e6), sides truncated
    # by int(): 1182 x 886 = 1047252 px, below the same bound; its processor then rounds the
    # sides to multiples of 32 (docs/fidelity.md, OraRL `images` row).
    factor = math.sqrt(1048576 / (2000 * 1500))
    assert (int(2000 * factor), int(1500 * factor)) == (1182, 886)


def test_video_r1_images_take_min_and_max_pixels_apart_from_frames(tmp_path):
    video = load_config(resolve_config_path("tgrpo")).video
    assert video.image_pixel_bounds() == (3136, 200704)
    assert (video.min_pixels, video.max_pixels) == (100352, 100352)
    # vision_process.py smart_resize (lines 77-87): 1000 x 800 -> h_bar 812, w_bar 1008, over
    # 200704, beta = sqrt(800000 / 200704); floor(800 / beta / 28) * 28 = 392,
    # floor(1000 / beta / 28) * 28 = 476
    big = load_image(_image(tmp_path, 1000, 800), video)
    assert (big.meta.height, big.meta.width) == (392, 476)
    # 50 x 40 -> 28 x 56 is under 3136: beta = sqrt(3136 / 2000), ceil to 56 x 84 (a video
    # frame's minimum, 100352, would upscale it to 308 x 364)
    small = load_image(_image(tmp_path, 50, 40), video)
    assert (small.meta.height, small.meta.width) == (56, 84)


def test_video_frames_keep_their_bound(tmp_path):
    frames = np.zeros((4, 1500, 2000, 3), dtype=np.uint8)
    config = VideoConfig(min_pixels=4096, max_pixels=786432, factor=32, image_max_pixels=1048576)
    decoded = frames_from_array(frames, 2.0, config)
    assert decoded.meta.width * decoded.meta.height <= 786432


def test_bad_image_bounds_are_one_line_errors():
    with pytest.raises(ConfigError, match="video.image_max_pixels=10"):
        VideoConfig(min_pixels=100, max_pixels=1000, image_max_pixels=10)
    with pytest.raises(ConfigError, match="video.image_min_pixels=0"):
        VideoConfig(image_min_pixels=0)
    with pytest.raises(ConfigError, match="video.image_min_pixels=5000"):
        VideoConfig(min_pixels=100, max_pixels=1000, image_min_pixels=5000)
    assert VideoConfig(min_pixels=100, max_pixels=1000).image_pixel_bounds() == (100, 1000)
