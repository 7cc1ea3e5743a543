"""A tiny model and a small synthetic temporal-grounding set, shared by the trainer tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from videorl.api import resolve_config_path
from videorl.config import load_config

SMALL = [
    "data.prompts_per_step=2",
    "rollout.n=4",
    "rollout.max_new_tokens=16",
    "video.max_frames=4",
    "algorithm.pruning.pos_quota=1",
    "algorithm.pruning.neg_quota=0",
    "optim.lr=1e-2",
    "optim.warmup_steps=0",
    "trainer.val_every=0",
    "trainer.tensorboard=false",
]

RECIPES = {
    "orarl": [],
    "grpo": [
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
    ],
    "taro": [
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
        "algorithm.constructed.enabled=true",
        "algorithm.constructed.curriculum.schedule=linear",
        "algorithm.constructed.curriculum.warmup_steps=4",
        "reward.sensitivity.enabled=true",
    ],
    "opdvr": [
        "algorithm.estimator=opdvr",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
    ],
    "grpd": [
        "algorithm.estimator=grpd",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
    ],
}


@pytest.fixture(scope="session")
def tg_data(tmp_path_factory) -> Path:
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize

    out = tmp_path_factory.mktemp("tg_data")
    records = load_records(synthesize(out, ["temporal_grounding"], n=10, seed=3)).records
    write_records(out / "train.jsonl", records[:8])
    write_records(out / "val.jsonl", records[8:])
    return out


@pytest.fixture(scope="session")
def teacher_dir(tmp_path_factory):
    """A second tiny Qwen2.5-VL (other init seed, same tokenizer) to distill from."""
    from videorl.models.tiny import build_tiny_model

    path: list[str] = []

    def get() -> str:
        if not path:
            path.append(
                str(build_tiny_model("qwen2_5_vl", tmp_path_factory.mktemp("teacher"), seed=1))
            )
        return path[0]

    return get


@pytest.fixture(scope="session")
def build_config(tiny_model_dir, teacher_dir, tg_data):
    """`make_config` for session-scoped fixtures: the output folder is always given."""

    def make(recipe: str, output: Path, *extra: str):
        model = tiny_model_dir("qwen2_5_vl")
        overrides = [
            f"model.path={model}",
            f"data.train={tg_data / 'train.jsonl'}",
            f"data.val={tg_data / 'val.jsonl'}",
            f"trainer.output_dir={output}",
            *SMALL,
            *RECIPES[recipe],
            *extra,
        ]
        if recipe != "orarl":  # rewards that vary across a random model's rows
            overrides.append(
                "reward.plugins={temporal_grounding: 'tests.trainer.length_reward:reward'}"
            )
        if recipe in ("opdvr", "grpd"):
            overrides.append(f"model.teacher_path={teacher_dir()}")
        return load_config(resolve_config_path("quickstart"), overrides), overrides

    return make


@pytest.fixture
def make_config(build_config, tmp_path):
    """Quickstart recipe shrunk for tests, for a named recipe, with extra overrides."""

    def make(recipe: str = "orarl", *extra: str, output: Path | None = None):
        return build_config(recipe, output or tmp_path / recipe, *extra)

    return make


@pytest.fixture(scope="session")
def reference_run(build_config, tmp_path_factory):
    """One uninterrupted 4-step GRPO run (`tests.trainer.runs.REFERENCE`), shared by the
    resume, schedule, validation and TensorBoard tests. Returns (config, output folder)."""
    from tests.trainer.runs import REFERENCE
    from videorl.trainer.loop import run_training

    out = tmp_path_factory.mktemp("reference") / "run"
    config, _ = build_config("grpo", out, *REFERENCE, "trainer.tensorboard=true")
    run_training(config)
    return config, out
