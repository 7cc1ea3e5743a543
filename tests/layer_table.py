"""docs/design.md's layer table, generated from `LAYERS` in tests/test_layers.py.

    python -m tests.layer_table --write   # rewrite the table in docs/design.md

A module's "owns" text is `OWNS[name]`, else the first sentence of its docstring, so a new
or moved module gets a row without an edit here; tests/test_docs.py keeps the page current.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from tests.test_layers import LAYERS, PACKAGE

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
BEGIN = "<!-- layer table: python -m tests.layer_table --write (LAYERS in tests/test_layers.py) -->"
END = "<!-- end of the layer table -->"

OWNS = {
    "cli": "the `videorl` command and its subcommands",
    "__main__": "`python -m videorl`",
    "doctor": "the environment report",
    "config.reference": "the generated configuration reference (`videorl keys`)",
    "api": "`videorl.api`, what a script calls and the commands run ([Python API](api.md))",
    "tasks": (
        "the task families, each registering its parts ([task families](tasks.md)); the layers "
        "below reach them through the registry `data.families.TASKS`, which imports them on "
        "first lookup"
    ),
    "trainer": "the RL and SFT loops",
    "eval": "benchmarks, metrics, reports and plots",
    "demo": "the web demo",
    "serve": "the OpenAI-compatible server",
    "inference": (
        "`RunSettings.from_checkpoint`: how eval, serve and demo prompt a checkpoint as it was "
        "trained"
    ),
    "rollout": (
        "`RolloutBatch`, engines, group building (constructed and annotation rows), prompt decoding"
    ),
    "config": (
        "the config dataclass tree (`config.schema`) of its own sections (`config.sections`) "
        "and those of the layers below, load-time validation across sections; the `--dry-run` "
        "step plan (`config.plan`); a run folder's resolved `config.yaml` (`config.run`)"
    ),
    "models": (
        "loading, the offline tiny-model builder, per-token log-probs with vision inputs, packing"
    ),
    "rewards": "the reward router (each family's reward through `FAMILY_REWARDS`), answer protocols, plug-ins, the judge and sensitivity",
    "algorithms": "the estimator and loss registries and every pure algorithm",
    "data": "`TaskRecord`, the task registry `TASKS`, formats and loaders, synthetic data, the sampler",
    "video": (
        "decoding backends (seeking to keyframes when sampling is sparse: "
        "[long videos](long_videos.md)), frame sampling, `VideoMeta`, the decode-once cache and "
        "its prefetch workers"
    ),
}
ORDER = {name: i for i, name in enumerate(OWNS)}  # a layer's modules in OWNS' order, then a-z
PLUMBING = "plumbing every layer may use"  # the last layer's text


def _docstring_sentence(name: str) -> str:
    base = PACKAGE.joinpath(*name.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or name
    first = " ".join(text.split("\n\n")[0].split())
    end = re.search(r"\.(\s|$)", first)
    return first[: end.start()] if end else first


def table() -> str:
    """The markdown table: one row per layer, top to bottom."""
    rows = ["| layer | modules | owns |", "|---|---|---|"]
    for depth, names in enumerate(LAYERS, start=1):
        ordered = sorted(names, key=lambda n: (ORDER.get(n, len(ORDER)), n))
        modules = ", ".join(f"`{n}`" for n in ordered)
        owns = (
            PLUMBING
            if depth == len(LAYERS)
            else "; ".join(OWNS.get(n) or _docstring_sentence(n) for n in ordered)
        )
        rows.append(f"| {depth} | {modules} | {owns} |")
    return "\n".join(rows) + "\n"


def rewritten(page: str) -> str:
    """`page` with the text between the markers replaced by `table()`."""
    head, sep, rest = page.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"{DESIGN} lacks the markers {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n{table()}{END}{tail}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DESIGN.write_text(rewritten(DESIGN.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(table(), end="")
