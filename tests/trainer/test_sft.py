"""`videorl sft`: the loss falls, the prompt carries no loss, a crashed run resumes to the same
weights, and `final/` is a Hugging Face folder that `videorl train` starts from."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from videorl.api import resolve_config_path
from videorl.cli import app
from videorl.config import load_config
from videorl.data.loaders import load_records
from videorl.errors import ConfigError
from videorl.models.inputs import collate
from videorl.models.loading import load_model
from videorl.rewards.annotation import serialize_annotation
from videorl.rewards.batch import score_batch
from videorl.rewards.config import RewardConfig
from videorl.rollout.prompting import encode_record
from videorl.trainer.build import build_state
from videorl.trainer.loop import run_training
from videorl.trainer.sft import (
    SFT_HOOKS,
    response_nll_sum,
    run_sft,
    sft_step,
    target_text,
    target_tokens,
)
from videorl.video.cache import VideoCache

SMALL_SFT = [
    "data.prompts_per_step=4",
    "video.max_frames=4",
    "optim.lr=1e-2",
    "optim.warmup_steps=0",
    "trainer.tensorboard=false",
    "trainer.val_max_prompts=2",
]


def sft_overrides(model: str, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        f"model.path={model}",
        f"data.train={data / 'train.jsonl'}",
        f"data.val={data / 'val.jsonl'}",
        f"trainer.output_dir={out}",
        *SMALL_SFT,
        *extra,
    ]


def sft_config(model: str, data: Path, out: Path, *extra: str):
    return load_config(
        resolve_config_path("sft_quickstart"), sft_overrides(model, data, out, *extra)
    )


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sft_run(tiny_model_dir, tg_data, tmp_path_factory) -> Path:
    """One 12-step SFT run (validation at 6 and 12, checkpoints at 6 and 12)."""
    out = tmp_path_factory.mktemp("sft_run")
    cfg = sft_config(
        tiny_model_dir("qwen2_5_vl"),
        tg_data,
        out,
        "trainer.steps=12",
        "trainer.save_every=6",
        "trainer.val_every=6",
        "trainer.val_controls=[reversed]",
    )
    final = run_sft(cfg)
    assert final == out / "final"
    return out


def test_sft_loss_decreases_on_a_tiny_model(sft_run):
    rows = read_rows(sft_run / "metrics.jsonl")
    losses = [r["sft/loss"] for r in rows if "sft/loss" in r]
    assert len(losses) == 12
    assert sum(losses[-3:]) / 3 < losses[0] - 1.0, losses
    assert all(r["sft/target_tokens"] > 0 for r in rows)
    val = [r for r in rows if r.get("val/reward_mean_at_k") is not None]
    assert [r["step"] for r in val] == [6, 12]  # greedy validation ran with the training rewards
    for r in val:  # and again on reversed videos: the video gain is logged
        gain = r["val/reward_mean_at_k"] - r["val/control/reversed/mean_at_k"]
        assert r["val/video_gain/reversed"] == pytest.approx(gain)
    assert (sft_run / "step-000012" / "state.pt").is_file()
    assert (sft_run / "config.yaml").is_file()


def test_a_step_leaves_no_visual_embeddings_behind(tiny_model_dir, tg_data, tmp_path):
    """The frozen tower's cached embeddings (and the pixels that key them) last one step:
    an 800-step SFT that kept them grew by ~15 MB a step to over 10 GB."""
    config = sft_config(tiny_model_dir("qwen2_5_vl"), tg_data, tmp_path / "sft")
    state = build_state(config, None)
    caches = state.visual_caches.caches
    assert caches  # the frozen tower's cache is on, so this can fail
    for _ in range(3):
        sft_step(state, state.sampler.next_batch())
        state.step += 1
        assert [len(cache) for cache in caches] == [0] * len(caches)


def test_prompt_tokens_get_no_loss(tiny_model_dir, tg_data):
    """The SFT loss equals HF's causal-LM loss with the prompt labelled -100, and differs
    from the loss that also scores the prompt tokens."""
    cfg = sft_config(tiny_model_dir("qwen2_5_vl"), tg_data, tg_data / "unused")
    loaded = load_model(cfg.model.path, packing=False)
    records = load_records(tg_data / "train.jsonl").records[:2]
    videos = VideoCache(cfg.video)
    prompts = [encode_record(loaded, r, videos.get(r.media), think=False) for r in records]  # type: ignore[arg-type]  # video records
    eos = loaded.eos_token_ids[0]
    responses = [
        target_tokens(r, loaded.tokenizer, eos, 64, "annotation", False, random.Random(0))
        for r in records
    ]
    nll, tokens = response_nll_sum(loaded, prompts, responses)
    inputs, mask = collate(prompts, responses, loaded.pad_token_id)
    width = mask.shape[1]
    ids = inputs["input_ids"]
    labels = torch.full_like(ids, -100)
    labels[:, -width:] = torch.where(mask.bool(), ids[:, -width:], -100)
    with torch.no_grad():
        masked = loaded.model(**inputs, labels=labels).loss
        prompt_too = inputs["attention_mask"].bool() & (labels == -100)
        everything = loaded.model(
            **inputs, labels=torch.where(prompt_too, ids, labels)
        ).loss  # prompt positions scored too
    assert tokens == sum(int(r.numel()) for r in responses)
    assert float(nll.detach()) / tokens == pytest.approx(float(masked), rel=1e-4)
    assert abs(float(everything) - float(masked)) > 1e-3
    # packed rows give the same loss as padded ones
    packed = load_model(cfg.model.path, packing=True)
    if packed.packing:
        nll_packed, _ = response_nll_sum(packed, prompts, responses)
        assert float(nll_packed.detach()) == pytest.approx(float(nll.detach()), rel=1e-4)


def test_targets_score_one_under_the_training_rewards(tg_data):
    records = load_records(tg_data / "train.jsonl").records[:3]
    rng = random.Random(0)
    annotation = [target_text(r, "annotation", False, rng) for r in records]
    constructed = [target_text(r, "constructed", False, rng) for r in records]
    assert annotation == [serialize_annotation(r) for r in records]
    for record, text in zip(records, constructed, strict=True):
        assert text.startswith("<think>\nI need to find the specific moment")
        assert any(c.text in text for c in record.captions)
        assert text.endswith(serialize_annotation(record))
    reward = RewardConfig(num_workers=1, think_required=True)
    assert score_batch(records, constructed, reward).overall == pytest.approx([1.0] * 3)


def test_math_targets_score_one(tmp_path):
    from videorl.data.synth import synthesize

    records = load_records(synthesize(tmp_path, ["math"], n=3, seed=0)).records
    for target in ("annotation", "constructed"):
        for think in (False, True):
            texts = [target_text(r, target, think, random.Random(0)) for r in records]
            assert all("\\boxed" in t or "<answer>" in t for t in texts)
            reward = RewardConfig(num_workers=1, think_required=think or target == "constructed")
            assert score_batch(records, texts, reward).overall == pytest.approx([1.0] * 3)


def test_crash_then_resume_auto_equals_an_uninterrupted_run(tiny_model_dir, tg_data, tmp_path):
    model = tiny_model_dir("qwen2_5_vl")
    steps = ["trainer.steps=4", "trainer.save_every=1", "trainer.keep_last=10"]
    reference = run_sft(sft_config(model, tg_data, tmp_path / "reference", *steps))

    class Crash(RuntimeError):
        pass

    def crash_at_step_3(state, indices):
        if state.step == 2:
            raise Crash("killed")
        return SFT_HOOKS.step(state, indices)

    out = tmp_path / "crashed"
    crashing = dataclasses.replace(SFT_HOOKS, step=crash_at_step_3)
    with pytest.raises(Crash):
        run_training(sft_config(model, tg_data, out, *steps), hooks=crashing)
    assert not (out / "step-000003").exists()
    resumed = run_sft(sft_config(model, tg_data, out, *steps), resume="auto")
    ref_rows = {r["step"]: r for r in read_rows(tmp_path / "reference" / "metrics.jsonl")}
    new_rows = {r["step"]: r for r in read_rows(out / "metrics.jsonl")}
    for step in (3, 4):
        assert new_rows[step]["batch_ids"] == ref_rows[step]["batch_ids"]
        assert new_rows[step]["sft/loss"] == pytest.approx(ref_rows[step]["sft/loss"], rel=1e-6)
    a = load_model(reference).model.state_dict()
    b = load_model(resumed).model.state_dict()
    for name, value in a.items():
        torch.testing.assert_close(b[name], value, rtol=1e-6, atol=1e-7, msg=name)


def test_final_loads_with_from_pretrained_and_videorl_train_starts_from_it(
    sft_run, make_config, tmp_path
):
    from transformers import AutoModelForImageTextToText

    final = sft_run / "final"
    model = AutoModelForImageTextToText.from_pretrained(final)
    assert sum(p.numel() for p in model.parameters()) > 0
    cfg, _ = make_config("grpo", f"model.path={final}", "trainer.steps=1", output=tmp_path / "rl")
    assert (run_training(cfg) / "model.safetensors").is_file()


def test_cli_dry_run_constructed_target_and_bad_key(tiny_model_dir, tg_data, tmp_path):
    runner = CliRunner()
    base = sft_overrides(tiny_model_dir("qwen2_5_vl"), tg_data, tmp_path / "cli")
    plan = runner.invoke(app, ["sft", "sft_quickstart", *base, "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert "SFT step plan" in plan.output and "annotation" in plan.output
    run = runner.invoke(
        app, ["sft", "sft_quickstart", *base, "sft.target=constructed", "trainer.steps=1"]
    )
    assert run.exit_code == 0, run.output
    rows = read_rows(tmp_path / "cli" / "metrics.jsonl")
    assert rows[0]["sft/target_tokens"] > 4 * 20  # reasoning + answer, not the answer alone
    assert (tmp_path / "cli" / "final" / "config.json").is_file()
    with pytest.raises(ConfigError, match="sft.target"):
        load_config(resolve_config_path("sft_quickstart"), [*base, "sft.target=labels"])
    with pytest.raises(ConfigError, match="sft.max_response_tokens"):
        load_config(resolve_config_path("sft_quickstart"), [*base, "sft.max_response_tokens=0"])


def test_two_fsdp_ranks_equal_one_process(tiny_model_dir, tg_data, tmp_path):
    """`videorl sft` under torchrun (2 gloo ranks, FSDP2, several micro-batches per rank)
    ends with the weights of one process."""
    import os
    import subprocess
    import sys

    model = tiny_model_dir("qwen2_5_vl")
    # a small lr: Adam turns float noise in gradients that are zero in exact arithmetic (the
    # key biases: softmax ignores a shift shared by all keys) into steps of size ~lr
    steps = [
        "trainer.steps=2",
        "trainer.val_every=0",
        "optim.micro_batch_tokens=300",
        "optim.lr=1e-4",
    ]
    one = run_sft(sft_config(model, tg_data, tmp_path / "one", *steps))
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root + "/src", root]),
        "OMP_NUM_THREADS": "1",
    }
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    overrides = sft_overrides(model, tg_data, tmp_path / "two", *steps, "trainer.nproc=2")
    subprocess.run(
        [*launcher, "-m", "videorl", "sft", "sft_quickstart", *overrides],
        check=True,
        env=env,
        timeout=600,
        capture_output=True,
    )
    a = load_model(one).model.state_dict()
    b = load_model(tmp_path / "two" / "final").model.state_dict()
    for name, value in a.items():
        torch.testing.assert_close(b[name], value, rtol=0, atol=1e-6)
    losses = [
        [r["sft/loss"] for r in read_rows(out / "metrics.jsonl")]
        for out in (one.parent, tmp_path / "two")
    ]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert any(
        not torch.equal(value, load_model(model).model.state_dict()[name])
        for name, value in a.items()
    )
