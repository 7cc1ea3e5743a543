"""An eval's output folder (`--out`): the names of what it writes, and claiming the folder.

Kept apart from `eval/runner.py` (which imports the models' and videos' stack) so that
`videorl eval --compare`, which only reads these files, starts in well under a second.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from videorl.errors import ConfigError
from videorl.outputs import refuse_nonempty, refuse_own_inputs

PREDICTIONS, METRICS, SAMPLES, REPORT, PLOTS = (
    "predictions.jsonl",
    "metrics.json",
    "samples.jsonl",
    "report.md",
    "plots",
)
CONTROLS_DIR = "controls"  # one eval per video control under it (`eval/controls.py`)
NO_TOOLS_DIR = "no_tools"  # the same eval without tools (`eval/tools.py`)
COMPARE = "compare.md"


def claim_out_dir(
    out_dir: Path,
    *,
    overwrite: bool,
    resume: bool,
    inputs: Sequence[tuple[str, str | Path | None]] = (),
    keep: str | Path | None = None,
) -> None:
    """Refuse an `--out` that overlaps an input, or that already holds files unless the
    user continues its predictions (`resume`) or replaces it (`overwrite`: the outputs of
    the earlier eval are removed, except the `keep` file, e.g. the --predictions input)."""
    if overwrite and resume:
        raise ConfigError("pass one of --resume (continue --out) or --overwrite (replace it)")
    refuse_own_inputs(out_dir, inputs, "--out")
    if resume:
        return
    refuse_nonempty(out_dir, overwrite=overwrite, fix="--resume to continue the predictions there")
    keep_path = Path(keep).resolve() if keep is not None else None
    for name in (PREDICTIONS, METRICS, SAMPLES, REPORT, PLOTS, CONTROLS_DIR, NO_TOOLS_DIR, COMPARE):
        path = out_dir / name
        if not path.exists() or path.resolve() == keep_path:
            continue
        shutil.rmtree(path) if path.is_dir() else path.unlink()
