"""``orchestrator init [DIR]``: a starter team directory, written from the package's data.

The starter teams live in ``orchestrator/cli/starter/`` (package data, so an installed
orchestrator has them): a scripted team that runs offline, one on an OpenAI-compatible
server, a background teammate, and a README. Nothing is overwritten: if any file to be
written exists, the command names them all and writes none.
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path
from typing import TextIO

from orchestrator.base import OrchestratorError

from ._conventions import EXIT_OK

__all__: list[str] = []


def init(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator init``."""
    target: Path = args.directory
    starter = resources.files("orchestrator.cli").joinpath("starter")
    files = sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in starter.iterdir()
        if entry.is_file()
    )
    existing = [str(target / name) for name, _ in files if (target / name).exists()]
    if existing:
        raise OrchestratorError(
            f"not overwriting {', '.join(existing)}: move {'it' if len(existing) == 1 else 'them'}"
            " away or choose another directory"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in files:
            with (target / name).open("x", encoding="utf-8") as written:
                written.write(text)
    except OSError as exc:
        raise OrchestratorError(f"cannot write to {target}: {exc.strerror or exc}") from exc
    for name, _ in files:
        print(f"wrote {target / name}", file=out)
    print(
        f"\nnext:\n  orchestrator teams check {target}\n"
        f'  orchestrator run {target / "offline.toml"} "Write the release notes"',
        file=out,
    )
    return EXIT_OK
