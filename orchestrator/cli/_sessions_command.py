"""``orchestrator sessions``, and how every command finds the session a user names.

Light on purpose: listing sessions reads the journal's sessions table only, so this module
loads SQLite and the journal reader, not the AHP model, the graph or the projections.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from orchestrator.base import FactLogError
from orchestrator.journal import JournalReader, SessionInfo

from ._conventions import EXIT_OK, default_db

__all__: list[str] = []


def reader_of(args: argparse.Namespace) -> JournalReader:
    return JournalReader(args.db or default_db())


def resolve_session(reader: JournalReader, wanted: str) -> SessionInfo:
    """The session a user named: its URI, or a unique beginning of its id."""
    sessions = reader.sessions()
    exact = [s for s in sessions if s.session == wanted]
    if exact:
        return exact[0]
    prefix = wanted.removeprefix("ahp-session:/")
    matching = [s for s in sessions if s.session.removeprefix("ahp-session:/").startswith(prefix)]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        raise FactLogError(
            f"no session {wanted!r} (orchestrator sessions lists them)", source=str(reader.path)
        )
    shown = ", ".join(s.session for s in matching[:3])
    raise FactLogError(
        f"{wanted!r} names {len(matching)} sessions ({shown}...); give more of the id",
        source=str(reader.path),
    )


def sessions(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator sessions``."""
    reader, as_json = reader_of(args), args.json
    sessions = reader.sessions()
    if as_json:
        json.dump([s.to_json() for s in sessions], out, indent=2)
        out.write("\n")
        return EXIT_OK
    if not sessions:
        print(f"no sessions in {reader.path}", file=out)
        return EXIT_OK
    for s in sessions:
        print(f"{s.session}  {s.status:<9}  {s.created_at}  {s.team}: {s.title}", file=out)
    return EXIT_OK
