"""Sequence parallelism in the trainer (`trainer/sequence_parallel.py`): a 2-rank run with
`model.sequence_parallel_size=2` (one data-parallel group of 2 ranks, gloo on CPU) equals
the 1-process run over 3 steps, with its forwards split; the checks that refuse a size that
cannot split; prompts shared out over data-parallel groups."""

from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_worker import seeded_generate
from tests.trainer.runs import metrics_by_step
from tests.trainer.sp_worker import encoded_patches
from tests.trainer.test_distributed import TORCHRUN, _env
from videorl.config import check_world_size
from videorl.distributed import DistInfo, shard_indices
from videorl.errors import ConfigError
from videorl.rollout.engine import HFEngine
from videorl.trainer.loop import run_training
from videorl.trainer.sequence_parallel import check_sequence_parallel, vision_split_note

WORKER = Path(__file__).with_name("sp_worker.py")
RUN = [
    "trainer.steps=3",
    "trainer.save_every=0",
    "optim.lr=1e-3",  # Adam turns fp32 summation-order noise into ~lr-sized steps
    "optim.warmup_steps=1",
]


def _computed(row: dict) -> dict[str, float]:
    """A metrics row's numbers, less those that time the step rather than compute it."""
    return {
        k: v
        for k, v in row.items()
        if isinstance(v, float) and not k.startswith(("time/", "perf/")) and "seconds" not in k
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("packing", "freeze_vision"),
    [("false", "true"), ("true", "true"), ("false", "false")],
    ids=["padded", "packed", "trainable-tower"],
)
def test_two_rank_sequence_parallel_run_equals_one_process(
    build_config, tmp_path, packing, freeze_vision
):
    one, two = tmp_path / "one", tmp_path / "two"
    extra = [*RUN, f"model.packing={packing}", f"model.freeze_vision={freeze_vision}"]
    if freeze_vision == "false":  # the update encodes each row's video, as split forwards do
        extra.append("model.share_prompt_forward=false")
    with pytest.MonkeyPatch.context() as m, encoded_patches() as whole:
        m.setattr(HFEngine, "generate", seeded_generate)  # rollouts seeded by the prompt
        run_training(build_config("grpo", one, *extra)[0])
    sp = ["model.sequence_parallel_size=2", "trainer.nproc=2"]
    overrides = build_config("grpo", two, *extra, *sp)[1]
    shards = tmp_path / "shards"
    shards.mkdir()
    subprocess.run(
        [*TORCHRUN, str(WORKER), *overrides],
        check=True,
        env={**_env(), "SP_SHARDS": str(shards)},
        timeout=900,
        capture_output=True,
    )
    ranks = [json.loads((shards / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    # both ranks ran each step's update forward split, on the same shard lengths
    lengths = [r["shards"] for r in ranks]
    assert lengths[0] == lengths[1] and len(lengths[0]) >= 3, lengths
    # the group encoded the videos that one process encodes, each patch once between them
    # (the visual-embedding cache: once per step; a trainable tower: also in each update)
    encoded = [sum(r["patches"]) for r in ranks]
    assert sum(encoded) == sum(whole) and all(0 < n < sum(whole) for n in encoded), encoded
    a, b = metrics_by_step(one), metrics_by_step(two)
    assert sorted(a) == sorted(b) == [1, 2, 3]
    for step in a:
        assert a[step]["batch_ids"] == b[step]["batch_ids"], f"step {step}: other prompts"
        expected, got = _computed(a[step]), _computed(b[step])
        assert expected.keys() == got.keys(), f"step {step}: other metrics"
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-4, abs=1e-5), f"step {step} {key}"
    single = load_file(one / "final" / "model.safetensors")
    split = load_file(two / "final" / "model.safetensors")
    for key, value in single.items():
        torch.testing.assert_close(split[key], value, atol=1e-5, rtol=0, msg=key)
    loss = max(abs(a[s]["actor/loss"] - b[s]["actor/loss"]) for s in a)
    weights = max(float((split[k] - v).abs().max()) for k, v in single.items())
    print(
        f"packing={packing} freeze_vision={freeze_vision}: max |d loss| {loss:.2e}, "
        f"max |d weight| {weights:.2e}, patches encoded {sum(whole)} = {encoded}"
    )


def test_a_size_that_cannot_split_is_a_one_line_config_error(make_config):
    with pytest.raises(
        ConfigError, match=r"model.sequence_parallel_size=2 must divide the 3 ranks"
    ):
        check_world_size(make_config()[0].data, 3, 2)
    with pytest.raises(ConfigError, match=r"by the 2 data-parallel groups \(trainer.nproc / 2"):
        check_world_size(types.SimpleNamespace(prompts_per_step=3), 4, 2)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs rollout.engine=hf"):
        make_config("grpo", "model.sequence_parallel_size=2", "rollout.engine=vllm")
    with pytest.raises(ConfigError, match="model.sequence_parallel_size=0 must be > 0"):
        make_config("grpo", "model.sequence_parallel_size=0")
    text = types.SimpleNamespace(num_attention_heads=4, num_key_value_heads=2, layer_types=None)
    model = types.SimpleNamespace(
        config=types.SimpleNamespace(model_type="qwen2_5_vl", text_config=text)
    )
    check_sequence_parallel(4, model)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"divide the attention heads \(4\)") as err:
        check_sequence_parallel(3, model)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_a_vision_tower_that_cannot_split_by_frames_is_a_note():
    class CrossFrameTower(torch.nn.Module):
        pass

    model = torch.nn.Module()
    model.visual = CrossFrameTower()
    note = vision_split_note(2, model)
    assert note is not None and note.startswith("model.sequence_parallel_size=2: CrossFrame")
    assert "every rank encodes every video" in note
    assert vision_split_note(1, model) is None
    assert vision_split_note(2, torch.nn.Linear(1, 1)) is None  # no tower: nothing to say


def test_a_sequence_parallel_group_shares_its_prompts():
    indices = list(range(8))
    shares = [
        shard_indices(indices, DistInfo(rank=r, world_size=4, sequence_parallel=2))
        for r in range(4)
    ]
    assert shares == [[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7], [4, 5, 6, 7]]
    assert shard_indices(indices, DistInfo(rank=3, world_size=4)) == [6, 7]
