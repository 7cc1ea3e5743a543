"""Hugging Face Hub ids as model paths: resolved through transformers from an offline
HF_HOME cache for train, dry-run, eval and serve; a missing id is one line with the fix."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from tests.hub_cache import COMMIT, add_to_hub_cache, environment, offline_hub
from videorl.api import resolve_config_path
from videorl.cli import app
from videorl.config import load_config
from videorl.config.plan import model_sources
from videorl.errors import ConfigError
from videorl.models.loading import load_model, local_snapshot, model_folder, split_revision

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`

REPO = "videorl-test/tiny-vl"


@pytest.fixture(scope="module")
def hub(tiny_model_dir, tmp_path_factory):
    home = tmp_path_factory.mktemp("hf_home")
    add_to_hub_cache(tiny_model_dir(), home, REPO)
    with offline_hub(home):
        yield home


def test_split_revision(tmp_path):
    assert split_revision("org/name@v1") == ("org/name", "v1")
    assert split_revision("org/name@v1", "main") == ("org/name", "main")
    assert split_revision("org/name") == ("org/name", None)
    folder = tmp_path / "a@b"
    folder.mkdir()
    assert split_revision(folder) == (str(folder), None)  # a local folder is kept whole


def test_hub_id_loads_the_cached_snapshot_offline(hub, tiny_model_dir):
    snapshot = hub / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots" / COMMIT
    assert model_folder(REPO) == snapshot
    assert model_folder(REPO, revision=COMMIT) == snapshot
    assert local_snapshot(REPO) == snapshot  # what vLLM is given
    by_id, local = load_model(f"{REPO}@{COMMIT}"), load_model(tiny_model_dir())
    assert load_model(Path(REPO)).model_type == "qwen2_5_vl"  # videorl demo passes a Path
    assert by_id.model_type == "qwen2_5_vl" and by_id.is_vision
    theirs = local.model.state_dict()
    for name, tensor in by_id.model.state_dict().items():
        assert torch.equal(tensor, theirs[name]), name


@pytest.mark.parametrize(
    "path, revision, expected",
    [
        ("nobody/missing-model", None, "pre-download it with `hf download nobody/missing-model`"),
        (REPO, "v9", f"`hf download {REPO} --revision v9`"),
        ("a/b/c/d", None, "model path 'a/b/c/d' does not exist; fix the path"),
    ],
)
def test_missing_model_offline_is_one_line(hub, path, revision, expected):
    with pytest.raises(ConfigError) as err:
        load_model(path, revision=revision)
    text = str(err.value)
    assert expected in text and "\n" not in text
    assert path.split("@")[0] in text


def test_a_hub_repo_without_the_file_is_one_line(monkeypatch):
    """transformers' cached_file is typed to return None for a file a repo does not hold."""
    import transformers.utils

    monkeypatch.setattr(transformers.utils, "cached_file", lambda *a, **k: None)
    with pytest.raises(ConfigError) as err:
        model_folder("org/adapter-only")
    text = str(err.value)
    assert "has no config.json" in text and "hf download org/adapter-only" in text
    assert "\n" not in text


def test_dry_run_resolves_a_cached_id(hub):
    config = load_config(resolve_config_path("grpo"), [f"model.path={REPO}"])
    (source,) = model_sources(config)
    assert source.error is None and source.model_type == "qwen2_5_vl"
    assert source.folder.endswith(COMMIT)
    result = CliRunner().invoke(app, ["train", "grpo", "--dry-run", f"model.path={REPO}"])
    assert result.exit_code == 0, result.output
    assert "Models" in result.output and "qwen2_5_vl" in result.output
    missing = load_config(resolve_config_path("grpo"), ["model.path=nobody/missing-model"])
    assert "hf download nobody/missing-model" in model_sources(missing)[0].error  # type: ignore[operator]  # set here: a None fails the test too


def _easyr1_parquet(tg_data, path):
    """The synthetic temporal-grounding records in EasyR1's layout (videos as a list)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from videorl.data.loaders import load_records

    rows = [
        {
            "problem": f"<video>{r.problem}",
            "answer": f"{r.answer.windows[0][0]} to {r.answer.windows[0][1]}",
            "videos": [r.video.path],
            "problem_type": "temporal_grounding",
        }
        for r in load_records(tg_data / "train.jsonl").records
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_train_by_hub_id_on_easyr1_data_then_eval(hub, make_config, tg_data, tmp_path):
    data = _easyr1_parquet(tg_data, tmp_path / "easyr1.parquet")
    cfg, _ = make_config(
        "grpo",
        f"model.path={REPO}",
        f"data.train={data}",
        f"data.val={data}",
        "data.format=easyr1",
        "trainer.steps=1",
    )
    from videorl.trainer.loop import run_training

    final = run_training(cfg)
    assert (final / "model.safetensors").is_file()
    run_config = (final.parent / "config.yaml").read_text()
    assert f"path: {REPO}" in run_config
    metrics = [json.loads(line) for line in (final.parent / "metrics.jsonl").open()]
    assert metrics[0]["data/skipped_media"] == 0 and "reward/mean" in metrics[0]
    out = tmp_path / "eval"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            REPO,
            "--benchmark",
            str(tg_data / "val.jsonl"),
            "--out",
            str(out),
            "--max-new-tokens",
            "4",
            "--max-frames",
            "4",
            "--device",
            "cpu",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]
    assert json.loads((out / "predictions.jsonl").read_text().splitlines()[0])["id"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_by_hub_id(hub):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "videorl", "serve", "--model", REPO, "--port", str(port)]
        + ["--device", "cpu"],
        env=environment(hub),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline, listed = time.monotonic() + 120, None
        while listed is None and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as r:
                    listed = json.load(r)
            except OSError:
                time.sleep(0.5)
        assert listed is not None, server.stdout.read() if server.poll() is not None else "timeout"
        assert listed["data"]
    finally:
        server.terminate()
        server.wait(timeout=30)
