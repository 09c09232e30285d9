"""``orchestrator diff A B``: where two sessions of a journal part, and what differs per chat.

As ``diff`` does, it exits 0 when the two did the same, and 1 when they differ.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from orchestrator.core import diff_sessions

from ._conventions import EXIT_FAILED, EXIT_OK
from ._sessions_command import reader_of, resolve_session

__all__: list[str] = []


def diff(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator diff``."""
    reader = reader_of(args)
    a = resolve_session(reader, args.a).session
    b = resolve_session(reader, args.b).session
    found = diff_sessions(reader.facts(a), reader.facts(b))
    if args.json:
        json.dump(found.to_json(), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for line in found.lines():
            print(line, file=out)
    return EXIT_OK if found.same else EXIT_FAILED
