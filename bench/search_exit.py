"""TimeSearch-R's frame retrieval and VideoAuto-R1's early exit, measured as mechanisms on
the CPU (issue 49 items 2 and 4, docs/tools.md#seek_video_frames-timesearch-r).

- **Retrieval.** The tools quickstart's task: synthetic "when is the shape visible" videos
  of 8-16 s whose event lasts 1-1.5 s, the prompt at one frame per 4 s. For each video:
  does a frame the model gets fall inside the event? The prompt's own frames; two frames of
  `seek_video_frames(query=the record's query)` from the 2 fps colour index; two evenly
  spaced frames (no query); and the query under the video controls (frozen, reversed,
  shuffled: the tool reads the controlled video, as eval's controls do). The gain is real
  minus control: how much of the tool's hit rate comes from the video's actual content.
- **Early exit.** A tiny model scripted (as tests/rollout/test_early_exit.py) to write
  `\\boxed{B}<think>(64 tokens)</think>\\boxed{B}` with a1's confidence drawn per item:
  tokens generated with and without `--early-exit-confidence 0.97`, the exit rate, and the
  exited answers' agreement with the full runs' a1. No model here reads a video, so no
  video control applies to this arm; the number shows the saving the gate gives a model of
  that confidence profile, not a learned one.

The completeness check (GRPO-CSV) needs a policy that reads frames to be measured; tiny
models do not, so it has no row here.

    PYTHONPATH=src python bench/search_exit.py [--n 48] [--items 16]
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import time
from pathlib import Path
from typing import Any

from harness import RESULTS, markdown_table, parse_args, write_results

CONTROLS = ("frozen", "reversed", "shuffled")
THINK_TOKENS = 64
THRESHOLD = 0.97


def _records(work: Path, n: int, seed: int) -> list[Any]:
    from videorl.data.loaders import load_records
    from videorl.data.synth import synthesize

    folder = work / "data" / f"search-tg-appear-n{n}-seed{seed}"
    made = folder / "records.jsonl"
    if not made.is_file():
        made = synthesize(folder, ["temporal_grounding"], n=n, seed=seed, tg_events=("appear",))
    return load_records(made).records


def retrieval(work: Path, n: int, seed: int) -> dict[str, Any]:
    """Hit rates (a frame inside the event window) of each arm over `n` videos."""
    from videorl.config import FrameSearchConfig
    from videorl.rollout.tools import ToolContext, ToolRunner, frame_index, resolve_tools
    from videorl.rollout.tools.parsing import ToolCall
    from videorl.video.cache import VideoCache
    from videorl.video.decode import VideoConfig

    importlib.import_module("videorl.rollout.tools.timesearch")
    frame_index.configure(FrameSearchConfig(fps=2.0), work / "frame_index")
    config = VideoConfig(fps=0.25, min_frames=2, max_frames=4, min_pixels=3136, max_pixels=12544)
    runner = ToolRunner(resolve_tools(["seek_video_frames"]))
    videos = VideoCache(config)
    records = _records(work, n, seed)
    arms = ["prompt", "seek", "seek_no_query", *(f"seek_{c}" for c in CONTROLS)]
    hits = {arm: 0 for arm in arms}
    started = time.perf_counter()
    for record in records:
        ((lo, hi),) = record.answer.windows
        decoded = videos.get(record.media)
        shown = [decoded.meta.clip_start + t for t in decoded.meta.timestamps]
        hits["prompt"] += any(lo <= t < hi for t in shown)
        for arm, query, control in [
            ("seek", record.problem, None),
            ("seek_no_query", "", None),
            *((f"seek_{c}", record.problem, c) for c in CONTROLS),
        ]:
            ctx = ToolContext(
                media=record.media,
                video=decoded,
                config=config,
                control=control,
                control_key=record.id,
            )
            call = ToolCall(
                raw="", name="seek_video_frames", arguments={"query": query, "num_frames": 2}
            )
            outcome = runner.run(call, ctx)
            assert outcome.ok, outcome.text
            stamps = outcome.text.split("located at ")[1].split(".\n")[0].split(",")
            hits[arm] += any(lo <= float(s.rstrip("s")) < hi for s in stamps)
    runner.close()
    rate = {arm: hits[arm] / len(records) for arm in arms}
    return {
        "videos": len(records),
        "hit_rate": rate,
        "video_gain": {c: rate["seek"] - rate[f"seek_{c}"] for c in CONTROLS},
        "seconds": round(time.perf_counter() - started, 1),
    }


def early_exit(work: Path, items: int, seed: int) -> dict[str, Any]:
    """Tokens generated with and without the gate on a scripted tiny model."""
    import torch
    from harness import model_dir
    from transformers import LogitsProcessor

    from videorl.models.generate import SamplingParams
    from videorl.models.inputs import encode_prompt
    from videorl.models.loading import load_model
    from videorl.rollout.early_exit import generate_with_early_exit

    class Script(LogitsProcessor):
        def __init__(self, ids: list[int], weak: int, p: float) -> None:
            self.ids, self.weak, self.p, self.start = ids, weak, p, None

        def __call__(self, input_ids, scores):
            self.start = input_ids.shape[1] if self.start is None else self.start
            t = min(input_ids.shape[1] - self.start, len(self.ids) - 1)
            forced = torch.full_like(scores, -math.inf)
            forced[:, self.ids[t]] = 0.0
            if t == self.weak and self.p < 1:
                forced[:, (self.ids[t] + 1) % scores.shape[-1]] = math.log((1 - self.p) / self.p)
            return forced

    loaded = load_model(model_dir(work, "tiny"))
    tokenizer = loaded.tokenizer
    text = "\\boxed{B}<think>" + " step" * THINK_TOKENS + "</think>\\boxed{B}"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [loaded.eos_token_ids[0]]
    weak = next(i for i in range(len(ids)) if "B" in tokenizer.decode(ids[: i + 1]))
    prompt = encode_prompt(loaded, "Which animal runs? A. cat B. dog")
    rng = random.Random(seed)
    params = SamplingParams(n=1, max_new_tokens=len(ids) + 4, temperature=0.0)
    gated_tokens, full_tokens, exits, agree = 0, 0, 0, 0
    for _ in range(items):
        p = rng.choice((0.5, 0.8, 0.95, 0.99, 1.0))  # a1's confidence
        [full], _ = generate_with_early_exit(
            loaded, [prompt], params, 2.0, logits_processor=[Script(ids, weak, p)]
        )
        [gated], [[found]] = generate_with_early_exit(
            loaded, [prompt], params, THRESHOLD, logits_processor=[Script(ids, weak, p)]
        )
        full_text = tokenizer.decode(full.token_ids[0], skip_special_tokens=True)
        gated_text = tokenizer.decode(gated.token_ids[0], skip_special_tokens=True)
        full_tokens += int(full.token_ids[0].numel())
        gated_tokens += found.tokens
        exits += found.exited
        agree += gated_text == (full_text.split("<think>")[0] if found.exited else full_text)
    return {
        "items": items,
        "threshold": THRESHOLD,
        "exit_rate": exits / items,
        "tokens_full": full_tokens / items,
        "tokens_gated": gated_tokens / items,
        "same_answer_as_full_run": agree / items,
    }


def markdown(saved: dict[str, Any]) -> str:
    r, e = saved["retrieval"], saved["early_exit"]
    rows = [[arm, f"{rate:.2f}"] for arm, rate in r["hit_rate"].items()]
    gains = ", ".join(f"{c} {g:+.2f}" for c, g in r["video_gain"].items())
    exit_rows = [
        ["tokens per response, full", f"{e['tokens_full']:.1f}"],
        [f"tokens per response, early exit at {e['threshold']}", f"{e['tokens_gated']:.1f}"],
        ["exit rate", f"{e['exit_rate']:.2f}"],
        ["answer equal to the full run's", f"{e['same_answer_as_full_run']:.2f}"],
    ]
    return (
        f"Retrieval over {r['videos']} videos (a returned frame inside the event):\n\n"
        + markdown_table(["arm", "hit rate"], rows)
        + f"\n\nVideo gain of seek (real - control): {gains}.\n\n"
        + f"Early exit, a scripted tiny model over {e['items']} items:\n\n"
        + markdown_table(["measure", "value"], exit_rows)
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=48, help="synthetic videos for retrieval")
    parser.add_argument("--items", type=int, default=16, help="scripted items for early exit")
    args = parse_args(parser, "search_exit", argv)
    n, items = (8, 4) if args.quick else (args.n, args.items)
    saved = {
        "retrieval": retrieval(args.work, n, args.seed),
        "early_exit": early_exit(args.work, items, args.seed),
        "quick": args.quick,
    }
    out = (
        args.out
        if not args.quick or args.out != RESULTS / "search_exit.json"
        else RESULTS / "search_exit_quick.json"
    )
    write_results(out, saved)
    print(markdown(saved))


if __name__ == "__main__":
    main()
