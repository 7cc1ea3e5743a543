"""Rewards for the seven video task families and text math (docs/methods.md#rewards).

The temporal-sensitivity reward needs torch and lives in `videorl.rewards.sensitivity`
(not imported here, so that scoring workers start without torch).
"""

from videorl.rewards.annotation import serialize_annotation
from videorl.rewards.batch import BatchScores, score_batch
from videorl.rewards.config import RewardConfig, SensitivityConfig
from videorl.rewards.geometry import box_iou, mean_relative_accuracy, temporal_iou, temporal_iou_v2
from videorl.rewards.pool import ScoringPool
from videorl.rewards.result import RewardResult
from videorl.rewards.router import score_response
from videorl.rewards.score_file import score_file

__all__ = [
    "BatchScores",
    "RewardConfig",
    "RewardResult",
    "ScoringPool",
    "SensitivityConfig",
    "box_iou",
    "mean_relative_accuracy",
    "score_batch",
    "score_file",
    "score_response",
    "serialize_annotation",
    "temporal_iou",
    "temporal_iou_v2",
]
