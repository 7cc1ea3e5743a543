"""Run `videorl ...` in-process exactly as the console script does (`videorl.cli.main`):
user errors become one line and exit code 2."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from os import PathLike


@dataclass(frozen=True)
class CliResult:
    code: int
    output: str  # stdout and stderr together

    @property
    def lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.strip()]


def run_cli(capsys, monkeypatch, *args: str | PathLike[str]) -> CliResult:
    from videorl.cli import main

    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["videorl", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return CliResult(code, captured.out + captured.err)
