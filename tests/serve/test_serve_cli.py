"""`videorl serve` from the command line: binds loopback, names the model by its run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request

import pytest
from typer.testing import CliRunner

from videorl.cli import app
from videorl.serve.app import exposure_warning


@pytest.mark.slow
def test_serve_command_names_the_run_and_stops_on_ctrl_c(tiny_model_dir, tmp_path):
    from videorl.config import load_config
    from videorl.config.run import save_run_config

    run = tmp_path / "myrun"
    shutil.copytree(tiny_model_dir("qwen2_5_vl"), run / "final")
    save_run_config(
        load_config(None, ["video.max_frames=4", "video.min_pixels=784", "video.max_pixels=3136"]),
        run,
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "300"}
    command = [sys.executable, "-m", "videorl", "serve", "--model", str(run / "final")]
    process = subprocess.Popen(
        [*command, "--port", "0", "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        lines: list[str] = []
        while not (lines and lines[-1].startswith("serving")):
            line = process.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        url = lines[-1].split(" on ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and "'myrun/final'" in lines[-1]
        assert not any("warning" in line for line in lines)
        with urllib.request.urlopen(f"{url}/models", timeout=30) as answer:
            assert [m["id"] for m in json.loads(answer.read())["data"]] == ["myrun/final"]
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0


def test_exposure_warning():
    assert exposure_warning("127.0.0.1", None) is None
    assert exposure_warning("0.0.0.0", "key") is None
    assert "--api-key" in exposure_warning("0.0.0.0", None)  # type: ignore[operator]  # set here: a None fails the test too


def test_serve_refuses_bad_options_in_one_line(tmp_path):
    result = CliRunner().invoke(
        app, ["serve", "--model", str(tmp_path), "--media-root", str(tmp_path / "no")]
    )
    assert result.exit_code != 0 and "--media-root" in str(result.exception or result.output)


def test_serve_without_its_extra_names_the_install_line(monkeypatch, tmp_path, capsys):
    """Without FastAPI (the `serve` extra) the command says how to install it, in one line,
    before loading anything."""
    from videorl.cli import main

    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi raises ImportError
    monkeypatch.setattr(sys, "argv", ["videorl", "serve", "--model", str(tmp_path / "none")])
    with pytest.raises(SystemExit) as exit_info:
        main()
    out = capsys.readouterr().out
    assert exit_info.value.code == 2
    assert "pip install 'videorl[serve]'" in out and "Traceback" not in out


def test_serve_on_a_busy_port_is_one_line_before_the_model_loads(tmp_path, capsys, monkeypatch):
    """`videorl serve --port N` with N already listening: one line naming the port and the
    fix, exit 2, and no model load (the folder given as --model does not exist)."""
    import socket

    from tests.cli_runner import run_cli

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        result = run_cli(capsys, monkeypatch, "serve", "--model", tmp_path / "none", "--port", port)
    finally:
        holder.close()
    assert result.code == 2
    expected = (
        f"error: --port {port} on --host 127.0.0.1 is in use; pass another --port "
        "(0: any free port) or stop what holds it"
    )
    assert result.lines == [expected]
