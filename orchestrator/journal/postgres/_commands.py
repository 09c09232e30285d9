"""Several daemons on one PostgreSQL journal: commands forwarded to a session's owner.

Theory of operation
-------------------
A client may ask any node for any session; only the node holding the session's lease
(:mod:`._leases`) runs it. A node that follows another's session writes what its client asks
as a row of ``session_commands`` (:meth:`PostgresCommands.send`). The row holds a *kind* and a
JSON *payload*, which this module does not read: a prompt, an approval, a cancel. In the same
transaction it notifies :data:`~._notify.COMMANDS_CHANNEL`. The owner is woken by that
notification (or its slow poll). It claims the open commands of the sessions it holds
(:meth:`~PostgresCommands.claim`: ``FOR UPDATE SKIP LOCKED``, so two claimers never take the
same row). It carries each out and writes its outcome, ``result`` or ``error``, notifying
:data:`~._notify.ANSWERS_CHANNEL` (:meth:`~PostgresCommands.answer`). The sender waits for
the answer, bounded. When it gives up it *withdraws* the command
(:meth:`~PostgresCommands.withdraw`). A command nobody claimed then never runs. So a client
told "no answer" is not surprised by it happening later. Commands older than an hour are
deleted (:meth:`~PostgresCommands.delete_old`, from the take-over scan).

All methods block (psycopg): call them from a worker thread. The component keeps one
connection of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any, Final

import attrs
import psycopg
from psycopg.types.json import Jsonb

from orchestrator.base import FactLogError

from ._connection import connect, connect_error, redacted
from ._notify import ANSWERS_CHANNEL, COMMANDS_CHANNEL, MAX_PAYLOAD

__all__ = ["CommandAnswer", "ForwardedCommand", "PostgresCommands"]

#: Most commands one claim takes (the next claim takes the rest).
CLAIM_LIMIT: Final = 50
#: Seconds an answered (or abandoned) command is kept before it is deleted.
KEEP_COMMANDS: Final = 3600.0


@attrs.frozen(kw_only=True)
class ForwardedCommand:
    """A command claimed by the owner: its row as written (``payload`` as JSON decodes
    it: whatever a sender wrote, to be checked by whoever carries it out)."""

    id: int
    session: str
    kind: str
    payload: Any
    sender: str


@attrs.frozen(kw_only=True)
class CommandAnswer:
    """A command's outcome: ``result`` or ``error`` (JSON values), and who carried it out."""

    result: Any
    error: Any
    claimed_by: str | None


class PostgresCommands:
    """The command table of node ``node`` on the journal at ``url`` (see the module
    docstring); blocking: call it from a worker thread."""

    def __init__(self, url: str, *, node: str) -> None:
        self.url = url
        self.source = redacted(url)
        self.node = node
        self._lock = threading.Lock()
        self._connection: psycopg.Connection[Any] | None = None

    def _run(self, *statements: tuple[str, tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """``statements`` in one transaction on this component's connection (opened again
        if it was lost); the rows of the first."""
        with self._lock:
            if self._connection is None or self._connection.closed:
                self._connection = connect(self.url, application="orchestrator commands")
            try:
                with self._connection.transaction():
                    first: list[tuple[Any, ...]] | None = None
                    for sql, parameters in statements:
                        cursor = self._connection.execute(sql, parameters)
                        rows = cursor.fetchall() if cursor.description is not None else []
                        first = rows if first is None else first
                    return first or []
            except psycopg.OperationalError as exc:
                self._connection.close()
                raise connect_error(self.source, exc) from exc
            except psycopg.Error as exc:
                raise FactLogError(f"cannot forward commands: {exc}", source=self.source) from exc

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # ── the sender's ───────────────────────────────────────────────────────

    def send(self, session: str, kind: str, payload: Any) -> int:
        """Write a command for ``session``'s owner and wake it; the command's id."""
        wake = session if len(session.encode()) <= MAX_PAYLOAD else ""
        rows = self._run(
            (
                "INSERT INTO session_commands (session, kind, payload, sender) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (session, kind, Jsonb(payload), self.node),
            ),
            ("SELECT pg_notify(%s, %s)", (COMMANDS_CHANNEL, wake)),
        )
        return int(rows[0][0])

    def outcome(self, command: int) -> CommandAnswer | None:
        """The command's answer, None while it has none."""
        rows = self._run(
            (
                "SELECT result, error, claimed_by FROM session_commands "
                "WHERE id = %s AND answered_at IS NOT NULL",
                (command,),
            )
        )
        if not rows:
            return None
        result, error, claimed_by = rows[0]
        return CommandAnswer(result=result, error=error, claimed_by=claimed_by)

    def withdraw(self, command: int, error: Any) -> bool:
        """Answer the command with ``error`` unless an owner claimed it; whether it was
        withdrawn (False: it was claimed, and its owner will answer it)."""
        rows = self._run(
            (
                "UPDATE session_commands SET answered_at = clock_timestamp(), error = %s "
                "WHERE id = %s AND claimed_by IS NULL AND answered_at IS NULL RETURNING id",
                (Jsonb(error), command),
            )
        )
        return bool(rows)

    def live_owner(self, session: str) -> str | None:
        """The node whose lease on ``session`` has not expired (None: nobody's)."""
        rows = self._run(
            (
                "SELECT owner FROM session_leases WHERE session = %s AND owner <> '' "
                "AND expires_at > clock_timestamp()",
                (session,),
            )
        )
        return str(rows[0][0]) if rows else None

    # ── the owner's ────────────────────────────────────────────────────────

    def claim(
        self, sessions: Collection[str], *, limit: int = CLAIM_LIMIT
    ) -> list[ForwardedCommand]:
        """Claim the open commands of ``sessions`` (those this node holds), oldest first;
        a row another claimer holds is skipped, never taken twice."""
        if not sessions:
            return []
        rows = self._run(
            (
                "UPDATE session_commands SET claimed_by = %s, claimed_at = clock_timestamp() "
                "WHERE id IN (SELECT id FROM session_commands WHERE claimed_by IS NULL "
                "AND answered_at IS NULL AND session = ANY(%s) ORDER BY id LIMIT %s "
                "FOR UPDATE SKIP LOCKED) "
                "RETURNING id, session, kind, payload, sender",
                (self.node, list(sessions), limit),
            )
        )
        commands = [
            ForwardedCommand(id=int(r[0]), session=r[1], kind=r[2], payload=r[3], sender=r[4])
            for r in rows
        ]
        return sorted(commands, key=lambda command: command.id)

    def answer(self, command: int, *, result: Any = None, error: Any = None) -> None:
        """Write the outcome of a command this node claimed, and wake its sender."""
        self._run(
            (
                "UPDATE session_commands SET answered_at = clock_timestamp(), result = %s, "
                "error = %s WHERE id = %s AND claimed_by = %s",
                (
                    None if result is None else Jsonb(result),
                    None if error is None else Jsonb(error),
                    command,
                    self.node,
                ),
            ),
            ("SELECT pg_notify(%s, %s)", (ANSWERS_CHANNEL, str(command))),
        )

    def delete_old(self, *, older_than: float = KEEP_COMMANDS) -> int:
        """Delete the commands written more than ``older_than`` seconds ago (answered, or
        abandoned with their owner); how many."""
        rows = self._run(
            (
                "DELETE FROM session_commands "
                "WHERE created < clock_timestamp() - make_interval(secs => %s) RETURNING id",
                (older_than,),
            )
        )
        return len(rows)
