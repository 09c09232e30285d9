"""``orchestrator sessions``, and how every command finds the session a user names.

Light on purpose: listing sessions reads the journal's sessions table only, so this module
loads SQLite and the journal reader, not the AHP model, the graph or the projections.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

import attrs

from orchestrator.base import ConfigError, FactLogError, ScheduleError, utc_now
from orchestrator.journal import JournalReader, SessionInfo, open_reader

from ._conventions import EXIT_OK, default_db

__all__: list[str] = []


def reader_of(args: argparse.Namespace) -> JournalReader:
    return open_reader(args.db or default_db())


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
            f"no session {wanted!r} (orchestrator sessions lists them)", source=reader.source
        )
    shown = ", ".join(s.session for s in matching[:3])
    raise FactLogError(
        f"{wanted!r} names {len(matching)} sessions ({shown}...); give more of the id",
        source=reader.source,
    )


def sessions(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator sessions``: a table with a header (or ``--json``), oldest first.

    A fork's row says where it came from (the source's id, and the turn or fact it was forked
    at); with ``--tree``, each fork is listed under its source, indented.
    """
    reader = reader_of(args)
    found = reader.sessions(status=args.status, team=args.team, limit=args.limit)
    if args.json:
        json.dump([s.to_json() for s in found], out, indent=2)
        out.write("\n")
        return EXIT_OK
    if not found:
        print(f"no sessions{_filters(args)} in {reader.source}", file=out)
        return EXIT_OK
    forks = any(s.forked_from is not None for s in found)
    ordered = _family_order(found) if args.tree else [(s, 0) for s in found]
    header = ["SESSION", "STATUS", "CREATED", "FACTS", "TEAM"]
    header += ["FORKED FROM"] if forks else []
    rows = [[*header, "TITLE"]]
    for s, depth in ordered:
        name = ("  " * (depth - 1) + "└ " if depth else "") + s.session
        row = [name, s.status, s.created_at, str(s.last_sequence), s.team]
        row += [_lineage(s)] if forks else []
        rows.append([*row, _one_line(s.title)])
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)
    return EXIT_OK


def _lineage(info: SessionInfo) -> str:
    """Where a fork came from, in a table's cell: the source's id's start, and the point."""
    if info.forked_from is None:
        return "-"
    source = info.forked_from.removeprefix("ahp-session:/")[:8]
    if info.forked_turn is not None:
        return f"{source} turn {info.forked_turn}"
    return f"{source} fact {info.forked_at}"


def _family_order(found: list[SessionInfo]) -> list[tuple[SessionInfo, int]]:
    """The sessions, each fork right under its source (oldest first at each level), with its
    depth; a fork whose source is not listed (a filter left it out) stands first."""
    listed = {s.session for s in found}
    children: dict[str, list[SessionInfo]] = {}
    roots = []
    for info in found:
        if info.forked_from in listed:
            children.setdefault(info.forked_from, []).append(info)
        else:
            roots.append(info)
    ordered: list[tuple[SessionInfo, int]] = []
    stack = [(info, 0) for info in reversed(roots)]
    while stack:
        info, depth = stack.pop()
        ordered.append((info, depth))
        stack += [(child, depth + 1) for child in reversed(children.get(info.session, []))]
    return ordered


def prune(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator prune --older-than 30d [--dry-run]``."""
    from orchestrator.journal import prune as prune_journal
    from orchestrator.spec import parse_duration

    try:
        older_than = parse_duration(args.older_than)
    except ScheduleError as exc:
        raise ConfigError(exc.message, file="--older-than") from None
    report = prune_journal(
        args.db or default_db(), older_than=older_than, now=utc_now(), dry_run=args.dry_run
    )
    if args.json:
        json.dump(attrs.asdict(report), out, indent=2)
        out.write("\n")
        return EXIT_OK
    verb = "would remove" if report.dry_run else "removed"
    print(
        f"{verb} {len(report.sessions)} ended session(s) last written before {report.cutoff}"
        f" ({report.facts} facts)",
        file=out,
    )
    for session in report.sessions if report.dry_run else ():
        print(f"  {session}", file=out)
    if not report.dry_run and report.sessions:
        size = f"{_mb(report.bytes_before)} → {_mb(report.bytes_after)}"
        print(
            f"journal {size}"
            + (
                ""
                if report.vacuumed
                else " (not compacted: the journal was busy; its free space is reused)"
            ),
            file=out,
        )
    return EXIT_OK


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _one_line(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _filters(args: argparse.Namespace) -> str:
    said = [f"{key} {value}" for key in ("status", "team") if (value := getattr(args, key))]
    return f" ({', '.join(said)})" if said else ""
