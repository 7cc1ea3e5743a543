"""Golden steps: one fixed-seed OraRL step and one GRPO step on the tiny model reproduce the
recorded loss, gradient norm and weight checksum.

The values below were recorded on CPU with torch 2.14 (fp32). They legitimately change when
the step's math changes on purpose (an estimator, selection or loss fix; e.g. the OraRL
stage E `rms_ref` fix changes the OraRL values but not GRPO's), when the tiny model, the
synthetic data, the sampler or the rollout sampling change, or with another torch version.
Re-record after checking that the change is intended:

    VIDEORL_RECORD_GOLDEN=1 python -m pytest tests/trainer/test_golden.py -q -s

prints the new `GOLDEN` entries to paste here (the tests then fail so that a recording run is
never mistaken for a pass).
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from videorl.trainer.loop import build_state, train_step

GOLDEN = {
    "orarl": {
        "loss": 0.0025862068869173527,
        "grad_norm": 0.0610361248254776,
        "checksum": 0.22749177616159894,
    },
    "grpo": {
        "loss": -0.01113988272845745,
        "grad_norm": 1.1305415630340576,
        "checksum": 0.08371663826543098,
    },
}


def weight_checksum(before: dict[str, torch.Tensor], model: torch.nn.Module) -> float:
    """A fixed random projection (seed 0, parameters in name order) of the weight change:
    sensitive to the sign, size and place of every parameter's update."""
    generator = torch.Generator().manual_seed(0)
    total = torch.zeros((), dtype=torch.float64)
    for name, param in sorted(model.named_parameters()):
        delta = (param.detach() - before[name]).double()
        total += (delta * torch.randn(delta.shape, generator=generator, dtype=torch.float64)).sum()
    return float(total)


@pytest.mark.parametrize("recipe", ["orarl", "grpo"])
def test_golden_step(make_config, recipe):
    config, _ = make_config(recipe, "optim.lr=1e-3")
    state = build_state(config, None)
    before = {k: p.detach().clone() for k, p in state.policy.model.named_parameters()}
    metrics = train_step(state, next(iter(state.sampler)))
    got = {
        "loss": metrics["actor/loss"],
        "grad_norm": metrics["actor/grad_norm"],
        "checksum": weight_checksum(before, state.policy.model),
    }
    if os.environ.get("VIDEORL_RECORD_GOLDEN"):
        print(f'\n    "{recipe}": {json.dumps(got)},')
        pytest.fail("recorded golden values (printed above); paste them into GOLDEN")
    for key, value in GOLDEN[recipe].items():
        # the checksum projects every weight's change: CPUs of one kind with other vector
        # kernels (here an AMD EPYC) move GRPO's by 1.5e-4 relative; a change of the math moves
        # it by far more
        rel = 1e-3 if key == "checksum" else 1e-4
        assert got[key] == pytest.approx(value, rel=rel, abs=1e-7), (
            f"{recipe} {key}: got {got[key]!r}, recorded {value!r} (see the module docstring)"
        )
