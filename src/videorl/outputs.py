"""Output folders that are never silently reused: nothing lost, nothing mixed.

Every command that writes a folder (`train`, `sft`, `merge`, `prepare`, `synth`,
`eval --out`) asks this module first:
- `refuse_nonempty(out, overwrite=...)`: a folder that already holds files is refused
  unless the user passed `--overwrite`;
- `refuse_own_inputs(out, inputs)`: the output may never be, contain or lie inside one of
  the command's inputs, whatever `--overwrite` says (merging a run's checkpoint into the
  run folder, or preparing a mixture into the folder of its own source);
- `stage_folder(final, fill, replace=...)`: a folder written into a temporary sibling and
  renamed into place, so a crash leaves the old folder or the new one; an existing folder is
  replaced only when `replace` is set (by a command that created it, or on `--overwrite`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from videorl.errors import ConfigError

TMP_PREFIX = ".tmp-"  # half-written folders and files; removed when a run starts again
OLD_PREFIX = ".old-"  # a replaced folder between its two renames


def is_empty(folder: str | os.PathLike) -> bool:
    """True for a missing folder or one without entries."""
    path = Path(folder)
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def refuse_nonempty(
    out: str | os.PathLike, *, overwrite: bool, option: str = "--out", fix: str = ""
) -> None:
    """Raise unless `out` is missing, empty, or the user asked to `--overwrite` it."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {str(path)!r} is a file, not a folder; choose a folder path")
    if overwrite or is_empty(path):
        return
    raise ConfigError(
        f"{option} {str(path)!r} is not empty; pass --overwrite to replace what is there"
        + (f", {fix}" if fix else "")
        + " or choose another folder"
    )


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def refuse_own_inputs(
    out: str | os.PathLike, inputs: Iterable[tuple[str, str | os.PathLike | None]], option: str
) -> None:
    """Raise when the output folder is, contains or lies inside a named input path."""
    target = Path(os.path.realpath(out))
    for name, path in inputs:
        if path is None:
            continue
        source = Path(os.path.realpath(path))
        if _inside(source, target) or _inside(target, source):
            raise ConfigError(
                f"{option} {str(out)!r} overlaps its own input {name} {str(path)!r}; "
                "write to a folder outside the inputs"
            )


def stage_folder(final: Path, fill: Callable[[Path], None], *, replace: bool) -> Path:
    """Call `fill(tmp)` on a fresh temporary folder beside `final`, then rename it into
    place. An existing non-empty `final` is swapped out and removed only with `replace`;
    otherwise a `ConfigError` is raised before anything is written."""
    final = Path(final)
    if not replace and not is_empty(final):
        raise ConfigError(
            f"{str(final)!r} is not empty; pass --overwrite to replace it or choose another folder"
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f"{TMP_PREFIX}{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)  # only ever our own, from an earlier attempt
    tmp.mkdir()
    try:
        fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_into_place(tmp, final)
    return final


def swap_into_place(tmp: Path, final: Path) -> None:
    """Rename `tmp` to `final`; an existing `final` is renamed aside first, then removed."""
    if not final.exists():
        os.replace(tmp, final)
        return
    if final.is_dir() and not any(final.iterdir()):
        final.rmdir()
        os.replace(tmp, final)
        return
    old = final.parent / f"{OLD_PREFIX}{final.name}-{os.getpid()}"
    os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def remove_stale_temporaries(folder: str | os.PathLike) -> list[str]:
    """Remove `.tmp-*` folders and files left by killed processes; put back a `.old-NAME-*`
    folder whose NAME is missing (a kill between the two renames), remove the others.
    Returns the names handled."""
    root = Path(folder)
    if not root.is_dir():
        return []
    handled = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(TMP_PREFIX) or entry.name.endswith(".tmp"):
            _remove(entry)
        elif entry.name.startswith(OLD_PREFIX):
            name = entry.name[len(OLD_PREFIX) :].rsplit("-", 1)[0]
            if name and not (root / name).exists():
                os.replace(entry, root / name)
            else:
                _remove(entry)
        else:
            continue
        handled.append(entry.name)
    return handled


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def rewrite_atomically(path: Path, text: str) -> None:
    """Replace a text file's content in one rename (a kill leaves the old or the new)."""
    tmp = path.parent / f"{TMP_PREFIX}{path.name}-{os.getpid()}"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
