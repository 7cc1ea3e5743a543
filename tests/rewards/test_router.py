"""The router: dispatch by family, task * format, plug-ins, never raising."""

import pytest

from videorl.data.families import Family
from videorl.data.records import BoxAnswer, MediaRef, TaskRecord
from videorl.rewards import RewardConfig, score_response, serialize_annotation

from .factories import all_records, make

CONFIG = RewardConfig(num_workers=1)


def test_every_family_has_format_task_overall():
    for record in all_records().values():
        for response in ("", serialize_annotation(record)):
            result = score_response(record, response, CONFIG)
            assert {"format", "task", "overall"} <= set(result.components)
            assert result.components["overall"] == result.overall
            assert result.error is None


def test_extras_present_even_when_unparseable():
    record = make("tracking", {"boxes": {"1": [0, 0, 1, 1]}})
    assert set(score_response(record, "garbage", CONFIG).components) == {
        "format",
        "task",
        "iou",
        "coverage",
        "overall",
    }


def test_scorer_exception_costs_one_sample():
    # A hand-built record whose answer type does not match its family.
    record = TaskRecord(
        id="bad",
        family=Family("temporal_grounding"),
        problem="q",
        answer=BoxAnswer((0, 0, 1, 1)),
        video=MediaRef(path="v.mp4"),
    )
    result = score_response(record, "<answer>1 to 2</answer>", CONFIG)
    assert result.overall == 0.0
    assert result.failure_reason == "exception"
    assert "record bad" in result.error  # type: ignore[operator]  # set here: a None fails the test too


def test_non_string_response_scores_zero():
    record = make("video_qa", {"letter": "A"})
    result = score_response(record, None, CONFIG)  # type: ignore[arg-type]
    assert result.overall == 0.0 and result.error is None


def test_plugin_replace(plugin_module):
    config = RewardConfig(num_workers=1, plugins={"qa": f"{plugin_module}:quarter"})
    qa = make("video_qa", {"letter": "A"})
    result = score_response(qa, "<answer>A</answer>" + " " * 32, config)
    assert result.overall == 0.25
    assert result.components == {"format": 1.0, "task": 0.25, "overall": 0.25, "length": 0.5}
    other = make("temporal_grounding", {"windows": [[1, 2]]})
    assert score_response(other, "<answer>1 to 2</answer>", config).overall == 1.0


def test_plugin_extend(plugin_module):
    config = RewardConfig(
        num_workers=1,
        plugins={"qa": f"{plugin_module}:quarter"},
        plugin_mode="extend",
        plugin_weight=0.2,
    )
    result = score_response(make("video_qa", {"letter": "A"}), "<answer>A</answer>", config)
    assert result.overall == pytest.approx(0.8 * 1.0 + 0.2 * 0.25)
    assert result.components["task"] == 1.0
    assert result.components["plugin/overall"] == 0.25
    assert result.components["overall"] == result.overall


@pytest.mark.parametrize(
    "name, reason_text", [("broken", "plugin bug"), ("incomplete", "returned no format, task")]
)
def test_plugin_failures_cost_one_sample(plugin_module, name, reason_text):
    config = RewardConfig(num_workers=1, plugins={"qa": f"{plugin_module}:{name}"})
    result = score_response(make("video_qa", {"letter": "A"}), "<answer>A</answer>", config)
    assert (
        result.overall == 0.0
        and result.failure_reason == "exception"
        and reason_text in result.error  # type: ignore[operator]  # set here: a None fails the test too
    )


def test_plugin_values_are_clamped(plugin_module):
    config = RewardConfig(num_workers=1, plugins={"qa": f"{plugin_module}:out_of_range"})
    result = score_response(make("video_qa", {"letter": "A"}), "<answer>A</answer>", config)
    assert result.components == {"format": 1.0, "task": 0.0, "overall": 0.0}
