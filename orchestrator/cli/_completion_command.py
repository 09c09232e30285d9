"""``orchestrator completion bash|zsh|tcsh``: a shell completion script for the command line.

Made from the parser itself by shtab, so every command and option of this version completes
(file arguments complete as files). Printed, not installed: where a shell reads completions
from differs between systems and users (the command's help says where bash looks).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

import shtab

from ._conventions import EXIT_OK

__all__: list[str] = []


def completion(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator completion SHELL``."""
    from ._main import build_parser

    parser = build_parser()
    _complete_paths_as_files(parser)
    out.write(shtab.complete(parser, shell=args.shell))
    return EXIT_OK


def _complete_paths_as_files(parser: argparse.ArgumentParser) -> None:
    """Every argument that takes a path (``type=Path``) completes as a file name."""
    for action in parser._actions:
        if action.type is Path:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                _complete_paths_as_files(command)
