"""Synthetic data: every family validates, media decode to the stated sizes, the ground
truth matches the pixels, and the same seed gives the same records."""

from __future__ import annotations

import collections

import numpy as np
import pycocotools.mask as mask_utils
import pytest
import torch

from videorl.data.families import SI_CHOICE_SUBTYPES, SI_NUMERIC_SUBTYPES, Family, families
from videorl.data.loaders import check_media, load_records
from videorl.data.records import record_from_dict
from videorl.data.synth import parse_families, synthesize
from videorl.data.synth_scene import BACKGROUND, COLORS
from videorl.errors import ConfigError
from videorl.video.cache import VideoCache
from videorl.video.decode import VideoConfig

N = 8  # eight spatial-intelligence records cover its eight subtypes


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    synthesize(out, families="all", n=N, seed=3)
    return out


@pytest.fixture(scope="module")
def records(synth_dir):
    result = load_records(synth_dir / "records.jsonl")
    assert result.skipped == 0
    return result.records


@pytest.fixture(scope="module")
def cache():
    # native size (factor 2, no pixel floor) and every source frame, so pixels can be checked
    return VideoCache(
        VideoConfig(min_pixels=4, max_pixels=128 * 128, factor=2, fps=8.0, max_frames=128)
    )


def by_family(records, family):
    return [r for r in records if r.family == family]


def colour_near(pixel, name, tolerance=40):
    return bool(np.abs(np.asarray(pixel, float) - COLORS[name]).max() <= tolerance)


def components(mask: np.ndarray) -> int:
    """Number of 4-connected regions of a boolean mask."""
    seen = np.zeros_like(mask)
    count = 0
    for start in zip(*np.nonzero(mask), strict=True):
        if seen[start]:
            continue
        count += 1
        stack = [start]
        while stack:
            y, x = stack.pop()
            if 0 <= y < mask.shape[0] and 0 <= x < mask.shape[1] and mask[y, x] and not seen[y, x]:
                seen[y, x] = True
                stack += [(y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)]
    return count


def pixel(decoded, frame: int, x: float, y: float):
    return decoded.frames[frame, :, int(y), int(x)].tolist()


def test_every_family_validates_with_its_media(synth_dir, records):
    counts = collections.Counter(r.family for r in records)
    assert counts == {family: N for family in families()}
    assert check_media(records) == []
    for family in families():
        assert len(load_records(synth_dir / f"records_{family.short}.jsonl")) == N
    for record in records:  # the JSON form round-trips through the schema
        assert record_from_dict(record.to_dict()) == record
    subtypes = {r.subtype for r in by_family(records, Family("spatial_intelligence"))}
    assert subtypes == set(SI_NUMERIC_SUBTYPES + SI_CHOICE_SUBTYPES)
    assert {r.subtype for r in by_family(records, Family("video_qa"))} <= {"colour", "order"}


def test_media_decode_to_the_stated_sizes_and_durations(records, cache):
    for record in records:
        if record.media is None:
            continue
        decoded = cache.get(record.media)
        assert (decoded.meta.source_width, decoded.meta.source_height) == (
            record.width,
            record.height,
        )
        assert 64 <= record.width <= 128 and 64 <= record.height <= 128
        if record.video is not None:
            assert 2.0 <= record.duration <= 16.0
            assert decoded.meta.duration == record.duration
            assert decoded.meta.source_fps == 8.0


def test_temporal_grounding_window_matches_the_pixels(records, cache):
    for record in by_family(records, Family("temporal_grounding")):
        ((t0, t1),) = record.answer.windows
        frames = cache.get(record.video).frames.int()
        times = [k / 8 for k in range(len(frames))]
        reference = (
            frames.new_tensor(BACKGROUND)[:, None, None]
            if record.subtype == "appear"
            else frames[0]
        )
        changed = [bool((f - reference).abs().max() > 60) for f in frames]
        if record.subtype == "move":  # still until t0, moving in between, at the far side from t1
            assert not any(c for c, t in zip(changed, times, strict=True) if t <= t0), record.id
            assert all(c for c, t in zip(changed, times, strict=True) if t >= t1), record.id
        else:  # visible / recoloured exactly during [t0, t1)
            assert changed == [t0 <= t < t1 for t in times], record.id
        assert [c.start for c in record.captions] == [0.0, t0, t1]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' decode under numpy 2
def test_boxes_masks_and_points_match_the_pixels(records, cache):
    for record in by_family(records, Family("spatial_grounding")):
        x1, y1, x2, y2 = record.answer.box
        image = cache.get(record.image)
        assert colour_near(pixel(image, 0, (x1 + x2) / 2, (y1 + y2) / 2), record.problem.split()[1])
    for record in by_family(records, Family("segmentation")):
        answer = record.answer
        mask = mask_utils.decode(answer.mask_rle).astype(bool)
        rows, cols = np.nonzero(mask)
        assert answer.box == (cols.min(), rows.min(), cols.max() + 1, rows.max() + 1)
        assert all(mask[int(y), int(x)] for x, y in answer.positive_points)
        assert not any(mask[int(y), int(x)] for x, y in answer.negative_points)
        decoded = cache.get(record.media)
        frame = 0 if answer.time is None else round(answer.time * 8)
        x, y = answer.positive_points[0]
        assert colour_near(pixel(decoded, frame, x, y), record.problem.split()[1])
        assert (answer.time is None) == (record.video is None)


def test_tracking_and_stg_boxes_follow_the_object(records, cache):
    for record in by_family(records, Family("tracking")):
        decoded = cache.get(record.video)
        for frame, (x1, y1, x2, y2) in record.answer.boxes.items():
            assert int(frame) % 4 == 0
            assert colour_near(
                pixel(decoded, int(frame), (x1 + x2) / 2, (y1 + y2) / 2), record.problem.split()[1]
            )
    for record in by_family(records, Family("spatio_temporal_grounding")):
        t0, t1 = record.answer.time
        decoded = cache.get(record.video)
        assert record.answer.boxes, record.id
        for second, (x1, y1, x2, y2) in record.answer.boxes.items():
            assert t0 <= float(second) < t1
            assert colour_near(
                pixel(decoded, int(second) * 8, (x1 + x2) / 2, (y1 + y2) / 2),
                record.problem.split()[1],
            )


GRID_FAMILIES = ("spatial_grounding", "segmentation", "tracking", "spatio_temporal_grounding")


def _boxes(record):
    answer = record.answer
    if record.family == Family("tracking"):
        return [*answer.boxes.values(), tuple(record.extra["first_box"])]
    if record.family == Family("spatio_temporal_grounding"):
        return list(answer.boxes.values())
    return [answer.box]


@pytest.mark.parametrize("family", GRID_FAMILIES)
def test_spatial_objects_span_patches_on_the_grid(records, family):
    """The spatial families' targets are 2 x 2 patches of the tiny model's tower with their
    corners on the patch grid, in frames whose 0-1000 coordinates of a corner are whole."""
    from videorl.data.coordinates import model_convention, to_model_coordinates
    from videorl.data.synth_tasks import CELL, GRID_FRAMES

    chosen = by_family(records, Family(family))
    assert chosen
    for record in chosen:
        assert (record.width, record.height) in GRID_FRAMES
        for x1, y1, x2, y2 in _boxes(record):
            assert x2 - x1 == y2 - y1 == 2 * CELL, record.id
            assert x1 % CELL == y1 % CELL == 0, record.id
        scaled = to_model_coordinates(
            record, model_convention("qwen3_vl"), (record.width, record.height)
        )
        assert all(float(v).is_integer() for box in _boxes(scaled) for v in box[:4]), record.id


def test_tracking_keys_frames_a_2_fps_sample_shows(monkeypatch, tmp_path):
    """Every keyed frame is one the quickstart's 2 fps sample decodes: a 3.5 or 4.5 s video
    is sampled at a stride of 4.67 or 4.5 source frames (an even frame count) and would show
    none of its whole seconds."""
    from videorl.data.records import MediaRef
    from videorl.tasks.tracking import synth as tracking_synth
    from videorl.video.sampling import plan_frame_indices

    monkeypatch.setattr(tracking_synth, "save_video", lambda *a, **k: MediaRef(path="v.mp4"))
    durations = set()
    for k in range(40):
        record = tracking_synth.tracking(np.random.default_rng([0, k]), f"trk-{k}", tmp_path)
        duration = record.duration or 0.0
        durations.add(duration)
        shown, _ = plan_frame_indices(
            round(duration * 8), 8.0, fps=2.0, min_frames=4, max_frames=32
        )
        assert {int(f) for f in record.answer.boxes} <= set(shown), (duration, shown)
    assert durations == {3.0, 4.0, 5.0}


def test_qa_si_and_math_answers_are_exact(records, cache):
    for record in by_family(records, Family("video_qa")):
        correct = record.options["ABCDEFGH".index(record.answer.letter)]
        decoded = cache.get(record.video)
        first_visible = next(
            k
            for k in range(len(decoded.frames))
            if decoded.frames[k].int().sub(20).abs().max() > 60
        )
        colours = {tuple(p) for p in decoded.frames[first_visible].reshape(3, -1).T.tolist()}
        assert any(colour_near(c, correct) for c in colours), record.id
    for record in by_family(records, Family("spatial_intelligence")):
        if record.subtype == "object_counting":
            decoded = cache.get(record.video)
            yellow = (
                decoded.frames[0].permute(1, 2, 0).int() - torch.tensor(COLORS["yellow"])
            ).abs().amax(-1) < 40
            assert components(yellow.numpy()) == int(record.answer.value), record.id
    for record in by_family(records, Family("math")):
        assert record.answer.text.lstrip("-").isdigit()
        if record.subtype == "expression":
            expression = record.problem.removeprefix("What is ").removesuffix("?")
            assert str(eval(expression)) == record.answer.text


def test_same_seed_same_records_and_subsets_agree(synth_dir, tmp_path):
    again = synthesize(tmp_path / "again", families="all", n=N, seed=3)
    assert again.read_text() == (synth_dir / "records.jsonl").read_text()
    subset = synthesize(tmp_path / "tg", families="tg,qa", n=2, seed=3)
    assert subset.read_text().splitlines() == [
        line
        for line in (synth_dir / "records.jsonl").read_text().splitlines()
        if '"id": "tg-000' in line
        and int(line.split('"id": "tg-')[1][:4]) < 2
        or '"id": "qa-000' in line
        and int(line.split('"id": "qa-')[1][:4]) < 2
    ]
    other = synthesize(tmp_path / "other", families="tg", n=2, seed=4)
    assert other.read_text() != subset.read_text()


def test_validation_split_is_held_out_and_independent_of_n(tmp_path):
    synthesize(tmp_path / "a", families="tg", n=2, seed=0, val=2)
    synthesize(tmp_path / "b", families="tg", n=3, seed=0, val=2)
    val = load_records(tmp_path / "a" / "val.jsonl").records
    assert [r.id for r in val] == ["tg-val-0000", "tg-val-0001"]
    assert (tmp_path / "a" / "val.jsonl").read_text() == (tmp_path / "b" / "val.jsonl").read_text()
    assert check_media(val) == []
    train = load_records(tmp_path / "a" / "records.jsonl").records
    assert {r.video.path for r in train}.isdisjoint({r.video.path for r in val})


def test_family_selection():
    assert parse_families("all") == families()
    assert parse_families("qa, tg,vtg") == (Family("temporal_grounding"), Family("video_qa"))
    with pytest.raises(ConfigError, match="unknown task family"):
        parse_families("tg,foo")
    with pytest.raises(ConfigError):
        synthesize("/tmp/never", n=0)


def test_tg_events_choose_the_event_kinds(tmp_path):
    from videorl.data.loaders import load_records
    from videorl.data.synth import synthesize
    from videorl.errors import ConfigError

    path = synthesize(tmp_path / "a", ["tg"], n=6, seed=0, tg_events=("appear",))
    records = load_records(path).records
    assert {r.subtype for r in records} == {"appear"}
    with pytest.raises(ConfigError, match="--tg-events .*'?blink'? is not an event kind"):
        synthesize(tmp_path / "b", ["tg"], n=1, tg_events=("blink",))


@pytest.mark.parametrize("family", ["temporal_grounding", "spatio_temporal_grounding"])
def test_window_bounds_are_frames_a_2_fps_sample_shows(family, monkeypatch, tmp_path):
    """Every 0.5 s boundary of the answer window is the timestamp of a frame the quickstart's
    2 fps sample decodes: an x.5 s video (an even count of 2D - 1 frames is odd) was sampled
    off the grid (13.5 s: 26 frames at 3.625, 4.125, ... s) and showed no boundary."""
    import importlib

    from videorl.data.records import MediaRef
    from videorl.video.sampling import frame_timestamps, plan_frame_indices

    module = importlib.import_module(f"videorl.tasks.{family}.synth")
    monkeypatch.setattr(module, "save_video", lambda *a, **k: MediaRef(path="v.mp4"))
    make = getattr(module, family)
    durations = set()
    for k in range(60):
        record = make(np.random.default_rng([1, k]), f"r-{k}", tmp_path)
        duration = record.duration or 0.0
        durations.add(duration)
        shown, _ = plan_frame_indices(round(duration * 8), 8.0, fps=2.0, max_frames=32)
        stamps = set(frame_timestamps(shown, 8.0))
        answer = record.answer
        start, end = answer.windows[0] if family == "temporal_grounding" else answer.time
        assert start in stamps and (end in stamps or end == duration), (duration, start, end)
        keyed = getattr(answer, "boxes", {})  # spatio-temporal: a box at each whole second
        assert {float(second) for second in keyed} <= stamps, (duration, sorted(keyed))
    assert durations <= {float(d) for d in range(8, 17)} and len(durations) > 4


def test_tg_grid_1_puts_both_bounds_on_a_temporal_patch(monkeypatch, tmp_path):
    """On `--tg-grid 1` every bound of the answer is the first frame of a temporal patch (two
    frames of the 2 fps sample, one group of visual tokens) or the video's end, and events last
    1 or 2 s; the default grid keeps 0.5 s bounds."""
    from videorl.data.records import MediaRef
    from videorl.tasks.temporal_grounding import synth as module
    from videorl.video.sampling import frame_timestamps, plan_frame_indices

    monkeypatch.setattr(module, "save_video", lambda *a, **k: MediaRef(path="v.mp4"))
    lengths, halves = set(), 0
    for k in range(60):
        rng = np.random.default_rng([2, k])
        record = module.temporal_grounding(rng, f"r-{k}", tmp_path, ("appear",), grid=1.0)
        duration = record.duration or 0.0
        shown, _ = plan_frame_indices(round(duration * 8), 8.0, fps=2.0, max_frames=32)
        patch_starts = set(frame_timestamps(shown, 8.0)[::2])
        ((start, end),) = record.answer.windows
        assert start in patch_starts and (end in patch_starts or end == duration), (start, end)
        assert start >= 1.0 and end <= duration - 1.0
        lengths.add(end - start)
        default = module.temporal_grounding(np.random.default_rng([2, k]), "d", tmp_path)
        halves += any(bound % 1 for bound in default.answer.windows[0])
    assert lengths == {1.0, 2.0} and halves > 10


def test_tg_grid_must_be_half_or_whole_seconds(tmp_path):
    from videorl.data.synth import synthesize
    from videorl.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--tg-grid 0\.25: .* one of 0\.5, 1 seconds"):
        synthesize(tmp_path / "b", ["tg"], n=1, tg_grid=0.25)
