"""A resumed run's config against the saved run's: what may change mid-run, what may not.

`--resume` restores the model, the optimizer (its learning rate included), the scheduler, the
sampler and the RNG from the checkpoint, so an override that changes how the run trains
(`optim.lr`, `rollout.n`, `algorithm.*`, the data, the model) would be recorded in
`config.yaml` but not used. `reconcile` compares the new config with the run's saved
`config.yaml`: a key outside `CHANGEABLE` that differs is refused in one line naming each;
a changeable key is applied. A longer or shorter `trainer.steps` keeps the learning-rate
schedule's span (`optim.schedule_steps` pinned to the saved run's, so the rate does not
jump; past the span the cosine stays at `min_lr_ratio`), and `config.yaml` records it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import yaml

from videorl.config import Config
from videorl.config.loader import to_dict
from videorl.config.run import RUN_CONFIG
from videorl.errors import ConfigError

# Keys a resumed run may change: how long it runs, how often it saves, validates and logs,
# where its outputs and metrics go, and how its work is spread (ranks, threads, scoring workers); none of
# them is part of the checkpoint's optimizer, scheduler or sampler state.
CHANGEABLE = (
    "trainer.output_dir",  # with --resume PATH: the continuation may be written elsewhere
    "trainer.steps",
    "trainer.epochs",
    "trainer.save_every",
    "trainer.keep_last",
    "trainer.val_every",
    "trainer.val_samples",
    "trainer.val_max_prompts",
    "trainer.val_controls",
    "trainer.val_temperature",
    "trainer.val_top_p",
    "trainer.log_every",
    "trainer.tensorboard",
    "trainer.wandb_project",
    "trainer.nproc",
    "trainer.device",
    "trainer.cpu_threads",
    "data.val",
    "reward.num_workers",
    "reward.timeout_s",
)
_SCHEDULE = "optim.schedule_steps"


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def saved_config(checkpoint: Path) -> dict[str, Any] | None:
    """The flattened `config.yaml` of the run that wrote `checkpoint` (None without one)."""
    path = checkpoint.parent / RUN_CONFIG
    if not path.is_file():
        return None
    return _flat(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def reconcile(cfg: Config, saved: dict[str, Any]) -> tuple[Config, list[str]]:
    """(the config the resumed run uses, one note per change applied); a change that cannot
    happen mid-run is a one-line `ConfigError` naming every such key."""
    new = _flat(to_dict(cfg))
    differs = {k: (saved.get(k), v) for k, v in new.items() if k in saved and saved[k] != v}
    if new.get("trainer.epochs") is not None and "trainer.epochs" not in differs:
        differs.pop("trainer.steps", None)  # derived from the epochs again, as it was saved
    span = saved.get(_SCHEDULE) or saved.get("trainer.steps")  # the saved run's schedule
    if _SCHEDULE in differs and differs[_SCHEDULE][1] in (None, span):
        del differs[_SCHEDULE]  # unset follows the saved span (pinned below), or is it
    refused = {k: d for k, d in differs.items() if k not in CHANGEABLE}
    if refused:
        changes = ", ".join(f"{k} ({old!r} -> {value!r})" for k, (old, value) in refused.items())
        raise ConfigError(
            f"--resume would change {changes}, which cannot change mid-run (the checkpoint "
            "holds the optimizer, schedule and sampler state they shaped); drop those "
            "overrides, or start a new run in another trainer.output_dir"
        )
    notes = [f"{k}: {old!r} -> {value!r}" for k, (old, value) in differs.items()]
    if cfg.optim.schedule_steps is None and span is not None and span != cfg.trainer.steps:
        cfg = dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, schedule_steps=span))
        notes.append(f"{_SCHEDULE}={span}: the learning-rate schedule keeps the run's span")
    return cfg, notes


def reconcile_resume(cfg: Config, resume: str | None) -> tuple[Config, list[str]]:
    """`reconcile` against the run behind `--resume` (auto: the latest checkpoint in
    `trainer.output_dir`); the config unchanged when there is nothing to resume."""
    from videorl.trainer.checkpoint import resolve_resume
    from videorl.trainer.run_dir import refuse_past_end

    checkpoint = resolve_resume(resume, cfg.trainer.output_dir)
    named = re.fullmatch(r"step-(\d+)", checkpoint.name) if checkpoint is not None else None
    if named and cfg.trainer.epochs is None:  # before any note about the new steps
        refuse_past_end(checkpoint, int(named.group(1)), cfg.trainer.steps)
    saved = None if checkpoint is None else saved_config(checkpoint)
    if saved is None:
        return cfg, []
    return reconcile(cfg, saved)
