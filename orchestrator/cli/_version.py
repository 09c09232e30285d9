"""``orchestrator --version``: the installed distribution's version, looked up only when
asked (building the parser, and ``--help``, do not read the package metadata)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

__all__: list[str] = []


class ShowVersion(argparse.Action):
    """Print ``orchestrator VERSION`` and exit, as argparse's ``version`` action does."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print the version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        import orchestrator

        print(f"{parser.prog} {orchestrator.__version__}", file=sys.stdout)
        parser.exit()
