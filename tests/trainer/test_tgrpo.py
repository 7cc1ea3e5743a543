"""T-GRPO's stages on the tiny model and a 3-step `videorl train` of the tgrpo recipe on a
mixed image + video file (issue 24 items 1 and 5). Bonus rule: tulerfeng/Video-R1
src/r1-v/src/open_r1/trainer/grpo_trainer.py (`acc_mean >= 0.8 * shuffled_acc_mean`,
`acc > 0.1` gets + 0.3)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from videorl.algorithms.tgrpo import TemporalContrastConfig, frame_permutation
from videorl.cli import app
from videorl.config import load_config
from videorl.data.loaders import load_records, write_records
from videorl.models.generate import SamplingParams
from videorl.models.loading import load_model
from videorl.rewards.config import RewardConfig
from videorl.rewards.sensitivity import shuffle_seed
from videorl.rollout.batch import ShuffledRollouts
from videorl.rollout.engine import HFEngine
from videorl.rollout.groups import generate_groups
from videorl.rollout.prompting import decode_prompts, encode_record
from videorl.trainer.stages import score
from videorl.trainer.tgrpo import add_shuffled_rollouts, add_temporal_contrast_bonus
from videorl.video.cache import VideoCache

TINY_VIDEO = ["video.max_frames=4", "video.min_pixels=3136", "video.max_pixels=12544"]
RIGHT = RewardConfig(
    plugins={
        "spatial_grounding": "tests.trainer.tgrpo_reward:reward",
        "video_qa": "tests.trainer.tgrpo_reward:reward",
    }
)
CONFIG = TemporalContrastConfig(enabled=True, n_shuffled=2)
LENGTH = "tests.trainer.length_reward:reward"  # rewards that vary across a random model's rows


@pytest.fixture(scope="module")
def mixed_data(tmp_path_factory) -> Path:
    """Spatial-grounding images and video-QA videos alternating, in one file (Video-R1-260k
    mixes image and video tasks)."""
    from videorl.data.synth import synthesize

    out = tmp_path_factory.mktemp("mixed")
    records = load_records(synthesize(out, ["spatial_grounding", "video_qa"], n=3, seed=5)).records
    images = [r for r in records if r.video is None]
    videos = [r for r in records if r.video is not None]
    assert len(images) == len(videos) == 3 and images[0].image is not None
    write_records(
        out / "train.jsonl", [r for pair in zip(images, videos, strict=True) for r in pair]
    )
    return out


class RecordingEngine(HFEngine):
    """The HF engine, remembering the prompts and sampling of each `generate` call."""

    def __init__(self, loaded) -> None:
        super().__init__(loaded)
        self.calls: list[tuple[list, SamplingParams]] = []

    def generate(self, prompts, params):
        self.calls.append((list(prompts), params))
        return super().generate(prompts, params)


@pytest.fixture(scope="module")
def rollouts(tiny_model_dir, mixed_data):
    """An image group (0) and a video group (1), 4 rows each, then the shuffled rollouts."""
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    cfg = load_config(None, TINY_VIDEO)
    records = load_records(mixed_data / "train.jsonl").records[:2]
    decoded = decode_prompts(records, VideoCache(cfg.video), loaded, cfg.data)
    engine = RecordingEngine(loaded)
    params = SamplingParams(n=4, max_new_tokens=6)
    batch = generate_groups(
        engine, decoded.records, decoded.prompts, decoded.media, params, loaded.tokenizer
    )
    seen = []

    def encode(record, media):
        seen.append(media)
        return encode_record(loaded, record, media, cfg.data.think)

    with_shuffled = add_shuffled_rollouts(
        batch, engine, encode, params, CONFIG, step=3, tokenizer=loaded.tokenizer
    )
    assert with_shuffled.num_rows == batch.num_rows  # beside the rows, never among them
    return batch, with_shuffled.shuffled, engine.calls, seen


def test_only_video_prompts_get_shuffled_rollouts_of_their_decoded_frames(rollouts):
    batch, shuffled, calls, seen = rollouts
    assert batch.records[0].video is None and batch.records[1].video is not None
    assert shuffled.groups == [1] and shuffled.group_ids.tolist() == [1, 1]
    assert len(shuffled.texts) == 2
    ((prompts, params),) = calls[1:]  # one call: the video prompt, n_shuffled samples
    assert len(prompts) == 1 and params.n == 2 and params.max_new_tokens == 6
    frames = batch.videos[1].frames
    perm = frame_permutation(len(frames), shuffle_seed(3, 1))
    assert torch.equal(seen[0].frames, frames[perm]) and not torch.equal(seen[0].frames, frames)
    assert seen[0].meta == batch.videos[1].meta  # same timestamps: only the order changes
    assert torch.equal(prompts[0].input_ids, batch.prompts[1].input_ids)
    ordered = batch.prompts[1].vision["pixel_values_videos"]
    assert not torch.equal(prompts[0].vision["pixel_values_videos"], ordered)


def _scored(batch, texts):
    return score(replace(batch, texts=texts), RIGHT)


def test_bonus_goes_to_correct_ordered_video_rows_only(rollouts):
    batch, _, _, _ = rollouts
    # image group 0: all but one right, but images get no bonus;
    # video group 1: p = 2/4 = 0.5, shuffled p~ = 1/2 = 0.5: 0.5 >= 0.8 * 0.5 -> rows 4, 5
    batch = _scored(batch, ["right", "wrong", "right", "right", "right", "right", "no", "no"])
    shuffled = ShuffledRollouts([1], torch.tensor([1, 1]), ["right", "wrong"])
    out = add_temporal_contrast_bonus(replace(batch, shuffled=shuffled), RIGHT, CONFIG)
    assert out.num_rows == batch.num_rows == 8  # the shuffled rows never join the batch
    torch.testing.assert_close(
        out.rewards - batch.rewards, torch.tensor([0, 0, 0, 0, 0.3, 0.3, 0, 0])
    )
    assert out.metrics["tgrpo/ordered_acc"] == 0.5 and out.metrics["tgrpo/shuffled_acc"] == 0.5
    assert out.metrics["tgrpo/bonus_frac"] == 0.5 and out.metrics["tgrpo/passed_frac"] == 1.0
    # p~ = 1: 0.5 < 0.8 -> no bonus anywhere
    shuffled = ShuffledRollouts([1], torch.tensor([1, 1]), ["right", "right"])
    out = add_temporal_contrast_bonus(replace(batch, shuffled=shuffled), RIGHT, CONFIG)
    assert torch.equal(out.rewards, batch.rewards) and out.metrics["tgrpo/bonus_frac"] == 0.0  # type: ignore[arg-type]  # a scored batch


def test_annotation_rows_neither_count_nor_get_the_bonus(rollouts):
    batch, _, _, _ = rollouts
    batch = _scored(batch, ["no"] * 4 + ["right", "no", "no", "no"])
    annotated = replace(batch, is_annotation=torch.tensor([False] * 7 + [True]))
    annotated = replace(annotated, rewards=annotated.rewards.clone())
    annotated.rewards[7] = 1.0  # an annotation row is right; it must not raise p
    # policy rows of group 1: p = 1/3; p~ = 1/2 -> 1/3 < 0.4: no bonus
    shuffled = ShuffledRollouts([1], torch.tensor([1, 1]), ["right", "no"])
    out = add_temporal_contrast_bonus(replace(annotated, shuffled=shuffled), RIGHT, CONFIG)
    assert torch.equal(out.rewards, annotated.rewards)  # type: ignore[arg-type]  # a scored batch
    assert out.metrics["tgrpo/ordered_acc"] == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def tgrpo_run(tiny_model_dir, mixed_data, tmp_path_factory):
    """`videorl train tgrpo` for 3 steps on the tiny model and the mixed file."""
    model, out = tiny_model_dir("qwen2_5_vl"), tmp_path_factory.mktemp("tgrpo") / "run"
    overrides = [
        f"model.path={model}",
        f"model.reference_path={model}",
        "model.dtype=float32",
        f"data.train={mixed_data / 'train.jsonl'}",
        "data.format=records",  # videorl's records (the recipe reads Video-R1's JSON)
        "data.skip_invalid=false",
        "data.prompts_per_step=2",
        "data.shuffle=false",  # file order, one pool (the recipe's data.group_by_family
        # false): one image and one video record, of different families, per step
        *TINY_VIDEO,
        "rollout.engine=hf",
        "rollout.n=4",
        "rollout.max_new_tokens=8",
        "reward.length_band.min=2",  # the recipe's 320..512-token band, scaled to the budget
        "reward.length_band.max=8",
        "model.gradient_checkpointing=false",  # the tiny model: speed over memory
        f"reward.plugins={{spatial_grounding: '{LENGTH}', video_qa: '{LENGTH}'}}",
        "reward.num_workers=1",
        "algorithm.temporal_contrast.n_shuffled=2",
        "optim.lr=1e-2",
        "optim.micro_batch_tokens=4096",
        "trainer.steps=3",
        "trainer.nproc=1",
        "trainer.bf16=false",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        "trainer.device=cpu",
        f"trainer.output_dir={out}",
    ]
    result = CliRunner().invoke(app, ["train", "tgrpo", *overrides])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return model, out, rows


def test_tgrpo_recipe_trains_three_steps_on_mixed_images_and_videos(tgrpo_run, mixed_data):
    model, out, rows = tgrpo_run
    assert [r["step"] for r in rows] == [1, 2, 3]
    kinds = {r.id: r.video is not None for r in load_records(mixed_data / "train.jsonl").records}
    for row in rows:
        assert sorted(kinds[i] for i in row["batch_ids"]) == [False, True]  # image + video
        assert row["rows/total"] == 2 * 4  # the 2 shuffled rows are not trained on
        assert row["tgrpo/video_groups"] == 1.0
        assert 0 <= row["tgrpo/shuffled_acc"] <= 1 and 0 <= row["tgrpo/bonus_frac"] <= 1
        assert torch.isfinite(torch.tensor(row["actor/loss"]))
    before = load_model(model).model.state_dict()
    after = load_model(out / "final").model.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any("visual" in k for k in changed)  # Video-R1 trains the vision tower
    assert any("visual" not in k for k in changed)
