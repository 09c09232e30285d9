"""Reading a journal: :class:`JournalReader`, beside the writer and never blocking it.

Readers never block the writer (WAL): each read opens its own read-only connection, in a
worker thread when called from trio (:class:`JournalReader`). A reader checks the whole file
(``PRAGMA quick_check``, about 3 ms per MB) once per file it reads, not per read: a lookup of
an unknown session is one query by primary key. Every fact read is verified against its
checksum (CRC32 of its stored text): a damaged one is reported with its session and
sequence (:class:`FactLogError`), never applied nor skipped; other sessions read on. A
snapshot's rows carry checksums too: a damaged snapshot is ignored (it is only a cache) and
the session folded from its facts.

Imports: the fact decoder, the team state and the snapshot decoder are imported by the
methods that use them, so that listing sessions (``orchestrator sessions``, the CLI's
session lookups) loads SQLite and this module, not the AHP model and its converters.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from orchestrator.base import PeerProtocolError

from ._checksum import checked_fact_text, fact_checksum, not_utf8_fact, undecodable_column
from ._file import _check_file, _error, _from_sqlite, _read_uri
from ._schema import SCHEMA_VERSION
from ._sql import _Connection

if TYPE_CHECKING:
    from orchestrator.core import Fact, StoredFact, TeamState

__all__ = ["SESSION_STATUSES", "AgentMessage", "JournalReader", "SessionInfo"]


@attrs.frozen(kw_only=True)
class AgentMessage:
    """One event of a chat's agent-channel history (a row of ``agent_messages``)."""

    turn_id: str
    event: dict[str, Any]
    deleted_at: str | None = None  # when undo or truncation removed it from the replay


#: A session's status in the journal (``SessionInfo.status``): its run's, once it ended.
SESSION_STATUSES: Final = ("running", "completed", "failed", "cancelled")


@attrs.frozen(kw_only=True)
class SessionInfo:
    """A session as ``orchestrator sessions`` lists it."""

    session: str
    team: str
    title: str
    status: str  # running | completed | failed | cancelled
    created_at: str
    updated_at: str
    last_sequence: int
    team_file: str | None = None
    # A fork's lineage: the session it was forked from, at which of its facts, at which turn.
    forked_from: str | None = None
    forked_at: int | None = None
    forked_turn: str | None = None

    def to_json(self) -> dict[str, Any]:
        forked = None
        if self.forked_from is not None:
            forked = {
                "session": self.forked_from,
                "sequence": self.forked_at,
                "turnId": self.forked_turn,
            }
        return {
            "session": self.session,
            "team": self.team,
            "title": self.title,
            "status": self.status,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "facts": self.last_sequence,
            "teamFile": self.team_file,
            "forkedFrom": forked,
        }


class JournalReader:
    """Reads a journal with read-only connections; safe beside a writer (WAL).

    Synchronous: call it from a worker thread in trio code (``trio.to_thread.run_sync``).
    """

    #: The order of :meth:`sessions`, newest first (``rowid``: the order they were made in).
    _NEWEST_FIRST = "created_at DESC, rowid DESC"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        #: Names the journal in errors (a file's path; a URL without its password).
        self.source = str(self.path)
        # The file (device, inode) this reader has checked: the whole-file check runs once
        # per file, not per read (PRAGMA quick_check: 410 ms of CPU on a 137 MB journal, for
        # every lookup of a session id a client named).
        self._checked: tuple[int, int] | None = None

    def checked(self) -> None:
        """The file as it is now has just been checked (by the writer that opened it)."""
        with contextlib.suppress(OSError):
            self._checked = _identity(self.path.stat())

    @contextlib.contextmanager
    def _connection(self) -> Iterator[_Connection]:
        try:
            identity = _identity(self.path.stat())
        except FileNotFoundError:
            raise _error(
                self.path, "no journal here (run a team with --db to create one)"
            ) from None
        except OSError as exc:
            raise _error(self.path, f"cannot open the journal: {exc.strerror}") from exc
        if identity != self._checked:
            version = _check_file(self.path)
            if version != SCHEMA_VERSION:
                raise _error(
                    self.path,
                    f"this journal has schema {version}; open it for writing once (for "
                    f"example with orchestrator run --db) to migrate it to {SCHEMA_VERSION}",
                )
            self._checked = identity
        try:
            connection = sqlite3.connect(_read_uri(self.path), uri=True)
        except sqlite3.Error as exc:
            raise _from_sqlite(self.path, exc, "open the journal") from exc
        try:
            yield connection
        except sqlite3.DatabaseError as exc:
            raise _from_sqlite(self.path, exc, "read the journal") from exc
        finally:
            connection.close()

    def has_session(self, session: str) -> bool:
        """Whether the journal has a session ``session``, ended or not: one indexed lookup.
        :class:`FactLogError` if the journal cannot be read (never "no" for "cannot tell")."""
        with self._connection() as connection:
            row = connection.execute(
                "SELECT 1 FROM sessions WHERE session = ?", (session,)
            ).fetchone()
        return row is not None

    def session_of_chat(self, chat: str) -> str | None:
        """The session of the journal that has (or had) a chat ``chat``, if any: one
        indexed lookup."""
        with self._connection() as connection:
            row = connection.execute("SELECT session FROM chats WHERE chat = ?", (chat,)).fetchone()
        return None if row is None else str(row[0])

    def sessions(
        self, *, status: str | None = None, team: str | None = None, limit: int | None = None
    ) -> list[SessionInfo]:
        """Every session, oldest first; only those of ``status`` and ``team`` if given, and
        of those the ``limit`` most recent."""
        where, values = [], []
        for column, wanted in (("status", status), ("team", team)):
            if wanted is not None:
                where.append(f"{column} = ?")
                values.append(wanted)
        query = (
            "SELECT session, team, title, status, created_at, updated_at, last_sequence, "
            "team_file, forked_from, forked_at, forked_turn FROM sessions"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {self._NEWEST_FIRST}"
            + (" LIMIT ?" if limit is not None else "")
        )
        with self._connection() as connection:
            rows = connection.execute(
                query, (*values, limit) if limit is not None else values
            ).fetchall()
        return [_session_info(row) for row in reversed(rows)]

    def session(self, session: str) -> SessionInfo:
        with self._connection() as connection:
            return self._session(connection, session)

    def _session(self, connection: _Connection, session: str) -> SessionInfo:
        row = connection.execute(
            "SELECT session, team, title, status, created_at, updated_at, last_sequence, "
            "team_file, forked_from, forked_at, forked_turn FROM sessions WHERE session = ?",
            (session,),
        ).fetchone()
        if row is None:
            raise _error(self.source, f"no session {session} (orchestrator sessions lists them)")
        return _session_info(row)

    def team_toml(self, session: str) -> tuple[str | None, str | None]:
        """The team file's path and text a session was run with (None if not recorded)."""
        with self._connection() as connection:
            row = connection.execute(
                "SELECT team_file, team_toml FROM session_teams WHERE session = ?", (session,)
            ).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def facts(self, session: str, *, after: int = 0) -> list[Fact]:
        """A session's facts after sequence ``after``, in order."""
        with self._connection() as connection:
            return self._facts(connection, session, after)

    def chat_facts(self, session: str, chat: str, types: Collection[str]) -> list[Fact]:
        """A session's facts on channel ``chat`` and those of the wire ``types`` on any
        channel, in order: what one chat's view needs, the other chats' facts not decoded."""
        kinds = sorted(types)
        source = self.source
        marks = ", ".join("?" for _ in kinds) or "NULL"
        with self._connection() as connection:
            try:
                rows = connection.execute(
                    "SELECT sequence, fact, checksum FROM facts WHERE session = ? "
                    f"AND (channel = ? OR type IN ({marks})) ORDER BY sequence",
                    (session, chat, *kinds),
                ).fetchall()
            except sqlite3.OperationalError as exc:
                if undecodable_column(exc) != "fact":
                    raise
                return self._facts(connection, session, 0)  # names the fact that is not UTF-8
        return [
            self._decode(checked_fact_text(session, sequence, text, checksum, source=source))
            for sequence, text, checksum in rows
        ]

    def _facts(self, connection: _Connection, session: str, after: int) -> list[Fact]:
        source = self.source
        try:
            rows = connection.execute(
                "SELECT sequence, fact, checksum FROM facts WHERE session = ? AND sequence > ? "
                "ORDER BY sequence",
                (session, after),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if undecodable_column(exc) != "fact":
                raise
            # Which fact, looked for only now: the common read pays nothing for it.
            raw = connection.execute(
                "SELECT sequence, CAST(fact AS BLOB) FROM facts WHERE session = ? "
                "AND sequence > ? ORDER BY sequence",
                (session, after),
            )
            raise not_utf8_fact(session, "fact", raw, source=source) from None
        return [
            self._decode(checked_fact_text(session, sequence, text, checksum, source=source))
            for sequence, text, checksum in rows
        ]

    def fact_rows(self, session: str, *, until: int | None = None) -> list[StoredFact]:
        """A session's stored facts up to sequence ``until`` (all by default), as text:
        ``(sequence, channel, at, type, text)``, each checked against its checksum."""
        source = self.source
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT sequence, channel, at, type, fact, checksum FROM facts "
                "WHERE session = ? AND sequence <= ? ORDER BY sequence",
                (session, until if until is not None else 2**62),
            ).fetchall()
        # Checked in one comprehension (a fork reads 100,000 of them), the damaged one named.
        checked = [
            (sequence, channel, at, kind, text)
            for sequence, channel, at, kind, text, checksum in rows
            if fact_checksum(text) == checksum
        ]
        if len(checked) < len(rows):
            for sequence, _channel, _at, _kind, text, checksum in rows:
                checked_fact_text(session, sequence, text, checksum, source=source)
        return checked

    def agent_messages(
        self, session: str, chat: str, *, deleted: bool = False
    ) -> list[AgentMessage]:
        """A chat's agent-channel history in replay order; ``deleted``: with the rows undo
        and truncation removed (marked, never dropped).

        Each row is verified against its checksum; a damaged one fails the read naming it
        (:class:`FactLogError`). Rows written before schema 7 have none and read unchecked.
        """
        self.session(session)
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT turn_id, part, message, deleted_at, checksum FROM agent_messages "
                "WHERE session = ? AND chat = ? AND (? OR deleted_at IS NULL) ORDER BY id",
                (session, chat, deleted),
            ).fetchall()
        history = []
        for turn_id, part, message, deleted_at, checksum in rows:
            if checksum is not None and fact_checksum(message) != checksum:
                raise _error(
                    self.source,
                    f"history row {part} of turn {turn_id} of {chat} in {session} is damaged "
                    "(its checksum does not match): it was not replayed; restore the journal "
                    "from a backup",
                )
            history.append(
                AgentMessage(turn_id=turn_id, event=json.loads(message), deleted_at=deleted_at)
            )
        return history

    def _decode(self, text: str) -> Fact:
        from orchestrator.core import decode_fact  # see the module docstring: imports

        try:
            return decode_fact(json.loads(text))
        except (json.JSONDecodeError, PeerProtocolError) as exc:
            raise _error(self.source, f"a stored fact cannot be read: {exc}") from exc

    def open(self, session: str) -> TeamState:
        """A session's state: its latest snapshot and the facts after it.

        A snapshot that cannot be read is ignored (it is only a cache): the session is then
        folded from its first fact.
        """
        from orchestrator.core import TeamState  # see the module docstring: imports

        # One connection for all of it: the header, the parts and the facts in one view.
        with self._connection() as connection:
            self._session(connection, session)  # a clear error for an unknown session
            start: TeamState | None = None
            # The header and its parts in one read transaction: a snapshot the writer commits
            # meanwhile must not be read half (its parts under an older header).
            connection.execute("BEGIN")
            try:
                row = connection.execute(
                    "SELECT sequence, state, checksum FROM snapshots WHERE session = ? "
                    "ORDER BY sequence DESC LIMIT 1",
                    (session,),
                ).fetchone()
                parts = connection.execute(
                    "SELECT kind, name, position, sequence, data, checksum FROM snapshot_parts "
                    "WHERE session = ?",
                    (session,),
                ).fetchall()
            finally:
                connection.execute("COMMIT")
            if row is not None:
                try:
                    if fact_checksum(row[1]) != row[2] or any(
                        fact_checksum(part[4]) != part[5] for part in parts
                    ):
                        raise PeerProtocolError(
                            "a row's checksum does not match", path="$", protocol="snapshot"
                        )
                    start = _snapshot(row[0], row[1], [part[:5] for part in parts])
                except (json.JSONDecodeError, PeerProtocolError) as exc:
                    import structlog  # here: reading a journal loads no logging library

                    structlog.get_logger("orchestrator.journal").warning(
                        "snapshot ignored", session=session, error=str(exc)
                    )
            after = start.last_sequence if start is not None else 0
            facts = self._facts(connection, session, after)
        return TeamState.fold(session, facts, start=start)


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _snapshot(
    sequence: int, header: str, parts: Sequence[tuple[str, str, int, int, str]]
) -> TeamState:
    """A snapshot's state from its ``snapshots`` and ``snapshot_parts`` rows."""
    from ._snapshot import decode_parts  # see the module docstring: imports

    if any(written > sequence for _, _, _, written, _ in parts):
        raise PeerProtocolError(
            "a part is newer than its snapshot", path="$.sequence", protocol="snapshot"
        )
    return decode_parts(
        json.loads(header),
        ((kind, name, at, json.loads(data)) for kind, name, at, _, data in parts),
    )


def _session_info(row: tuple[Any, ...]) -> SessionInfo:
    (session, team, title, status, created_at, updated_at, last_sequence, team_file) = row[:8]
    forked_from, forked_at, forked_turn = row[8:]
    return SessionInfo(
        session=session,
        team=team,
        title=title,
        status=status,
        created_at=created_at,
        updated_at=updated_at,
        last_sequence=last_sequence,
        team_file=team_file,
        forked_from=forked_from,
        forked_at=forked_at,
        forked_turn=forked_turn,
    )
