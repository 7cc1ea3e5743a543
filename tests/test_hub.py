"""Which model and data values are local paths (checked on disk at once) and which are Hub
ids (resolved on the Hub)."""

from __future__ import annotations

import pytest

from videorl.errors import ConfigError
from videorl.hub import looks_local, refuse_missing_local


@pytest.mark.parametrize(
    "value, local",
    [
        ("Qwen/Qwen2.5-VL-7B-Instruct", False),
        ("org/name@v1.0", False),
        ("gpt2", False),
        ("./runs/nope", True),
        ("../model", True),
        ("/abs/model", True),
        ("~/model", True),
        ("runs/quickstart/sft/final", True),  # three parts: no Hub id
        ("runs/nope", True),  # runs/ exists here (the fixture makes it)
        ("nothere/nope", False),  # could be org/name and nothere/ is not a folder
    ],
)
def test_looks_local(value, local, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert looks_local(value) is local


def test_refuse_missing_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "there").mkdir(parents=True)
    refuse_missing_local("runs/there", "--model")
    refuse_missing_local("org/name", "--model")  # a Hub id: left to the Hub
    with pytest.raises(ConfigError, match=r"^--model 'runs/nope' does not exist; fix the path"):
        refuse_missing_local("runs/nope", "--model")
