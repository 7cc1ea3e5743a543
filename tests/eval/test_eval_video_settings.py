"""`videorl eval` of a training checkpoint sees frames as training did (the run's config.yaml)."""

from __future__ import annotations

import pytest

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.config.run import find_run_config, save_run_config
from videorl.errors import ConfigError
from videorl.eval.commands import eval_run_settings


@pytest.fixture
def run_dir(tmp_path):
    config = load_config(
        resolve_config_path("quickstart"),
        [
            "video.min_pixels=3136",
            "video.max_pixels=12544",
            "video.max_frames=8",
            "data.think=true",
        ],
    )
    save_run_config(config, tmp_path / "train")
    (tmp_path / "train" / "final").mkdir()
    (tmp_path / "train" / "step-000010" / "model").mkdir(parents=True)
    return tmp_path / "train"


def test_checkpoint_folders_find_their_run_config(run_dir, tmp_path):
    for folder in (run_dir / "final", run_dir / "step-000010" / "model"):
        assert find_run_config(folder) == (run_dir / "config.yaml").resolve()
    assert find_run_config(tmp_path / "elsewhere") is None


def eval_video_settings(model, think=None, **flags):
    run = eval_run_settings(model, think=think, prompt_style=None, **flags)
    return run.video, run.think


def test_eval_uses_the_training_video_settings_unless_overridden(run_dir):
    video, think = eval_video_settings(str(run_dir / "final"))
    assert (video.min_pixels, video.max_pixels, video.max_frames, think) == (3136, 12544, 8, True)
    video, think = eval_video_settings(str(run_dir / "final"), False, max_pixels=6272)
    assert (video.min_pixels, video.max_pixels, video.max_frames, think) == (3136, 6272, 8, False)
    video, think = eval_video_settings(str(run_dir / "final"), max_pixels=2000)  # below min
    assert (video.min_pixels, video.max_pixels) == (2000, 2000)
    video, think = eval_video_settings("not-a-run")  # no run: defaults
    assert (video.max_frames, think) == (64, False)
    with pytest.raises(ConfigError, match="min_pixels"):
        eval_video_settings(str(run_dir / "final"), min_pixels=20000)
