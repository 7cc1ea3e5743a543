"""`videorl sft` with `sft.target=tool_trajectory` (rollout/tools/gold.py): the gold call
covers the video within one clip, the trajectory is a call, the real clip and the answer,
its tool turn has no loss term, and a run trains on it."""

from __future__ import annotations

import pytest
import torch

from tests.rewards.factories import make
from tests.trainer.test_sft import read_rows, sft_config
from videorl.data.loaders import load_records
from videorl.errors import ConfigError
from videorl.models.loading import load_model
from videorl.rewards.annotation import serialize_annotation
from videorl.rollout.multiturn import MultiTurnLimits, forced_trajectory, loss_inputs
from videorl.rollout.prompting import encode_record
from videorl.rollout.tools import ToolContext, ToolRunner, VideoToolLimits, resolve_tools
from videorl.rollout.tools.gold import gold_turns
from videorl.trainer.sft import response_nll_sum, run_sft
from videorl.video.cache import VideoCache
from videorl.video.decode import DecodedVideo
from videorl.video.meta import VideoMeta

TOOL_SFT = [
    "sft.target=tool_trajectory",
    "rollout.tools=[get_clip]",
    "sft.max_response_tokens=512",
    "trainer.val_controls=[]",  # validation answers with the tools: no video controls
]


def _video(duration: float, clip_start: float = 0.0) -> DecodedVideo:
    meta = VideoMeta(
        frame_indices=[0, 1],  # type: ignore[arg-type]  # lists, as JSON gives
        timestamps=[0.0, 1.0],  # type: ignore[arg-type]  # lists, as JSON gives
        source_fps=25.0,
        duration=duration,
        fps=2 / duration,
        width=56,
        height=56,
        clip_start=clip_start,
    )
    return DecodedVideo(frames=torch.zeros(2, 3, 56, 56, dtype=torch.uint8), meta=meta)


@pytest.mark.parametrize(
    ("duration", "clip_start", "arguments"),
    [
        (16.0, 0.0, '"start": 0, "end": 16, "fps": 1'),
        (8.4, 0.0, '"start": 0, "end": 8, "fps": 2'),
        (12.0, 0.0, '"start": 0, "end": 12, "fps": 1'),
        (40.0, 0.0, '"start": 0, "end": 40, "fps": 0.25'),
        (6.0, 2.3, '"start": 3, "end": 8, "fps": 2'),
    ],
)
def test_the_gold_call_covers_the_video_at_the_highest_rate_one_clip_holds(
    duration, clip_start, arguments
):
    record = make("temporal_grounding", {"windows": [[1.0, 2.0]]})
    call, _answer = gold_turns(record, _video(duration, clip_start), False, VideoToolLimits())
    assert (
        call == f'<tool_call>\n{{"name": "get_clip", "arguments": {{{arguments}}}}}\n</tool_call>'
    )


def test_a_gold_trajectory_is_the_call_the_clip_and_the_answer_with_the_clip_unscored(
    tiny_model_dir, tg_data
):
    cfg = sft_config(tiny_model_dir(), tg_data, tg_data / "unused", *TOOL_SFT)
    loaded = load_model(cfg.model.path, packing=False)
    runner = ToolRunner(resolve_tools(["get_clip"]))
    record = load_records(tg_data / "train.jsonl").records[0]
    video = VideoCache(cfg.video).get(record.media)  # type: ignore[arg-type]  # a video record
    prompt = encode_record(loaded, record, video, think=False, tools=runner.schemas())
    context = ToolContext(media=record.media, video=video, config=cfg.video)
    turns = gold_turns(record, video, False, context.limits)
    try:
        row = forced_trajectory(
            loaded, prompt, context, runner, turns, MultiTurnLimits(2, max_total_tokens=512)
        )
    finally:
        runner.close()

    assert (row.calls, row.errors, row.turns, row.truncated) == (1, 0, 2, False)
    assert row.text == serialize_annotation(record) and '"get_clip"' in row.model_texts[0]
    assert len(row.media) == 2 and row.media[1].frames.shape[0] > video.frames.shape[0]
    tool = row.loss_mask == 0
    assert tool.any() and (row.response_token_types[tool] == 2).any()
    assert not (row.response_token_types[~tool] != 0).any()  # the model writes text only

    # the SFT loss is the causal-LM loss with labels on the model's tokens only
    nll, tokens = response_nll_sum(loaded, [row.loss_prompt()], [row.response_ids], [row])
    inputs, mask = loss_inputs([row], loaded.pad_token_id)
    width, ids = mask.shape[1], inputs["input_ids"]
    labels = torch.full_like(ids, -100)
    labels[:, -width:] = torch.where(mask.bool(), ids[:, -width:], -100)
    with torch.no_grad():
        expected = loaded.model(**inputs, labels=labels).loss
    assert tokens == float(row.loss_mask.sum())
    assert float(nll.detach()) / tokens == pytest.approx(float(expected), rel=1e-4)


def test_sft_trains_on_tool_trajectories(tiny_model_dir, tg_data, tmp_path):
    out = tmp_path / "sft"
    cfg = sft_config(
        tiny_model_dir(),
        tg_data,
        out,
        *TOOL_SFT,
        "trainer.steps=8",
        "trainer.save_every=0",
        "trainer.val_every=0",
    )
    run_sft(cfg)
    rows = read_rows(out / "metrics.jsonl")
    losses = [r["sft/loss"] for r in rows]
    assert len(losses) == 8 and sum(losses[-2:]) / 2 < losses[0] - 0.5, losses
    assert all(r["sft/truncated_targets"] == 0 and r["sft/target_tokens"] > 0 for r in rows)


def test_a_direct_gold_turn_is_the_answer_alone(tg_data):
    record = load_records(tg_data / "train.jsonl").records[0]
    turns = gold_turns(record, _video(16.0), False, VideoToolLimits(), call=False)
    assert turns == [serialize_annotation(record)]


def _calling_targets(model, tg_data, out, fraction: float, steps: int) -> list[float]:
    """`sft/tool_call_targets` of each step of a 4-record-per-step tool SFT run."""
    cfg = sft_config(
        model,
        tg_data,
        out,
        *TOOL_SFT,
        f"sft.tool_call_fraction={fraction}",
        "data.prompts_per_step=4",
        f"trainer.steps={steps}",
        "trainer.save_every=0",
        "trainer.val_every=0",
    )
    run_sft(cfg)
    return [r["sft/tool_call_targets"] for r in read_rows(out / "metrics.jsonl")]


@pytest.mark.parametrize(("fraction", "expected"), [(0.0, {0.0}), (1.0, {4.0})])
def test_tool_call_fraction_mixes_tool_and_direct_targets(
    tiny_model_dir, tg_data, tmp_path, fraction, expected
):
    calling = _calling_targets(tiny_model_dir(), tg_data, tmp_path / "sft", fraction, steps=2)
    assert set(calling) == expected


def test_a_half_tool_fraction_draws_both_kinds_of_target(tiny_model_dir, tg_data, tmp_path):
    calling = _calling_targets(tiny_model_dir(), tg_data, tmp_path / "sft", 0.5, steps=4)
    assert 0 < sum(calling) < 16  # 16 targets, each a call with chance 1/2 (seeded)


def test_tool_call_fraction_is_bounded(tiny_model_dir, tg_data):
    with pytest.raises(ConfigError, match="sft.tool_call_fraction=1.5"):
        sft_config(
            tiny_model_dir(), tg_data, tg_data / "unused", *TOOL_SFT, "sft.tool_call_fraction=1.5"
        )


def test_tool_trajectories_need_get_clip(tiny_model_dir, tg_data):
    with pytest.raises(ConfigError, match="sft.target=tool_trajectory calls one of"):
        sft_config(tiny_model_dir(), tg_data, tg_data / "unused", "sft.target=tool_trajectory")
