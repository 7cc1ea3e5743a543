"""Prompt styles: the published OraRL and TaRO templates, and the parsers that accept what
they ask for (issue 16, item 4)."""

from __future__ import annotations

import pytest

from tests.rewards.factories import all_records, make
from videorl.data.prompts import NO_THINK, THINK, build_prompt
from videorl.errors import ConfigError
from videorl.rewards import RewardConfig, score_response

RECORDS = all_records()


def test_orarl_temporal_grounding_is_its_published_prompt():
    record = make("temporal_grounding", {"windows": [[2, 6]]}, problem="a dog jumps")
    text = build_prompt(record, think=False, style="orarl")
    assert text == (
        'To accurately pinpoint the event "a dog jumps" in the video, determine the precise '
        "time period of the event. Provide the start and end times (in seconds) in the format "
        '"start time to end time" within <answer> </answer> tags. Example: <answer> 12 to 18 '
        "</answer>"
    )
    assert build_prompt(record, think=True, style="orarl") == f"{text}\n{THINK}"


def test_orarl_spatial_grounding_asks_for_qwen_native_bbox_2d():
    record = make("spatial_grounding", {"box": [1, 2, 3, 4]}, problem="the red cup")
    text = build_prompt(record, think=False, style="orarl")
    assert text.startswith('Locate "the red cup." in the image.')
    assert '<answer>[{"bbox_2d": [123, 30, 404, 846]}]</answer>' in text


def test_orarl_choice_numeric_and_fallbacks():
    qa = make("video_qa", {"letter": "B"}, problem="What?", options=["x", "y"])
    assert build_prompt(qa, think=False, style="orarl") == (
        "What?\nOptions:\nA. x\nB. y\nAnswer with the option letter only within "
        "<answer>...</answer> tags. Example: <answer>A</answer>"
    )
    counting = make(
        "spatial_intelligence", {"value": 3}, problem="How many?", subtype="object_counting"
    )
    text = build_prompt(counting, think=False, style="orarl")
    assert text.startswith("These are frames of a video.\nHow many? Answer with an integer")
    tracking = RECORDS["trk"]
    ours = build_prompt(tracking, think=False)
    assert build_prompt(tracking, think=False, style="orarl") == ours  # keys by frame: ours
    assert ours.endswith(NO_THINK)


def test_taro_prompt_asks_for_reasoning_and_seconds():
    record = make("temporal_grounding", {"windows": [[2, 6]]}, problem="a person sits")
    text = build_prompt(record, think=True, style="taro")
    assert text.startswith('To accurately pinpoint the event "a person sits" in the video')
    assert text.endswith("</think>\n<answer>\n8.50s to 12.40s\n</answer>")
    qa = make("video_qa", {"letter": "B"}, problem="What?", options=["x", "y"])
    assert build_prompt(qa, think=True, style="taro") == build_prompt(qa, think=True)


def test_unknown_style_is_a_config_error():
    with pytest.raises(ConfigError, match="data.prompt_style='paper'"):
        build_prompt(RECORDS["tg"], think=False, style="paper")


def test_taro_parser_takes_the_last_seconds_span_of_a_verbose_answer():
    record = make("temporal_grounding", {"windows": [[2.0, 6.0]]}, duration=10.0)
    strict, taro = RewardConfig(), RewardConfig(tg_parser="taro")
    verbose = "<answer>\nIt starts around 1.00s to 3.00s, more precisely 2.00s to 6.00s\n</answer>"
    assert score_response(record, verbose, strict).overall == 0.0
    assert score_response(record, verbose, taro).overall == pytest.approx(1.0)
    assert score_response(record, "<answer>2 to 6</answer>", taro).overall == 0.0  # needs `s`
    assert score_response(record, "<answer>2.00s and 6.00s</answer>", taro).overall == 1.0


def test_taro_reward_composition_adds_format_and_iou_v2():
    """TaRO's compute_vtg_score: format + iou_v2. g = [2, 6], p = [3, 7], D = 10:
    iou_v2 = 0.486 (docs/methods.md#temporal-iou), format 1 -> 1.486; without the think block
    0 + 0.486."""
    record = make("temporal_grounding", {"windows": [[2.0, 6.0]]}, duration=10.0)
    config = RewardConfig(
        composition="sum", think_required=True, tg_shaping="iou_v2", tg_parser="taro"
    )
    good = "<think>\nx\n</think>\n<answer>\n3.00s to 7.00s\n</answer>"
    result = score_response(record, good, config)
    assert result.overall == pytest.approx(1.486)
    assert result.components["format"] == 1.0 and result.components["iou"] == pytest.approx(0.6)
    bad = "<answer>3.00s to 7.00s</answer>"
    assert score_response(record, bad, config).overall == pytest.approx(0.486)
    product = RewardConfig(think_required=True, tg_shaping="iou_v2", tg_parser="taro")
    assert score_response(record, bad, product).overall == 0.0


def test_bad_reward_modes_name_the_key():
    with pytest.raises(ConfigError, match="reward.composition.*'max'"):
        RewardConfig.from_dict({"composition": "max"})
    with pytest.raises(ConfigError, match="reward.tg_parser.*'loose'"):
        RewardConfig.from_dict({"tg_parser": "loose"})


@pytest.mark.parametrize(
    "response",
    [
        '```json\n[{"bbox_2d": [10, 20, 110.5, 80], "label": "cup"}]\n```',
        '<think>\nthe cup\n</think>\n```json\n[{"bbox_2d": [10, 20, 110.5, 80]}]\n```',
        '<answer>[{"bbox_2d": [10, 20, 110.5, 80]}]</answer>',
    ],
)
def test_spatial_grounding_accepts_the_qwen_native_answer(response):
    result = score_response(RECORDS["sg_abs"], response, RewardConfig())
    assert result.components["format"] == 1.0 and result.overall == pytest.approx(1.0)


@pytest.mark.parametrize(
    "response",
    [
        '```json\n[{"bbox_2d": [10, 20, 110.5, 80]}, {"bbox_2d": [1, 2, 3, 4]}]\n```',
        'Here: ```json\n[{"bbox_2d": [10, 20, 110.5, 80]}]\n```',
        '```json\n{"bbox_2d": [10, 20, 110.5, 80]}\n```',
        "```json\n[10, 20, 110.5, 80]\n```",
    ],
)
def test_other_untagged_forms_fail_the_format_check(response):
    assert score_response(RECORDS["sg_abs"], response, RewardConfig()).overall == 0.0
