"""A family is one folder: reading a record imports no reward or evaluation code, and the
generic layers name no family."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.rewards.factories import all_records
from videorl.data.families import BUILTIN_FAMILIES, TASKS

SRC = Path(__file__).resolve().parents[2] / "src" / "videorl"
GENERIC = ("data", "rewards", "eval", "demo", "rollout", "trainer")
# Left in the generic layers, each named so that a new one fails: the metric library
# (`eval/metrics`, shared by several families' evaluations) and the dataset formats, which
# name the family of their rows (`data.format: math`; an MCQ row without options is a
# spatial-intelligence number).
KNOWN = {
    "data/formats.py: def from_math",
    "data/formats.py: family == Family('spatial_intelligence')",
    "eval/metrics/boxes.py: def summarize_tracking",
    "eval/metrics/masks.py: def segmentation_scores",
}


def test_parsing_a_record_of_every_family_imports_no_reward_or_evaluation_code():
    rows = [record.to_dict() for record in all_records().values()]
    assert {row["family"] for row in rows} == set(BUILTIN_FAMILIES)
    code = (
        "import json, sys\n"
        "from videorl.data.records import record_from_dict\n"
        f"for row in json.loads({json.dumps(json.dumps(rows))!s}):\n"
        "    record_from_dict(row)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('videorl.eval', 'videorl.rewards'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stdout


def _family_words() -> set[str]:
    """The built-in families' canonical names (a function named after one is family code)."""
    TASKS.names()
    return {name for name in TASKS if name in BUILTIN_FAMILIES} | {"math_answer"}


def _family_names() -> set[str]:
    """Every name a built-in family answers to: canonical, short and aliases."""
    tasks = [TASKS.lookup(name) for name in BUILTIN_FAMILIES]
    return {alias for task in tasks for alias in (task.name, task.short, *task.aliases)}


def _offences(path: Path, words: set[str], names: set[str]) -> list[str]:
    """Family-named functions and comparisons against a family's name in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            word in node.name.lower() for word in words
        ):
            found.append(f"def {node.name}")
        if isinstance(node, ast.Compare):
            constants = [
                c.value
                for side in (node.left, *node.comparators)
                for c in ast.walk(side)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
            if any(value in names for value in constants):
                found.append(ast.unparse(node))
    return found


def test_the_generic_layers_name_no_family():
    words, names = _family_words(), _family_names()
    offences = [
        f"{path.relative_to(SRC)}: {line}"
        for layer in GENERIC
        for path in sorted((SRC / layer).rglob("*.py"))
        for line in _offences(path, words, names)
    ]
    offences = [o for o in offences if o not in KNOWN]
    assert not offences, "\n".join(offences)


def test_the_scan_finds_a_family_named_function_and_a_comparison(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "def score_temporal_grounding(r):\n    return r.family.short == 'tg'\n",
        encoding="utf-8",
    )
    assert len(_offences(module, _family_words(), _family_names())) == 2
