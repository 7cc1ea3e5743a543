"""Ranges and choices declared beside a field (config/constraints.py): checked however the
section is built, one line naming the key, and shown in the generated reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import pytest

from videorl.config import RolloutConfig, load_config
from videorl.config.constraints import Between, Checked, Ge, Gt, OneOf, Range, field_constraints
from videorl.config.loader import build
from videorl.config.reference import all_fields, render
from videorl.errors import ConfigError


@dataclass(frozen=True)
class _Toy(Checked, section="toy"):
    """A toy section."""

    count: Annotated[int, Ge(1)] = 8
    """How many."""
    share: Annotated[float, Between(0, 1, low_open=True)] = 0.5
    """A share."""
    limit: Annotated[int | None, Gt(0)] = None
    """A limit; null = none."""
    sizes: Annotated[tuple[int, ...], Ge(2)] = ()
    """Sizes."""
    level: Annotated[int, OneOf(0, 1, 2)] = 0
    """A level."""
    mode: Literal["fast", "slow"] = "fast"
    """A mode."""


@dataclass(frozen=True)
class _Relative(Checked):
    """A section that names its keys relative to itself."""

    rate: Annotated[float, Gt(0)] = 1.0
    """A rate."""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 0}, "toy.count=0 must be >= 1"),
        ({"share": 0.0}, "toy.share=0.0 must be in (0, 1]"),
        ({"share": 1.5}, "toy.share=1.5 must be in (0, 1]"),
        ({"limit": 0}, "toy.limit=0 must be > 0"),
        ({"sizes": (4, 1)}, "toy.sizes[1]=1 must be >= 2"),
        ({"level": 3}, "toy.level=3 must be 0, 1 or 2"),
        ({"mode": "medium"}, "toy.mode='medium' must be fast or slow"),
        ({"count": True}, "toy.count=True must be >= 1"),
        ({"share": float("nan")}, "toy.share=nan must be in (0, 1]"),
    ],
)
def test_a_violated_constraint_is_one_line_naming_the_key(kwargs, message):
    with pytest.raises(ConfigError) as err:
        _Toy(**kwargs)
    assert str(err.value) == message


def test_values_inside_the_declared_ranges_pass():
    toy = _Toy(count=1, share=1.0, limit=None, sizes=(2, 3), level=2, mode="slow")
    assert (toy.count, toy.share, toy.limit, toy.sizes, toy.level) == (1, 1.0, None, (2, 3), 2)


def test_the_loader_checks_and_places_a_relative_key():
    with pytest.raises(ConfigError, match=r"^outer\.rate=0\.0 must be > 0$"):
        build(_Relative, {"rate": 0}, prefix="outer.")
    assert build(_Relative, {"rate": 2}).rate == 2.0


def test_a_config_section_refuses_a_range_and_a_choice_built_in_code_or_loaded():
    with pytest.raises(ConfigError, match=r"^rollout\.top_p=0\.0 must be in \(0, 1\]$"):
        load_config(None, ["rollout.top_p=0"])
    with pytest.raises(ConfigError, match=r"^rollout\.n=0 must be > 0$"):
        RolloutConfig(n=0)
    with pytest.raises(ConfigError, match=r"^rollout\.vllm_sleep_level=3 must be 0, 1 or 2$"):
        load_config(None, ["rollout.vllm_sleep_level=3"])
    with pytest.raises(ConfigError, match=r"^rollout\.engine='sglang' must be hf or vllm$"):
        RolloutConfig(engine="sglang")  # type: ignore[arg-type]


def test_rules_render_for_messages_and_for_the_reference():
    assert Ge(1).rule() == ">= 1" and Ge(1).rule(pretty=True) == "≥ 1"
    assert Between(0.0, 1.0, high_open=True).rule() == "in [0.0, 1.0)"
    assert Between(0.0, 1.0, high_open=True).rule(pretty=True) == "in [0, 1)"
    assert Range(ge=0, le=9, shown="an integer in [0, 9]").rule() == "an integer in [0, 9]"
    assert Range().rule() == "a finite number" and not Range().admits(float("inf"))
    assert OneOf("hf", "vllm").rule() == "hf or vllm"
    assert set(field_constraints(_Toy)) == {"count", "share", "limit", "sizes", "level", "mode"}


def test_the_reference_shows_the_declared_range_and_choices():
    rows = {row.key: row for row in all_fields(_Toy)}
    assert rows["count"].type == "int" and rows["count"].rule == "≥ 1"
    assert rows["count"].description == "How many. Range: ≥ 1."
    assert rows["level"].choices == (0, 1, 2) and rows["level"].rule == ""
    page = render(_Toy)
    assert "| `share` | `float` | `0.5` | A share. Range: in (0, 1]. |" in page
    assert "| `level` | `int` | `0` | A level. One of: `0`, `1`, `2`. |" in page
    config_rows = {row.key: row for row in all_fields()}
    assert config_rows["rollout.n"].rule == "> 0"
    assert config_rows["reward.plugin_weight"].rule == "in [0, 1]"
    assert "Range: ≥ 1." in render()


def test_videorl_keys_shows_the_declared_range(capsys, monkeypatch):
    from tests.cli_runner import run_cli

    result = run_cli(capsys, monkeypatch, "keys", "data.prompts_per_step")
    assert result.code == 0 and "Range: > 0." in " ".join(result.output.split())


def test_the_plumbing_the_lower_layers_import_loads_no_schema():
    """rewards, algorithms, data and video import config.constraints and config.loader: that
    must not load the schema (which imports them back) nor torch."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import videorl.config.constraints, videorl.config.loader, videorl.config.keys\n"
        "print('videorl.config.schema' in sys.modules, 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    assert done.stdout.split() == ["False", "False"]
