"""Each family's metrics on hand-computed fixtures (docs/methods.md#evaluation-metrics)."""

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from videorl.data.records import SegmentationAnswer
from videorl.eval.metrics import boxes, choice, masks, temporal


def test_temporal_grounding_worked_examples():
    # docs/methods.md#temporal-iou
    assert temporal.query_iou((3, 7), [(2, 6)], 10) == pytest.approx(0.6)
    # QVHighlights: several windows, the best match counts (8 / 12 with [10, 20]).
    assert temporal.query_iou((12, 22), [(0, 4), (10, 20)], 30) == pytest.approx(2 / 3)
    # The ground truth is clipped to the video: [25, 40] -> [25, 30].
    assert temporal.query_iou((26, 30), [(25, 40)], 30) == pytest.approx(0.8)
    assert temporal.query_iou(None, [(2, 6)], 10) == 0.0


def test_temporal_summary_counts_unparsed_as_zero():
    ious = [0.6, 2 / 3, 0.0, 0.8]  # the third query was unparseable
    summary = temporal.summarize(ious)
    assert summary["R1@0.3"] == pytest.approx(75.0)
    assert summary["R1@0.5"] == pytest.approx(75.0)
    assert summary["R1@0.7"] == pytest.approx(25.0)
    assert summary["mIoU"] == pytest.approx(100 * (0.6 + 2 / 3 + 0.8) / 4)
    assert temporal.recall_at([0.5], 0.5) == 100.0  # IoU >= m


@pytest.mark.parametrize(
    "duration, bucket", [(12.0, "<30 s"), (30.0, "30-60 s"), (500.0, ">=300 s"), (None, "unknown")]
)
def test_duration_buckets(duration, bucket):
    assert temporal.duration_bucket(duration) == bucket


def test_spatial_grounding():
    gt = (0, 0, 10, 10)
    ious = [boxes.sample_box_iou(p, gt) for p in [(5, 0, 15, 10), (0, 0, 10, 8), gt, None]]
    assert ious == pytest.approx([1 / 3, 0.8, 1.0, 0.0])
    summary = boxes.summarize_grounding(ious)
    assert summary == pytest.approx(
        {"Acc@0.5": 50.0, "Acc@0.7": 50.0, "Acc@0.9": 25.0, "mIoU": 100 * (1 / 3 + 0.8 + 1.0) / 4}
    )


def test_tracking_ao_and_success():
    square = (0, 0, 10, 10)
    first = boxes.sequence_scores(
        boxes.frame_ious({0.0: square, 5.0: (0, 0, 10, 5)}, {"0": square, "5": square})
    )
    assert first == pytest.approx({"ao": 0.75, "sr": 0.5})  # IoU 0.5 is not a success (> 0.5)
    second = boxes.sequence_scores(
        boxes.frame_ious({0.0: square}, {"0": square, "1": square, "2": square})
    )
    assert second == pytest.approx({"ao": 1 / 3, "sr": 1 / 3})  # missing frames count 0
    summary = boxes.summarize_tracking([first["ao"], second["ao"]], [first["sr"], second["sr"]])
    assert summary == pytest.approx(
        {"AO": 100 * (0.75 + 1 / 3) / 2, "SR@0.5": 100 * (0.5 + 1 / 3) / 2}
    )


def test_spatio_temporal_grounding():
    square = (0, 0, 10, 10)
    # Second 2 matches the prediction at 2.4 s; second 3 has none within 0.5 s.
    scores = boxes.spatio_temporal_scores(
        (3, 7), {2.4: square}, (2, 6), {"2": square, "3": square}, 10.0
    )
    assert scores == pytest.approx({"tiou": 0.6, "siou": 0.5})
    missing = boxes.spatio_temporal_scores(None, {}, (2, 6), {"2": square}, 10.0)
    summary = boxes.summarize_spatio_temporal(
        [scores["tiou"], missing["tiou"]], [scores["siou"], missing["siou"]]
    )
    assert summary == pytest.approx(
        {"m_tIoU": 30.0, "m_sIoU": 25.0, "tIoU@0.5": 50.0, "sIoU@0.5": 50.0}
    )


def _rle(pixels: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(pixels.astype(np.uint8)))
    return {"size": list(pixels.shape), "counts": rle["counts"].decode()}


def _answer(pixels: np.ndarray, time: float | None = None) -> SegmentationAnswer:
    return SegmentationAnswer(
        box=(0, 0, 1, 1), positive_points=(), negative_points=(), time=time, mask_rle=_rle(pixels)
    )


def test_box_rasterization_uses_pixel_centres():
    mask = masks.rasterize_box((3, 2, 7, 6), 10, 10)
    assert mask.sum() == 16 and mask[2:6, 3:7].all()
    assert masks.rasterize_box((3.6, 2, 4.4, 3), 10, 10).sum() == 0  # no centre inside
    assert masks.rasterize_box(None, 4, 4).sum() == 0


def test_disk_dilation_matches_skimage_disk():
    point = np.zeros((9, 9), dtype=bool)
    point[4, 4] = True
    assert masks.dilate_disk(point, 2).sum() == 13  # x^2 + y^2 <= 4
    assert masks.dilate_disk(point, 1).sum() == 5


def test_boundary_f_on_a_band():
    # 20 x 10 frame (tolerance ceil(0.008 * 22.4) = 1 px); ground truth rows 5-9, prediction
    # rows 5-12. Boundaries: gt rows 4 and 9, prediction rows 4 and 12 (10 px each); row 4
    # matches, rows 9 and 12 are 3 px apart: precision = recall = 0.5, F = 0.5.
    gt = np.zeros((20, 10), dtype=bool)
    gt[5:10] = True
    scores = masks.segmentation_scores((0, 5, 10, 13), _answer(gt, time=1.0))
    assert scores["j"] == pytest.approx(5 / 8)
    assert scores["f"] == pytest.approx(0.5)
    shifted = masks.segmentation_scores((0, 6, 10, 11), _answer(gt, time=1.0))  # rows 6-10
    assert shifted["f"] == pytest.approx(1.0)  # both boundaries within 1 px
    video = masks.summarize_video([scores["j"], 0.0], [scores["f"], 0.0])
    assert video == pytest.approx({"J": 31.25, "F": 25.0, "J&F": 28.125})


def test_image_giou_and_ciou():
    gt = np.zeros((10, 10), dtype=bool)
    gt[2:6, 2:6] = True  # 16 px
    hit = masks.segmentation_scores((3, 2, 7, 6), _answer(gt))  # 16 px, 12 shared
    assert hit == pytest.approx({"j": 0.6, "f": hit["f"], "inter": 12.0, "union": 20.0})
    miss = masks.segmentation_scores(None, _answer(gt))  # unparsed: an empty mask
    assert miss == pytest.approx({"j": 0.0, "f": 0.0, "inter": 0.0, "union": 16.0})
    summary = masks.summarize_image([hit["j"], miss["j"]], [12.0, 0.0], [20.0, 16.0])
    assert summary == pytest.approx({"gIoU": 30.0, "cIoU": 100 * 12 / 36})


def test_segmentation_without_mask_and_norm1000_boxes():
    answer = SegmentationAnswer(box=(200, 200, 600, 600), positive_points=(), negative_points=())
    # 0..1000 boxes on a 10 x 10 frame: gt pixels 2-5, prediction pixels 3-6 in x.
    scores = masks.segmentation_scores((300, 200, 700, 600), answer, "norm1000", (10, 10))
    assert scores["j"] == pytest.approx(0.6)


def test_choice_accuracy_and_macro_accuracy():
    summary = choice.summarize_choice([1, 0, 0, 1], ["count", "count", "count", "color"])
    assert summary == pytest.approx({"accuracy": 50.0, "macro_accuracy": (100 / 3 + 100) / 2})


def test_spatial_intelligence():
    # MRA(12, 10) = 0.7 (docs/methods.md#mean-relative-accuracy), MRA(4, 4), right, wrong
    scores = [0.7, 1.0, 1.0, 0.0]
    summary = choice.summarize_spatial(
        scores,
        [True, True, False, False],
        ["abs_distance", "object_counting", "rel_direction", "rel_direction"],
    )
    assert summary == pytest.approx({"MRA": 85.0, "accuracy": 50.0, "overall": (70 + 100 + 50) / 3})
