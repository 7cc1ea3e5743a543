"""A train step records each row's input fingerprint at rollout and checks it before the
old-policy, reference, teacher and loss forwards: a changed input stops the step with one
line naming the row and the first difference; `trainer.check_inputs=false` turns it off."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from videorl.errors import InputMismatchError
from videorl.models.fingerprint import fingerprint
from videorl.models.inputs import with_prefix
from videorl.rollout.fingerprints import checked_prompts, row_media
from videorl.trainer.build import build_state
from videorl.trainer.stages import score
from videorl.trainer.step import STAGES, train_step


@pytest.fixture(scope="module")
def states(build_config, tiny_model_dir, tmp_path_factory):
    """GRPO states, with the check on and off, with a KL reference and two mini-batches (so
    that the old-policy forward runs on the second's rows), built once."""
    built = {}

    def get(check: bool):
        if check not in built:
            out = tmp_path_factory.mktemp(f"check{check}") / "run"
            extra = [
                "algorithm.loss.kl_coef=0.01",
                f"model.reference_path={tiny_model_dir('qwen2_5_vl')}",
                "optim.mini_batches=2",
            ]
            config, _ = build_config("grpo", out, *extra, f"trainer.check_inputs={check}".lower())
            built[check] = build_state(config, None)
        return built[check]

    return get


def _step(state, change=None):
    """One train step; `change(batch)` runs on the scored batch (before the forwards that
    check); returns the batch the update got and the step's metrics."""
    seen = {}

    def scored(batch, config, pool=None):
        batch = score(batch, config, pool)
        return change(batch) if change is not None else batch

    def update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    stages = replace(STAGES, score=scored, update=update)
    metrics = train_step(state, state.sampler.next_batch(), stages)
    return seen["batch"], metrics


def test_rows_record_what_their_model_saw(states):
    batch, metrics = _step(states(True))
    assert metrics["actor/rows"] == batch.num_rows > 0
    assert batch.fingerprints is not None and len(batch.fingerprints) == batch.num_rows
    prompts = batch.row_prompts()
    for row, recorded in enumerate(batch.fingerprints):
        assert recorded == fingerprint(prompts[row], row_media(batch, row))
        assert recorded.timestamps == (batch.videos[int(batch.group_ids[row])].meta.timestamps,)
    # rows of one prompt share it; the two prompts differ
    digests = {int(g): f.digest for g, f in zip(batch.group_ids, batch.fingerprints, strict=True)}
    assert len(set(digests.values())) == batch.num_groups == 2


def _longer_prompt(batch):
    prompts = list(batch.prompts)
    prompts[1] = with_prefix(prompts[1], torch.tensor([7, 7]))
    return replace(batch, prompts=prompts)


def _pixels_written(batch):
    batch.prompts[0].vision["pixel_values_videos"].mul_(0.5)
    return batch


def _groups_swapped(batch):
    return replace(batch, group_ids=1 - batch.group_ids)


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [  # group 1's rows are the second mini-batch's: the old-policy forward sees them first
        (_longer_prompt, "old-policy", "the prompt has "),
        (_pixels_written, "reference", "the pixel tensors differ (SHA-1 "),
        (_groups_swapped, "old-policy", "prompt token "),
    ],
)
def test_a_changed_input_stops_the_step_naming_the_row(states, change, where, words):
    with pytest.raises(InputMismatchError) as caught:
        _step(states(True), change)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("row ") and "(record " in message
    assert f"the {where} forward would see other inputs than its rollout: {words}" in message
    assert message.endswith("(trainer.check_inputs=false turns the check off)")


def test_the_reference_and_teacher_forwards_check_too(states):
    batch, _ = _step(states(True))
    changed = _longer_prompt(batch)
    for where in ("reference forward", "teacher forward", "loss forward"):
        with pytest.raises(InputMismatchError, match=f"the {where} would see"):
            checked_prompts(changed, where)
    rows = [i for i in range(batch.num_rows) if int(batch.group_ids[i]) == 0]
    assert len(checked_prompts(changed, "loss forward", rows)) == batch.num_rows  # group 0 as was


def test_check_inputs_false_records_and_checks_nothing(states):
    batch, metrics = _step(states(False), _longer_prompt)
    assert batch.fingerprints is None and metrics["actor/rows"] == batch.num_rows
