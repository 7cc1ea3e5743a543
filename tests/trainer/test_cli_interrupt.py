"""Ctrl-C under `videorl sft` / `videorl train`: the run saves, draws its curves and exits
130, so `videorl sft ... && videorl eval ...` stops instead of going on to a missing final/."""

from __future__ import annotations

import dataclasses

from tests.cli_runner import run_cli
from videorl.trainer import sft

from .test_sft import sft_overrides


def test_ctrl_c_saves_writes_the_curves_and_exits_130(
    tiny_model_dir, tg_data, tmp_path, capsys, monkeypatch
):
    def step_then_ctrl_c(state, batch):
        if state.step == 1:  # one whole step done: Ctrl-C during the second
            raise KeyboardInterrupt
        return sft.sft_step(state, batch)

    monkeypatch.setattr(sft, "SFT_HOOKS", dataclasses.replace(sft.SFT_HOOKS, step=step_then_ctrl_c))
    out = tmp_path / "run"
    overrides = sft_overrides(tiny_model_dir(), tg_data, out, "trainer.steps=3")
    result = run_cli(
        capsys, monkeypatch, "sft", "sft_quickstart", *overrides, "trainer.val_every=0"
    )
    assert result.code == 130, result.output
    assert (out / "step-000001").is_dir() and not (out / "final").exists()
    assert (out / "reward_curves.png").read_bytes().startswith(b"\x89PNG")
    assert f"curves: {out / 'reward_curves.png'}" in result.output.replace("\n", "")
