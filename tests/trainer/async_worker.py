"""`videorl train quickstart OVERRIDES [--resume R]` through the CLI's entry point (errors
as one line, exit 2), held at a known point by `pause.py`: the async fault tests' run."""

from __future__ import annotations

import sys

from tests.trainer import pause
from videorl.cli import main

if __name__ == "__main__":
    pause.install_from_env()
    sys.argv = ["videorl", "train", "quickstart", *sys.argv[1:]]
    main()
