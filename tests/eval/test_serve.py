"""`videorl serve`'s `serve()` itself: loads a checkpoint, binds 127.0.0.1 on a free port,
announces the address, answers, and closes its socket when stopped."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

from videorl.eval import server as server_module


def test_serve_loads_binds_loopback_answers_and_stops(tiny_model_dir, monkeypatch):
    made, lines = [], []
    real_make = server_module.make_server

    def capture(*args, **kwargs):
        made.append(real_make(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(server_module, "make_server", capture)
    thread = threading.Thread(
        target=server_module.serve,
        args=(tiny_model_dir("qwen2_5_vl"),),
        kwargs={"port": 0, "served_model": "tiny", "device": "cpu", "announce": lines.append},
        daemon=True,
    )
    thread.start()
    deadline = time.time() + 120
    while not lines and thread.is_alive() and time.time() < deadline:
        time.sleep(0.05)
    assert lines, "serve() never announced its address"
    host, port = made[0].server_address[:2]
    assert host == "127.0.0.1" and port > 0
    assert f"http://127.0.0.1:{port}/v1" in lines[0]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=30) as response:
        models = json.load(response)
    assert [m["id"] for m in models["data"]] == ["tiny"]
    made[0].shutdown()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert made[0].socket.fileno() == -1  # server_close() ran
