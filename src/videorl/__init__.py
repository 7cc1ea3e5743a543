"""videorl: reinforcement-learning post-training of video multimodal LLMs.

The Python API is `videorl.api`; its main functions are also names here (`videorl.train`,
...), loaded on first use so that `import videorl` stays light. `serve` is not among them:
`videorl.serve` is the server's package (`videorl.api.serve` starts one).
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("videorl")  # the one version source: pyproject.toml
except PackageNotFoundError:  # run from src/ without an install (e.g. scripts/gpu/check.sh)
    __version__ = "0+unknown"

del PackageNotFoundError, version

API_NAMES = (
    "load_config",
    "train",
    "sft",
    "evaluate",
    "make_tiny",
    "synth",
    "with_reward_plugin",
    "register_tool",
    "register_advantage_estimator",
    "register_policy_loss",
    "register_task_family",
)


def __getattr__(name: str) -> Any:
    """`videorl.train` is `videorl.api.train` (imported on first use)."""
    if name in API_NAMES:
        from videorl import api

        return getattr(api, name)
    raise AttributeError(f"module 'videorl' has no attribute {name!r}")
