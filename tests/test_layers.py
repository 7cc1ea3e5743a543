"""The package's imports run one way: each module imports only from its own layer or below,
and no modules import each other in a circle (docs/design.md#layers).

Checked statically over every `import` in `src/videorl`, function-level imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import cast

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "videorl"

# Top to bottom. `config` composes the section configs that the lower packages own
# (algorithms, rewards, video), so it sits above them and below their users; its plumbing
# (`config.constraints`, `config.loader`, `config.keys`: the field constraints, the YAML and
# override builder, the key table) sits at the bottom, for the sections below to use, and its
# generated reference (`config.reference`) at the top. A dotted entry places that submodule
# apart from its package. `tasks` (one module per task family) assembles each family from the
# prompts, rewards, evaluation and demo of the layers below; those reach a family only
# through `data.families.TASKS`, the registry that imports the family modules on first lookup.
LAYERS: list[set[str]] = [
    {"cli", "__main__", "doctor", "config.reference"},
    {"api"},
    {"tasks"},
    {"trainer", "eval", "demo", "serve"},
    {"inference"},
    {"rollout"},
    {"config"},
    {"models", "rewards", "algorithms"},
    {"data"},
    {"video"},
    {
        "config.constraints",
        "config.keys",
        "config.loader",
        "distributed",
        "errors",
        "hub",
        "outputs",
        "quickstart",
        "reduction",
        "registry",
        "versions",
    },
]


def _layer(module: str) -> int:
    """The layer of `videorl.a.b.c`: the first of `a.b.c`, `a.b`, `a` that LAYERS names."""
    parts = module.split(".")[1:] or [module]
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        for depth, names in enumerate(LAYERS):
            if name in names:
                return depth
    raise AssertionError(f"src/videorl/{parts[0]} has no layer: add it to LAYERS in {__file__}")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, fallback) per imported name: `from pkg import x` names `pkg.x` when x is a
    submodule, else `pkg` itself."""
    found: list[tuple[str, str]] = []
    package = (
        _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    )
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found += [(f"{base}.{alias.name}", base) for alias in node.names]
    return [pair for pair in found if pair[1] == "videorl" or pair[1].startswith("videorl.")]


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for preferred, fallback in _imports(path):
            imported = preferred if preferred in modules else fallback
            if imported in modules and imported not in (name, "videorl"):
                targets.add(imported)
        graph[name] = targets
    return graph


def test_imports_run_downward_only():
    upward = [
        f"{src} -> {dst}"
        for src, targets in _graph().items()
        if src != "videorl"
        for dst in sorted(targets)
        if _layer(dst) < _layer(src)
    ]
    assert not upward, "imports that run upward:\n" + "\n".join(sorted(upward))


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circles():
    cycle = _cycle({k: v for k, v in _graph().items() if k != "videorl"})
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_test_model_builder_is_used_only_by_make_tiny():
    users = [src for src, targets in _graph().items() if "videorl.models.tiny" in targets]
    assert set(users) <= {"videorl.api"}, f"only `videorl make-tiny` may build test models: {users}"


def test_trainer_functions_fit_one_screen():
    """The orchestration layer reads at a glance: no function in `trainer/` over 60 lines."""
    long = []
    for path in sorted((PACKAGE / "trainer").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = cast(int, node.end_lineno) - node.lineno + 1  # set by ast.parse
                if lines > 60:
                    long.append(f"{path.name}:{node.name} ({lines} lines)")
    assert not long, f"split these into stages: {long}"
