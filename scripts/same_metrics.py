"""Collect or compare the behaviour snapshot of scripts/same_metrics.sh.

`--collect DIR` writes DIR/metrics.json: every run's metrics lines and every eval's JSON
files, the sha256 of every final model's weights and record file, timing keys (`*time*`, `*seconds*`, `*/s`, `*per_s*`) left out. `BEFORE AFTER` prints
each differing value and exits 1 when any differs."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

TIMING = re.compile(r"created|time|seconds|per_s|_s$|/s$|wall|elapsed|throughput|tokens_per|mem")


def _clean(value):
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if not TIMING.search(str(k))}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def collect(root: Path) -> dict:
    found: dict = {}
    for path in sorted(root.rglob("*.json*")):
        rel = str(path.relative_to(root))
        if rel == "metrics.json" or "/model" in rel or rel.startswith("model"):
            continue
        if path.suffix == ".jsonl" and not path.name.startswith(
            ("metrics", "predictions", "samples")
        ):
            continue
        text = path.read_text().replace(str(root), "$D")
        try:
            if path.suffix == ".jsonl":
                found[rel] = [
                    _clean(json.loads(line)) for line in text.splitlines() if line.strip()
                ]
            else:
                found[rel] = _clean(json.loads(text))
        except json.JSONDecodeError:
            continue
    for path in sorted([*root.rglob("final/*.safetensors"), *root.glob("*/*.jsonl")]):
        if path.name.startswith("metrics"):
            continue  # timings inside; compared value by value above
        found[f"sha256:{path.relative_to(root)}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def diff(a, b, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}/{k}: only before" for k in a.keys() - b.keys()]
        out += [f"{where}/{k}: only after" for k in b.keys() - a.keys()]
        for k in a.keys() & b.keys():
            out += diff(a[k], b[k], f"{where}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in diff(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} -> {b!r}"]


def main() -> int:
    if sys.argv[1] == "--collect":
        root = Path(sys.argv[2])
        found = collect(root)
        (root / "metrics.json").write_text(json.dumps(found, indent=1, sort_keys=True))
        print(f"{root}/metrics.json: {len(found)} files")
        return 0
    before, after = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
    differences = diff(before, after)
    for line in sorted(differences)[:200]:
        print(line)
    print(f"{len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
