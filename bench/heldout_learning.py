"""Does the quickstart's recipe, unchanged, learn to see on scenes it was not tuned on?

For each held-out scene of bench/heldout.py (256 training, 32 validation videos), and for
comparison the quickstart's own data (`quickstart`: `videorl synth --tg-events appear`),
the quickstart's pipeline with only the data changed: `make-tiny --arch qwen3_vl
--vision-warmup 150 [--vision-warmup-clips broad]` (one model for every scene), `videorl
sft sft_quickstart`, `videorl train quickstart`, and both models evaluated greedily on the
real, frozen and reversed validation videos; beside them, bench/detector.py's
training-free mIoU on the same videos. Writes bench/results/heldout.json and prints the
table; `--write` puts the saved tables (heldout.json, heldout_broad.json) in
docs/performance.md.

    PYTHONPATH=src python bench/heldout_learning.py [--scenes drift,pan,quickstart] [--seed 0]
        [--rl-steps 150] [--clips shape|broad] [--tg-grid 1] [--out bench/results/heldout.json]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path
from typing import Any

import learning
from detector import detector_miou
from harness import RESULTS, ROOT, run_once, videorl, write_marked
from heldout import SCENES, write_heldout

WORK = Path("runs/bench-heldout")
PAGE = ROOT / "docs" / "performance.md"
FAMILY = "temporal_grounding"
CONTROLS = ("frozen", "reversed")


def evaluate(model: Path, val: Path, out: Path) -> dict[str, float]:
    """`learning.evaluate` on this bench's controls (frozen and reversed)."""
    return learning.evaluate(model, val, out, CONTROLS)


def one_scene(
    scene: str, model: Path, seed: int, rl_steps: int, work: Path, n: int = 256, grid: float = 1.0
) -> dict[str, Any]:
    """Data (bounds on `grid` seconds), SFT, OraRL and the scores of one scene."""
    base = work / f"{scene}-grid{grid:g}"
    data, sft, rl = base / "data", base / "sft", base / "train"
    if scene == "quickstart" and not (data / "val.jsonl").is_file():  # the tuned-on data
        videorl(
            "synth", "--out", data, "--families", FAMILY, "--tg-events", "appear",
            "--tg-grid", grid, "--n", n, "--val", 32, "--seed", seed, "--overwrite",
        )  # fmt: skip
    elif not (data / "val.jsonl").is_file():
        write_heldout(data, scene, n=n, val=32, seed=seed, grid=grid)
    common = [f"data.train={data / 'train.jsonl'}", f"data.val={data / 'val.jsonl'}"]
    seeds = [f"trainer.seed={seed}"]
    run_once(
        sft, "sft", "sft_quickstart", f"model.path={model}", *common, *seeds,
        f"trainer.output_dir={sft}", "--overwrite",
    )  # fmt: skip
    row: dict[str, Any] = {
        "scene": scene,
        "seed": seed,
        "tg_grid": grid,
        "n": n,
        "detector": detector_miou(data / "val.jsonl"),
        "sft": evaluate(sft / "final", data / "val.jsonl", base / "eval-sft"),
    }
    if rl_steps:
        run_once(
            rl, "train", "quickstart", f"model.path={sft / 'final'}", *common, *seeds,
            f"data.seed={seed}", f"trainer.steps={rl_steps}", f"trainer.output_dir={rl}",
            "trainer.val_every=0", "trainer.tensorboard=false", "--overwrite",
        )  # fmt: skip
        row["orarl"] = evaluate(rl / "final", data / "val.jsonl", base / "eval")
    return row


def markdown(results: list[dict[str, Any]]) -> str:
    """One line per results file and scene: the seed, the warm-up's clips, the bounds' grid
    (s), the training videos, the detector's mIoU, then SFT (-> SFT + OraRL when run) mIoU and
    video gains. Rows saved before these were recorded: seed 0, 0.5 s, 256 videos."""
    header = "| scene | seed | warm-up clips | grid | videos | detector mIoU | mIoU"
    lines = [header + " | gain vs frozen | gain vs reversed |", "|" + "---|" * 9]
    for saved in results:
        for row in saved["rows"]:
            cells = []
            for key in ("mIoU", "gain_frozen", "gain_reversed"):
                form = "+.1f" if key.startswith("gain") else ".1f"
                models = [m for m in ("sft", "orarl") if m in row]
                cells.append(" -> ".join(format(row[m][key], form) for m in models))
            lines.append(
                f"| {row['scene']} | {row.get('seed', 0)} | {saved['vision_warmup_clips']} |"
                f" {row.get('tg_grid', 0.5):g} | {row.get('n', 256)} |"
                f" {row['detector']['mIoU']:.1f} | {' | '.join(cells)} |"
            )
    return "\n".join(lines)


def saved_results() -> list[dict[str, Any]]:
    """The committed results: on the 0.5 s grid the default warm-up's and the broad one's,
    then the same on the 1 s grid, the broad one's also with 1024 training videos (seeds 0
    and 1)."""
    names = (
        "heldout.json", "heldout_broad.json", "heldout_grid1.json", "heldout_broad_grid1.json",
        "heldout_broad_grid1_n1024.json", "heldout_broad_grid1_n1024_seed1.json",
    )  # fmt: skip
    return [json.loads((RESULTS / n).read_text()) for n in names if (RESULTS / n).is_file()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default=",".join([*SCENES, "quickstart"]))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rl-steps", type=int, default=150, help="0: SFT only")
    parser.add_argument("--model", type=Path, help="a model to start from (default: make-tiny)")
    parser.add_argument("--clips", default="shape", help="make-tiny --vision-warmup-clips")
    parser.add_argument("--n", type=int, default=256, help="training videos per scene")
    parser.add_argument(
        "--tg-grid", type=float, default=1.0, help="the bounds' grid, seconds (synth --tg-grid)"
    )
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--out", type=Path, default=RESULTS / "heldout.json")
    parser.add_argument("--write", action="store_true", help="put the saved table in the docs")
    args = parser.parse_args()
    if args.write:
        write_marked(PAGE, "bench/heldout_learning.py", markdown(saved_results()))
        return
    model = args.model or args.work / "model"
    if args.model is None and not (model / "config.json").is_file():
        videorl(
            "make-tiny", model, "--arch", "qwen3_vl", "--vision-warmup", 150,
            "--vision-warmup-clips", args.clips, "--seed", args.seed, "--overwrite",
        )  # fmt: skip
    rows = [
        one_scene(s, model, args.seed, args.rl_steps, args.work, args.n, args.tg_grid)
        for s in args.scenes.split(",")
    ]
    payload = {
        "command": f"PYTHONPATH=src python bench/heldout_learning.py --scenes {args.scenes} "
        f"--seed {args.seed} --rl-steps {args.rl_steps} --clips {args.clips} --n {args.n} "
        f"--tg-grid {args.tg_grid:g}",
        "vision_warmup_clips": args.clips,
        "machine": platform.platform(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    print(markdown([payload]))


if __name__ == "__main__":
    main()
