"""Pruning a PostgreSQL journal: :func:`prune_postgres`, the SQLite prune's semantics on a
server that several daemons may be writing.

The same choice as :mod:`.._prune`. Every session whose run ended (completed, failed or
cancelled) and was last written before the cutoff goes. Its facts, snapshots (and their
parts), agent-channel history and team file go with it. Its ``chats`` rows stay (a chat URI
once used stays taken). A running session is never touched, however old.

Several daemons (issue 21): a session a live node holds the lease of (a client attached to
an ended conversation, say) is not pruned, whatever its age: it is in use. Its lease row is
read ``FOR UPDATE`` in the transaction that deletes. So a node taking the lease meanwhile waits
for the prune, and a prune never deletes under a lease taken before it. The leases of the
sessions pruned go with them.

The deletes run in transactions of :data:`BATCH` sessions each, every one choosing again
under its locks. The locks are ``FOR UPDATE`` of the ``sessions`` rows, so a daemon writing a
session waits, or the prune skips the session it wrote since. So a large prune never holds a
whole journal's rows, nor loses what it did if it stops half way. Then a plain ``VACUUM`` of the
tables (it takes no lock a writer waits for) makes the space reusable. PostgreSQL does not give
it back to the file system. ``VACUUM FULL`` would, locking the tables: an administrator's
choice, not ours. So ``bytes_after`` (``pg_database_size``) shrinks little.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Final

import psycopg

from orchestrator.base import FactLogError, timestamp

from .._prune import _SESSION_TABLES, PruneReport
from ._connection import PgConnection, connect, redacted
from ._schema import PG_SCHEMA_VERSION, schema_version

__all__ = ["prune_postgres"]

#: Sessions removed in one transaction.
BATCH: Final = 100

#: The chosen sessions that may go: ended, last written before the cutoff, and held by no
#: live node (locked: the delete that follows sees the same).
_PRUNABLE: Final = (
    "SELECT s.session FROM sessions s WHERE s.status <> 'running' AND s.updated_at < ? "
    "AND s.session = ANY(?::text[]) AND NOT EXISTS (SELECT 1 FROM session_leases l "
    "WHERE l.session = s.session AND l.owner <> '' AND l.expires_at > clock_timestamp()) "
    "ORDER BY s.id FOR UPDATE OF s"
)


def prune_postgres(
    url: str, *, older_than: dt.timedelta, now: dt.datetime, dry_run: bool
) -> PruneReport:
    """Remove the sessions of the PostgreSQL journal at ``url`` that ended before ``now -
    older_than`` (see the module docstring). Blocking; :class:`FactLogError` if the
    database is no journal of this version, or cannot be written."""
    source = redacted(url)
    cutoff = timestamp(now - older_than)
    raw = connect(url, application="orchestrator prune")
    connection = PgConnection(raw)
    try:
        version = schema_version(connection, source)
        if version == 0:
            raise FactLogError("no journal here", source=source)
        if version != PG_SCHEMA_VERSION:
            raise FactLogError(
                f"this journal has schema {version}; open it for writing once (for example "
                f"with orchestrator run --db) to migrate it to {PG_SCHEMA_VERSION}, then prune",
                source=source,
            )
        before = _size(connection)
        candidates = [
            row[0]
            for row in connection.execute(
                "SELECT s.session FROM sessions s WHERE s.status <> 'running' "
                "AND s.updated_at < ? AND NOT EXISTS (SELECT 1 FROM session_leases l "
                "WHERE l.session = s.session AND l.owner <> '' "
                "AND l.expires_at > clock_timestamp()) ORDER BY s.created_at, s.id",
                (cutoff,),
            ).fetchall()
        ]
        if dry_run or not candidates:
            facts = _count_facts(connection, candidates)
            return PruneReport(
                sessions=tuple(candidates),
                facts=facts,
                cutoff=cutoff,
                dry_run=dry_run,
                bytes_before=before,
                bytes_after=before,
                vacuumed=False,
            )
        pruned: list[str] = []
        facts = 0
        for start in range(0, len(candidates), BATCH):
            removed, count = _prune_batch(connection, candidates[start : start + BATCH], cutoff)
            pruned += removed
            facts += count
        for table in (*_SESSION_TABLES, "sessions", "session_leases"):
            connection.execute(f"VACUUM {table}")
        return PruneReport(
            sessions=tuple(pruned),
            facts=facts,
            cutoff=cutoff,
            dry_run=False,
            bytes_before=before,
            bytes_after=_size(connection),
            vacuumed=True,
        )
    except psycopg.Error as exc:
        raise FactLogError(f"cannot prune the journal: {exc}", source=source) from exc
    finally:
        raw.close()


def _prune_batch(
    connection: PgConnection, sessions: Sequence[str], cutoff: str
) -> tuple[list[str], int]:
    """One transaction: of ``sessions``, those that may still go, removed; with their
    facts' count."""
    connection.execute("BEGIN")
    try:
        # Leases first, in the order the writer's fence and renewals lock them (by session):
        # a node taking one of these sessions up waits for this transaction.
        connection.execute(
            "SELECT session FROM session_leases WHERE session = ANY(?::text[]) "
            "ORDER BY session FOR UPDATE",
            (list(sessions),),
        )
        chosen = [
            row[0] for row in connection.execute(_PRUNABLE, (cutoff, list(sessions))).fetchall()
        ]
        facts = _count_facts(connection, chosen)
        for table in (*_SESSION_TABLES, "session_leases", "sessions"):
            connection.execute(f"DELETE FROM {table} WHERE session = ANY(?::text[])", (chosen,))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return chosen, facts


def _count_facts(connection: PgConnection, sessions: Sequence[str]) -> int:
    if not sessions:
        return 0
    row = connection.execute(
        "SELECT count(*) FROM facts WHERE session = ANY(?::text[])", (list(sessions),)
    ).fetchone()
    return int(row[0])


def _size(connection: PgConnection) -> int:
    return int(connection.execute("SELECT pg_database_size(current_database())").fetchone()[0])
