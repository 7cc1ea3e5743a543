"""Every row records what its model saw at rollout; every later forward checks it.

`with_fingerprints` stores each row's `InputFingerprint` (`models/fingerprint.py`: prompt
token ids, `*_grid_thw`, the frames' timestamps, the pixel tensors' SHA-1) of the prompt its
forwards take (`RolloutBatch.row_prompts`: a multi-turn row's with every turn's media).
`checked_prompts` recomputes them from the prompts a forward is about to take (the
old-policy, reference, teacher and loss forwards) and stops the step with one line naming
the first row that differs and how, e.g. a prompt that lost two tokens between the engine
and the trainer, a row pointing at another group's prompt after a reshuffle, frames written
over in place. Rows of one prompt share its fingerprint, and a pixel tensor is hashed once
(per object and version), so a step hashes each prompt's pixels once. Off with
`trainer.check_inputs: false` (the batch then has no fingerprints, and nothing is checked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from videorl.errors import InputMismatchError
from videorl.models.fingerprint import InputFingerprint, fingerprint, first_difference
from videorl.models.inputs import PromptEncoding
from videorl.rollout.batch import RolloutBatch
from videorl.video.decode import DecodedVideo


def row_media(batch: RolloutBatch, row: int) -> list[DecodedVideo | None]:
    """The media whose frames row `row`'s forwards take: its group's video or image, then
    (a multi-turn row) its tool turns' (`MultiTurnRow.media` holds the prompt's first)."""
    trajectory = None if batch.trajectories is None else batch.trajectories[row]
    if trajectory is not None:
        return list(trajectory.media)
    return [batch.videos[int(batch.group_ids[row])]]


def row_fingerprints(
    batch: RolloutBatch, prompts: Sequence[PromptEncoding], rows: Sequence[int]
) -> list[InputFingerprint]:
    """The fingerprints of `rows` given their prompts (`prompts[row]`); a prompt object
    shared by several rows is fingerprinted once."""
    seen: dict[tuple[int, int], InputFingerprint] = {}
    out = []
    for row in rows:
        media = row_media(batch, row)
        key = (id(prompts[row]), id(media[0]) if media else 0)
        if key not in seen:
            seen[key] = fingerprint(prompts[row], media)
        out.append(seen[key])
    return out


def with_fingerprints(batch: RolloutBatch) -> RolloutBatch:
    """`batch` with each row's fingerprint, from the prompts the rollout sampled with."""
    rows = range(batch.num_rows)
    return replace(batch, fingerprints=row_fingerprints(batch, batch.row_prompts(), rows))


def checked_prompts(
    batch: RolloutBatch, where: str, rows: Sequence[int] | None = None
) -> list[PromptEncoding]:
    """`batch.row_prompts()`, after checking that `rows` (default: all) are the inputs the
    rollout recorded; `where` names the forward in the error."""
    prompts = batch.row_prompts()
    if batch.fingerprints is None:
        return prompts
    rows = range(batch.num_rows) if rows is None else rows
    for row, got in zip(rows, row_fingerprints(batch, prompts, rows), strict=True):
        expected = batch.fingerprints[row]
        if got is expected or got == expected:
            continue
        record = batch.records[int(batch.group_ids[row])].id
        raise InputMismatchError(
            f"row {row} (record {record}): the {where} would see other inputs than its "
            f"rollout: {first_difference(expected, got)}; stopping the step "
            "(trainer.check_inputs=false turns the check off)"
        )
    return prompts
