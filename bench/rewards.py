"""Reward throughput: scored samples per second per family, in-process on one core and in the
worker pool (issue 4). Prints a table and writes bench/results/rewards.json.

Each family scores a seeded batch shaped like a training step: groups of 8 rollouts per
record (so per-record caches such as a decoded mask or a parsed math reference are reused
within a group, as in training), each group a mix of the perfect answer (the serialized
annotation), answers with randomized digits (plausible but wrong, through the whole parse and
score path) and truncated answers. Neither path has seen the batch before it is timed.

    PYTHONPATH=src python bench/rewards.py [--samples 3000] [--math-samples 300] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from videorl.data.families import SI_CHOICE_SUBTYPES, SI_NUMERIC_SUBTYPES, Family, families
from videorl.data.records import TaskRecord, record_from_dict
from videorl.rewards import RewardConfig, ScoringPool, score_response, serialize_annotation

RESULTS = Path(__file__).parent / "results" / "rewards.json"
MATH_REFERENCES = [
    "\\frac{{{a}}}{{{b}}}",
    "{a}\\sqrt{{{b}}}",
    "x^2+{a}x+{b}",
    "\\{{{a},{b}\\}}",
    "{a}.{b}",
]


def _box(rng: random.Random, size: float = 1000.0) -> list[float]:
    x, y = rng.uniform(0, size / 2), rng.uniform(0, size / 2)
    return [
        round(x, 1),
        round(y, 1),
        round(x + rng.uniform(10, size / 2), 1),
        round(y + rng.uniform(10, size / 2), 1),
    ]


def _mask(rng: random.Random, height: int = 240, width: int = 320) -> dict[str, Any]:
    pixels = np.zeros((height, width), dtype=np.uint8)
    top, left = rng.randrange(height // 2), rng.randrange(width // 2)
    pixels[top : top + height // 3, left : left + width // 3] = 1
    counts = mask_utils.encode(np.asfortranarray(pixels))["counts"].decode()
    return {"size": [height, width], "counts": counts}


def make_record(family: Family, index: int, rng: random.Random) -> TaskRecord:
    """A random record of `family` in the generic JSON form."""
    data: dict[str, Any] = {"id": f"{family.short}-{index}", "family": family.value, "problem": "q"}
    data["video"] = {"path": "clip.mp4"}
    if family == Family("temporal_grounding"):
        start = round(rng.uniform(0, 100), 2)
        data.update(
            answer={"windows": [[start, round(start + rng.uniform(1, 30), 2)]]}, duration=140.0
        )
    elif family == Family("spatial_grounding"):
        data.update(answer={"box": _box(rng)}, box_format="norm1000")
    elif family == Family("segmentation"):
        points = [[round(rng.uniform(0, 320), 1), round(rng.uniform(0, 240), 1)] for _ in range(6)]
        answer = {
            "box": _box(rng, 240),
            "positive_points": points[:3],
            "negative_points": points[3:],
        }
        if index % 2:
            answer.update(time=round(rng.uniform(0, 20), 1), mask_rle=_mask(rng))
        data["answer"] = answer
    elif family == Family("tracking"):
        data["answer"] = {"boxes": {str(frame * 5): _box(rng) for frame in range(16)}}
    elif family == Family("spatio_temporal_grounding"):
        data.update(
            answer={"time": [2.0, 10.0], "boxes": {str(s): _box(rng) for s in range(2, 10)}},
            duration=20.0,
        )
    elif family == Family("video_qa"):
        data["answer"] = {"letter": rng.choice("ABCD")}
    elif family == Family("spatial_intelligence"):
        if index % 2:
            data.update(
                answer={"value": round(rng.uniform(0.1, 20), 2)},
                subtype=rng.choice(SI_NUMERIC_SUBTYPES),
            )
        else:
            data.update(
                answer={"letter": rng.choice("ABCD")}, subtype=rng.choice(SI_CHOICE_SUBTYPES)
            )
    else:
        del data["video"]
        template = rng.choice(MATH_REFERENCES)
        data["answer"] = {"text": template.format(a=rng.randrange(1, 50), b=rng.randrange(2, 50))}
    return record_from_dict(data)


def make_response(record: TaskRecord, index: int, rng: random.Random) -> str:
    oracle = serialize_annotation(record)
    kind = index % 3
    if kind == 0:
        return oracle
    if kind == 1:
        return re.sub(r"\d", lambda _: str(rng.randrange(10)), oracle)
    return oracle[: len(oracle) // 2]  # truncated


GROUP = 8


def samples(family: Family, count: int, seed: int) -> tuple[list[TaskRecord], list[str]]:
    """`count` rows: groups of GROUP rollouts, each group sharing one record object."""
    rng = random.Random(seed)
    prompts = [make_record(family, i, rng) for i in range(max(1, count // GROUP))]
    records = [prompt for prompt in prompts for _ in range(GROUP)]
    return records, [make_response(r, i, rng) for i, r in enumerate(records)]


def single_core_rate(
    records: list[TaskRecord], responses: list[str], config: RewardConfig
) -> float:
    start = time.perf_counter()
    for record, response in zip(records, responses, strict=True):
        score_response(record, response, config)
    return len(records) / (time.perf_counter() - start)


def pool_rate(pool: ScoringPool, records: list[TaskRecord], responses: list[str]) -> float:
    start = time.perf_counter()
    pool.score(records, responses)
    return len(records) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3000, help="samples per family")
    parser.add_argument(
        "--math-samples", type=int, default=300, help="samples for math (sympy is slow)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    local = RewardConfig(num_workers=1)
    pooled = RewardConfig(num_workers=args.workers, timeout_s=30.0)
    rows: dict[str, dict[str, float]] = {}
    with ScoringPool(pooled) as pool:
        for family in families():
            count = args.math_samples if family == Family("math") else args.samples
            # Warm-up on other seeds: imports, worker start-up.
            warm_records, warm_responses = samples(family, 4 * GROUP, args.seed + 1)
            single_core_rate(warm_records, warm_responses, local)
            pool.score(warm_records, warm_responses)
            records, responses = samples(family, count, args.seed)
            single = single_core_rate(records, responses, local)
            records, responses = samples(family, count, args.seed)  # fresh objects, cold caches
            pooled_rate = pool_rate(pool, records, responses)
            mean = sum(
                score_response(r, t, local).overall for r, t in zip(records, responses, strict=True)
            )
            rows[family.value] = {
                "samples": len(records),
                "mean_reward": round(mean / len(records), 4),
                "single_core_per_s": round(single, 1),
                "pool_per_s": round(pooled_rate, 1),
            }

    header = f"{'family':<28}{'samples':>8}{'1 core /s':>12}{f'pool({args.workers}) /s':>14}{'mean r':>8}"
    print(header)
    print("-" * len(header))
    for name, row in rows.items():
        print(
            f"{name:<28}{row['samples']:>8}{row['single_core_per_s']:>12,.0f}"
            f"{row['pool_per_s']:>14,.0f}{row['mean_reward']:>8.3f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    machine = {
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),  # other jobs share these cores
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    RESULTS.write_text(
        json.dumps({"workers": args.workers, "machine": machine, "families": rows}, indent=2) + "\n"
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
