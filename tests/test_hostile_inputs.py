"""Bad input from a hostile or careless user: every case exits with code 2 and one line that
names the key or the file, never a traceback. Config values are checked at load time
(`train --dry-run` loads nothing else); file and data cases run the real commands, which fail
before any model is loaded.

Cases: the issue's list, then every numeric config key with an out-of-range value and with
NaN / infinity, then malformed files (YAML, JSONL, Parquet, sources files) and CLI values.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from tests.cli_runner import run_cli
from videorl.config import Config

# Real numbers without a range (any finite value has a meaning); NaN and inf still fail.
UNBOUNDED = {
    "reward.sensitivity.margin",  # bonus if d > thr + margin
    "reward.sensitivity.threshold",  # a constant thr instead of the group mean
    "algorithm.distill.threshold",  # a row is correct iff its score > threshold
}

ISSUE_CASES = [
    "optim.grad_clip=-1",
    "optim.min_lr_ratio=5",
    "trainer.save_every=-5",
    "trainer.val_every=-1",
    "optim.warmup_steps=-3",
    "optim.weight_decay=-1",
    "rollout.top_k=-1",
    "trainer.device=banana",
    "data.seed=-1",
    "trainer.seed=-1",
    "optim.betas=[0.9,-1]",
    "optim.betas=[0.9,1.5]",
    "algorithm.pruning.prune_ratio=5",
    "algorithm.pruning.pos_quota=-1",
    "trainer.device=cuda:x",
    "trainer.output_dir=' '",
    "rollout.n=eight",
    "rollout.nn=3",
    "rollout=3",
    "optim.schedule=linear",
    "trainer.tensorboard=maybe",
    "data.families=[tempo]",
    "algorithm.estimator=grpoo",
    "optim.mini_batches=5",
    "data.seed=99999999999999999999",
]


def _numeric_keys(cls: type = Config, prefix: str = "") -> list[tuple[str, type]]:
    """Every int / float field of the config tree, with its type (None-able included)."""
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            keys += _numeric_keys(hint, f"{prefix}{f.name}.")
        elif float in options:
            keys.append((f"{prefix}{f.name}", float))
        elif int in options and bool not in options:
            keys.append((f"{prefix}{f.name}", int))
    return keys


NUMERIC = _numeric_keys()
RANGE_CASES = [f"{key}=-1" for key, _ in NUMERIC if key not in UNBOUNDED]
FINITE_CASES = [f"{key}={v}" for key, kind in NUMERIC if kind is float for v in (".nan", ".inf")]


def _assert_one_line_naming(result, name: str, *alternatives: str) -> None:
    """Exit 2 with one line (no traceback) that names `name` or one of `alternatives`."""
    assert result.code == 2, f"exit {result.code}: {result.output}"
    assert "Traceback" not in result.output, result.output
    assert len(result.lines) == 1, result.output
    assert any(n in result.output for n in (name, *alternatives)), result.output


@pytest.mark.parametrize("override", list(dict.fromkeys(ISSUE_CASES + RANGE_CASES + FINITE_CASES)))
def test_bad_config_value_is_one_line_naming_the_key(override, capsys, monkeypatch):
    result = run_cli(capsys, monkeypatch, "train", "quickstart", "--dry-run", override)
    key = override.split("=")[0].split(".")[-1]
    _assert_one_line_naming(result, key)


def test_every_numeric_key_is_covered():
    assert len(NUMERIC) > 60  # the walk found the whole tree, nested sections included
    assert {key for key, _ in NUMERIC} >= UNBOUNDED


def _write(path, data: bytes | str):
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


CONFIG_FILES: dict[str, bytes | str] = {
    "list.yaml": "- model\n- data\n",
    "syntax.yaml": "model:\n  path: x\n data: [1,\n",
    "latin1.yaml": b"model:\n  path: caf\xe9\n",
    "duplicate.yaml": "trainer:\n  steps: 1\ntrainer:\n  steps: 2\n",
    "tabs.yaml": "model:\n\tpath: x\n",
    "section_list.yaml": "rollout: [1, 2]\n",
    "scalar.yaml": "just a sentence\n",
    "unknown.yaml": "modle:\n  path: x\n",
    "bad_value.yaml": "optim:\n  lr: -0.1\n",
    "interpolation.yaml": "trainer:\n  output_dir: ${nowhere.at_all}\n",
}


@pytest.mark.parametrize("name", sorted(CONFIG_FILES))
def test_bad_config_file_is_one_line_naming_the_file(name, tmp_path, capsys, monkeypatch):
    path = _write(tmp_path / name, CONFIG_FILES[name])
    result = run_cli(capsys, monkeypatch, "train", str(path), "--dry-run")
    _assert_one_line_naming(
        result, name, "modle", "optim.lr", "rollout", "nowhere", "just a sentence"
    )


def test_yaml_errors_name_line_and_column(tmp_path, capsys, monkeypatch):
    for name, where in (("syntax.yaml", "line 3, column 2"), ("latin1.yaml", "line 2, column 12")):
        path = _write(tmp_path / name, CONFIG_FILES[name])
        result = run_cli(capsys, monkeypatch, "train", str(path), "--dry-run")
        assert where in result.output, result.output


@pytest.mark.parametrize(
    "override, name",
    [
        ("rollout.n", "rollout.n"),
        ("=3", "=3"),
        ("rollout.n=[1,", "rollout.n"),
        ("trainer.output_dir=${nope}", "nope"),
    ],
)
def test_bad_override_syntax_is_one_line(override, name, capsys, monkeypatch):
    result = run_cli(capsys, monkeypatch, "train", "quickstart", "--dry-run", override)
    _assert_one_line_naming(result, name)


DATA_FILES: dict[str, bytes | str] = {
    "latin1.jsonl": b'{"id": "a", "problem": "caf\xe9"}\n',
    "garbage.parquet": b"not parquet at all",
    "object.json": '{"id": 1}',
    "broken.jsonl": '{"id": "a", "problem": \n',
    "empty.jsonl": "",
    "words.jsonl": "hello\n",
    "rows.csv": "a,b\n1,2\n",
    "list_row.jsonl": "[1, 2]\n",
}


@pytest.mark.parametrize("name", sorted(DATA_FILES))
def test_train_on_a_bad_data_file_is_one_line_before_the_model_loads(
    name, tmp_path, capsys, monkeypatch
):
    data = _write(tmp_path / name, DATA_FILES[name])
    result = run_cli(
        capsys,
        monkeypatch,
        "train",
        "quickstart",
        "model.path=/nonexistent/model",  # never reached: data is checked first
        f"data.train={data}",
        "data.val=null",
        f"trainer.output_dir={tmp_path / 'run'}",
    )
    _assert_one_line_naming(result, name)


def test_train_resume_and_output_dir_errors(tmp_path, capsys, monkeypatch):
    taken = _write(tmp_path / "a_file", "x")
    run = f"trainer.output_dir={tmp_path / 'run'}"
    for args, name in (
        ((run, "--resume", str(tmp_path / "nowhere")), "nowhere"),
        ((run, "trainer.device=cuda:99"), "trainer.device"),
        ((f"trainer.output_dir={taken}",), "a_file"),
    ):
        result = run_cli(capsys, monkeypatch, "train", "quickstart", *args)
        _assert_one_line_naming(result, name)


SOURCES_FILES: dict[str, bytes | str] = {
    "latin1.yaml": b"sources:\n  - name: caf\xe9\n",
    "syntax.yaml": "sources:\n  - name: a\n   path: [\n",
    "list.yaml": "- name: a\n",
    "unknown.yaml": "sourcez: []\n",
    "empty.yaml": "",
    "bad_quota.yaml": "sources:\n  - {name: a, path: a.jsonl, quota: -3}\n",
    "bad_seed.yaml": "seed: -1\nsources:\n  - {name: a, path: a.jsonl}\n",
    "bad_canary.yaml": "canary: {fraction: 5}\nsources:\n  - {name: a, path: a.jsonl}\n",
}


@pytest.mark.parametrize("name", sorted(SOURCES_FILES))
def test_bad_sources_file_is_one_line_naming_it(name, tmp_path, capsys, monkeypatch):
    path = _write(tmp_path / name, SOURCES_FILES[name])
    result = run_cli(capsys, monkeypatch, "prepare", "--sources", path, "--out", tmp_path / "mix")
    _assert_one_line_naming(result, name, "quota")
    assert not (tmp_path / "mix").exists()


@pytest.fixture
def benchmark(tmp_path):
    return _write(
        tmp_path / "bench.jsonl",
        '{"qid": 1, "query": "q", "duration": 10.0, "vid": "a", "relevant_windows": [[2, 6]]}\n',
    )


@pytest.mark.parametrize(
    "args, name",
    [
        (("synth", "--out", "{tmp}/s", "--n", "0"), "--n"),
        (("synth", "--out", "{tmp}/s", "--val", "-1"), "--val"),
        (("synth", "--out", "{tmp}/s", "--families", "tg,foo"), "foo"),
        (("synth", "--out", "{tmp}/s", "--families", ""), "--families"),
        (("eval", "--predictions", "{tmp}/none.jsonl", "--benchmark", "{bench}"), "none.jsonl"),
        (("eval", "--predictions", "{bench}", "--benchmark", "{tmp}/no.jsonl"), "no.jsonl"),
        (("eval", "--benchmark", "{bench}"), "--model"),
        (("eval", "--predictions", "{bench}", "--benchmark", "{bench}", "--batch-size", "0"), "batch"),
        (("eval", "--predictions", "{bench}", "--benchmark", "{bench}", "--max-samples", "0"), "max"),
        (("eval", "--predictions", "{bench}", "--benchmark", "{bench}", "--fps", "0"), "--fps"),
        (("eval", "--predictions", "{bench}", "--benchmark", "{bench}", "--max-frames", "1"), "--max-frames"),
        (("eval", "--endpoint", "http://127.0.0.1:9/v1", "--benchmark", "{bench}"), "--served-model"),
        (("merge", "{tmp}/step-000001", "{tmp}/out"), "step-000001"),
        (("score", "--records", "{tmp}/none.jsonl", "--responses", "{bench}"), "none.jsonl"),
        (("score", "--records", "{bench}", "--responses", "{bench}", "reward.tg_shaping=x"), "tg_shaping"),
        (("score", "--records", "{bench}", "--responses", "{bench}", "reward.timeout_s=-1"), "timeout_s"),
    ],
)  # fmt: skip
def test_bad_command_values_are_one_line(args, name, benchmark, tmp_path, capsys, monkeypatch):
    filled = [a.format(tmp=tmp_path, bench=benchmark) for a in args]
    result = run_cli(capsys, monkeypatch, *filled)
    _assert_one_line_naming(result, name)
