"""One process through the sharded code path of a multi-GPU run: FSDP2 (`apply_fsdp`) over a
world of size 1 (NCCL on a GPU, gloo on the CPU), one `update_policy` step on a fixed batch,
a DCP checkpoint saved, loaded into a fresh sharded model, and merged into a Hugging Face
folder. Writes what it found to OUT as JSON. Used by test_cuda.py.

    python scripts/gpu/tests/fsdp_worker.py MODEL DEVICE OUT
"""

from __future__ import annotations

import json
import socket
import sys
import types
from pathlib import Path

import torch
import torch.distributed as dist

from videorl.algorithms.loss import PolicyLossConfig
from videorl.config import OptimConfig
from videorl.distributed import DistInfo, apply_fsdp
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.rollout.batch import RolloutBatch
from videorl.trainer import checkpoint as ckpt
from videorl.trainer.update import UpdateContext, update_policy


class ShardedInfo(DistInfo):
    """World size 1, taking the multi-process path (DCP shards, model_meta for merge)."""

    @property
    def enabled(self) -> bool:
        return True


def fixed_batch(loaded, rows: int = 4) -> RolloutBatch:
    generator = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 255, (4, 3, 56, 56), dtype=torch.uint8, generator=generator)
    meta = types.SimpleNamespace(
        source_fps=4.0, fps=2.0, timestamps=[0.0, 0.5, 1.0, 1.5], width=56, height=56
    )
    video = types.SimpleNamespace(frames=frames, meta=meta)
    prompt = encode_prompt(loaded, "When does the event happen?", video=video)
    responses = [torch.randint(20, 200, (n,), generator=generator) for n in (5, 3, 7, 2)[:rows]]
    width = max(r.numel() for r in responses)
    mask = torch.arange(width)[None] < torch.tensor([r.numel() for r in responses])[:, None]
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5][:rows])[:, None] * mask.float()
    none = torch.zeros(rows, dtype=torch.bool)
    return RolloutBatch(
        records=[None],
        prompts=[prompt],
        videos=[video],
        group_ids=torch.zeros(rows, dtype=torch.long),
        responses=responses,
        texts=[""] * rows,
        is_annotation=none,
        off_policy=none,
        truncated=none,
        advantages=advantages,
    )


def sharded_policy(model_path: str, device: str):
    cuda = device.startswith("cuda")
    loaded = load_model(model_path, dtype=torch.bfloat16 if cuda else torch.float32, device=device)
    for name, param in loaded.model.named_parameters():
        if "visual" in name:
            param.requires_grad_(False)
    apply_fsdp(loaded.model, bf16=cuda)
    optimizer = torch.optim.AdamW([p for p in loaded.model.parameters() if p.requires_grad], 1e-3)
    return loaded, optimizer


def full_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {
        k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().float().cpu().clone()
        for k, v in model.state_dict().items()
    }


def main(model_path: str, device: str, out: str) -> None:
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    torch.manual_seed(0)
    info = ShardedInfo(device=device)
    loaded, optimizer = sharded_policy(model_path, device)
    ctx = UpdateContext(
        policy=loaded,
        optimizer=optimizer,
        optim=OptimConfig(lr=1e-3),
        loss=PolicyLossConfig(),
        temperature=1.0,
    )
    before = full_weights(loaded.model)
    metrics = update_policy(ctx, fixed_batch(loaded))
    after = full_weights(loaded.model)
    root = Path(out).parent
    saved = ckpt.save_checkpoint(
        root / "ckpt", 1, policy=loaded, optimizer=optimizer, extras={}, info=info, keep_last=1
    )
    fresh, fresh_optimizer = sharded_policy(model_path, device)
    ckpt.load_checkpoint(saved, policy=fresh, optimizer=fresh_optimizer, info=info)
    restored = full_weights(fresh.model)
    dist.destroy_process_group()
    merged = load_model(ckpt.merge_checkpoint(saved, root / "merged")).model
    merged_weights = {k: v.float() for k, v in merged.state_dict().items()}
    result = {
        "backend": backend,
        "sharded_params": sum(hasattr(p, "placements") for p in loaded.model.parameters()),
        "loss_finite": bool(torch.isfinite(torch.tensor(metrics["actor/loss"]))),
        "changed": any(not torch.equal(before[k], after[k]) for k in after),
        "restored_equal": all(torch.equal(after[k], restored[k]) for k in after),
        "merged_equal": all(torch.equal(after[k], merged_weights[k]) for k in after),
        "metrics": {k: v for k, v in metrics.items() if isinstance(v, float)},
    }
    Path(out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:4])
