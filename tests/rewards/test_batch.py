"""Batch scoring: order kept, in-process and pooled agree, failures scored 0 and counted."""

import dataclasses

import numpy as np
import pytest

from videorl.data.records import MediaRef
from videorl.reduction import logged
from videorl.rewards import RewardConfig, ScoringPool, score_batch, serialize_annotation
from videorl.rewards.pool import strip_frames

from .factories import all_records, make

RECORDS = list(all_records().values())


def rows():
    records, responses = [], []
    for record in RECORDS:
        records += [record, record]
        responses += [serialize_annotation(record), "<answer>garbage</answer>"]
    return records, responses


def test_in_process_order_and_metrics():
    records, responses = rows()
    batch = score_batch(records, responses, RewardConfig(num_workers=1))
    metrics = logged(batch.metrics)
    assert batch.overall == [1.0, 0.0] * len(RECORDS)
    assert metrics["reward/mean"] == pytest.approx(0.5)
    assert metrics["reward/samples"] == len(records)
    assert metrics["reward/failed_timeout"] == 0.0
    assert metrics["reward/qa/mean"] == pytest.approx(0.5)
    assert metrics["reward/math/mean"] == pytest.approx(0.5)


def test_pool_matches_in_process():
    records, responses = rows()
    pooled = score_batch(records, responses, RewardConfig(num_workers=2))
    local = score_batch(records, responses, RewardConfig(num_workers=1))
    assert pooled.results == local.results


def test_failures_are_scored_zero_with_their_reason(plugin_module):
    config = RewardConfig(
        num_workers=2, timeout_s=2.0, plugins={"qa": f"{plugin_module}:misbehave"}
    )
    qa, tg = make("video_qa", {"letter": "A"}), make("temporal_grounding", {"windows": [[1, 2]]})
    records = [qa, tg, qa, qa, tg, qa, qa]
    responses = [
        "ok",
        "<answer>1 to 2</answer>",
        "HANG",
        "CRASH",
        "<answer>1 to 2</answer>",
        "RAISE",
        "ok",
    ]
    with ScoringPool(config) as pool:
        batch = score_batch(records, responses, config, pool=pool)
        assert batch.overall == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
        reasons = [r.failure_reason for r in batch.results]
        assert reasons == [None, None, "timeout", "crash", None, "exception", None]
        metrics = logged(batch.metrics)
        assert metrics["reward/failed_timeout"] == 1.0
        assert metrics["reward/failed_crash"] == 1.0
        assert metrics["reward/failed_exception"] == 1.0
        # the pool replaced its killed workers and keeps working
        again = score_batch(records[:2], responses[:2], config, pool=pool)
        assert again.overall == [1.0, 1.0]


def test_inline_frames_are_not_sent_to_workers():
    record = make("video_qa", {"letter": "A"})
    frames = np.zeros((4, 8, 8, 3), dtype=np.uint8)
    record = dataclasses.replace(record, video=MediaRef(frames=frames, fps=2.0))
    sent = strip_frames(record)
    assert sent.video.frames is None and sent.answer == record.answer
    assert strip_frames(make("video_qa", {"letter": "A"})).video.path == "clip.mp4"
    batch = score_batch(
        [record, record], ["<answer>A</answer>", "<answer>B</answer>"], RewardConfig(num_workers=2)
    )
    assert batch.overall == [1.0, 0.0]


def test_argument_errors():
    record = make("video_qa", {"letter": "A"})
    with pytest.raises(ValueError, match="1 records but 2 responses"):
        score_batch([record], ["a", "b"], RewardConfig(num_workers=1))
    other = RewardConfig(num_workers=1, think_required=True)
    with (
        ScoringPool(RewardConfig(num_workers=1)) as pool,
        pytest.raises(ValueError, match="another RewardConfig"),
    ):
        score_batch([record], ["a"], other, pool=pool)


def test_failures_inside_a_chunk_requeue_the_rest(plugin_module):
    config = RewardConfig(
        num_workers=2, timeout_s=2.0, plugins={"qa": f"{plugin_module}:misbehave"}
    )
    qa = make("video_qa", {"letter": "A"})
    responses = ["ok"] * 40
    responses[5], responses[6], responses[21] = "HANG", "RAISE", "CRASH"
    batch = score_batch([qa] * 40, responses, config)
    expected = [0.0 if i in (5, 6, 21) else 1.0 for i in range(40)]
    assert batch.overall == expected
    assert [batch.results[i].failure_reason for i in (5, 6, 21)] == [
        "timeout",
        "exception",
        "crash",
    ]
