"""Segmentation (docs/methods.md#segmentation-score): point-matching formula and the COCO-RLE mask
score."""

import json
import math

import pytest

from tests.rewards.factories import IMAGE, SEG_POINTS, make, mask_rle
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.masks import load_mask
from videorl.tasks.segmentation.reward import point_similarity, time_similarity

CONFIG = RewardConfig(num_workers=1)
POS, NEG = SEG_POINTS["positive_points"], SEG_POINTS["negative_points"]


def answer(payload: dict) -> str:
    return "<answer>" + json.dumps(payload) + "</answer>"


def test_point_similarity_uses_best_matching():
    gt: list[tuple[float, float]] = [(0, 0), (100, 0), (0, 100)]
    assert point_similarity([(0, 100), (0, 0), (100, 0)], gt) == 1.0
    # every point 30 px off: d = 30, sim = exp(-900 / 5000)
    shifted: list[tuple[float, float]] = [(30, 0), (130, 0), (30, 100)]
    assert point_similarity(shifted, gt) == pytest.approx(math.exp(-900 / 5000))
    assert point_similarity(shifted[:2], gt) == 0.0


def test_time_similarity():
    assert time_similarity(3.0, 5.0) == pytest.approx(math.exp(-1))


def test_image_formula():
    record = make("segmentation", {"box": [0, 0, 10, 10], **SEG_POINTS}, image=IMAGE)
    neg_shift = [[x + 30, y] for x, y in NEG]
    result = score_response(
        record,
        answer({"boxes": [5, 0, 15, 10], "positive_points": POS, "negative_points": neg_shift}),
        CONFIG,
    )
    expected = 0.50 * (1 / 3) + 0.25 * 1.0 + 0.25 * math.exp(-900 / 5000)
    assert result.overall == pytest.approx(expected, abs=1e-12)
    assert result.components["iou"] == pytest.approx(1 / 3)


def test_video_formula_and_missing_time():
    record = make("segmentation", {"box": [0, 0, 10, 10], "time": 2.0, **SEG_POINTS})
    full = {"boxes": [0, 0, 10, 10], "positive_points": POS, "negative_points": NEG, "time": 4.0}
    result = score_response(record, answer(full), CONFIG)
    assert result.overall == pytest.approx(0.35 + 0.10 * math.exp(-1) + 0.40 + 0.15, abs=1e-12)
    del full["time"]
    assert score_response(record, answer(full), CONFIG).overall == pytest.approx(0.90, abs=1e-12)


def test_norm1000_point_distances_in_pixels():
    record = make(
        "segmentation",
        {"box": [0, 0, 10, 10], "positive_points": [[0, 0]], "negative_points": [[0, 0]]},
        box_format="norm1000",
        width=2000,
        height=1000,
        image=IMAGE,
    )
    # 15 units in x at 2 px per unit = 30 px
    result = score_response(
        record,
        answer(
            {"boxes": [0, 0, 10, 10], "positive_points": [[15, 0]], "negative_points": [[0, 0]]}
        ),
        CONFIG,
    )
    assert result.components["pos"] == pytest.approx(math.exp(-900 / 5000))


def test_mask_decoding_matches_pycocotools_both_count_forms():
    compressed, raw = load_mask(mask_rle()), load_mask(mask_rle(compressed=False))
    assert (compressed.pixels == raw.pixels).all()
    assert compressed.pixels.sum() == 10 * 20
    assert compressed.bbox == (20.0, 10.0, 40.0, 20.0)


def test_mask_point_tolerance():
    mask = load_mask(mask_rle())  # rows 10..19, cols 20..39
    assert mask.contains((25.5, 12.5))
    assert not mask.contains((17.5, 12.5))
    assert mask.contains((17.5, 12.5), tolerance=3)
    assert not mask.contains((16.5, 12.5), tolerance=3)
    assert not mask.contains((-100, -100), tolerance=3)


def test_mask_score_terms():
    record = make(
        "segmentation", {"box": [20, 10, 40, 20], **SEG_POINTS, "mask_rle": mask_rle()}, image=IMAGE
    )
    pos = [[25, 12], [30, 15], [5, 5]]  # 2 of 3 inside
    neg = [[5, 5], [25, 12], [50, 30]]  # 2 of 3 outside
    result = score_response(
        record,
        answer({"boxes": [20, 10, 40, 20], "positive_points": pos, "negative_points": neg}),
        CONFIG,
    )
    assert result.components["pos"] == pytest.approx(2 / 3)
    assert result.components["neg"] == pytest.approx(2 / 3)
    assert result.overall == pytest.approx(0.5 + 0.25 * 2 / 3 + 0.25 * 2 / 3)


def test_mask_caps():
    record = make(
        "segmentation", {"box": [20, 10, 40, 20], **SEG_POINTS, "mask_rle": mask_rle()}, image=IMAGE
    )
    outside = [[1, 1], [2, 2], [3, 3]]
    no_pos = score_response(
        record,
        answer({"boxes": [20, 10, 40, 20], "positive_points": outside, "negative_points": NEG}),
        CONFIG,
    )
    assert no_pos.overall == pytest.approx(0.10)
    far_box = score_response(
        record,
        answer({"boxes": [0, 0, 5, 5], "positive_points": POS, "negative_points": NEG}),
        CONFIG,
    )
    assert far_box.overall == pytest.approx(0.20)


def test_extra_points_dilute_the_fraction():
    record = make(
        "segmentation", {"box": [20, 10, 40, 20], **SEG_POINTS, "mask_rle": mask_rle()}, image=IMAGE
    )
    pos = POS + [[1, 1]] * 3
    result = score_response(
        record,
        answer({"boxes": [20, 10, 40, 20], "positive_points": pos, "negative_points": NEG}),
        CONFIG,
    )
    assert result.components["pos"] == pytest.approx(0.5)
