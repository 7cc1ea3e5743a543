"""Arbitrary and adversarial output never raises and always scores in [0, 1]."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from videorl.rewards import RewardConfig, score_response

from .factories import all_records

RECORDS = all_records()
CONFIGS = [
    RewardConfig(num_workers=1),
    RewardConfig(num_workers=1, think_required=True, tg_shaping="iou_v2"),
]

ATOMS = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-1e309",
    "-5",
    "-0",
    "0",
    "3.5",
    "1e-320",
    "9" * 400,
    "1" * 5000,
    "to",
    " and ",
    "s",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    '"',
    "(",
    ")",
    '"boxes"',
    '"time"',
    '"bbox_2d"',
    '"positive_points"',
    '"negative_points"',
    "null",
    "true",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "\\boxed{",
    "\\boxed",
    "\\frac{1}{2}",
    "A",
    "B",
    "H",
    "Z",
    "[1,2,3,4]",
    "[-1e308,0,1e308,1]",
    "[4,3,2,1]",
    "[10,5]",
    " ",
    "\n",
    "```json",
    "```",
]
text = st.lists(st.one_of(st.sampled_from(ATOMS), st.text(max_size=12)), max_size=25).map("".join)
number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 1e308, -1e308]),
)
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), number, st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(
            st.sampled_from(
                [
                    "boxes",
                    "time",
                    "bbox_2d",
                    "positive_points",
                    "negative_points",
                    "0",
                    "2",
                    "3.5",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=25,
)
payload = st.one_of(text, json_value.map(lambda v: json.dumps(v, allow_nan=True)))
response = st.one_of(
    text,
    payload.map(lambda p: f"<answer>{p}</answer>"),
    st.tuples(text, payload).map(lambda tp: f"<think>{tp[0]}</think><answer>{tp[1]}</answer>"),
    payload.map(lambda p: f"\\boxed{{{p}}}"),
)


def check(result):
    assert result.error is None, result.error  # no scorer raised (the router would hide it)
    assert 0.0 <= result.overall <= 1.0 and not math.isnan(result.overall)
    for name, value in result.components.items():
        assert 0.0 <= value <= 1.0, (name, value)
    assert result.components["overall"] == result.overall


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(RECORDS)), response, st.sampled_from(CONFIGS))
def test_arbitrary_responses(name, text_response, config):
    check(score_response(RECORDS[name], text_response, config))


BIG = 1_000_000
ADVERSARIAL = {
    "digits": "<answer>" + "9" * BIG + "</answer>",
    "digits_to": "<answer>" + "1" * BIG + " to " + "2" * BIG + "</answer>",
    "brackets": "<answer>" + "[" * BIG + "</answer>",
    "braces_boxed": "\\boxed{" + "{" * BIG,
    "long_boxed": "\\boxed{" + "1+" * (BIG // 2) + "1}",
    "tags": "<answer>" * (BIG // 8),
    "nested": "<think>" * 1000 + "<answer>" * 1000 + "</answer>" * 1000,
    "plain": "x" * BIG,
    "json_keys": '<answer>{"boxes": {'
    + ",".join(f'"{i}": [0, 0, 1, 1]' for i in range(80_000))
    + "}}</answer>",
    "nan_box": '<answer>{"bbox_2d": [NaN, Infinity, -Infinity, 1e999]}</answer>',
    "negative_times": "<answer>-5 to -2</answer>",
    "reversed": "<answer>9 to 3</answer>",
    "huge_window": "<answer>0 to 1e308</answer>",
    "huge_int_json": '<answer>{"time": [0, ' + "9" * 5000 + "]}</answer>",
    "broken_json": '<answer>{"boxes": [1, 2, 3, 4</answer>',
    "nul": "<answer>\x00\udcff</answer>",
}


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL))
def test_adversarial_strings_on_every_family(kind):
    for record in RECORDS.values():
        for config in CONFIGS:
            check(score_response(record, ADVERSARIAL[kind], config))
