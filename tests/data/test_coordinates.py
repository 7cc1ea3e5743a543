"""Spatial coordinates per model family (issue 16): Qwen2.5-VL answers in pixels of the
resized input, Qwen3-VL / Qwen3.5 in 0..1000; prompts, annotation rows and rewards agree."""

from __future__ import annotations

import types

import pytest
import torch

from tests.rewards.factories import SEG_POINTS, all_records, make
from videorl.data.coordinates import (
    frame_size,
    model_convention,
    to_model_coordinates,
)
from videorl.data.prompts import build_prompt
from videorl.errors import ConfigError
from videorl.eval.runner import answer_frame, reframe
from videorl.rewards import RewardConfig, score_response, serialize_annotation

SG = make(
    "spatial_grounding", {"box": [64, 48, 320, 240]}, width=640, height=480, image={"path": "a.jpg"}
)
RESIZED = (320, 240)  # the frame the model sees


@pytest.mark.parametrize(
    "model_type, convention",
    [
        ("qwen2_5_vl", "abs"),
        ("qwen2_vl", "abs"),
        ("qwen3_vl", "norm1000"),
        ("qwen3_5", "norm1000"),
        ("qwen3_5_moe", "norm1000"),
        ("qwen3", None),
    ],
)
def test_convention_per_model_family(model_type, convention):
    assert model_convention(model_type) == convention
    assert model_convention(model_type, "record") is None


def test_qwen2_5_vl_boxes_are_pixels_of_the_resized_input():
    record = to_model_coordinates(SG, model_convention("qwen2_5_vl"), RESIZED)
    assert record.answer.box == (32.0, 24.0, 160.0, 120.0)
    assert (record.box_format, record.width, record.height) == ("abs", 320, 240)
    assert "pixels of the 320 x 240 image" in build_prompt(record, think=False)
    annotation = serialize_annotation(record)
    assert annotation == "<answer>[32,24,160,120]</answer>"
    assert score_response(record, annotation, RewardConfig()).overall == 1.0
    # an answer in source pixels is now wrong: the model never saw that frame
    assert score_response(record, "<answer>[64,48,320,240]</answer>", RewardConfig()).overall < 0.3


def test_qwen3_boxes_are_normalised_to_1000():
    record = to_model_coordinates(SG, model_convention("qwen3_5"), RESIZED)
    assert record.answer.box == (100.0, 100.0, 500.0, 500.0)
    assert record.box_format == "norm1000"
    assert "normalized to 0-1000" in build_prompt(record, think=False)
    native = '```json\n[{"bbox_2d": [100, 100, 500, 500]}]\n```'
    assert score_response(record, native, RewardConfig()).overall == 1.0


def test_normalised_record_to_pixels_and_points_follow():
    seg = make(
        "segmentation",
        {"box": [100, 100, 500, 500], **SEG_POINTS},
        box_format="norm1000",
        image={"path": "a.jpg"},
    )
    record = to_model_coordinates(seg, "abs", (200, 100))
    assert record.answer.box == (20.0, 10.0, 100.0, 50.0)
    assert record.answer.positive_points[0] == (5.0, 1.2)
    assert serialize_annotation(record).startswith('<answer>{"boxes":[20,10,100,50]')
    assert score_response(record, serialize_annotation(record), RewardConfig()).overall == 1.0


def test_unconvertible_records_are_unchanged():
    records = all_records()
    assert to_model_coordinates(records["seg_mask"], "norm1000", (10, 10)) is records["seg_mask"]
    no_size = make("spatial_grounding", {"box": [1, 2, 3, 4]}, image={"path": "a.jpg"})
    assert to_model_coordinates(no_size, "abs", (10, 10)) is no_size
    assert to_model_coordinates(records["tg"], "abs", (10, 10)) is records["tg"]
    assert to_model_coordinates(SG, None, RESIZED) is SG


def test_tracking_first_box_is_converted_too():
    trk = make(
        "tracking",
        {"boxes": {"0": [10, 20, 30, 40], "5": [12, 22, 32, 42]}},
        width=100,
        height=200,
        extra={"first_box": [10, 20, 30, 40], "source_fps": 10},
    )
    record = to_model_coordinates(trk, "norm1000", (50, 100))
    assert record.extra["first_box"] == [100.0, 100.0, 300.0, 200.0]
    assert record.answer.boxes["5"] == (120.0, 110.0, 320.0, 210.0)
    assert "In frame 0 it is at [100, 100, 300, 200]" in build_prompt(record, think=False)
    assert score_response(record, serialize_annotation(record), RewardConfig()).overall == 1.0


def test_eval_scores_the_ground_truth_in_the_answer_frame():
    model_view = to_model_coordinates(SG, "abs", RESIZED)
    frame = answer_frame(model_view)
    assert frame == {"box_format": "abs", "width": 320, "height": 240}
    assert reframe(SG, frame) == model_view
    assert reframe(SG, None) is SG
    assert answer_frame(all_records()["tg"]) is None


def test_frame_size_and_bad_mode():
    media = types.SimpleNamespace(frames=torch.zeros(2, 3, 24, 32, dtype=torch.uint8))
    assert frame_size(media) == (32, 24)
    assert frame_size(None) is None
    with pytest.raises(ConfigError, match="data.coordinates='pixels'"):
        model_convention("qwen2_5_vl", "pixels")


def test_demo_draws_boxes_in_the_record_frame():
    from videorl.demo.views import _source_size

    meta = types.SimpleNamespace(source_width=640, source_height=480)
    video = types.SimpleNamespace(meta=meta)
    for target, size in (("abs", (320.0, 240.0)), ("norm1000", (1000.0, 1000.0))):
        record = to_model_coordinates(SG, target, RESIZED)
        assert _source_size(types.SimpleNamespace(record=record, video=video)) == size  # type: ignore[arg-type]  # a stand-in with only what is read
    assert _source_size(types.SimpleNamespace(record=SG, video=video)) == (640.0, 480.0)  # type: ignore[arg-type]  # a stand-in with only what is read
