"""What one transaction of the journal writes: facts with their checksums, session rows,
chats, the agent channel's history and snapshot parts.

The writer thread (:mod:`._journal`) takes a group of items (:data:`_Item`: a batch of one
session's facts, a session's team file, a snapshot, or word that a session left the
process's memory) and :func:`_write_group` writes them in
few multi-row statements. Every fact is stored with its checksum (:func:`fact_checksum`,
CRC32 of its text), verified whenever it is read back (:func:`_checked`).

A snapshot is stored in parts: a ``snapshots`` row per session says which sequence, and
``snapshot_parts`` rows hold the pieces (see :mod:`._snapshot`). :class:`_SnapshotWriter`
writes again only the parts that changed since its previous snapshot of the session. So a
snapshot costs what changed, not the size of the session.

:class:`_AgentHistory` and :class:`_SnapshotWriter` are the writer thread's own (and the
migrations', :mod:`._schema`, which fill new tables from the facts on file); what they
remember across transactions is forgotten on a rollback and read back from the file.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from orchestrator.ahp.actions import (
    ChatTruncatedAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import Turn
from orchestrator.base import compact_dumps
from orchestrator.core import (
    Fact,
    ForkRows,
    RunFinished,
    RunStarted,
    TeamState,
    decode_fact,
    fact_to_json,
)
from orchestrator.protocols import TURN_ENDS, turn_from_facts, turn_messages
from orchestrator.runtime import EventTicket

from ._checksum import checked_fact_text, fact_checksum, not_utf8_fact, undecodable_column
from ._snapshot import (
    PartKey,
    encode_part,
    same_values,
    snapshot_header,
    snapshot_parts,
)
from ._sql import _Connection

__all__: list[str] = []


@attrs.define(eq=False)
class _Batch:
    """A batch of one session's facts, encoded, with what it changes in the session row."""

    session: str
    facts: Sequence[Fact]
    ended_turns: Mapping[int, Turn] | None  # see FactLog.submit
    rows: list[tuple[str, int, str, str, str, str, int]]
    ticket: EventTicket
    created: tuple[str, str, str] | None  # (team, title, created_at) when the run starts
    status: str | None  # the run's status, when it ends
    last_sequence: int
    updated_at: str
    # Why the batch could not even be encoded (the writer fails it in its place in order).
    unencodable: Exception | None = None
    chats: list[tuple[str, str]] = attrs.Factory(list)  # (chat, session) the batch adds
    # The lease epoch its node held the session at when the batch was submitted (several
    # daemons on one PostgreSQL journal): the fence lets it through only at that epoch.
    epoch: int | None = None
    # A fork's lineage (source session, its last fact copied, the turn asked for), kept in
    # the session row so that listing sessions shows families without reading facts.
    forked: tuple[str, int, str | None] | None = None
    # A fork's agent-channel history, copied from its source in the batch's transaction.
    history: _CopyHistory | None = None
    # A fork's copied facts, made into :attr:`rows` by the writer thread (:meth:`ready`).
    fork: ForkRows | None = None

    def ready(self) -> None:
        """Make a fork's rows, on the writer thread: each copied fact's checksum (100,000
        of them are a tenth of a second that the event loop does not wait for)."""
        fork, self.fork = self.fork, None
        if fork is not None:
            self.rows = [
                (fork.session, sequence, channel, at, kind, text, fact_checksum(text))
                for sequence, channel, at, kind, text in fork.rows
            ]

    def size(self) -> int:
        return len(self.rows)


def _write_group(connection: _Connection, group: Sequence[_Item], history: _AgentHistory) -> None:
    """Write one transaction's items, as writing them one after another would.

    With as few SQLite calls as that allows: each call lets go of the GIL while SQLite
    works and must then take it back from the trio thread, which, when busy, gives it up
    only every switch interval (5 ms). So the facts of all the group's batches go in a
    few multi-row statements, each session's row is updated once, and the history's rows
    are written together (see :meth:`_AgentHistory.flush`).
    """
    batches = [item for item in group if isinstance(item, _Batch)]
    for batch in batches:
        if batch.unencodable is not None:
            raise batch.unencodable
        if batch.created is not None:
            team, title, created_at = batch.created
            connection.execute(
                "INSERT INTO sessions (session, team, title, status, created_at, updated_at, "
                "last_sequence) VALUES (?, ?, ?, 'running', ?, ?, 0) "
                "ON CONFLICT (session) DO NOTHING",
                (batch.session, team, title, created_at, created_at),
            )
        if batch.forked is not None:
            connection.execute(
                "UPDATE sessions SET forked_from = ?, forked_at = ?, forked_turn = ? "
                "WHERE session = ?",
                (*batch.forked, batch.session),
            )
    _insert_rows(
        connection,
        "INSERT INTO facts (session, sequence, channel, at, type, fact, checksum)",
        [row for batch in batches for row in batch.rows],
    )
    # Each session's row as its last batch leaves it; the status of its last batch that set
    # one (coalesce, batch after batch, keeps the latest).
    latest: dict[str, tuple[int, str, str | None]] = {}
    for batch in batches:
        status = batch.status
        if status is None and batch.session in latest:
            status = latest[batch.session][2]
        latest[batch.session] = (batch.last_sequence, batch.updated_at, status)
    connection.executemany(
        "UPDATE sessions SET last_sequence = ?, updated_at = ?, status = coalesce(?, status) "
        "WHERE session = ?",
        [(*values, session) for session, values in latest.items()],
    )
    # In few multi-row statements (executemany steps once per row, and every step lets go of
    # the GIL: see above).
    _insert_rows(
        connection,
        "INSERT INTO chats (chat, session)",
        [chat for batch in batches for chat in batch.chats],
        " ON CONFLICT DO NOTHING",
    )
    for batch in batches:
        if batch.history is not None:
            batch.history.write(connection)
    for item in group:
        if isinstance(item, _Batch):
            history.record(connection, item.facts, item.ended_turns)
        else:
            item.write(connection)
    history.flush(connection)


def _stored_batches(connection: _Connection, group: Sequence[_Item]) -> list[_Batch]:
    """The batches of ``group`` whose every fact is stored, each with its checksum: those a
    transaction whose outcome was not seen (its connection lost during ``COMMIT``)
    committed after all. One query per session, over the sequences the group holds of it."""
    batches = [item for item in group if isinstance(item, _Batch) and item.rows]
    spans: dict[str, tuple[int, int]] = {}
    for batch in batches:
        first, last = batch.rows[0][1], batch.rows[-1][1]
        low, high = spans.get(batch.session, (first, last))
        spans[batch.session] = (min(low, first), max(high, last))
    stored: dict[tuple[str, int], int] = {}
    for session, (low, high) in spans.items():
        for sequence, checksum in connection.execute(
            "SELECT sequence, checksum FROM facts WHERE session = ? AND sequence BETWEEN ? AND ?",
            (session, low, high),
        ).fetchall():
            stored[(session, int(sequence))] = int(checksum)
    return [
        batch
        for batch in batches
        if all(stored.get((row[0], row[1])) == row[6] for row in batch.rows)
    ]


#: Fewest rows a connection that can copy rows in (PostgreSQL) copies rather than inserts.
COPY_AT_LEAST: Final = 32
#: Most rows one INSERT statement writes (7 columns each: SQLite takes 32,766 parameters).
ROWS_PER_INSERT: Final = 256
#: Rows go in statements of a multiple of this many rows, then one of fewer: two statements
#: for up to :data:`ROWS_PER_INSERT` rows, of 31 texts a table.
ROWS_STEP: Final = 16


def _insert_rows(
    connection: _Connection, head: str, rows: Sequence[Sequence[Any]], tail: str = ""
) -> None:
    """``head VALUES (...), (...) tail`` for ``rows``, in order, in few statements.

    Statements hold :data:`ROWS_PER_INSERT` rows, then a multiple of :data:`ROWS_STEP`,
    then the rest: at most two statements for a group's rows, of few distinct texts, which
    the sqlite3 module compiles once and keeps in its cache (see ``_file._connect``). A
    connection that can copy rows in (PostgreSQL's ``COPY``: seven times the rows a second of
    multi-row ``INSERT``s) does, when nothing follows the rows (no ``ON CONFLICT``) and there
    are enough of them to pay for the ``COPY``'s own round trips.
    """
    copy_rows = getattr(connection, "copy_rows", None)
    if copy_rows is not None and not tail and len(rows) >= COPY_AT_LEAST:
        copy_rows(head, rows)
        return
    start = 0
    while start < len(rows):
        left = len(rows) - start
        size = min(ROWS_PER_INSERT, left if left < ROWS_STEP else left - left % ROWS_STEP)
        chunk = rows[start : start + size]
        connection.execute(
            _values_sql(head, len(chunk[0]), size, tail), [v for row in chunk for v in row]
        )
        start += size


@functools.cache
def _values_sql(head: str, width: int, count: int, tail: str) -> str:
    one = "(" + ", ".join("?" * width) + ")"
    return f"{head} VALUES {', '.join([one] * count)}{tail}"


@attrs.define(eq=False)
class _Describe:
    """Where a session's team came from, so that it can be resumed as it was defined."""

    session: str
    team_file: str
    team_toml: str

    def write(self, connection: _Connection) -> None:
        # The text in a table of its own: the sessions row is updated with every batch, and
        # SQLite reads a row whole to update it, and writes it whole when its size changes
        # (a 5 MB team file there cost each batch 5 MB).
        connection.execute(
            "INSERT INTO session_teams (session, team_file, team_toml) VALUES (?, ?, ?) "
            "ON CONFLICT (session) DO UPDATE SET team_file = excluded.team_file, "
            "team_toml = excluded.team_toml",
            (self.session, self.team_file, self.team_toml),
        )
        connection.execute(
            "UPDATE sessions SET team_file = ? WHERE session = ?", (self.team_file, self.session)
        )

    def size(self) -> int:
        return 1


@attrs.define(eq=False)
class _Snapshot:
    """A session's committed state (shallow copies), written in parts by the writer."""

    state: TeamState
    writer: _SnapshotWriter

    @property
    def session(self) -> str:
        return self.state.session_uri

    def write(self, connection: _Connection) -> None:
        self.writer.write(connection, self.state)

    def size(self) -> int:
        return len(self.state.chats) + 1


class _SnapshotWriter:
    """Writes snapshots in parts, each part only when it changed (the writer thread's own).

    It remembers the values of the parts it last wrote of each session: a part holding the
    same objects is on file as it is. A session not written yet by this process is written
    whole, its old parts removed first. A rolled-back write is forgotten (:meth:`forget`):
    the next snapshot of the session is written whole.

    Each row carries the checksum of its text (:func:`fact_checksum`), so that a damaged
    part that still parses is not taken for the state: ``checksums=False`` writes rows of
    schema 4, for the migration to it (schema 5 computes theirs).
    """

    def __init__(self, *, checksums: bool = True) -> None:
        self._written: dict[str, dict[PartKey, tuple[Any, ...]]] = {}
        self._checksums = checksums

    def write(self, connection: _Connection, state: TeamState) -> None:
        session, sequence = state.session_uri, state.last_sequence
        parts = snapshot_parts(state)
        written = self._written.get(session)
        if written is None:
            connection.execute("DELETE FROM snapshot_parts WHERE session = ?", (session,))
            written = {}
        # The parts gone since, in few statements (as the rows below, and for the same reason).
        gone = sorted(written.keys() - parts.keys())
        for start in range(0, len(gone), ROWS_PER_INSERT):
            keys = gone[start : start + ROWS_PER_INSERT]
            connection.execute(
                "DELETE FROM snapshot_parts WHERE session = ? AND (kind, name, position) IN "
                f"(VALUES {', '.join(['(?, ?, ?)'] * len(keys))})",
                [session, *(value for key in keys for value in key)],
            )
        changed = [
            (key, values)
            for key, values in parts.items()
            if not same_values(written.get(key), values)
        ]
        header = compact_dumps(snapshot_header(state))
        if self._checksums:
            # In multi-row statements: a first snapshot of a large session has thousands of
            # parts, and executemany would let go of the GIL, and wait to take it back from
            # the trio thread, for each (see _write_group). Encoded a statement's rows at a
            # time: a snapshot of a large fan-out changes a part per worker, and their texts
            # all at once were the journal's largest transient allocation.
            for start in range(0, len(changed), ROWS_PER_INSERT):
                rows = []
                for key, values in changed[start : start + ROWS_PER_INSERT]:
                    text = compact_dumps(encode_part(key, values))
                    rows.append((session, *key, sequence, text, fact_checksum(text)))
                _insert_rows(
                    connection,
                    "INSERT INTO snapshot_parts (session, kind, name, position, sequence, "
                    "data, checksum)",
                    rows,
                    " ON CONFLICT (session, kind, name, position) DO UPDATE SET sequence = "
                    "excluded.sequence, data = excluded.data, checksum = excluded.checksum",
                )
            connection.execute(
                "INSERT INTO snapshots (session, sequence, state, checksum) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session, sequence) DO UPDATE SET state = excluded.state, "
                "checksum = excluded.checksum",
                (session, sequence, header, fact_checksum(header)),
            )
        else:
            connection.executemany(
                "INSERT OR REPLACE INTO snapshot_parts (session, kind, name, position, "
                "sequence, data) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (session, *key, sequence, compact_dumps(encode_part(key, values)))
                    for key, values in changed
                ],
            )
            connection.execute(
                "INSERT OR REPLACE INTO snapshots (session, sequence, state) VALUES (?, ?, ?)",
                (session, sequence, header),
            )
        # One snapshot per session is enough to open it: keep the newest.
        connection.execute(
            "DELETE FROM snapshots WHERE session = ? AND sequence < ?", (session, sequence)
        )
        self._written[session] = parts

    def forget(self, session: str) -> None:
        """Let go of what was written of ``session`` (a later snapshot writes it whole)."""
        self._written.pop(session, None)

    def sessions(self) -> set[str]:
        """The sessions whose last snapshot is remembered."""
        return set(self._written)


@attrs.define(eq=False)
class _Forget:
    """A session left the process's memory (put away, ended): the writer lets go of what it
    remembers of it, in the queue's order, after the snapshots submitted before. Writes no
    row: what it drops is a cache, so a rollback around it loses nothing."""

    session: str
    snapshots: _SnapshotWriter
    history: _AgentHistory

    def write(self, connection: _Connection) -> None:
        self.snapshots.forget(self.session)
        self.history.forget(self.session)

    def size(self) -> int:
        return 0


@attrs.define(eq=False)
class _CopyHistory:
    """A fork's agent-channel history: its source's rows up to the fork point, under the
    fork's session and chat URIs, written with its batch (:attr:`_Batch.history`), so a fork
    exists whole or not at all.

    Copied inside the database, in one ``INSERT ... SELECT`` joined to a temporary table of
    the chat map: the rows' texts never come to Python. The source's rows are found by
    their ids first, and read in id order through them, so the database does not sort the
    rows' messages (ids keep the replay order).
    """

    session: str  # the fork
    source: str
    chats: Mapping[str, str]  # source chat -> its copy
    until: int

    def write(self, connection: _Connection) -> None:
        connection.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS fork_chats "
            "(old TEXT PRIMARY KEY, new TEXT NOT NULL)"
        )
        connection.execute("DELETE FROM fork_chats")
        _insert_rows(connection, "INSERT INTO fork_chats (old, new)", list(self.chats.items()))
        connection.execute(
            "INSERT INTO agent_messages (session, chat, turn_id, part, sequence, type, message, "
            "checksum) SELECT ?, coalesce(m.new, a.chat), a.turn_id, a.part, a.sequence, "
            "a.type, a.message, a.checksum FROM agent_messages a "
            "LEFT JOIN fork_chats m ON m.old = a.chat WHERE a.id IN (SELECT id FROM "
            "agent_messages WHERE session = ? AND sequence <= ? AND deleted_at IS NULL) "
            "ORDER BY a.id",
            (self.session, self.source, self.until),
        )
        connection.execute("DELETE FROM fork_chats")


def _fork_batch(fork: ForkRows) -> _Batch:
    """A fork's copied facts as one batch of stored rows (see ``fork_rows``): written as any
    batch's, with no history of their own (:class:`_CopyHistory` copies the source's, in the
    batch's transaction)."""
    last_sequence, _, last_at, _, _ = fork.rows[-1]
    return _Batch(
        session=fork.session,
        facts=(),
        ended_turns=None,
        rows=[],
        ticket=EventTicket(),
        created=fork.created,
        status=fork.status,
        last_sequence=last_sequence,
        updated_at=last_at,
        chats=[(chat, fork.session) for chat in fork.chats.values()],
        forked=(fork.source, fork.sequence, fork.turn_id),
        history=_CopyHistory(fork.session, fork.source, dict(fork.chats), fork.sequence),
        fork=fork,
    )


_Item = _Batch | _Describe | _Snapshot | _Forget


class _AgentHistory:
    """Writes the agent channel's history rows as turns end (the writer thread's own).

    A batch the runtime submits brings the turns it ends, as the runtime's reducer left
    them (``ended_turns``). Their rows are written from those, so a turn is not folded again
    here. A turn may come without: in a batch submitted with none (as the migration and a
    journal's direct users do), or when the submitter did not give it. Such a turn is folded
    from its facts:

    - the facts of the chat's running turn, kept since its ``chat/turnStarted`` in a batch
      without turns;
    - or else the facts read back from the facts table (a turn that began before this process
      started, or in a batch with turns; its facts are written first).

    Both give the same turn: the runtime's state folds the same facts with the same reducer.
    The rows are kept until :meth:`flush`, which the transaction calls before it commits,
    so that its turns are written with one statement.
    """

    def __init__(self, *, checksums: bool = True) -> None:
        self._turns: dict[tuple[str, str], list[Fact]] = {}  # (session, chat) -> its turn
        # Not yet written: (session, chat, turn_id, part, sequence, type, message, checksum).
        self._rows: list[tuple[str, str, str, int, int, str, str, int]] = []
        # False: rows of schema 3 to 6, without their checksum (the migration to schema 3).
        self._checksums = checksums

    def reset(self) -> None:
        """Forget what is kept (a transaction that wrote some of it was rolled back): the
        facts of running turns are then read back from the table, where they are."""
        self._turns.clear()
        self._rows.clear()

    def forget(self, session: str) -> None:
        """Let go of the running turns kept of ``session`` (were it taken up again, their
        facts are read back from the table)."""
        for key in [key for key in self._turns if key[0] == session]:
            del self._turns[key]

    def sessions(self) -> set[str]:
        """The sessions whose running turns' facts are kept."""
        return {session for session, _chat in self._turns}

    def flush(self, connection: _Connection) -> None:
        """Write the rows kept so far, in the order their turns ended."""
        rows, self._rows = self._rows, []
        checksum = (", checksum", "checksum = excluded.checksum, ") if self._checksums else ("", "")
        # A restored turn writes the same rows again: they come back from deletion in place.
        _insert_rows(
            connection,
            "INSERT INTO agent_messages (session, chat, turn_id, part, sequence, type, "
            f"message{checksum[0]})",
            rows if self._checksums else [row[:7] for row in rows],
            " ON CONFLICT (session, chat, turn_id, part) DO UPDATE SET "
            "sequence = excluded.sequence, type = excluded.type, message = excluded.message, "
            f"{checksum[1]}deleted_at = NULL, deleted_by = NULL",
        )

    def record(
        self,
        connection: _Connection,
        facts: Sequence[Fact],
        ended_turns: Mapping[int, Turn] | None = None,
    ) -> None:
        """Keep the rows of the turns ``facts`` end (``ended_turns``: see the class)."""
        for index, fact in enumerate(facts):
            action = fact.action
            if fact.channel == fact.session:
                continue  # session and team facts: no chat's turn
            key = (fact.session, fact.channel)
            if isinstance(action, ChatTurnStartedAction):
                if ended_turns is None:
                    self._turns[key] = [fact]
                else:
                    # Its end comes with the turn; were it not given, it is read back.
                    self._turns.pop(key, None)
            elif isinstance(action, ChatTruncatedAction):
                self._turns.pop(key, None)
                self.flush(connection)  # the rows it deletes may be among those kept
                _soft_delete(connection, fact, action)
            elif key in self._turns:
                self._turns[key].append(fact)
            if isinstance(action, TURN_ENDS):
                kept = self._turns.pop(key, None)
                turn = None if ended_turns is None else ended_turns.get(index)
                if turn is None:
                    turn = turn_from_facts(fact.channel, kept or _turn_facts(connection, fact))
                if turn is not None and turn.id == action.turn_id:
                    for part, message in enumerate(turn_messages(turn)):
                        text = compact_dumps(message)
                        self._rows.append(
                            (
                                fact.session,
                                fact.channel,
                                turn.id,
                                part,
                                fact.sequence,
                                message["type"],
                                text,
                                fact_checksum(text),
                            )
                        )


def _turn_facts(connection: _Connection, end: Fact) -> list[Fact]:
    """A turn's facts read back from the table: from its chat's last turn start to ``end``."""
    where = (
        "FROM facts WHERE session = ? AND channel = ? AND sequence >= coalesce("
        "(SELECT max(sequence) FROM facts WHERE session = ? AND channel = ? "
        "AND type = 'chat/turnStarted' AND sequence <= ?), ?) AND sequence <= ? "
        "ORDER BY sequence"
    )
    values = (
        end.session,
        end.channel,
        end.session,
        end.channel,
        end.sequence,
        end.sequence,
        end.sequence,
    )
    try:
        rows = connection.execute(f"SELECT sequence, fact, checksum {where}", values).fetchall()
    except Exception as exc:  # the connection's own error type (SQLite's, PostgreSQL's)
        if undecodable_column(exc) != "fact":
            raise
        raw = connection.execute(f"SELECT sequence, CAST(fact AS BLOB) {where}", values)
        raise not_utf8_fact(end.session, "fact", raw, source="") from None
    return [
        decode_fact(json.loads(checked_fact_text(end.session, sequence, text, checksum, source="")))
        for sequence, text, checksum in rows
    ]


def _soft_delete(connection: _Connection, cut: Fact, action: ChatTruncatedAction) -> None:
    """Mark the rows of the turns ``chat/truncated`` removed deleted (they stay on disk)."""
    connection.execute(
        "UPDATE agent_messages SET deleted_at = ?, deleted_by = ? "
        "WHERE session = ? AND chat = ? AND deleted_at IS NULL AND id > coalesce("
        "(SELECT max(id) FROM agent_messages WHERE session = ? AND chat = ? AND turn_id = ?), 0)",
        (
            cut.at,
            cut.sequence,
            cut.session,
            cut.channel,
            cut.session,
            cut.channel,
            action.turn_id,
        ),
    )


def _batch(facts: Sequence[Fact], ended_turns: Mapping[int, Turn] | None) -> _Batch:
    """Encode a batch and work out what it changes in its session's row."""
    session = facts[0].session
    created = None
    status = None
    chats = []
    for fact in facts:
        if isinstance(fact.action, SessionChatAddedAction):
            chats.append((fact.action.summary.resource, session))
        elif isinstance(fact.action, RunStarted):
            prompt = fact.action.prompt.strip().splitlines()
            title = prompt[0][:80] if prompt else ""
            created = (fact.action.team, title, fact.at)
        elif isinstance(fact.action, RunFinished):
            status = fact.action.status.value
    rows = []
    unencodable = None
    try:
        for f in facts:
            text = fact_to_json(f)
            rows.append((f.session, f.sequence, f.channel, f.at, f.type, text, fact_checksum(text)))
    except Exception as exc:  # any fault of one batch fails that batch only
        rows, unencodable = [], exc
    return _Batch(
        session=session,
        facts=facts,
        ended_turns=ended_turns,
        rows=rows,
        ticket=EventTicket(),
        created=created,
        status=status,
        last_sequence=facts[-1].sequence,
        updated_at=facts[-1].at,
        unencodable=unencodable,
        chats=chats,
    )
