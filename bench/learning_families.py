"""Does every family see? `bench/learning.py --families`: the quickstart's pipeline once per
task family, with only the family changed, scored on real and control media.

For each family F: the quickstart's tiny Qwen3-VL (`make-tiny --arch qwen3_vl --vision-warmup
150`, one model for every family), `videorl synth --families F` (256 training, 32 validation
records, the quickstart's seed and options), `videorl sft sft_quickstart data.families=[F]`
(`--sft-steps`; the recipe's 1600 since 2026-12-07, 800 before), `videorl train quickstart`
(OraRL, `--steps`) on the same data, both models
evaluated greedily on the validation records and their controls (`CONTROLS`). The answer
budget (`ANSWER_TOKENS`) is everything else that changes with the family. A row per family
and headline metric: the blind best (`synth`'s manifest: the best fixed answer given only
the prompt), and SFT -> SFT + OraRL score and video gain (real minus control). The rows go under `families` in the
results file (what else it holds is kept); `--write` puts their table in docs/performance.md.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import harness
import learning
from harness import ROOT, run_once, videorl, write_marked

from videorl.data.families import BUILTIN_FAMILIES

PAGE = ROOT / "docs" / "performance.md"
MARKERS = "bench/learning.py families"  # the table's markers in PAGE
WORK = Path("runs/bench-families")
FAMILIES = tuple(f for f in BUILTIN_FAMILIES if f != "math")  # the seven video families

# The family's headline metrics (`videorl eval`'s names). Segmentation reports J&F over its
# videos and gIoU over its images; spatio-temporal grounding its window and its boxes apart.
METRICS: dict[str, tuple[str, ...]] = {
    "temporal_grounding": ("mIoU",),
    "spatial_grounding": ("mIoU",),
    "segmentation": ("J&F", "gIoU"),
    "tracking": ("AO",),
    "spatio_temporal_grounding": ("m_tIoU", "m_sIoU"),
    "video_qa": ("accuracy",),
    "spatial_intelligence": ("overall",),
}

# The controls each family is scored on: frozen and reversed videos wherever it has videos,
# shuffled ones where its answers depend on the frames' order, blank (grey) media where it has
# images (the one control that applies to an image).
CONTROLS: dict[str, tuple[str, ...]] = {
    "temporal_grounding": ("frozen", "reversed", "shuffled"),
    "spatial_grounding": ("blank",),  # images only
    "segmentation": ("frozen", "reversed", "blank"),  # half images; a still object in videos
    "tracking": ("frozen", "reversed", "shuffled"),
    "spatio_temporal_grounding": ("frozen", "reversed", "shuffled"),
    # "which colour appears first?"; "what colour is the shape?" is a still scene: blank
    "video_qa": ("frozen", "reversed", "shuffled", "blank"),
    # seven of its eight subtypes are still scenes, identical under the temporal controls:
    # blank is the control that shows whether they are read from the video at all
    "spatial_intelligence": ("frozen", "reversed", "shuffled", "blank"),
}
ALL_CONTROLS = ("frozen", "reversed", "shuffled", "blank")  # the table's columns

# What a valid run of the family needs on top of the quickstart recipes: an answer budget that
# holds the longest annotation as the model is taught it (answer + EOS in the tiny model's
# tokenizer, boxes in Qwen3-VL's 0-1000 coordinates, whole on the patch grid, over `synth --n 256
# --val 32 --seed 0`; tests/bench/test_learning_families.py measures it) with about 20% to
# spare, for rollouts (validation and this bench's eval too) and, where it exceeds SFT's 64,
# for SFT targets. The quickstart's 16 tokens fit temporal grounding, video QA (7) and spatial
# intelligence (10).
ANSWER_TOKENS: dict[str, int] = {
    "spatial_grounding": 30,  # "<answer>[x1,y1,x2,y2]</answer>", whole 0-1000 numbers: 25
    # the box and 3 + 3 points as JSON, in pixels (a record with a mask keeps its own): 111
    "segmentation": 128,
    "tracking": 112,  # a box every second of a video of up to 5 s, keyed by frame: 93 tokens
    "spatio_temporal_grounding": 96,  # the window and a box at each whole second inside it: 81
}
QUICKSTART_TOKENS = 16  # the quickstart recipes' rollout.max_new_tokens
SFT_RESPONSE_TOKENS = 64  # sft_quickstart's sft.max_response_tokens
QUICKSTART_DATA = (256, 32, 150)  # training and validation records, tower warm-up steps


def answer_tokens(family: str) -> int:
    """The family's rollout budget, which its evaluation gets too."""
    return ANSWER_TOKENS.get(family, QUICKSTART_TOKENS)


def family_overrides(family: str) -> list[str]:
    """The family's settings on top of both quickstart recipes."""
    overrides = [f"data.families=[{family}]"]
    if family in ANSWER_TOKENS:
        overrides.append(f"rollout.max_new_tokens={ANSWER_TOKENS[family]}")
    if answer_tokens(family) > SFT_RESPONSE_TOKENS:
        overrides.append(f"sft.max_response_tokens={ANSWER_TOKENS[family]}")
    return overrides


def parse_families(names: str) -> list[str]:
    """`all` or comma-separated names -> families in FAMILIES' order."""
    chosen = list(FAMILIES) if names == "all" else [n.strip() for n in names.split(",")]
    unknown = [n for n in chosen if n not in FAMILIES]
    if unknown or not chosen:
        raise SystemExit(f"--families {names}: choose 'all' or from {','.join(FAMILIES)}")
    return [f for f in FAMILIES if f in chosen]


def scores(
    model: str | Path, val: str | Path, out: Path, family: str
) -> dict[str, dict[str, float | None]]:
    """Greedy eval of `model` on `val` and the family's controls (reused when `out` holds
    one): per headline metric its score and `gain_CONTROL` (None where no record had it)."""
    controls = CONTROLS[family]
    if not (out / "metrics.json").is_file():
        videorl(
            "eval", "--model", model, "--benchmark", val, "--out", out,
            "--controls", ",".join(controls), "--max-new-tokens", answer_tokens(family),
            "--overwrite",
        )  # fmt: skip
    saved = json.loads((out / "metrics.json").read_text())
    real = saved["families"][family]["metrics"]
    gains = {c: saved["controls"][c]["video_gain"].get(family, {}) for c in controls}
    return {
        metric: {
            "score": real.get(metric),
            **{f"gain_{c}": g.get(metric) for c, g in gains.items()},
        }
        for metric in METRICS[family]
    }


def start_model(args: Any) -> Path:
    """The model SFT starts from: `--start` (e.g. another family's SFT model, a curriculum),
    else the tiny model `make-tiny` writes once under `--work`."""
    return Path(args.start) if args.start else args.work / "model"


def one_family(family: str, args: Any) -> dict[str, Any]:
    """Data, SFT, OraRL and the scores of one family under `args.work / family`."""
    work, overrides = args.work / family, family_overrides(family)
    start = learning.prepare(
        work, args.seed, args.sft_steps, n=args.n, val=args.val, warmup=args.warmup,
        sft_overrides=overrides, family=family, model=start_model(args), tg_grid=args.tg_grid,
    )  # fmt: skip
    rl = work / f"orarl-{args.steps}"
    rl_seconds = run_once(
        rl, "train", "quickstart", *learning.start_overrides(start, args.seed), *overrides,
        f"trainer.steps={args.steps}", f"trainer.output_dir={rl}", "trainer.val_every=0",
        "trainer.tensorboard=false", "--overwrite",
    )  # fmt: skip
    manifest = json.loads((Path(start["val"]).parent / "manifest.json").read_text())
    blind = manifest.get("blind_best", {}).get(family, {})
    return {
        "family": family,
        "start_model": str(start_model(args)),
        "metrics": list(METRICS[family]),
        "controls": list(CONTROLS[family]),
        "overrides": overrides,
        "blind": {m: blind.get(m) for m in METRICS[family]},
        "blind_answer": blind.get("answer"),
        "sft": scores(start["model"], start["val"], work / f"eval-sft-{args.sft_steps}", family),
        "orarl": scores(rl / "final", start["val"], work / f"eval-orarl-{args.steps}", family),
        "n": args.n,
        "val": args.val,
        "seed": args.seed,
        "sft_steps": args.sft_steps,
        "tg_grid": args.tg_grid,
        "steps": args.steps,
        "sft_minutes": start["sft_minutes"],
        "rl_minutes": rl_seconds / 60,
    }


def _cell(row: dict[str, Any], metric: str, key: str) -> str:
    """`SFT -> SFT + OraRL` of one value; `-` where it does not apply."""
    values = [row[model][metric].get(key) for model in ("sft", "orarl")]
    if any(v is None for v in values):
        return "-"
    form = "+.1f" if key.startswith("gain") else ".1f"
    return " -> ".join(format(v, form) for v in values)


def markdown(rows: dict[str, dict[str, Any]]) -> str:
    """One line per family and headline metric, in FAMILIES' order: its SFT steps, the blind
    best, then SFT -> SFT + OraRL score and gains ('-': a control that applies to none of its
    records or was not run)."""
    header = "| family | metric | SFT steps | blind best | score | gain vs frozen | vs reversed"
    lines = [header + " | vs shuffled | vs blank |", "|---|---|---|---|---|---|---|---|---|"]
    for family in (f for f in FAMILIES if f in rows):
        row = rows[family]
        for metric in row["metrics"]:
            blind = row["blind"].get(metric)
            cells = [_cell(row, metric, "score")]
            cells += [_cell(row, metric, f"gain_{c}") for c in ALL_CONTROLS]
            shown = "-" if blind is None else f"{blind:.1f}"
            lines.append(
                f"| {family} | {metric} | {row['sft_steps']} | {shown} | {' | '.join(cells)} |"
            )
    return "\n".join(lines)


def saved_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The family rows a results file holds ({} when none)."""
    return json.loads(path.read_text()).get("families", {}) if path.is_file() else {}


def store(path: Path, rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Merge `rows` into the `families` of the results file (its other keys, the recipe
    rows, and the families not rerun are kept); returns all family rows."""
    saved = json.loads(path.read_text()) if path.is_file() else {}
    merged = {**saved.get("families", {}), **rows}
    saved["families"] = {f: merged[f] for f in FAMILIES if f in merged}
    saved["families_machine"] = platform.platform()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(saved, indent=1))
    return saved["families"]


def write_page(path: Path) -> None:
    """Put the family table of the results file in docs/performance.md."""
    write_marked(PAGE, MARKERS, markdown(saved_rows(path)))


def run(args: Any) -> None:
    """`bench/learning.py --families`: each chosen family's row, stored and printed."""
    args.n, args.val, args.warmup = QUICKSTART_DATA
    if args.quick:  # a smoke run: every command in this process, a tiny start
        harness.IN_PROCESS = True
        args.n, args.val, args.warmup, args.sft_steps, args.steps = 4, 2, 0, 2, 2
    args.work = args.work or WORK
    rows = {family: one_family(family, args) for family in parse_families(args.families)}
    print(markdown(store(args.out, rows)))
