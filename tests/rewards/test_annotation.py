"""Serialized annotations (OraRL rows) score exactly 1.0 for every family and subtype."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from videorl.data.families import SI_NUMERIC_SUBTYPES
from videorl.rewards import RewardConfig, score_response, serialize_annotation

from .factories import all_records, make

RECORDS = all_records()
CONFIGS = [
    RewardConfig(num_workers=1),
    RewardConfig(num_workers=1, think_required=True),
    RewardConfig(num_workers=1, tg_shaping="iou_v2"),
]


@pytest.mark.parametrize("name", sorted(RECORDS))
@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "think_required", "iou_v2"])
def test_oracle_scores_exactly_one(name, config):
    record = RECORDS[name]
    for think in {config.think_required, True}:
        result = score_response(record, serialize_annotation(record, think=think), config)
        assert result.overall == 1.0, (name, think, result)
        assert result.components["format"] == 1.0 and result.components["task"] == 1.0


def test_every_family_and_subtype_is_covered():
    families = {record.family for record in RECORDS.values()}
    assert len(families) == 8
    subtypes = {record.subtype for record in RECORDS.values() if record.subtype}
    assert len(subtypes) == 8


@pytest.mark.parametrize(
    "name, text",
    [
        ("tg", "<answer>2.5 to 7</answer>"),
        ("tg_clipped", "<answer>0 to 40</answer>"),
        ("qa", "<answer>B</answer>"),
        ("sg_abs", "<answer>[10,20,110.5,80]</answer>"),
        ("trk", '<answer>{"boxes":{"0":[1,2,30,40],"5":[3,4,33,44],"10":[5.5,6,35,46]}}</answer>'),
        (
            "stg",
            '<answer>{"time":[1.5,4],"boxes":{"2":[1,2,30,40],"3":[3,4,33,44],"3.5":[5,6,35,46]}}</answer>',
        ),
        ("si_object_size", "<answer>0.35</answer>"),
        ("math", "\\boxed{\\frac{1}{2}}"),
    ],
)
def test_exact_text(name, text):
    assert serialize_annotation(RECORDS[name]) == text


def test_think_form():
    assert (
        serialize_annotation(RECORDS["qa"], think=True)
        == "<think>\n\n</think>\n\n<answer>B</answer>"
    )


def test_mask_annotation_uses_mask_bbox():
    # the record's box [20, 10, 39, 19] is off by one from the mask's [20, 10, 40, 20]
    assert '"boxes":[20,10,40,20]' in serialize_annotation(RECORDS["seg_mask"])


coord = st.floats(min_value=0, max_value=5000, allow_nan=False, allow_infinity=False)
gap = st.floats(min_value=1e-3, max_value=5000, allow_nan=False, allow_infinity=False)
boxes = st.tuples(coord, coord, gap, gap).map(lambda b: [b[0], b[1], b[0] + b[2], b[1] + b[3]])
windows = st.tuples(st.floats(0, 1e5), gap).map(lambda w: [w[0], w[0] + w[1]])
ORACLE = settings(max_examples=40, deadline=None)


@ORACLE
@given(windows, st.floats(0, 100), st.sampled_from(CONFIGS))
def test_random_tg_oracle(window, slack, config):
    record = make("temporal_grounding", {"windows": [window]}, duration=window[1] + slack)
    assert (
        score_response(record, serialize_annotation(record, config.think_required), config).overall
        == 1.0
    )


@ORACLE
@given(boxes, st.sampled_from(["abs", "norm1000"]))
def test_random_sg_oracle(box, box_format):
    record = make("spatial_grounding", {"box": box}, box_format=box_format)
    assert score_response(record, serialize_annotation(record), CONFIGS[0]).overall == 1.0


@ORACLE
@given(st.dictionaries(st.integers(0, 10**6).map(str), boxes, min_size=1, max_size=8))
def test_random_tracking_oracle(frames):
    record = make("tracking", {"boxes": frames})
    assert score_response(record, serialize_annotation(record), CONFIGS[0]).overall == 1.0


@ORACLE
@given(
    windows,
    st.lists(st.tuples(st.integers(0, 3000), boxes), max_size=6, unique_by=lambda kv: kv[0]),
)
def test_random_stg_oracle(window, seconds):
    boxes_by_second = {str(k / 2): b for k, b in seconds}  # half-second keys
    record = make(
        "spatio_temporal_grounding",
        {"time": window, "boxes": boxes_by_second},
        duration=window[1] + 1,
    )
    assert score_response(record, serialize_annotation(record), CONFIGS[0]).overall == 1.0


@ORACLE
@given(
    boxes,
    st.lists(st.tuples(coord, coord), min_size=3, max_size=3),
    st.one_of(st.none(), st.floats(0, 1e4)),
)
def test_random_segmentation_oracle(box, points, time):
    answer = {"box": box, "positive_points": points, "negative_points": points[::-1]}
    if time is not None:
        answer["time"] = time
    record = make("segmentation", answer)
    assert score_response(record, serialize_annotation(record), CONFIGS[0]).overall == 1.0


@ORACLE
@given(
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0),
    st.sampled_from(SI_NUMERIC_SUBTYPES),
)
def test_random_numeric_si_oracle(value, subtype):
    record = make("spatial_intelligence", {"value": value}, subtype=subtype)
    assert score_response(record, serialize_annotation(record), CONFIGS[0]).overall == 1.0
