"""Peer comparison: videorl's GRPO against TRL's GRPOTrainer, steps per second side by side on
the same tiny image-task model, and whether each trainer's loss forward gets the video (issue 11).

Speed: the same random-init Qwen2.5-VL, the same synthetic spatial-grounding images (the very
pixels videorl decodes, handed to TRL as PIL images), the same reward function (videorl's
verifier), batch (prompts x group size), response length, sampling, AdamW settings, constant
learning rate, no KL, one optimizer step per batch without an old-log-prob pass (TRL
num_iterations=1, videorl one mini-batch), all rows in one forward, vision tokens banned
from sampling in both. A step is rollout + rewards + advantages + update; TRL's is timed
with a callback from step begin to step end (its logging falls outside), videorl's around
`train_step`, both in process CPU seconds (one torch thread: the work done, which other jobs
on shared cores cannot stretch) and wall seconds. The two run in alternating blocks (ABBA...)
in one process, each block a fresh trainer from the same weights; the first step of a block
is a warm-up; each block gives one ratio of median step times.

Video check: one step of each trainer on synthetic temporal-grounding videos, with a hook on
the decoder (`model.model`) that records which inputs each forward gets. The loss forward is
the one run with gradients on; each must get the video with its placeholder tokens, as
`pixel_values_videos` + `video_grid_thw` or as the vision tower's embeddings of those pixels
(`mm_encoder_outputs` with a video entry: videorl encodes each video once per step with a
frozen tower), or have no placeholder tokens and continue a cache (the responses of a
shared prompt forward, which attend to the prompt's cached video); else the policy is
trained on placeholder tokens without the frames it saw in the rollout.

TRL is the optional `bench` extra (`pip install -e '.[bench]'`); without it the TRL columns
record why.

    python bench/vs_trl.py [--blocks 4] [--steps 4] [--prompts 4] [--n 8] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.metadata
from pathlib import Path
from statistics import median
from typing import Any

import harness
import torch


def package_versions() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("trl", "accelerate", "datasets", "torch", "transformers"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    try:
        import trl  # noqa: F401
        from trl import GRPOConfig, GRPOTrainer  # noqa: F401
    except Exception as err:  # noqa: BLE001 (any import failure is the finding we record)
        out["trl_error"] = f"{type(err).__name__}: {err}"
    else:
        out["trl_error"] = None
    return out


def videorl_config(
    args: argparse.Namespace, model: Path, train: Path, family: str, **sizes: int
) -> Any:
    return harness.recipe(
        model,
        train,
        args.work / "videorl",
        f"data.families=[{family}]",
        f"data.prompts_per_step={sizes['prompts']}",
        f"rollout.n={sizes['n']}",
        f"rollout.max_new_tokens={sizes['tokens']}",
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
        f"optim.lr={args.lr}",
        "optim.warmup_steps=0",
        "optim.schedule=constant",
        "optim.mini_batches=1",
        "optim.micro_batch_tokens=1000000",
        "reward.num_workers=1",
        f"trainer.seed={args.seed}",
    )


def decoded_frames(cfg: Any, records: list[Any]) -> dict[str, list[Any]]:
    """What videorl's decoder gives each record (frames as PIL images), so TRL sees the same pixels."""
    from PIL import Image

    from videorl.video.cache import VideoCache

    cache = VideoCache(cfg.video)
    return {
        r.id: [Image.fromarray(f.permute(1, 2, 0).numpy()) for f in cache.get(r.media).frames]
        for r in records
    }


def trl_dataset(records: list[Any], frames: dict[str, list[Any]], think: bool, video: bool) -> Any:
    """Conversational prompts; images in an `image` column, videos inline as PIL frame lists."""
    from datasets import Dataset, Features, List, Value
    from datasets import Image as ImageFeature

    from videorl.data.prompts import build_prompt

    if not video:
        return Dataset.from_list(
            [
                {
                    "prompt": [{"role": "user", "content": build_prompt(r, think=think)}],
                    "image": frames[r.id][0],
                    "rid": r.id,
                }
                for r in records
            ]
        )
    part = {"type": Value("string"), "text": Value("string"), "video": List(ImageFeature())}
    features = Features(
        {"prompt": List({"role": Value("string"), "content": List(part)}), "rid": Value("string")}
    )
    rows = [
        {
            "prompt": [
                {
                    "role": "user",
                    "content": [
                        {"type": "video", "text": None, "video": frames[r.id]},
                        {"type": "text", "text": build_prompt(r, think=think), "video": None},
                    ],
                }
            ],
            "rid": r.id,
        }
        for r in records
    ]
    return Dataset.from_list(rows, features=features)


def trl_trainer(
    args: argparse.Namespace, cfg: Any, records: list[Any], dataset: Any, steps: int
) -> Any:
    from transformers import (
        AutoModelForImageTextToText,
        AutoProcessor,
        PrinterCallback,
        TrainerCallback,
    )
    from trl import GRPOConfig, GRPOTrainer

    from videorl.models.loading import load_model
    from videorl.rewards import score_response

    by_id = {r.id: r for r in records}

    def reward(prompts: Any, completions: Any, rid: list[str], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [
            score_response(by_id[i], t, cfg.reward).overall for i, t in zip(rid, texts, strict=True)
        ]

    banned = load_model(cfg.model.path).banned_token_ids
    optim = cfg.optim
    config = GRPOConfig(
        output_dir=str(args.work / "trl"),
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        logging_steps=1,
        seed=args.seed,
        max_steps=steps,
        per_device_train_batch_size=cfg.data.prompts_per_step * cfg.rollout.n,
        num_generations=cfg.rollout.n,
        max_completion_length=cfg.rollout.max_new_tokens,
        temperature=cfg.rollout.temperature,
        top_p=cfg.rollout.top_p,
        top_k=cfg.rollout.top_k,
        generation_kwargs={"suppress_tokens": banned},
        learning_rate=optim.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=optim.weight_decay,
        adam_beta1=optim.betas[0],
        adam_beta2=optim.betas[1],
        max_grad_norm=optim.grad_clip,
        beta=0.0,
        epsilon=cfg.algorithm.loss.clip_low,
        loss_type="dapo",
        num_iterations=1,
    )
    model = AutoModelForImageTextToText.from_pretrained(cfg.model.path, dtype=torch.float32)
    processor = AutoProcessor.from_pretrained(cfg.model.path)

    class StepTimes(TrainerCallback):
        def __init__(self) -> None:
            self.steps: list[dict[str, float]] = []
            self.elapsed = harness.Elapsed()

        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.elapsed.__enter__()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            self.elapsed.__exit__()
            self.steps.append({"wall": self.elapsed.wall, "cpu": self.elapsed.cpu})

    timer = StepTimes()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
        processing_class=processor,
        callbacks=[timer],
    )
    trainer.remove_callback(PrinterCallback)  # its per-step log lines
    trainer.step_times = timer
    return trainer


def run_trl(
    args: argparse.Namespace, cfg: Any, records: list[Any], frames: dict[str, list[Any]]
) -> dict[str, Any]:
    trainer = trl_trainer(
        args,
        cfg,
        records,
        trl_dataset(records, frames, cfg.data.think, video=False),
        args.steps + 1,
    )
    trainer.train()
    lengths = [
        h["completions/mean_length"]
        for h in trainer.state.log_history
        if "completions/mean_length" in h
    ]
    return {"steps": trainer.step_times.steps[1:], "completion_length": lengths[1:]}


def run_videorl(cfg: Any, steps: int) -> dict[str, Any]:
    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    state = build_state(cfg, None)
    batches = harness.endless(state.sampler)
    runs, lengths = [], []
    for _ in range(steps + 1):
        with harness.Elapsed() as elapsed:
            metrics = train_step(state, next(batches))
        runs.append({"wall": elapsed.wall, "cpu": elapsed.cpu})
        lengths.append(metrics["response/length_mean"])
        state.step += 1
    return {"steps": runs[1:], "completion_length": lengths[1:]}


def prompt_tokens(cfg: Any, record: Any, frame: Any) -> dict[str, int]:
    """Prompt length of one record as each trainer builds it (must match for a fair race)."""
    from trl.data_utils import prepare_multimodal_messages

    from videorl.data.prompts import build_prompt
    from videorl.models.loading import load_model
    from videorl.rollout.prompting import encode_record
    from videorl.video.cache import VideoCache

    policy = load_model(cfg.model.path)
    ours = encode_record(
        policy, record, VideoCache(cfg.video).get(record.media), cfg.data.think
    ).length
    messages = prepare_multimodal_messages(
        [{"role": "user", "content": build_prompt(record, think=cfg.data.think)}], images=[frame]
    )
    assert policy.processor is not None
    theirs = policy.processor.apply_chat_template(
        [messages], add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    return {"videorl": ours, "trl": len(theirs[0])}


def speed(args: argparse.Namespace, model: Path, have_trl: bool) -> dict[str, Any]:
    from videorl.data.loaders import load_records

    train = harness.synth_data(args.work, "spatial_grounding", n=32, seed=args.seed)
    cfg = videorl_config(
        args, model, train, "spatial_grounding", prompts=args.prompts, n=args.n, tokens=args.tokens
    )
    records = load_records(train).records
    frames = decoded_frames(cfg, records) if have_trl else {}
    blocks = []
    for block in range(args.blocks):
        order = ["trl", "videorl"] if block % 2 == 0 else ["videorl", "trl"]
        runs: dict[str, Any] = {}
        for name in order:
            if name == "trl" and not have_trl:
                continue
            runs[name] = (
                run_trl(args, cfg, records, frames)
                if name == "trl"
                else run_videorl(cfg, args.steps)
            )
            print(
                f"  block {block + 1}/{args.blocks} {name:<8} step cpu s: "
                + " ".join(f"{s['cpu']:.2f}" for s in runs[name]["steps"])
                + "  wall s: "
                + " ".join(f"{s['wall']:.2f}" for s in runs[name]["steps"]),
                flush=True,
            )
        blocks.append(runs)
    out: dict[str, Any] = {"blocks": blocks}
    for name in ("videorl", "trl"):
        if not all(name in b for b in blocks):
            continue
        out[name] = {
            "completion_length": harness.spread(
                [x for b in blocks for x in b[name]["completion_length"]], 2
            )
        }
        for clock in ("cpu", "wall"):
            medians = [median(s[clock] for s in b[name]["steps"]) for b in blocks]
            out[name][clock] = {
                "step_s": harness.spread([s[clock] for b in blocks for s in b[name]["steps"]]),
                "steps_per_s": harness.spread([1 / m for m in medians]),
            }
    if have_trl:
        out["videorl_over_trl_steps_per_s"] = {
            clock: harness.spread(
                [
                    median(s[clock] for s in b["trl"]["steps"])
                    / median(s[clock] for s in b["videorl"]["steps"])
                    for b in blocks
                ]
            )
            for clock in ("cpu", "wall")
        }
        out["prompt_tokens"] = prompt_tokens(cfg, records[0], frames[records[0].id][0])
    return out


class ForwardLog:
    """Which inputs each decoder forward gets, and whether gradients were on."""

    def __init__(self, module: torch.nn.Module, video_token_id: int) -> None:
        self.calls: list[dict[str, Any]] = []
        self.video_token_id = video_token_id
        self.handle = module.register_forward_pre_hook(self.record, with_kwargs=True)

    def record(self, _: Any, args: Any, kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.calls.append(
            {
                "grad": torch.is_grad_enabled(),
                "inputs": sorted(k for k, v in kwargs.items() if v is not None),
                "video_features": (kwargs.get("mm_encoder_outputs") or {}).get("video") is not None,
                "video_pad_tokens": int((ids == self.video_token_id).sum())
                if isinstance(ids, torch.Tensor)
                else 0,
            }
        )

    def verdict(self) -> dict[str, Any]:
        self.handle.remove()
        rollout = [c for c in self.calls if not c["grad"]]
        loss = [c for c in self.calls if c["grad"]]

        def has_video(call: dict[str, Any]) -> bool:  # the pixels, or their encoder embeddings
            pixels = {"pixel_values_videos", "video_grid_thw"} <= set(call["inputs"])
            return pixels or call["video_features"]

        def sees(call: dict[str, Any]) -> bool:
            continues = call["video_pad_tokens"] == 0 and "cache" in call["inputs"]
            return has_video(call) or continues

        def rollout_sees(call: dict[str, Any]) -> bool:  # generate may pass precomputed features
            return sees(call) or "mm_encoder_outputs" in call["inputs"]

        return {
            "rollout_forward_gets_video": any(rollout_sees(c) for c in rollout),
            "loss_forwards": len(loss),
            "loss_forward_gets_video": any(has_video(c) for c in loss)
            and all(sees(c) for c in loss),
            "video_pad_tokens_in_loss_inputs": sum(c["video_pad_tokens"] for c in loss),
            "loss_forward_inputs": loss[0]["inputs"] if loss else [],
        }


def video_check(args: argparse.Namespace, model: Path, have_trl: bool) -> dict[str, Any]:
    from videorl.data.loaders import load_records
    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    train = harness.synth_data(args.work, "temporal_grounding", n=16, seed=args.seed)
    cfg = videorl_config(args, model, train, "temporal_grounding", prompts=2, n=4, tokens=8)
    state = build_state(cfg, None)
    video_token = state.policy.tokenizer.convert_tokens_to_ids("<|video_pad|>")
    decoder = state.policy.model.model
    assert isinstance(decoder, torch.nn.Module)
    log = ForwardLog(decoder, video_token)
    train_step(state, next(harness.endless(state.sampler)))
    out: dict[str, Any] = {"videorl": log.verdict()}
    if have_trl:
        records = load_records(train).records[:4]
        dataset = trl_dataset(records, decoded_frames(cfg, records), cfg.data.think, video=True)
        trainer = trl_trainer(args, cfg, records, dataset, 1)
        log = ForwardLog(trainer.model.model, video_token)
        try:
            trainer.train()
        except Exception as err:  # noqa: BLE001 (a crash on a video task is a finding, recorded)
            out["trl"] = {"error": f"{type(err).__name__}: {err}", **log.verdict()}
        else:
            out["trl"] = log.verdict()
    for name, verdict in out.items():
        print(
            f"  video check {name}: rollout gets video {verdict['rollout_forward_gets_video']}, "
            f"loss forward gets video {verdict['loss_forward_gets_video']} "
            f"({verdict['video_pad_tokens_in_loss_inputs']} video placeholder tokens in its inputs)",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4, help="trainer blocks, alternating ABBA")
    parser.add_argument(
        "--steps", type=int, default=4, help="measured steps per block (plus one warm-up)"
    )
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--n", type=int, default=8, help="group size")
    parser.add_argument("--tokens", type=int, default=24, help="response length (max new tokens)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--size", default="tiny", choices=["tiny", "bench"])
    args = harness.parse_args(parser, "vs_trl", argv)
    if args.quick:
        args.blocks, args.steps, args.prompts, args.n, args.tokens, args.size = (
            1,
            1,
            2,
            4,
            8,
            "tiny",
        )
    run = harness.RunFacts()
    versions = package_versions()
    have_trl = versions["trl_error"] is None
    model = harness.model_dir(args.work, args.size)
    race = speed(args, model, have_trl)
    video = video_check(args, model, have_trl)
    result = {
        "benchmark": "vs_trl",
        "command": "python bench/vs_trl.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "versions": versions,
        "trl_status": "ran" if have_trl else f"not run: {versions['trl_error']}",
        "model": {"arch": harness.ARCH, "size": args.size},
        "settings": {
            "task": "spatial_grounding (images)",
            "prompts_per_step": args.prompts,
            "group_size": args.n,
            "response_tokens": args.tokens,
            "lr": args.lr,
            "blocks": args.blocks,
            "steps_per_block": args.steps,
            "warmup_steps_per_block": 1,
        },
        "speed": race,
        "video_in_loss": video,
        **run.facts(),
    }
    rows = []
    for name in ("videorl", "trl"):
        if name not in race:
            rows.append([name, result["trl_status"], "-", "-", "-", "-"])
            continue
        cells: list[str] = [name]
        for clock in ("cpu", "wall"):
            ratio = race["videorl_over_trl_steps_per_s"][clock] if have_trl else None
            cells += [
                harness.fmt(race[name][clock]["step_s"], " s"),
                "1.00x" if name == "trl" else (harness.fmt(ratio, "x") if ratio else "-"),
            ]
        rows.append([*cells, f"{race[name]['completion_length']['median']:.1f}"])
    print()
    print(
        harness.markdown_table(
            [
                "trainer",
                "CPU s/step",
                "steps/s vs TRL (CPU)",
                "wall s/step",
                "steps/s vs TRL (wall)",
                "completion tokens",
            ],
            rows,
        )
    )
    rows = [
        [
            name,
            v["rollout_forward_gets_video"],
            v["loss_forward_gets_video"],
            v["video_pad_tokens_in_loss_inputs"],
            ", ".join(v["loss_forward_inputs"]),
        ]
        for name, v in video.items()
    ]
    print()
    print(
        harness.markdown_table(
            [
                "trainer",
                "rollout gets video",
                "loss forward gets video",
                "video placeholders in loss inputs",
                "loss forward inputs",
            ],
            rows,
        )
    )
    harness.write_results(args.out, result)


if __name__ == "__main__":
    main()
