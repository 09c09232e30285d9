"""``orchestrator teams check``: team files validated as ``run`` and ``serve`` load them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from orchestrator.base import TeamFileError
from orchestrator.runtime.backends import backend_problems
from orchestrator.spec import check_team, load_team

from ._conventions import EXIT_BAD_INPUT, EXIT_OK

__all__: list[str] = []


def check(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator teams check``."""
    paths: Sequence[Path] = args.paths
    files = list(paths) or sorted(Path("teams").glob("*.toml"))
    if not files:
        raise TeamFileError("no team files to check (give a PATH)", file="teams/")
    status = EXIT_OK
    for path in files:
        # A file that parses has its plugin backends looked up too (imported, not made).
        problems = check_team(path) or backend_problems(load_team(path))
        if problems:
            status = EXIT_BAD_INPUT
            for problem in problems:
                print(problem, file=out)
        else:
            print(f"ok: {path}", file=out)
    return status
