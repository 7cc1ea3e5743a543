"""Segmentation: how a benchmark scores it, J, F and J&F (`eval/metrics/masks.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from videorl.data.records import SegmentationAnswer, TaskRecord
from videorl.eval.metrics import masks
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.tasks.segmentation.parsing import parse_segmentation


def score_segmentation(record: TaskRecord, text: str) -> Scored:
    answer = record.answer_as(SegmentationAnswer)
    pred = parse_segmentation(text)
    values = masks.segmentation_scores(
        pred.box, answer, record.box_format, (record.width, record.height)
    )
    values["video"] = float(answer.time is not None)
    prediction = None if pred.box is None else {"box": list(pred.box), "time": pred.time}
    return prediction, {"score": values["j"], **values}


def summarize_segmentation(samples: Sequence[SampleResult]) -> dict[str, float]:
    video = [s for s in samples if s.values["video"]]
    image = [s for s in samples if not s.values["video"]]
    out: dict[str, float] = {}
    if video:
        out.update(masks.summarize_video(values_of(video, "j"), values_of(video, "f")))
    if image:
        out.update(
            masks.summarize_image(
                values_of(image, "j"), values_of(image, "inter"), values_of(image, "union")
            )
        )
    return out


FAMILY_EVALS.register(
    "segmentation", FamilyEval(score_segmentation, summarize_segmentation, sample_metric="j")
)
