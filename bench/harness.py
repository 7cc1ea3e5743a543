"""What the benchmark scripts share: the bench model and data (built once, offline), the bench
recipe, medians and spreads, machine facts, Markdown tables and the results file.

Every script takes `--quick` (the tiny model, one repeat: a smoke run for tests, numbers not
meaningful), `--work DIR` (where models and data are built; default `runs/bench`), `--out
FILE` (default `bench/results/NAME.json`) and `--threads N` (torch intra-op threads; default 1,
because on cores shared with other jobs a multi-threaded op waits for its slowest thread and
repeated timings swing by up to 10x; ratios of variants are what these scripts report).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
RECIPE = ROOT / "configs" / "quickstart.yaml"
ARCH = "qwen2_5_vl"


def parse_args(
    parser: argparse.ArgumentParser, name: str, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """Add the common options to `parser`, parse, and set up torch and logging."""
    parser.add_argument("--quick", action="store_true", help="tiny model, one repeat: a smoke run")
    parser.add_argument(
        "--work", type=Path, default=ROOT / "runs" / "bench", help="models and data go here"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / f"{name}.json", help="results file")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on shared, oversubscribed cores, several threads "
        "wait on each other and the times swing by 10x)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    quiet(args.threads)
    return args


def model_options(parser: argparse.ArgumentParser) -> None:
    """`--size` (tiny | bench, default bench) and `--arch` of the bench model."""
    parser.add_argument("--size", default="bench", choices=("tiny", "bench"))
    parser.add_argument("--arch", default=ARCH, choices=("qwen2_5_vl", "qwen3_vl"))


def quiet(threads: int) -> None:
    """Fixed thread count, no tokenizer threads, no progress bars or library warnings."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import torch
    import transformers

    torch.set_num_threads(threads)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("videorl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


def model_dir(work: Path, size: str, arch: str = ARCH, seed: int = 0) -> Path:
    """A random-init model of `size` (`tiny` ~0.5 M params, `bench` ~28 M), built once."""
    from videorl.models.tiny import build_tiny_model

    path = work / "models" / f"{arch}-{size}-seed{seed}"
    if not (path / "config.json").is_file():
        build_tiny_model(arch, path, size=size, seed=seed)
    return path


def synth_data(work: Path, family: str, n: int, seed: int = 0) -> Path:
    """`n` synthetic records of `family` with their media, built once; returns records.jsonl."""
    from videorl.data.synth import synthesize

    folder = work / "data" / f"{family}-n{n}-seed{seed}"
    path = folder / "records.jsonl"
    if not path.is_file():
        synthesize(folder, [family], n=n, seed=seed)
    return path


def recipe(model: Path, train: Path, work: Path, *overrides: str):
    """The quickstart recipe (OraRL, pruning on) on `model` and `train`, no sinks, no validation."""
    from videorl.config import load_config

    base = [
        f"model.path={model}",
        f"data.train={train}",
        "data.val=null",
        f"trainer.output_dir={work / 'train'}",
        "trainer.tensorboard=false",
        "trainer.val_every=0",
        "trainer.save_every=0",
    ]
    return load_config(RECIPE, [*base, *overrides])


class Elapsed:
    """Wall-clock and process CPU seconds of a `with` block. With one torch thread, CPU time is
    the work done, which other jobs on shared cores cannot stretch; wall time is what a user
    waits."""

    def __enter__(self) -> Self:
        self._start = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self._start[0]
        self.cpu = time.process_time() - self._start[1]


class RunFacts:
    """What every results file ends with: the machine as the run started and the run's wall
    seconds (`facts()`, taken when the results are assembled)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.machine = machine()

    def facts(self) -> dict[str, Any]:
        return {"machine": self.machine, "wall_s": round(time.perf_counter() - self.started, 1)}


def endless(sampler: Iterable[list[int]]) -> Iterator[list[int]]:
    """Batches of record indices, epoch after epoch."""
    while True:
        yield from sampler


def model_params(model: Any) -> dict[str, float]:
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"params_m": round(total / 1e6, 2), "trainable_params_m": round(trainable / 1e6, 2)}


def mean_present(values: Iterable[float | None]) -> float:
    """The mean of the values that are not None; NaN when none is (a curve too short to read)."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else float("nan")


def spread(values: Sequence[float], digits: int = 4) -> dict[str, Any]:
    """Median, min and max of repeated measurements (and the values themselves)."""
    values = [float(v) for v in values]
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
        "values": [round(v, digits) for v in values],
    }


def fmt(stat: dict[str, Any], unit: str = "", digits: int = 2) -> str:
    """`1.23 (1.10-1.40)`: median and range of a `spread`."""
    return f"{stat['median']:.{digits}f}{unit} ({stat['min']:.{digits}f}-{stat['max']:.{digits}f})"


def machine() -> dict[str, Any]:
    import torch
    import transformers

    return {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),  # other jobs share these cores
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
    }


def selection_variants(group: Any, cfg: Any) -> dict[str, Any]:
    """A scored group (policy rows + annotation rows) selected three ways, each with the
    recipe's post-selection correction: `cfg`'s OraRL selection, OraRL unpruned, and GRPO
    over the policy rows alone."""
    import dataclasses

    import torch

    from videorl.config import AlgorithmConfig
    from videorl.trainer.stages import compute_advantages, select

    orarl = compute_advantages(group, cfg.algorithm)
    pruning, n = cfg.algorithm.pruning, cfg.rollout.n
    unpruned = dataclasses.replace(pruning, enabled=False)
    policy = group.subset(torch.nonzero(~group.is_annotation).flatten())
    grpo = compute_advantages(policy, AlgorithmConfig(estimator="grpo"))
    return {
        "orarl_pruned": select(orarl, pruning, n),
        "unpruned": select(orarl, unpruned, n),
        "grpo": select(grpo, unpruned, n),
    }


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _markers(script: str) -> tuple[str, str]:
    return f"<!-- table: {script} -->", f"<!-- end of table: {script} -->"


def marked_text(page: Path, script: str) -> str:
    """What `page` holds between the table markers of `script` (e.g. `bench/table.py`)."""
    start, end = _markers(script)
    return page.read_text().split(start, 1)[1].split(end, 1)[0].strip()


def write_marked(page: Path, script: str, text: str) -> None:
    """Replace what `page` holds between the table markers of `script` with `text`."""
    start, end = _markers(script)
    before, rest = page.read_text().split(start, 1)
    page.write_text(f"{before}{start}\n{text}\n{end}{rest.split(end, 1)[1]}")


# True: `videorl` runs each command in this interpreter (`in_process`), as the smoke runs that
# the tests make do (no interpreter start-up and torch import per command).
IN_PROCESS = False

# OMP_NUM_THREADS for the `videorl` commands this thread starts (None: inherit this process's
# environment); a context variable, so concurrent cells of a bench can differ.
CHILD_THREADS: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "CHILD_THREADS", default=None
)


@contextlib.contextmanager
def child_threads(threads: int | None) -> Iterator[None]:
    """Run the `videorl` commands started in this block with `OMP_NUM_THREADS=threads`."""
    token = CHILD_THREADS.set(threads)
    try:
        yield
    finally:
        CHILD_THREADS.reset(token)


def _child_env() -> dict[str, str] | None:
    """OMP_NUM_THREADS as `child_threads` set it, with passive waiting: on cores shared with
    other jobs, spinning threads of a multi-threaded op wait on each other (a 2-thread SFT step
    took 6-8 s where one thread took 1); how the threads wait does not change the arithmetic."""
    threads = CHILD_THREADS.get()
    if threads is None:
        return None
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}


def videorl(*args: object) -> float:
    """One `videorl` command, as a user types it (this interpreter, the working directory,
    `child_threads`' OMP_NUM_THREADS when set); returns its wall seconds."""
    if IN_PROCESS:
        return in_process(*args)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "videorl", *map(str, args)], check=True, env=_child_env())
    return time.perf_counter() - start


def in_process(*args: object) -> float:
    """`videorl *args` in this interpreter; a non-zero exit is an error naming the command."""
    from videorl.cli import main

    start, argv = time.perf_counter(), sys.argv
    sys.argv = ["videorl", *map(str, args)]
    try:
        main()
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            line = " ".join(map(str, args))
            raise RuntimeError(f"videorl {line} exited with {exit_.code}") from None
    finally:
        sys.argv = argv
    return time.perf_counter() - start


def videorl_at_root(*args: object, env: dict[str, str] | None = None) -> float:
    """`videorl *args` from the repository root, under `env`, its stdout discarded; returns
    its wall seconds. In this interpreter when IN_PROCESS (where `env` cannot apply)."""
    start = time.perf_counter()
    if IN_PROCESS:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            in_process(*args)
    else:
        command = [sys.executable, "-m", "videorl", *map(str, args)]
        subprocess.run(command, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def run_once(out: Path, *args: object) -> float:
    """`videorl *args`, whose outputs go to `out`, unless an earlier run finished there (its
    `seconds.txt`); returns the wall seconds it took."""
    timing = out / "seconds.txt"
    if not timing.is_file():
        seconds = videorl(*args)
        timing.write_text(f"{seconds:.1f}\n")
    return float(timing.read_text())


def write_results(path: Path, payload: dict[str, Any]) -> None:
    """Write the results JSON; `machine` records the load at the end of the run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**payload, "machine_at_end": machine()}, indent=2) + "\n")
    print(f"wrote {path}")
