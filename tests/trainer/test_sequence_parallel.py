"""Sequence parallelism in the trainer (`trainer/sequence_parallel.py`): a 2-rank run with
`model.sequence_parallel_size=2` (one data-parallel group of 2 ranks, gloo on CPU) equals
the 1-process run over 3 steps, with its forwards split, for GRPO (padded, packed, a
trainable tower) and for the paths that reach the split forwards otherwise (`PATHS`:
`videorl sft`, dynamic sampling, distillation, the temporal-sensitivity reward, tool
rollouts); the checks that refuse a size that cannot split; prompts shared out over
data-parallel groups."""

from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.runs import metrics_by_step
from tests.trainer.sp_worker import GENERATORS, JOBS, encoded_patches
from tests.trainer.test_distributed import TORCHRUN, _env
from videorl.api import resolve_config_path
from videorl.config import check_world_size, load_config
from videorl.distributed import DistInfo, shard_indices
from videorl.errors import ConfigError
from videorl.rollout.engine import HFEngine
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


def _overrides(build_config, recipe: str, out: Path, extra: list[str]) -> list[str]:
    """`build_config`'s overrides, a reward plug-in of `extra` winning over its default."""
    overrides = build_config(recipe, out, *extra)[1]
    plugins = [o for o in overrides if o.startswith("reward.plugins=")]
    return [o for o in overrides if o not in plugins] + plugins[:1]


def _one_and_two_ranks(
    build_config, tmp_path: Path, recipe: str, extra: list[str], job: str, generate: str
) -> tuple[Path, Path, list[dict], list[int]]:
    """`job` ("train" or "sft", `sp_worker.JOBS`) of `recipe` + `extra` on one process and on
    2 gloo ranks with `model.sequence_parallel_size=2`, rollouts from `generate`
    (`sp_worker.GENERATORS`). Returns both output folders, each rank's record (its split
    forwards' shard lengths, its encoded patches) and the one process's encoded patches."""
    one, two = tmp_path / "one", tmp_path / "two"
    with pytest.MonkeyPatch.context() as m, encoded_patches() as whole:
        m.setattr(HFEngine, "generate", GENERATORS[generate])
        JOBS[job](
            load_config(
                resolve_config_path("quickstart"), _overrides(build_config, recipe, one, extra)
            )
        )
    sp = ["model.sequence_parallel_size=2", "trainer.nproc=2"]
    overrides = _overrides(build_config, recipe, two, [*extra, *sp])
    shards = tmp_path / "shards"
    shards.mkdir()
    env = {**_env(), "SP_SHARDS": str(shards), "SP_JOB": job, "SP_GENERATE": generate}
    subprocess.run(
        [*TORCHRUN, str(WORKER), *overrides], check=True, env=env, timeout=900, capture_output=True
    )
    ranks = [json.loads((shards / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    return one, two, ranks, whole


def _assert_same_run(one: Path, two: Path, ranks: list[dict], whole: list[int]) -> dict:
    """Both ranks split their forwards alike, together encoded each patch one process
    encodes once, and the runs agree: every computed metric (1e-4 relative) and the final
    weights (1e-5). Returns the one-process metrics by step."""
    lengths = [r["shards"] for r in ranks]
    assert lengths[0] == lengths[1] and len(lengths[0]) >= 3, lengths
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
    for key, tensor in single.items():
        torch.testing.assert_close(split[key], tensor, atol=1e-5, rtol=0, msg=key)
    return a


@pytest.mark.slow
@pytest.mark.parametrize(
    ("packing", "freeze_vision"),
    [("false", "true"), ("true", "true"), ("false", "false")],
    ids=["padded", "packed", "trainable-tower"],
)
def test_two_rank_sequence_parallel_run_equals_one_process(
    build_config, tmp_path, packing, freeze_vision
):
    extra = [*RUN, f"model.packing={packing}", f"model.freeze_vision={freeze_vision}"]
    if freeze_vision == "false":  # the update encodes each row's video, as split forwards do
        extra.append("model.share_prompt_forward=false")
    one, two, ranks, whole = _one_and_two_ranks(
        build_config, tmp_path, "grpo", extra, "train", "seeded"
    )
    a = _assert_same_run(one, two, ranks, whole)
    b = metrics_by_step(two)
    loss = max(abs(a[s]["actor/loss"] - b[s]["actor/loss"]) for s in a)
    print(f"packing={packing} freeze_vision={freeze_vision}: max |d loss| {loss:.2e}")


TOOL_REWARD = "reward.plugins={temporal_grounding: 'tests.trainer.tool_reward:reward'}"
FLAT_REWARD = "reward.plugins={temporal_grounding: 'tests.trainer.flat_reward:reward'}"
# a tiny random model's d (the log-prob drop when frames are shuffled) is float noise
# (~1e-8), which orders rows about a group mean differently in split and unsplit forwards:
# a constant threshold below it makes the bonus a function of tIoU alone
SENSITIVE = ["reward.sensitivity.threshold=-1.0"]
# recipe, overrides, job, rollouts; and a metric that shows the path ran (step -> value)
PATHS = {
    "sft": ("grpo", [], "sft", "seeded", "sft/target_tokens"),
    "dynamic-sampling": (
        "grpo",
        ["algorithm.dynamic_sampling.enabled=true", FLAT_REWARD],
        "train",
        "seeded",
        "dynamic_sampling/dropped_groups",
    ),
    "distillation": ("opdvr", [], "train", "seeded", "distill/reward_mean"),
    "sensitivity": (
        "grpo",
        ["reward.sensitivity.enabled=true", *SENSITIVE],
        "train",
        "seeded",
        "sensitivity/d_mean",
    ),
    # TaRO's constructed rows are drawn from torch's global generator after the previous
    # step's sampling drew from it on the group's first rank
    "constructed": ("taro", SENSITIVE, "train", "drawing", "reward/constructed/mean"),
    "tools": (
        "grpo",
        [
            "rollout.tools=[get_clip]",
            "rollout.max_turns=3",
            "rollout.max_total_tokens=400",
            TOOL_REWARD,
            # the forwards of multi-turn rows encode their media (the prompt's video and the
            # clips): one process then encodes as many patches as the group between its ranks
            "model.share_prompt_forward=false",
        ],
        "train",
        "scripted",
        "tools/calls_per_row",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PATHS))
def test_two_rank_sequence_parallel_paths_equal_one_process(build_config, tmp_path, path):
    recipe, extra, job, generate, shown = PATHS[path]
    one, two, ranks, whole = _one_and_two_ranks(
        build_config, tmp_path, recipe, [*RUN, *extra], job, generate
    )
    metrics = _assert_same_run(one, two, ranks, whole)
    values = [metrics[step][shown] for step in sorted(metrics)]
    assert any(v != 0 for v in values), f"{shown}: {values}"
    print(f"{path}: {shown} {values}; patches {sum(whole)} = {[sum(r['patches']) for r in ranks]}")


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


def test_a_vllm_teacher_with_sequence_parallelism_is_a_one_line_config_error(make_config):
    sp = ["model.sequence_parallel_size=2", "trainer.nproc=2"]
    with pytest.raises(ConfigError, match=r"=2 needs algorithm.distill.teacher_engine=hf") as err:
        make_config("opdvr", *sp, "algorithm.distill.teacher_engine=vllm")
    assert "\n" not in str(err.value)
    assert make_config("opdvr", *sp)[0].algorithm.distill.teacher_engine == "hf"
    make_config("opdvr", "algorithm.distill.teacher_engine=vllm")  # one rank: no split


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
