"""The keys the published recipes rely on work in a real (tiny) run: epochs set the step
count, validation samples at its own temperature / top_p, the OraRL prompt style,
answer-only template kwargs and reward mode reach training (issue 16)."""

from __future__ import annotations

import json

from videorl.config import load_config
from videorl.trainer.loop import run_training


def test_orarl_style_run_counts_epochs_and_validates_with_its_sampling(make_config):
    config, _ = make_config(
        "orarl",
        "data.prompts_per_step=4",
        "data.think=false",
        "data.prompt_style=orarl",
        "data.chat_template_kwargs={enable_thinking: false}",
        "reward.mode=orarl",
        "trainer.epochs=1",
        "trainer.val_every=2",
        "trainer.val_samples=1",
        "trainer.val_max_prompts=1",
        "trainer.val_temperature=0.7",
        "trainer.val_top_p=0.95",
    )
    final = run_training(config)
    rows = [json.loads(line) for line in (final.parent / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]  # 8 records / 4 per step, one epoch
    assert "val/reward_mean_at_k" in rows[-1]
    saved = load_config(final.parent / "config.yaml")
    assert saved.trainer.steps == 2 and saved.data.prompt_style == "orarl"
    assert saved.reward.mode == "orarl"
    # the annotation rows score 1 under OraRL's adapters too
    assert all(r["reward/annotation/mean"] == 1.0 for r in rows)


def test_overlong_prompts_are_skipped_and_counted(make_config):

    from videorl.data.loaders import load_records
    from videorl.models.loading import load_model
    from videorl.rollout.prompting import decode_prompts
    from videorl.video.cache import VideoCache

    config, _ = make_config("orarl")
    records = load_records(config.data.train).records[:2]
    videos, policy = VideoCache(config.video), load_model(config.model.path)
    _, prompts, _, _, too_long, _ = decode_prompts(records, videos, policy, config.data)
    assert len(prompts) == 2 and too_long == 0
    limit = max(p.length for p in prompts) - 1  # the longest prompt no longer fits
    config, _ = make_config("orarl", f"data.max_prompt_tokens={limit}")
    kept_records, kept, _, _, too_long, _ = decode_prompts(records, videos, policy, config.data)
    assert all(p.length <= limit for p in kept)
    assert too_long == 2 - len(kept_records) >= 1
