"""videorl: reinforcement-learning post-training of video multimodal LLMs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("videorl")  # the one version source: pyproject.toml
except PackageNotFoundError:  # run from src/ without an install (e.g. scripts/gpu_check.sh)
    __version__ = "0+unknown"

del PackageNotFoundError, version
