"""A training run's folder as other commands read it: the resolved config that `videorl
train` writes into `trainer.output_dir` (`save_run_config`), and, from a model folder the
run wrote (`final/`, `best/`, `step-N/model/`), that config (`find_run_config`) and a name
after the run (`run_model_name`). Eval, serve, the demo and `RunSettings` use them to prompt
a checkpoint as it was trained.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from videorl.config.loader import to_dict
from videorl.config.schema import Config

RUN_CONFIG = "config.yaml"  # the resolved config, written into each training run's output_dir


def save_run_config(config: Config, output_dir: str | Path) -> Path:
    """Write the resolved config to `output_dir/config.yaml` (atomically)."""
    path = Path(output_dir) / RUN_CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    os.replace(tmp, path)
    return path


def find_run_config(model_dir: str | Path) -> Path | None:
    """The training run's config for a model folder it wrote (`final/`, `best/`,
    `step-N/model/`): `config.yaml` in the folder or up to two levels above it."""
    folder = Path(model_dir).resolve()
    if not folder.is_dir():  # a Hub id, not a folder a run wrote
        return None
    for candidate in (folder, folder.parent, folder.parent.parent):
        path = candidate / RUN_CONFIG
        if path.is_file():
            return path
    return None


def run_model_name(model_dir: str | Path) -> str:
    """A model's name after the run that wrote it: `<run folder>/<checkpoint path>`
    (`runs/quickstart/final` -> `quickstart/final`), else the folder's own name."""
    folder = Path(model_dir).resolve()
    run = find_run_config(folder)
    if run is None or run.parent == folder:
        return folder.name
    return f"{run.parent.name}/{folder.relative_to(run.parent).as_posix()}"
