"""The dry-run's sequence-parallel line (`config/sequence_plan.py`): the longest row's tokens per
rank, the activation-memory formula, and heads that do not split as the start's error."""

from __future__ import annotations

import pytest

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.config.plan import plan_step, plan_table
from videorl.config.sequence_plan import TextShape, activation_bytes, sequence_parallel_summary
from videorl.errors import ConfigError


def _config(model: str, *extra: str):
    overrides = [f"model.path={model}", "trainer.nproc=4", "data.prompts_per_step=4", *extra]
    return load_config(resolve_config_path("quickstart"), overrides)


def test_activation_memory_formula():
    shape = TextShape(layers=28, hidden=3584, intermediate=18944, kv_width=512)  # Qwen2.5-VL-7B
    per_token_layer = 6 * 3584 + 2 * 512 + 4 * 18944
    assert activation_bytes(shape, 1000, 2, False) == 1000 * 2 * 28 * per_token_layer
    checkpointed = activation_bytes(shape, 1000, 2, True)
    assert checkpointed == 1000 * 2 * (28 * 3584 + per_token_layer)
    assert checkpointed < activation_bytes(shape, 1000, 2, False) / 10


def test_the_plan_shows_tokens_and_memory_per_rank(tiny_model_dir):
    config = _config(
        tiny_model_dir("qwen2_5_vl"),
        "model.sequence_parallel_size=2",
        "data.max_prompt_tokens=10000",
        "optim.micro_batch_tokens=4096",
    )
    longest = 10000 + config.rollout.max_new_tokens
    summary = sequence_parallel_summary(config)
    assert summary is not None and f"~{longest} tokens / 2 = {-(-longest // 2)} per rank" in summary
    assert "GiB per rank" in summary
    plan = plan_step(config)
    assert plan.prompts_per_rank == 2  # 2 data-parallel groups of 2 ranks
    rendered = [str(cell) for column in plan_table(plan).columns for cell in column._cells]
    assert "sequence parallelism (tokens, memory)" in rendered
    assert sequence_parallel_summary(_config(tiny_model_dir("qwen2_5_vl"))) is None


def test_heads_that_do_not_split_are_the_start_error(tiny_model_dir):
    with pytest.raises(ConfigError, match="model.sequence_parallel_size=4 must divide"):
        sequence_parallel_summary(
            _config(
                tiny_model_dir("qwen2_5_vl"), "model.sequence_parallel_size=4", "trainer.nproc=8"
            )
        )
