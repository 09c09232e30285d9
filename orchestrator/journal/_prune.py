"""Pruning a journal: ended sessions older than a cutoff, removed with all they hold.

``orchestrator prune --older-than 30d`` removes every session whose run ended (completed,
failed or cancelled) and was last written before the cutoff. It removes its facts, snapshots
(and their parts), agent-channel history, team file and its row in ``sessions``, in one
transaction. Then it runs ``VACUUM`` so the file shrinks. A running session is never touched,
however old.

The ``chats`` rows stay (a chat URI and its session, a few dozen bytes each): a chat URI a
client once used stays taken, as it is for a session that still exists.

It may run beside a daemon writing the same journal (SQLite's locks keep the two apart: the
delete waits for the daemon's batch, or the daemon for the delete). ``VACUUM`` needs the file
to itself for a moment; when the daemon is busy it is skipped, and :class:`PruneReport` says
so (the space is reused by later writes either way).

A PostgreSQL journal (``--db postgresql://...``) is pruned by :mod:`.postgres._prune`, with the
same choice of sessions (and the leases of several daemons honoured); :func:`._interface.
prune` picks one by what ``--db`` names.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
from pathlib import Path

import attrs

from orchestrator.base import timestamp

from ._file import _check_file, _error, _from_sqlite
from ._schema import SCHEMA_VERSION

__all__ = ["PruneReport", "prune_sqlite"]

#: Tables that hold a session's data by its ``session`` column, children first.
_SESSION_TABLES = ("facts", "snapshot_parts", "snapshots", "agent_messages", "session_teams")
#: How long a statement waits for the daemon's write lock before giving up.
_BUSY_SECONDS = 30.0


@attrs.frozen(kw_only=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove)."""

    sessions: tuple[str, ...]
    facts: int
    cutoff: str  # sessions last written before this instant
    dry_run: bool
    bytes_before: int
    bytes_after: int
    vacuumed: bool  # False: skipped (a dry run, nothing removed, or the file was busy)


def prune_sqlite(
    path: Path, *, older_than: dt.timedelta, now: dt.datetime, dry_run: bool
) -> PruneReport:
    """Remove the sessions of the journal at ``path`` that ended before ``now - older_than``.

    Synchronous (run it in a worker thread from trio code). :class:`FactLogError` if the
    file is not a journal of this version, or cannot be written.
    """
    if not path.exists():
        raise _error(path, "no journal here")
    version = _check_file(path)
    if version != SCHEMA_VERSION:
        raise _error(
            path,
            f"this journal has schema {version}; open it for writing once (for example with "
            f"orchestrator run --db) to migrate it to {SCHEMA_VERSION}, then prune",
        )
    cutoff = timestamp(now - older_than)
    before = _size(path)
    try:
        connection = sqlite3.connect(path, isolation_level=None, timeout=_BUSY_SECONDS)
    except sqlite3.Error as exc:
        raise _from_sqlite(path, exc, "open the journal") from exc
    try:
        # One write transaction from the choice of sessions to the last delete: a session
        # the daemon takes up meanwhile is either chosen and gone before, or not chosen.
        connection.execute("BEGIN IMMEDIATE")
        sessions = tuple(
            row[0]
            for row in connection.execute(
                "SELECT session FROM sessions WHERE status != 'running' AND updated_at < ? "
                "ORDER BY created_at, rowid",
                (cutoff,),
            )
        )
        connection.execute("CREATE TEMP TABLE pruned (session TEXT PRIMARY KEY)")
        connection.executemany("INSERT INTO pruned VALUES (?)", ((s,) for s in sessions))
        facts = connection.execute(
            "SELECT count(*) FROM facts WHERE session IN (SELECT session FROM pruned)"
        ).fetchone()[0]
        if dry_run or not sessions:
            connection.execute("ROLLBACK")
            return PruneReport(
                sessions=sessions,
                facts=facts,
                cutoff=cutoff,
                dry_run=dry_run,
                bytes_before=before,
                bytes_after=before,
                vacuumed=False,
            )
        for table in (*_SESSION_TABLES, "sessions"):
            connection.execute(f"DELETE FROM {table} WHERE session IN (SELECT session FROM pruned)")
        connection.execute("COMMIT")
        connection.execute("DROP TABLE pruned")
        vacuumed = _vacuum(connection)
    except sqlite3.Error as exc:
        raise _from_sqlite(path, exc, "prune the journal") from exc
    finally:
        connection.close()
    return PruneReport(
        sessions=sessions,
        facts=facts,
        cutoff=cutoff,
        dry_run=False,
        bytes_before=before,
        bytes_after=_size(path),
        vacuumed=vacuumed,
    )


def _vacuum(connection: sqlite3.Connection) -> bool:
    """Shrink the file; False when another connection keeps it busy (the daemon)."""
    connection.execute("PRAGMA busy_timeout=2000")
    try:
        connection.execute("VACUUM")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return False
        raise
    return True


def _size(path: Path) -> int:
    """The journal's bytes on disk: the file and its write-ahead log."""
    total = 0
    for part in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(FileNotFoundError):
            total += os.stat(part).st_size
    return total
