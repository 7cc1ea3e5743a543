"""Run one update on a fixed global batch; under torchrun each rank takes its share of the
groups. Writes the updated full weights and the loss to OUT (rank 0). Used by
test_distributed.py: 2 ranks must equal 1 process (optionally with packed rows)."""

from __future__ import annotations

import sys
import types

import torch

from videorl.algorithms.loss import PolicyLossConfig
from videorl.config import OptimConfig
from videorl.distributed import apply_fsdp, full_state_dict, init_distributed
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.rollout.batch import RolloutBatch
from videorl.trainer.update import UpdateContext, update_policy

GROUPS, ROWS = 4, 2


def fixed_batch(loaded) -> RolloutBatch:
    generator = torch.Generator().manual_seed(0)
    prompts, videos = [], []
    for g in range(GROUPS):
        frames = torch.randint(0, 255, (4, 3, 56, 56), dtype=torch.uint8, generator=generator)
        meta = types.SimpleNamespace(
            source_fps=4.0, fps=2.0, timestamps=[0.0, 0.5, 1.0, 1.5], width=56, height=56
        )
        video = types.SimpleNamespace(frames=frames, meta=meta)
        prompts.append(encode_prompt(loaded, f"When does event {g} happen?", video=video))  # type: ignore[arg-type]  # a stand-in with only what is read
        videos.append(video)
    lengths = [3, 7, 5, 2, 6, 4, 8, 1]
    responses = [torch.randint(20, 200, (n,), generator=generator) for n in lengths]
    advantages = (
        torch.randn(GROUPS * ROWS, generator=generator)[:, None].expand(-1, max(lengths)).clone()
    )
    mask = (torch.arange(max(lengths))[None] < torch.tensor(lengths)[:, None]).float()
    none = torch.zeros(GROUPS * ROWS, dtype=torch.bool)
    return RolloutBatch(
        records=[None] * GROUPS,  # type: ignore[list-item]  # no records: the update reads none
        prompts=prompts,
        videos=videos,  # type: ignore[arg-type]  # stand-ins with only what is read
        group_ids=torch.arange(GROUPS).repeat_interleave(ROWS),
        responses=responses,
        texts=[""] * len(responses),
        is_annotation=none,
        off_policy=none,
        truncated=none,
        advantages=advantages * mask,
    )


def main(model_path: str, out: str, micro_tokens: int, packing: str = "false") -> None:
    info = init_distributed("cpu")
    torch.manual_seed(0)
    loaded = load_model(model_path, packing=packing == "true")
    for name, param in loaded.model.named_parameters():
        if "visual" in name:
            param.requires_grad_(False)
    batch = fixed_batch(loaded)
    if info.enabled:
        per_rank = GROUPS // info.world_size * ROWS
        batch = batch.subset(torch.arange(info.rank * per_rank, (info.rank + 1) * per_rank))
        apply_fsdp(loaded.model, bf16=False)
    optimizer = torch.optim.AdamW(
        [p for p in loaded.model.parameters() if p.requires_grad], lr=1e-3
    )
    ctx = UpdateContext(
        policy=loaded,
        optimizer=optimizer,
        optim=OptimConfig(lr=1e-3, micro_batch_tokens=micro_tokens),
        loss=PolicyLossConfig(),
        temperature=1.0,
        world_size=info.world_size,
    )
    metrics = update_policy(ctx, batch)
    weights = full_state_dict(loaded.model)
    if info.is_main:
        torch.save(
            {
                "weights": {k: v.detach().clone() for k, v in weights.items()},
                "loss": metrics["actor/loss"],
            },
            out,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
