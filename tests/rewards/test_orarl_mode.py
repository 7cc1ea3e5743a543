"""`reward.mode: orarl` scores as OraRL's per-task adapters (issue 31, item 6).

Each case is a worked example computed by hand from the published adapter code,
HVision-NKU/OraRL at commit e3903be, `orarl/rewards/adapters/<file>.py` (file and line in
the comment), and shows the overall reward of both modes: (videorl's, OraRL's).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.data.records import record_from_dict
from videorl.errors import ConfigError, DataError
from videorl.rewards import RewardConfig, score_response, serialize_annotation
from videorl.rewards.orarl_parsing import canonical_payload

from .factories import SEG_POINTS, all_records, make, mask_rle

OURS = RewardConfig(num_workers=1)
ORARL = RewardConfig(num_workers=1, mode="orarl")
RECORDS = all_records()


def both(record, response: str) -> tuple[float, float]:
    """(videorl's overall, OraRL's overall) for one response."""
    return (
        score_response(record, response, OURS).overall,
        score_response(record, response, ORARL).overall,
    )


def orarl_components(record, response: str) -> dict[str, float]:
    return score_response(record, response, ORARL).components


# ----- MRA (spatial_intelligence.py) --------------------------------------------------------


def test_mra_thresholds_are_floats():
    # spatial_intelligence.py:32 thresholds `0.50 + 0.05 * index`; :95-96 `relative_error <=
    # 1.0 - threshold`. Target 10, prediction 9: error 0.1; at 0.9, 1.0 - 0.9 is
    # 0.09999999999999998 < 0.1, so 8 of 10 thresholds pass (0.8). Exact decimals: 9 (0.9).
    record = make("spatial_intelligence", {"value": 10}, subtype="object_counting")
    assert both(record, "<answer>9</answer>") == (0.9, 0.8)
    # 12 (error 0.2): at 0.8, 1.0 - 0.8 = 0.19999999999999996 < 0.2, so OraRL passes 6 of
    # 10 (0.6); exact decimals pass 7 (0.7, docs/methods.md#mean-relative-accuracy).
    assert both(record, "<answer>12</answer>") == (0.7, 0.6)


def test_mra_answer_must_be_a_bare_number():
    # spatial_intelligence.py:35 `_SCALAR_RE`: digits, optional sign and decimals, no
    # exponent, nothing around; :127-129 format 0 otherwise.
    record = make("spatial_intelligence", {"value": 10}, subtype="object_counting")
    assert both(record, "<answer>1e1</answer>") == (1.0, 0.0)
    assert both(record, "<answer> 10 </answer>") == (1.0, 1.0)


def test_spatial_choice_letters():
    # spatial_intelligence.py:36 `_OPTION_RE = \A\s*([A-D])\s*\Z`, IGNORECASE; :141 format =
    # a letter was read. `b` passes there (ours reads upper-case letters only); `(B)` does not.
    record = make("spatial_intelligence", {"letter": "B"}, subtype="route_planning")
    assert both(record, "<answer>b</answer>") == (0.0, 1.0)
    assert both(record, "<answer>(B)</answer>") == (1.0, 0.0)
    # A-D only: a target E reads as no option (`_option(..., relaxed=True)`, :77-82).
    far = make("spatial_intelligence", {"letter": "E"}, subtype="route_planning")
    assert both(far, "<answer>E</answer>") == (1.0, 0.0)


# ----- letters (video_qa.py) ----------------------------------------------------------------


def test_video_qa_letter_is_bare():
    # video_qa.py:32-35 `\A\s*([ABCDEFGH])\s*\Z`, IGNORECASE; :54-55 format = a letter.
    record = RECORDS["qa"]  # B
    assert both(record, "<answer>B</answer>") == (1.0, 1.0)
    assert both(record, "<answer>B. dog</answer>") == (1.0, 0.0)
    assert both(record, "<answer>(B)</answer>") == (1.0, 0.0)
    assert both(record, "<answer> b </answer>") == (0.0, 1.0)
    assert orarl_components(record, "<answer>B.</answer>")["format"] == 0.0


# ----- spans (temporal_grounding.py) --------------------------------------------------------


def test_temporal_span_is_strict():
    # temporal_grounding.py:23-27 `_SPAN_RE = \A\s*(N)\s+(?:to|and)\s+(N)\s*\Z`, N without
    # exponent or unit; :59-69 format 0 when it does not match or start > end.
    record = RECORDS["tg"]  # [2.5, 7], 30 s
    assert both(record, "<answer>2.5 to 7</answer>") == (1.0, 1.0)
    assert both(record, "<answer>2.5s to 7s</answer>") == (1.0, 0.0)
    assert both(record, "<answer>2.5to7</answer>") == (1.0, 0.0)
    assert both(record, "<answer>2.5 AND 7</answer>") == (1.0, 1.0)
    # tIoU of [3, 7] and [2.5, 7]: 4 / 4.5, the same in both
    ours, theirs = both(record, "<answer>3 to 7</answer>")
    assert ours == theirs == pytest.approx(4 / 4.5)


# ----- the answer shape (_common.py) --------------------------------------------------------


def test_answer_shape():
    # _common.py:15-19 `\A\s*(?:(?:<think>)?.*?</think>\s*)?<answer>\s*(.*?)\s*</answer>\s*\Z`
    # (DOTALL, IGNORECASE); :42-48 the stripped group, None when empty.
    record = RECORDS["qa"]
    assert both(record, "a</think>b</think><answer>B</answer>") == (0.0, 1.0)
    assert both(record, "<ANSWER>B</Answer>") == (0.0, 1.0)
    assert both(record, "<think>x</think> <answer>B</answer> tail") == (0.0, 0.0)
    assert canonical_payload("<think>maybe <answer>A</answer></think>\n<answer> B </answer>") == "B"
    assert canonical_payload("<answer>A</answer><answer>B</answer>") == "A</answer><answer>B"
    assert canonical_payload("<answer>  </answer>") is None
    assert canonical_payload("note <answer>B</answer>") is None


# ----- spatial grounding (spatial_grounding.py) ---------------------------------------------


def test_spatial_grounding_tagged_payload_reads_any_box():
    # spatial_grounding.py:82-86 a tagged payload has format 1 when `_box` reads a box;
    # :38-51 `_box` falls back to the last four numbers of the text.
    record = RECORDS["sg_abs"]  # [10, 20, 110.5, 80]
    assert both(record, "<answer>box: 10 20 110.5 80</answer>") == (0.0, 1.0)
    assert both(record, "<answer>(10, 20), (110.5, 80)</answer>") == (0.0, 1.0)
    assert both(record, '<answer>{"bbox": [10, 20, 110.5, 80]}</answer>') == (0.0, 1.0)
    # :77-80 the native fence is read from the last answer block (_common.py:59-67), text
    # around it allowed
    native = 'ok <answer>```json\n[{"bbox_2d": [10, 20, 110.5, 80]}]\n```</answer> done'
    assert both(record, native) == (0.0, 1.0)


# ----- tracking (tracking.py) ---------------------------------------------------------------


def test_tracking_malformed_boxes_give_format_zero():
    # tracking.py:28-41 strict JSON; format 1 only when every key is an integer frame with a
    # readable box (`len(boxes) == len(raw_boxes)`); the IoU still counts the readable ones.
    record = RECORDS["trk"]  # frames 0, 5, 10
    lost = '<answer>{"boxes": {"0": [1,2,30,40], "5": [3,4,33,44], "10": "lost"}}</answer>'
    assert both(record, lost) == (pytest.approx(2 / 3), 0.0)  # type: ignore[comparison-overlap]  # pytest.approx inside a tuple
    assert orarl_components(record, lost)["task"] == pytest.approx(2 / 3)
    half = '<answer>{"boxes": {"0": [1,2,30,40], "5": [3,4,33,44], "7.5": [1,1,2,2]}}</answer>'
    assert both(record, half) == (pytest.approx(2 / 3), 0.0)  # type: ignore[comparison-overlap]  # pytest.approx inside a tuple
    # keys are numbers: "10.0" is frame 10 in both
    full = '<answer>{"boxes": {"0": [1,2,30,40], "5": [3,4,33,44], "10.0": [5.5,6,35,46]}}</answer>'
    assert both(record, full) == (1.0, 1.0)


# ----- spatio-temporal grounding (spatial_temporal_grounding.py) -----------------------------


STG = {"time": [2.0, 6.0], "boxes": {"2": [0, 0, 10, 10], "3": [10, 0, 20, 10]}}


def test_stg_malformed_boxes_give_format_zero():
    # spatial_temporal_grounding.py:77-83 format 1 needs start <= end, a boxes mapping and
    # every key an integer second with a readable box.
    record = make("spatio_temporal_grounding", STG, duration=20.0)
    extra = '<answer>{"time": [2, 6], "boxes": {"2": [0,0,10,10], "3": [10,0,20,10], "4": null}}</answer>'
    assert both(record, extra) == (1.0, 0.0)
    # keys match exactly (normalize_boxes, _common.py:139-151): "2.4" is dropped, where
    # ours takes the nearest second within 0.5 s
    near = '<answer>{"time": [2, 6], "boxes": {"2.4": [0,0,10,10], "3": [10,0,20,10]}}</answer>'
    assert both(record, near) == (1.0, 0.0)
    swapped = '<answer>{"time": [6, 2], "boxes": {"2": [0,0,10,10], "3": [10,0,20,10]}}</answer>'
    assert both(record, swapped) == (pytest.approx(0.8), 0.0)  # type: ignore[comparison-overlap]  # pytest.approx inside a tuple; ours: 0.2 * 0 + 0.8 * 1


def test_stg_without_ground_truth_boxes_keeps_the_weights():
    # spatial_temporal_grounding.py:87-98 spatial IoU 0 without target boxes; :121
    # accuracy = 0.2 tIoU + 0.8 sIoU always. Ours scores tIoU alone there.
    record = make("spatio_temporal_grounding", {"time": [2.0, 6.0], "boxes": {}}, duration=20.0)
    response = '<answer>{"time": [2, 6], "boxes": {"2": [0, 0, 1, 1]}}</answer>'
    ours, theirs = both(record, response)
    assert ours == 1.0 and theirs == pytest.approx(0.2)


# ----- segmentation (segmentation.py) -------------------------------------------------------

SEG_BOX = [20, 10, 40, 20]


def seg_answer(**fields) -> str:
    import json

    return f"<answer>{json.dumps(fields)}</answer>"


def test_segmentation_malformed_structure_gives_format_zero():
    # segmentation.py:55-67 `_points` needs exactly three points; :515-523 format 1 needs a
    # JSON object with a box, three positive and three negative points (and a video's time).
    record = RECORDS["seg_image"]  # no mask: proxy terms
    two_negatives = seg_answer(
        boxes=SEG_BOX,
        positive_points=SEG_POINTS["positive_points"],
        negative_points=SEG_POINTS["negative_points"][:2],
    )
    # ours: 0.50 * 1 + 0.25 * 1 + 0.25 * 0 with format 1; OraRL: the same 0.75 as its
    # accuracy (:588-594), times format 0
    assert both(record, two_negatives) == (0.75, 0.0)
    assert orarl_components(record, two_negatives)["task"] == 0.75
    video = RECORDS["seg_video"]  # time 3.5
    no_time = seg_answer(boxes=SEG_BOX, **SEG_POINTS)
    # ours: 0.35 + 0.40 + 0.15 (time term 0); OraRL: format 0 and accuracy 0 (:595-596)
    assert both(video, no_time) == (pytest.approx(0.9), 0.0)  # type: ignore[comparison-overlap]  # pytest.approx inside a tuple


def test_segmentation_points_in_raw_units():
    # segmentation.py:70-91 the mean distance of the best pairing, in the answer's own units
    # (sigma 50); :588-594 image weights 0.50 / 0.25 / 0.25. Positive points 60 units off in
    # x: OraRL exp(-60^2 / (2 * 50^2)); ours converts 0..1000 to the 2000 px wide frame first,
    # 120 px: exp(-120^2 / (2 * 50^2)).
    answer: dict[str, Any] = {
        "box": [100, 100, 400, 300],
        "positive_points": [[150, 150], [250, 200], [350, 250]],
        "negative_points": [[50, 50], [450, 50], [50, 350]],
    }
    record = make(
        "segmentation",
        answer,
        box_format="norm1000",
        width=2000,
        height=1000,
        image={"path": "f.jpg"},
    )
    shifted = [[x + 60, y] for x, y in answer["positive_points"]]
    response = seg_answer(
        boxes=answer["box"], positive_points=shifted, negative_points=answer["negative_points"]
    )
    ours, theirs = both(record, response)
    assert theirs == pytest.approx(0.75 + 0.25 * math.exp(-(60**2) / (2 * 50**2)))  # 0.8717
    assert ours == pytest.approx(0.75 + 0.25 * math.exp(-(120**2) / (2 * 50**2)))  # 0.7640


def square(rows, cols) -> dict:
    return mask_rle(height=100, width=100, rows=rows, cols=cols)


A, B, C = square((0, 10), (0, 10)), square((20, 40), (20, 50)), square((60, 80), (40, 70))
FAR = [[900, 100], [100, 900], [950, 950]]  # pixels (90, 10), (10, 90), (95, 95): no mask near
ON_B = {"boxes": [200, 200, 500, 400], "positive_points": [[300, 250], [350, 300], [450, 350]]}
ON_C = {"boxes": [400, 600, 700, 800], "positive_points": [[500, 650], [550, 700], [650, 750]]}


def video_masks_record(frame_masks=True):
    """A 100 x 100 video, 8 fps, object at B at 1.0 s (frame 8); masks of frames 0, 8 and
    16 (A, B, C), coordinates 0..1000."""
    answer = {**ON_B, "box": ON_B["boxes"], "negative_points": FAR, "time": 1.0, "mask_rle": B}
    del answer["boxes"]
    if frame_masks:
        answer["frame_masks"] = {"0": A, "8": B, "16": C}
    return make(
        "segmentation",
        answer,
        box_format="norm1000",
        width=100,
        height=100,
        extra={"fps": 8},
    )


def test_video_segmentation_scores_the_mask_at_the_predicted_time():
    # segmentation.py:247-286 `_video_mask`: the frame key nearest predicted time x fps;
    # :401-470 box and points against that mask, 0..1000 coordinates mapped onto it
    # (:306-347); :446-452 video accuracy 0.35 box + 0.10 (constant) + 0.40 pos + 0.15 neg;
    # :461-464 caps 0.10 (no positive point inside) and 0.20 (box IoU < 0.10).
    record = video_masks_record()
    on_c_late = seg_answer(**ON_C, negative_points=FAR, time=2.0)  # 2.0 s x 8 = frame 16: C
    on_c_on_time = seg_answer(**ON_C, negative_points=FAR, time=1.0)  # frame 8: B
    assert orarl_components(record, on_c_late)["task"] == pytest.approx(1.0)
    assert orarl_components(record, on_c_on_time)["task"] == pytest.approx(0.10)
    # ours scores the record's mask (B) with time term exp(-|dt| / 2): box and positives
    # miss, 0.10 * exp(-0.5) + 0.15 = 0.21, capped at 0.10
    assert both(record, on_c_late) == (pytest.approx(0.10), pytest.approx(1.0))  # type: ignore[comparison-overlap]  # pytest.approx inside a tuple


def test_video_segmentation_time_term_is_constant():
    # segmentation.py:450 `+ time_weight`: the 0.10 is added whatever the time error once a
    # mask is found; a record's single mask is its only frame, chosen for any time.
    record = video_masks_record(frame_masks=False)
    on_b_late = seg_answer(**ON_B, negative_points=FAR, time=1.4)
    ours, theirs = both(record, on_b_late)
    assert theirs == pytest.approx(1.0)
    assert ours == pytest.approx(0.35 + 0.10 * math.exp(-0.4 / 2) + 0.40 + 0.15)  # 0.9819
    with_frames = video_masks_record()  # 1.4 s x 8 = 11.2: nearest key 8, mask B
    assert both(with_frames, on_b_late) == (pytest.approx(ours), pytest.approx(1.0))  # type: ignore[comparison-overlap]  # pytest.approx inside a tuple


def test_mask_points_use_a_square_tolerance_for_negatives_too():
    # segmentation.py:321-347 a point is inside when a mask pixel lies in the 7 x 7 square
    # around its rounded pixel; negative points use it too (:363-371), ours only positives.
    record = RECORDS["seg_mask"]  # mask rows 10-19, cols 20-39 of a 60 x 40 frame, pixels
    negatives = [[18, 8], [5, 5], [50, 30]]  # (18, 8) is 2 px diagonally off the mask corner
    response = seg_answer(
        boxes=[20, 10, 40, 20],
        positive_points=SEG_POINTS["positive_points"],
        negative_points=negatives,
    )
    parts = orarl_components(record, response)
    assert parts["neg"] == pytest.approx(2 / 3) and parts["task"] == pytest.approx(
        0.5 + 0.25 + 0.25 * 2 / 3
    )
    assert score_response(record, response, OURS).components["neg"] == 1.0


# ----- the mode ------------------------------------------------------------------------------


def test_mode_is_selected_by_the_orarl_recipes_only():
    assert RewardConfig().mode == "videorl"
    for name in ("orarl", "orarl_9b"):
        assert load_config(resolve_config_path(name)).reward.mode == "orarl"
    for name in ("grpo", "taro", "dapo"):
        assert load_config(resolve_config_path(name)).reward.mode == "videorl"


def test_mode_refuses_settings_it_cannot_honour():
    with pytest.raises(ConfigError, match="reward.mode.*'best'"):
        RewardConfig.from_dict({"mode": "best"})
    with pytest.raises(ConfigError, match=r"reward.mode=orarl .* with composition='sum'"):
        RewardConfig.from_dict({"mode": "orarl", "composition": "sum"})
    with pytest.raises(ConfigError, match="with tg_shaping='iou_v2'"):
        RewardConfig.from_dict({"mode": "orarl", "tg_shaping": "iou_v2"})
    with pytest.raises(ConfigError, match="with think_required=True"):
        RewardConfig.from_dict({"mode": "orarl", "think_required": True})


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_annotation_rows_score_one_where_orarl_would(name):
    """The serialized ground truth scores 1.0 under OraRL's adapters too, except a
    half-second STG key, which OraRL's integer-key contract drops (format 0)."""
    record = RECORDS[name]
    for think in (False, True):
        result = score_response(record, serialize_annotation(record, think=think), ORARL)
        if name == "stg":  # keys "2", "3", "3.5"
            assert result.components["format"] == 0.0 and result.components["task"] == 1.0
        else:
            assert result.overall == pytest.approx(1.0), (name, think, result)


def test_frame_masks_round_trip_and_check():
    record = video_masks_record()
    assert record_from_dict(record.to_dict()) == record
    bad = dataclasses.replace(record).to_dict()
    bad["answer"]["frame_masks"] = {"0": "not a mask"}
    with pytest.raises(DataError, match="frame_masks"):
        record_from_dict(bad)
