"""A reward plug-in module on sys.path, importable by pool workers too."""

import textwrap

import pytest

PLUGIN_MODULE = "videorl_test_reward_plugins"
PLUGIN_SOURCE = """
import os
import time


def quarter(record, response, config):
    return {"format": 1.0, "task": 0.25, "overall": 0.25, "length": min(1.0, len(response) / 100)}


def broken(record, response, config):
    raise RuntimeError("plugin bug")


def incomplete(record, response, config):
    return {"overall": 1.0}


def out_of_range(record, response, config):
    return {"format": 2.0, "task": float("nan"), "overall": -3.0}


def misbehave(record, response, config):
    if response == "HANG":
        time.sleep(60)
    if response == "CRASH":
        os._exit(3)
    if response == "RAISE":
        raise ValueError("boom")
    return {"format": 1.0, "task": 1.0, "overall": 1.0}
"""


@pytest.fixture(scope="session")
def plugin_module(tmp_path_factory):
    """The name of an importable module of test plug-ins."""
    directory = tmp_path_factory.mktemp("plugins")
    (directory / f"{PLUGIN_MODULE}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(directory))
        yield PLUGIN_MODULE
