"""The vision warm-up's clips (data/synth_clips.py): broad scenes, drawn as observed and as
their clean content, which differ only where the nuisance is."""

from __future__ import annotations

import numpy as np

from videorl.data.synth_clips import CLIP_SIZES, warmup_clip


def _clips(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [warmup_clip(np.random.default_rng([5, k]), (8, 16)) for k in range(count)]


def test_clips_are_even_length_frames_of_the_listed_sizes():
    for observed, clean in _clips(12):
        assert observed.shape == clean.shape and observed.dtype == np.uint8
        assert observed.shape[0] % 2 == 0 and 8 <= observed.shape[0] <= 16
        assert (observed.shape[2], observed.shape[1]) in CLIP_SIZES


def test_clean_content_is_a_plain_background_under_the_shapes():
    for _, clean in _clips(12):
        for frame in clean:  # at most the shapes' 8 colours and the background's mean
            assert len(np.unique(frame.reshape(-1, 3), axis=0)) <= 9


def test_the_distribution_is_broad():
    pairs = _clips(40)
    nuisance = [np.abs(o.astype(int) - c).mean() for o, c in pairs]
    motion = [np.abs(np.diff(c.astype(int), axis=0)).mean() for _, c in pairs]
    assert any(n < 0.5 for n in nuisance)  # plain and noise-free: 1 in 8 (a plain texture)
    assert sum(n > 5 for n in nuisance) >= 10  # many have texture, scrolling or noise
    assert sum(m > 0.5 for m in motion) >= 10  # content changes over time in many


def test_a_shape_scene_names_the_frames_its_shape_is_on_screen():
    from videorl.data.synth_clips import shape_clip, shape_scene

    for seed in range(20):
        clip, _, found = shape_scene(np.random.default_rng(seed), (16, 32))
        np.testing.assert_array_equal(clip, shape_clip(np.random.default_rng(seed), (16, 32))[0])
        background = clip[0] if not found or found[0].first > 0 else clip[-1]
        differs = [bool((frame != background).any()) for frame in clip]
        if found:
            change = found[0]
            assert change.question.startswith("When is the ")
            assert 0 < change.last - change.first < len(clip)
            on = [change.first <= k < change.last for k in range(len(clip))]
            assert differs == on


def test_broad_scene_changes_are_partial_and_unambiguous():
    from videorl.data.synth_clips import warmup_scene

    questions = 0
    for seed in range(30):
        observed, _, found = warmup_scene(np.random.default_rng(seed))
        np.testing.assert_array_equal(observed, warmup_clip(np.random.default_rng(seed))[0])
        names = [c.question for c in found]
        assert len(names) == len(set(names))
        for change in found:
            assert 0 <= change.first < change.last <= len(observed)
            assert change.last - change.first < len(observed)
        questions += len(found)
    assert questions > 15  # most clips have something to ask about
