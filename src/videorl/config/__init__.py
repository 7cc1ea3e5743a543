"""The job configuration: one tree of frozen dataclasses, loaded from YAML + overrides.

    config = load_config("configs/quickstart.yaml", ["rollout.n=4", "trainer.steps=3"])

- `schema`: `Config`, the dataclass tree of the sections, the checks across sections and
  `load_config`; `sections`: the job's own sections (model, data, rollout, algorithm,
  optim, trainer, sft; those that lower packages own, such as `rewards.config`, are
  composed in);
- `constraints`: the ranges and choices declared beside each field (`Annotated[int, Gt(0)]`),
  checked when a section is built;
- `loader`: YAML + dotted overrides into a dataclass, every key and value checked;
- `keys`: the key table (`keys.json`) that reports a typo before torch loads;
- `reference`: the generated reference (docs/config.md, `videorl keys`);
- `run`: a run folder's resolved `config.yaml`; `plan`, `sequence_plan`: the `--dry-run` plan.

The names below load on first use: `constraints`, `loader` and `keys` are plumbing that the
lower layers (rewards, algorithms, data, video) import, and importing them must not load the
schema, which imports those layers (and torch).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from videorl.config.schema import Config, check_world_size, load_config
    from videorl.config.sections import (
        AlgorithmConfig,
        ConstructedConfig,
        DataConfig,
        FrameSearchConfig,
        ModelConfig,
        OptimConfig,
        RolloutConfig,
        SFTConfig,
        TrainerConfig,
        check_device_available,
    )

__all__ = [
    "AlgorithmConfig",
    "Config",
    "ConstructedConfig",
    "DataConfig",
    "FrameSearchConfig",
    "ModelConfig",
    "OptimConfig",
    "RolloutConfig",
    "SFTConfig",
    "TrainerConfig",
    "check_device_available",
    "check_world_size",
    "load_config",
]
_IN_SCHEMA = ("Config", "check_world_size", "load_config")  # the rest: config.sections


def __getattr__(name: str) -> Any:
    if name in __all__:
        home = "schema" if name in _IN_SCHEMA else "sections"
        return getattr(importlib.import_module(f"videorl.config.{home}"), name)
    raise AttributeError(f"module 'videorl.config' has no attribute {name!r}")
