"""The SQLite journal: every fact on disk before anyone sees it.

Theory of operation
-------------------
The journal is the durable :class:`~orchestrator.runtime._factlog.FactLog` of the daemon and of
``orchestrator run --db``. One writer thread owns the only write connection. :meth:`submit`
(on the trio thread) encodes a batch (each fact's text and its checksum) and queues it with
an :class:`EventTicket`; the writer takes everything queued (a *group commit*: up to
:data:`GROUP_LIMIT` facts), writes it in one transaction with few multi-row statements,
commits, and completes the tickets in order through the trio token.

Faults are sorted by whose they are:

* **the file's** (full, read-only, I/O error, damaged: SQLite's codes in
  :data:`_ENVIRONMENT_CODES`, and running out of memory): the transaction is rolled back,
  its batches and every batch queued behind them fail, and the journal refuses all later
  writes (``failed``: ``/healthz`` answers 503 with the reason). The file holds exactly the
  facts that were acknowledged.
* **one item's** (anything else: a constraint such as a duplicate ``(session, sequence)``,
  text that cannot be UTF-8, a bug in the history or snapshot code): the group is rolled
  back and written again item by item, each in a savepoint of the same transaction. The
  item that fails again is left out: a batch fails with an error naming its session, facts
  and the fault, and its *session* is refused from then on (its later batches fail with the
  same error: they were prepared on top of it); a snapshot (only a cache) or a team file is
  logged and skipped. Every other batch commits. What the writer remembers across
  transactions (running turns' facts, the snapshot parts on file) is forgotten on a
  rollback and read back from the file when needed.
* **the writer's own death** (an exception that is not an ``Exception``): the journal fails
  with the reason, and every batch in hand, queued or submitted later fails with it, so no
  one waits forever and a shutdown still returns.

Stopping (:meth:`serve` cancelled) drains what was submitted, for :attr:`drain_limit`
seconds at most; then only the transaction in hand is finished and the rest fails (it was
never acknowledged): a shutdown does not wait for an unbounded backlog.

Readers never block the writer (WAL): each read opens its own read-only connection, in a
worker thread when called from trio (:class:`JournalReader`). A reader checks the whole file
(``PRAGMA quick_check``, about 3 ms per MB) once per file it reads, not per read: a lookup of
an unknown session is one query by primary key. Every fact read is verified against its
checksum (CRC32 of its stored text): a damaged one is reported with its session and
sequence (:class:`FactLogError`), never applied nor skipped; other sessions read on. A
snapshot's rows carry checksums too: a damaged snapshot is ignored (it is only a cache) and
the session folded from its facts.

The file is created readable by its owner only (0600; SQLite gives ``-wal`` and ``-shm``
the same mode). The team file a session runs is kept once, in ``session_teams``, not in the
``sessions`` row every batch updates (SQLite reads, and when the row changes size writes,
a row whole: a 5 MB team file cost every batch 5 MB).

What survives what (``durability``):

* ``power`` (the default; ``PRAGMA synchronous=FULL``): a batch is acknowledged after its
  transaction is fsync'd to the WAL. It survives the process being killed *and* the machine
  losing power, on storage that honours flushes.
* ``process`` (``synchronous=NORMAL``): a batch is acknowledged once the WAL write reached the
  operating system. It survives the process being killed (kill -9, OOM, a crash); on power
  loss the transactions since the last checkpoint may roll back (the file is never corrupt).

Schema versions are recorded in ``PRAGMA user_version`` (and the file marked as ours with
``PRAGMA application_id``). Opening an older file migrates it in one transaction; a newer
one, a foreign SQLite file, or a file that is not SQLite at all is refused before anything is
written to it.

Snapshots: after every :data:`SNAPSHOT_EVERY` committed facts of a session (and at least one
per entry of its state, so that a large fan-out is not walked and encoded again every few
thousand facts: :func:`._snapshot.snapshot_due`), the runtime's committed state is copied (its
entries are immutable values, so a shallow copy) and the writer stores it, so opening a
session reads the latest snapshot and folds only the facts after it. A snapshot is stored
in parts (a ``snapshots`` row per session says which sequence, ``snapshot_parts`` rows hold
the pieces; see :mod:`._snapshot`), and the writer writes again only the parts that changed
since its previous snapshot of the session: a snapshot costs what changed, not the size of
the session.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import json
import os
import queue
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import structlog
import trio

from orchestrator.ahp._actions import (
    ChatTruncatedAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp._state import Turn
from orchestrator.base._compact_json import dumps
from orchestrator.base._errors import FactLogError, PeerProtocolError
from orchestrator.core._facts import Fact
from orchestrator.core._facts_wire import decode_fact, fact_to_json
from orchestrator.core._team_actions import RunFinished, RunStarted
from orchestrator.core._team_state import TeamState
from orchestrator.protocols._agent_messages import TURN_ENDS, turn_from_facts, turn_messages
from orchestrator.runtime._factlog import EventTicket, Ticket

from ._snapshot import (
    PartKey,
    decode_parts,
    decode_state,
    encode_part,
    same_values,
    snapshot_due,
    snapshot_header,
    snapshot_parts,
    state_entries,
)

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "AgentMessage",
    "Durability",
    "JournalReader",
    "JournalStatistics",
    "SessionInfo",
    "SqliteJournal",
]

log = structlog.get_logger("orchestrator.journal")

#: ``PRAGMA application_id`` of our files: "ORCH".
APPLICATION_ID: Final = 0x4F524348
#: The schema this code writes; see :data:`MIGRATIONS` for how older ones are brought up.
SCHEMA_VERSION: Final = 6
#: Most facts written in one transaction (a group commit).
GROUP_LIMIT: Final = 20_000
#: Committed facts of a session between two snapshots of it, at least (a session with more
#: entries waits for one fact per entry: :func:`._snapshot.snapshot_due`).
SNAPSHOT_EVERY: Final = 5_000
#: Seconds a stopping journal waits for its backlog before failing what is not written.
DRAIN_LIMIT: Final = 2.0

_SCHEMA_V1: Final = """
CREATE TABLE sessions (
    session TEXT PRIMARY KEY,
    team TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_sequence INTEGER NOT NULL
);
CREATE TABLE facts (
    id INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    channel TEXT NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    fact TEXT NOT NULL,
    UNIQUE (session, sequence)
);
"""

_AGENT_MESSAGES: Final = """
CREATE TABLE agent_messages (
    id INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    chat TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    part INTEGER NOT NULL,
    sequence INTEGER NOT NULL,
    type TEXT NOT NULL,
    message TEXT NOT NULL,
    deleted_at TEXT,
    deleted_by INTEGER,
    UNIQUE (session, chat, turn_id, part)
);
CREATE INDEX agent_messages_replay ON agent_messages (session, chat, id)
"""


def _add_agent_messages(connection: sqlite3.Connection) -> None:
    """Schema 3: the agent channel's history, written for the turns already on file."""
    for statement in filter(str.strip, _AGENT_MESSAGES.split(";")):
        connection.execute(statement)
    history = _AgentHistory()
    sessions = [row[0] for row in connection.execute("SELECT session FROM sessions")]
    for session in sessions:
        rows = connection.execute(
            "SELECT fact FROM facts WHERE session = ? ORDER BY sequence", (session,)
        )
        history.record(connection, [decode_fact(json.loads(text)) for (text,) in rows])
    history.flush(connection)


_SNAPSHOT_PARTS: Final = """
CREATE TABLE snapshot_parts (
    session TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    sequence INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session, kind, name, position)
)
"""


def _split_snapshots(connection: sqlite3.Connection) -> None:
    """Schema 4: snapshots in parts (see :mod:`._snapshot`); the whole-state snapshots on
    file are converted (one that cannot be read is dropped: it is only a cache)."""
    connection.execute(_SNAPSHOT_PARTS)
    rows = connection.execute("SELECT state FROM snapshots").fetchall()
    connection.execute("DELETE FROM snapshots")
    for (text,) in rows:
        try:
            state = decode_state(json.loads(text))
        except (json.JSONDecodeError, PeerProtocolError):
            continue
        _SnapshotWriter(checksums=False).write(connection, state)


_SESSION_TEAMS: Final = """
CREATE TABLE session_teams (
    session TEXT PRIMARY KEY,
    team_file TEXT,
    team_toml TEXT NOT NULL
)
"""


def fact_checksum(text: str) -> int:
    """The checksum stored with a fact: CRC32 of its text as UTF-8.

    It finds a damaged row (a flipped bit, a torn sector that SQLite's page format still
    accepts), not a forged one: anyone who can write the file can write a matching sum.
    """
    return zlib.crc32(text.encode())


def _teams_apart_and_checksums(connection: sqlite3.Connection) -> None:
    """Schema 5: each session's team file in ``session_teams``, written once (it was in
    the ``sessions`` row that every batch updates, so every batch read the whole text, and
    wrote it again whenever the row changed size), and a checksum with every fact, computed
    here for the facts on file (and for the snapshots' rows: a damaged one is ignored)."""
    connection.execute(_SESSION_TEAMS)
    connection.execute(
        "INSERT INTO session_teams (session, team_file, team_toml) "
        "SELECT session, team_file, team_toml FROM sessions WHERE team_toml IS NOT NULL"
    )
    # The column stays (dropping one rewrites the table), empty: nothing writes it any more.
    connection.execute("UPDATE sessions SET team_toml = NULL WHERE team_toml IS NOT NULL")
    connection.create_function("fact_checksum", 1, fact_checksum, deterministic=True)
    try:
        for table, column in (
            ("facts", "fact"),
            ("snapshots", "state"),
            ("snapshot_parts", "data"),
        ):
            connection.execute(
                f"ALTER TABLE {table} ADD COLUMN checksum INTEGER NOT NULL DEFAULT 0"
            )
            connection.execute(f"UPDATE {table} SET checksum = fact_checksum({column})")
    finally:
        connection.create_function("fact_checksum", 1, None)


_CHATS: Final = """
CREATE TABLE chats (
    chat TEXT PRIMARY KEY,
    session TEXT NOT NULL
)
"""


def _chats_table(connection: sqlite3.Connection) -> None:
    """Schema 6: which session each chat URI belongs to, one row a chat, so that a chat URI a
    client chooses (AHP ``createChat``) is checked against every session with one indexed
    lookup instead of a scan of every fact."""
    connection.execute(_CHATS)
    connection.execute(
        "INSERT OR IGNORE INTO chats (chat, session) "
        "SELECT json_extract(fact, '$.action.summary.resource'), session FROM facts "
        "WHERE type = 'session/chatAdded' "
        "AND json_extract(fact, '$.action.summary.resource') IS NOT NULL"
    )


#: Each entry brings a file from the version before it to its own version: SQL, or a
#: function run inside the migration's transaction.
MIGRATIONS: Final[dict[int, str | Callable[[sqlite3.Connection], None]]] = {
    1: _SCHEMA_V1,
    2: """
ALTER TABLE sessions ADD COLUMN team_file TEXT;
ALTER TABLE sessions ADD COLUMN team_toml TEXT;
CREATE TABLE snapshots (
    session TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (session, sequence)
);
""",
    3: _add_agent_messages,
    4: _split_snapshots,
    5: _teams_apart_and_checksums,
    6: _chats_table,
}


class Durability(enum.StrEnum):
    """What an acknowledged fact survives (see the module docstring)."""

    POWER = "power"
    PROCESS = "process"


_SYNCHRONOUS: Final = {Durability.POWER: "FULL", Durability.PROCESS: "NORMAL"}


@attrs.frozen(kw_only=True)
class JournalStatistics:
    """What the journal has written since it opened."""

    facts: int
    batches: int
    transactions: int
    snapshots: int
    queued: int
    failed: bool


@attrs.frozen(kw_only=True)
class AgentMessage:
    """One event of a chat's agent-channel history (a row of ``agent_messages``)."""

    turn_id: str
    event: dict[str, Any]
    deleted_at: str | None = None  # when undo or truncation removed it from the replay


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

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "team": self.team,
            "title": self.title,
            "status": self.status,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "facts": self.last_sequence,
            "teamFile": self.team_file,
        }


# ─── Opening a file ──────────────────────────────────────────────────────────


def _error(path: Path, message: str) -> FactLogError:
    return FactLogError(message, source=str(path))


def _from_sqlite(path: Path, exc: sqlite3.Error, doing: str) -> FactLogError:
    """A SQLite error as our error: what we were doing, and what SQLite said."""
    return _error(path, f"cannot {doing}: {exc}")


def _read_only_filesystem(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _read_uri(path: Path) -> str:
    """A read-only URI for ``path``. On a read-only filesystem SQLite cannot create the WAL
    index a reader needs, but nothing can change the file either, so it is read immutable."""
    return f"file:{path}?mode=ro" + ("&immutable=1" if _read_only_filesystem(path) else "")


def _unwritable(path: Path) -> str | None:
    """Why the journal at ``path`` could not be written, before trying: a read-only
    filesystem, or a file or directory this user may not write."""
    directory = path.parent if path.parent.exists() else None
    if directory is None:
        return None  # created on open (or that fails with its own reason)
    if _read_only_filesystem(path):
        return f"it is on a read-only filesystem ({directory})"
    if not os.access(directory, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "this user may not write it or its directory"
    return None


def _check_file(path: Path) -> int:
    """The schema version of the journal at ``path`` (0: an empty new file).

    Refuses, without writing a byte, a file that is not SQLite, a SQLite file that is not
    ours, a journal written by a newer orchestrator, and a damaged one.
    """
    if not path.exists():
        return 0
    try:
        connection = sqlite3.connect(_read_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise _from_sqlite(path, exc, "open the journal") from exc
    try:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id != APPLICATION_ID and (version or tables):
            raise _error(
                path,
                "this SQLite file is not an orchestrator journal; pass another --db path",
            )
        if version > SCHEMA_VERSION:
            raise _error(
                path,
                f"this journal was written by a newer orchestrator (schema {version}; this one "
                f"reads up to {SCHEMA_VERSION}); upgrade the orchestrator or use another --db",
            )
        problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise _error(
                path,
                f"the journal is damaged ({'; '.join(problems[:3])}); it was left untouched: "
                "restore it from a backup, or recover what can be read with sqlite3's .recover",
            )
        return int(version)
    except sqlite3.DatabaseError as exc:
        raise _error(
            path,
            f"this file is not an orchestrator journal, or it is damaged ({exc}); it was left "
            "untouched",
        ) from exc
    finally:
        connection.close()


def _connect(path: Path, *, durability: Durability, max_bytes: int | None) -> sqlite3.Connection:
    """The write connection: the schema brought up to :data:`SCHEMA_VERSION`, WAL on."""
    problem = _unwritable(path)
    if problem is not None:
        raise _error(
            path, f"cannot write the journal: {problem}; pass another --db or make it writable"
        )
    version = _check_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _create_private(path)
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise _error(path, f"cannot create the journal: {exc}") from exc
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={_SYNCHRONOUS[durability]}")
        if max_bytes is not None:
            page_size = connection.execute("PRAGMA page_size").fetchone()[0]
            connection.execute(f"PRAGMA max_page_count={max(max_bytes // page_size, 1)}")
        if version < SCHEMA_VERSION:
            _migrate(connection, version)
            if version:
                log.info("journal migrated", path=str(path), old=version, new=SCHEMA_VERSION)
    except sqlite3.Error as exc:
        connection.close()
        raise _from_sqlite(path, exc, "prepare the journal for writing") from exc
    return connection


def _create_private(path: Path) -> None:
    """Create the journal file readable by its owner only (an empty file is an empty SQLite
    database), unless it exists: it holds every prompt and answer of every session. SQLite
    gives the ``-wal`` and ``-shm`` files it creates beside it the database file's mode."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _migrate(connection: sqlite3.Connection, version: int) -> None:
    """Apply the migrations after ``version`` in one transaction: all of them or none."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        for target in range(version + 1, SCHEMA_VERSION + 1):
            migration = MIGRATIONS[target]
            if callable(migration):
                migration(connection)
                continue
            for statement in filter(str.strip, migration.split(";")):
                connection.execute(statement)
        connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


# ─── Writing ─────────────────────────────────────────────────────────────────


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

    def size(self) -> int:
        return len(self.rows)


def _write_group(
    connection: sqlite3.Connection, group: Sequence[_Item], history: _AgentHistory
) -> None:
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
    added = [chat for batch in batches for chat in batch.chats]
    if added:
        connection.executemany("INSERT OR IGNORE INTO chats (chat, session) VALUES (?, ?)", added)
    for item in group:
        if isinstance(item, _Batch):
            history.record(connection, item.facts, item.ended_turns)
        else:
            item.write(connection)
    history.flush(connection)


#: Most rows one INSERT statement writes (7 columns each: SQLite takes 32,766 parameters).
ROWS_PER_INSERT: Final = 256


def _insert_rows(
    connection: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]], tail: str = ""
) -> None:
    """``head VALUES (...), (...) tail`` for ``rows``, in order, in few statements.

    Statements hold :data:`ROWS_PER_INSERT` rows, then halves of that for the rest: few
    distinct texts, which the sqlite3 module compiles once and keeps in its cache.
    """
    start = 0
    while start < len(rows):
        size = min(ROWS_PER_INSERT, 1 << ((len(rows) - start).bit_length() - 1))
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

    def write(self, connection: sqlite3.Connection) -> None:
        # The text in a table of its own: the sessions row is updated with every batch, and
        # SQLite reads a row whole to update it, and writes it whole when its size changes
        # (a 5 MB team file there cost each batch 5 MB).
        connection.execute(
            "INSERT OR REPLACE INTO session_teams (session, team_file, team_toml) VALUES (?, ?, ?)",
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

    def write(self, connection: sqlite3.Connection) -> None:
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

    def write(self, connection: sqlite3.Connection, state: TeamState) -> None:
        session, sequence = state.session_uri, state.last_sequence
        parts = snapshot_parts(state)
        written = self._written.get(session)
        if written is None:
            connection.execute("DELETE FROM snapshot_parts WHERE session = ?", (session,))
            written = {}
        connection.executemany(
            "DELETE FROM snapshot_parts WHERE session = ? AND kind = ? AND name = ? "
            "AND position = ?",
            [(session, *key) for key in written.keys() - parts.keys()],
        )
        rows = [
            (session, *key, sequence, dumps(encode_part(key, values)))
            for key, values in parts.items()
            if not same_values(written.get(key), values)
        ]
        header = dumps(snapshot_header(state))
        if self._checksums:
            connection.executemany(
                "INSERT OR REPLACE INTO snapshot_parts (session, kind, name, position, "
                "sequence, data, checksum) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(*row, fact_checksum(row[-1])) for row in rows],
            )
            connection.execute(
                "INSERT OR REPLACE INTO snapshots (session, sequence, state, checksum) "
                "VALUES (?, ?, ?, ?)",
                (session, sequence, header, fact_checksum(header)),
            )
        else:
            connection.executemany(
                "INSERT OR REPLACE INTO snapshot_parts (session, kind, name, position, "
                "sequence, data) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
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


_Item = _Batch | _Describe | _Snapshot


class _AgentHistory:
    """Writes the agent channel's history rows as turns end (the writer thread's own).

    A batch the runtime submits brings the turns it ends, as the runtime's reducer left
    them (``ended_turns``): their rows are written from those, so a turn is not folded
    again here. A turn that comes without (a batch submitted with none, as the migration
    and a journal's direct users do, or a turn the submitter did not give) is folded from
    its facts: the facts of the chat's running turn, kept since its ``chat/turnStarted``
    in a batch without turns, or else read back from the facts table (a turn that began
    before this process started, or in a batch with turns; its facts are written first).
    Both give the same turn: the runtime's state folds the same facts with the same reducer.
    The rows are kept until :meth:`flush`, which the transaction calls before it commits,
    so that its turns are written with one statement.
    """

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], list[Fact]] = {}  # (session, chat) -> its turn
        self._rows: list[tuple[str, str, str, int, int, str, str]] = []  # not yet written

    def reset(self) -> None:
        """Forget what is kept (a transaction that wrote some of it was rolled back): the
        facts of running turns are then read back from the table, where they are."""
        self._turns.clear()
        self._rows.clear()

    def flush(self, connection: sqlite3.Connection) -> None:
        """Write the rows kept so far, in the order their turns ended."""
        rows, self._rows = self._rows, []
        # A restored turn writes the same rows again: they come back from deletion in place.
        _insert_rows(
            connection,
            "INSERT INTO agent_messages (session, chat, turn_id, part, sequence, type, message)",
            rows,
            " ON CONFLICT (session, chat, turn_id, part) DO UPDATE SET "
            "sequence = excluded.sequence, type = excluded.type, message = excluded.message, "
            "deleted_at = NULL, deleted_by = NULL",
        )

    def record(
        self,
        connection: sqlite3.Connection,
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
                    self._rows.extend(
                        (
                            fact.session,
                            fact.channel,
                            turn.id,
                            part,
                            fact.sequence,
                            message["type"],
                            dumps(message),
                        )
                        for part, message in enumerate(turn_messages(turn))
                    )


def _turn_facts(connection: sqlite3.Connection, end: Fact) -> list[Fact]:
    """A turn's facts read back from the table: from its chat's last turn start to ``end``."""
    rows = connection.execute(
        "SELECT sequence, fact, checksum FROM facts WHERE session = ? AND channel = ? "
        "AND sequence >= coalesce("
        "(SELECT max(sequence) FROM facts WHERE session = ? AND channel = ? "
        "AND type = 'chat/turnStarted' AND sequence <= ?), ?) AND sequence <= ? "
        "ORDER BY sequence",
        (
            end.session,
            end.channel,
            end.session,
            end.channel,
            end.sequence,
            end.sequence,
            end.sequence,
        ),
    )
    return [
        decode_fact(json.loads(_checked(end.session, sequence, text, checksum, source="")))
        for sequence, text, checksum in rows
    ]


def _checked(session: str, sequence: int, text: str, checksum: int, *, source: str) -> str:
    """``text``, the stored fact ``sequence`` of ``session``, if it matches its checksum."""
    if fact_checksum(text) != checksum:
        raise FactLogError(
            f"fact {sequence} of {session} is damaged (its checksum does not match): it was "
            "not applied; restore the journal from a backup",
            source=source,
        )
    return text


def _soft_delete(connection: sqlite3.Connection, cut: Fact, action: ChatTruncatedAction) -> None:
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


class SqliteJournal:
    """The durable fact log on a SQLite file; start it with ``await nursery.start(j.serve)``."""

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = Durability.POWER,
        snapshot_every: int = SNAPSHOT_EVERY,
        max_bytes: int | None = None,
        drain_limit: float = DRAIN_LIMIT,
    ) -> None:
        self.path = Path(path)
        self.durability = durability
        self.snapshot_every = snapshot_every
        self.max_bytes = max_bytes
        self.drain_limit = drain_limit
        # Batches and other writes for the writer thread; None tells it to stop.
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._token: trio.lowlevel.TrioToken | None = None
        # Why the journal failed: the writer thread's own (it fails all it takes after), and
        # the trio thread's, set once the failed transaction's tickets are completed: so a
        # submission is refused only after every batch durable before the failure has been
        # reported durable (see _completed).
        self._write_failed: FactLogError | None = None
        self._failed: FactLogError | None = None
        self._failed_event = trio.Event()
        # Sessions one of whose batches could not be stored, and why; the same two sides.
        # Invariant: self._refused.keys() >= self._refused_sessions.keys()
        self._refused: dict[str, FactLogError] = {}
        self._refused_sessions: dict[str, FactLogError] = {}
        # Set when a shutdown stops waiting for the backlog: what is not written fails.
        self._abandoned: FactLogError | None = None
        self._writing: list[_Item] = []  # the writer's group in hand (for _writer_died)
        self._dead = False  # the writer thread ended on an exception it could not contain
        self._closed = False
        self._snapshot_at: dict[str, int] = {}
        self._snapshots = _SnapshotWriter()
        self._history = _AgentHistory()
        self._connection: sqlite3.Connection | None = None
        self.reader = JournalReader(self.path)
        # Written by the writer thread only; read (racily, as counters) by statistics().
        self._written = {"facts": 0, "batches": 0, "transactions": 0, "snapshots": 0}

    # ── the service ────────────────────────────────────────────────────────

    def open(self) -> None:
        """Check, migrate and open the file for writing (blocking: run it in a thread).

        Raises :class:`FactLogError` naming the file and the problem; nothing is written to
        a file that is refused.
        """
        if self._connection is None:
            self._connection = _connect(
                self.path, durability=self.durability, max_bytes=self.max_bytes
            )
            self.reader.checked()  # by _connect, a moment ago: its reads need not again

    async def serve(
        self, *, task_status: trio.TaskStatus[SqliteJournal] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Write until cancelled, then drain what was submitted and close.

        Opens the file first if :meth:`open` was not called; reports the journal itself once
        it takes batches. The drain takes :attr:`drain_limit` seconds at most (and the
        transaction in hand): what is not written by then fails (:meth:`stop_writing`).
        """
        await trio.to_thread.run_sync(self.open)
        connection = self._connection
        assert connection is not None
        self._token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def write_until_stopped() -> None:
            try:
                self._write(connection)
            except BaseException as exc:  # reported: see _writer_died
                self._writer_died(exc)
            finally:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
                self._connection = None
                self._token_run(done.set)

        thread = threading.Thread(target=write_until_stopped, name="journal-writer", daemon=True)
        thread.start()
        log.info("journal open", path=str(self.path), durability=str(self.durability))
        task_status.started(self)
        try:
            await trio.sleep_forever()
        finally:
            # Everything submitted before the stop is written (or failed) before we return,
            # within the drain limit: a shutdown must not wait for an unbounded backlog.
            self._closed = True
            self._queue.put(None)
            with trio.CancelScope(shield=True):
                with trio.move_on_after(self.drain_limit):
                    await done.wait()
                if not done.is_set():
                    self.stop_writing()
                    await done.wait()

    def stop_writing(self) -> None:
        """Write nothing more but the transaction in hand: every batch not written yet
        fails (it was never acknowledged), at once. For a shutdown that cannot wait for
        the backlog; the journal stays sound, and the next start recovers the sessions."""
        if self._abandoned is None:
            self._abandoned = _error(self.path, "the journal closed before this batch was written")
            log.warning(
                "journal backlog abandoned", path=str(self.path), queued=self._queue.qsize()
            )

    def _token_run(self, function: Any, *args: Any) -> None:
        assert self._token is not None
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(function, *args)

    def _write(self, connection: sqlite3.Connection) -> None:
        """The writer thread: take what is queued, write it in one transaction, report."""
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            size = first.size()
            while size < GROUP_LIMIT:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                group.append(item)
                size += item.size()
            self._writing = group
            if self._write_failed is not None:
                self._token_run(self._completed, _tickets(group), self._write_failed)
            elif self._abandoned is not None:
                abandoned = self._abandoned
                self._token_run(self._settled, [(t, abandoned) for t in _tickets(group)], {})
            elif self._refused and any(item.session in self._refused for item in group):
                self._write_each(connection, group)
            else:
                self._write_together(connection, group)
            self._writing = []

    def _write_together(self, connection: sqlite3.Connection, group: list[_Item]) -> None:
        """The fast path: the whole group in one transaction, its rows in few statements."""
        try:
            connection.execute("BEGIN IMMEDIATE")
            _write_group(connection, group, self._history)
            connection.execute("COMMIT")
        except Exception as exc:  # sorted out below: the file's, or one item's
            self._rolled_back(connection, group)
            if _environmental(exc):
                self._journal_failed(exc, group)
                return
            log.warning(
                "journal transaction failed: writing its batches one by one",
                path=str(self.path),
                error=_printable(f"{type(exc).__name__}: {exc}"),
            )
            self._write_each(connection, group)
            return
        self._wrote(group)
        # One call into trio for the whole group: each call wakes the trio thread through
        # its wakeup socket, and a syscall per ticket also hands the GIL back and forth.
        tickets = _tickets(group)
        if tickets:
            self._token_run(self._completed, tickets, None)

    def _write_each(self, connection: sqlite3.Connection, group: list[_Item]) -> None:
        """The slow path, after a fault of one item: each item in a savepoint of its own, so
        that one batch that cannot be stored fails alone (and its session with it), a
        snapshot that cannot be is skipped, and all else commits, still in one transaction.
        A fault of the file itself fails the journal as on the fast path."""
        outcomes: list[tuple[EventTicket, FactLogError | None]] = []
        refused: dict[str, FactLogError] = {}
        written: list[_Item] = []
        try:
            connection.execute("BEGIN IMMEDIATE")
            for item in group:
                earlier = self._refused.get(item.session)
                if earlier is not None:
                    if isinstance(item, _Batch):  # it follows a batch that failed
                        outcomes.append((item.ticket, earlier))
                    continue
                connection.execute("SAVEPOINT item")
                try:
                    _write_group(connection, [item], self._history)
                except Exception as exc:
                    connection.execute("ROLLBACK TO item")
                    connection.execute("RELEASE item")
                    self._history.reset()
                    self._snapshots.forget(item.session)
                    if _environmental(exc):
                        raise
                    problem = self._item_failed(item, exc)
                    if isinstance(item, _Batch) and problem is not None:
                        self._refused[item.session] = refused[item.session] = problem
                        outcomes.append((item.ticket, problem))
                    continue
                connection.execute("RELEASE item")
                written.append(item)
                if isinstance(item, _Batch):
                    outcomes.append((item.ticket, None))
            connection.execute("COMMIT")
        except Exception as exc:  # the file's fault: the journal stops
            self._rolled_back(connection, group)
            self._journal_failed(exc, group)
            return
        self._wrote(written)
        self._token_run(self._settled, outcomes, refused)

    def _item_failed(self, item: _Item, exc: Exception) -> FactLogError | None:
        """Log why ``item`` could not be written; a batch's error, None for what is only a
        cache (a snapshot) or a description (the team file: it is logged)."""
        what = exc.message if isinstance(exc, FactLogError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(item, _Batch):
            log.error(
                "journal skipped a snapshot"
                if isinstance(item, _Snapshot)
                else "journal could not record a session's team file",
                path=str(self.path),
                session=item.session,
                error=_printable(what),
            )
            return None
        first, last = item.facts[0].sequence, item.facts[-1].sequence
        problem = _error(
            self.path,
            _printable(
                f"session {item.session} can record nothing more: its facts {first} to {last} "
                f"could not be stored ({what}); the other sessions go on"
            ),
        )
        log.error(
            "journal refused a session",
            path=str(self.path),
            session=item.session,
            error=problem.message,
        )
        return problem

    def _rolled_back(self, connection: sqlite3.Connection, group: Sequence[_Item]) -> None:
        """Roll back, and forget what the writer remembered of the rolled-back writes."""
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        self._history.reset()
        for item in group:
            if isinstance(item, _Snapshot):
                self._snapshots.forget(item.session)

    def _journal_failed(self, exc: BaseException, group: Sequence[_Item]) -> None:
        """The file cannot be written (full, read-only, damaged, gone): nothing more is."""
        what = str(exc) if isinstance(exc, sqlite3.Error) else f"{type(exc).__name__}: {exc}"
        reason = _error(self.path, _printable(f"the journal failed: {what}"))
        self._write_failed = reason
        log.error("journal write failed", path=str(self.path), error=reason.message)
        self._token_run(self._completed, _tickets(group), reason)

    def _wrote(self, written: Sequence[_Item]) -> None:
        self._count(written)
        for item in written:
            if isinstance(item, _Batch) and item.status is not None:
                # The run ended: keep none of its state alive for later snapshots.
                self._snapshots.forget(item.session)

    def _writer_died(self, exc: BaseException) -> None:
        """The writer thread ends on an exception it could not contain (a bug, or one that
        is not an ``Exception``): the journal fails with the reason, and every batch in
        hand, queued or submitted later fails with it, so nobody waits forever."""
        reason = _error(
            self.path,
            _printable(f"the journal's writer stopped: {type(exc).__name__}: {exc}"),
        )
        if self._write_failed is None:
            self._write_failed = reason
        log.critical("journal writer died", path=str(self.path), exc_info=exc)
        self._dead = True
        stranded = self._writing + _drain(self._queue)
        self._token_run(self._completed, _tickets(stranded), self._write_failed)

    def _completed(self, tickets: Sequence[EventTicket], error: FactLogError | None) -> None:
        """On the trio thread: complete one transaction's tickets, in submission order.

        Calls from the writer run in the order it made them, so when a failure becomes
        visible here every batch of an earlier transaction has already been reported
        durable: the runtime never takes a durable batch for a failed one.
        """
        if error is not None and self._failed is None:
            self._failed = error
            self._failed_event.set()
        for ticket in tickets:
            ticket.complete(error)

    def _settled(
        self,
        outcomes: Sequence[tuple[EventTicket, FactLogError | None]],
        refused: Mapping[str, FactLogError],
    ) -> None:
        """On the trio thread: as :meth:`_completed`, each ticket with its own outcome;
        the sessions ``refused`` submit nothing more (after their earlier batches are
        reported, as for the whole journal)."""
        self._refused_sessions.update(refused)
        for ticket, error in outcomes:
            ticket.complete(error)

    def _count(self, group: Sequence[_Item]) -> None:
        self._written["transactions"] += 1
        for item in group:
            if isinstance(item, _Batch):
                self._written["batches"] += 1
                self._written["facts"] += len(item.rows)
            elif isinstance(item, _Snapshot):
                self._written["snapshots"] += 1

    @property
    def failed(self) -> FactLogError | None:
        """Why the journal stopped taking facts (None while it takes them)."""
        return self._failed

    async def wait_failed(self) -> FactLogError:
        """Return once the journal stopped taking facts, with why."""
        await self._failed_event.wait()
        assert self._failed is not None
        return self._failed

    def session_failed(self, session: str) -> FactLogError | None:
        """Why ``session`` may record nothing more (None while it may)."""
        return self._failed or self._refused_sessions.get(session)

    def statistics(self) -> JournalStatistics:
        return JournalStatistics(
            facts=self._written["facts"],
            batches=self._written["batches"],
            transactions=self._written["transactions"],
            snapshots=self._written["snapshots"],
            queued=self._queue.qsize(),
            failed=self._failed is not None,
        )

    # ── the fact log ───────────────────────────────────────────────────────

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self._failed is not None:
            raise self._failed
        if self._refused_sessions:
            refused = self._refused_sessions.get(facts[0].session)
            if refused is not None:
                raise refused
        if self._token is None or self._closed:
            raise _error(self.path, "the journal is not open for writing")
        batch = _batch(facts, ended_turns)
        self._queue.put(batch)
        if self._dead:
            # The writer died after this was checked, perhaps before the put: nobody
            # takes the queue any more, so what is in it fails here.
            error = self._write_failed
            assert error is not None
            for ticket in _tickets(_drain(self._queue)):
                ticket.complete(error)
        return batch.ticket

    def describe(self, session: str, *, team_file: str, team_toml: str) -> None:
        """Remember the team a session runs (queued after the session's first batch)."""
        self._queue.put(_Describe(session, team_file, team_toml))

    def committed(self, state: TeamState) -> None:
        """The runtime committed facts: snapshot the state when enough have accumulated."""
        since = state.last_sequence - self._snapshot_at.get(state.session_uri, 0)
        due = snapshot_due(since, state_entries(state), every=self.snapshot_every)
        if due and self._failed is None:
            self._snapshot_at[state.session_uri] = state.last_sequence
            self._queue.put(_Snapshot(state.copy(), self._snapshots))


#: SQLite's primary result codes that say the file or its environment cannot be written
#: (as opposed to one statement's data: a constraint, a value too big).
_ENVIRONMENT_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_NOLFS,
        sqlite3.SQLITE_AUTH,
    }
)


def _environmental(exc: BaseException) -> bool:
    """Whether ``exc`` is the file's or the machine's fault (the journal cannot go on),
    rather than that of what one item holds (that item fails, the rest is written)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in _ENVIRONMENT_CODES
    return False


def _printable(text: str) -> str:
    """``text`` with what cannot be encoded as UTF-8 (a lone surrogate) escaped: a message
    about bad text must not be bad text itself (it goes to logs, clients, /healthz)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _tickets(items: Sequence[_Item]) -> list[EventTicket]:
    return [item.ticket for item in items if isinstance(item, _Batch)]


def _drain(items: queue.SimpleQueue[_Item | None]) -> list[_Item]:
    """What is queued, taken without waiting (the stop marker dropped)."""
    taken: list[_Item] = []
    while True:
        try:
            item = items.get_nowait()
        except queue.Empty:
            return taken
        if item is not None:
            taken.append(item)


# ─── Reading ─────────────────────────────────────────────────────────────────


class JournalReader:
    """Reads a journal with read-only connections; safe beside a writer (WAL).

    Synchronous: call it from a worker thread in trio code (``trio.to_thread.run_sync``).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # The file (device, inode) this reader has checked: the whole-file check runs once
        # per file, not per read (PRAGMA quick_check: 410 ms of CPU on a 137 MB journal, for
        # every lookup of a session id a client named).
        self._checked: tuple[int, int] | None = None

    def checked(self) -> None:
        """The file as it is now has just been checked (by the writer that opened it)."""
        with contextlib.suppress(OSError):
            self._checked = _identity(self.path.stat())

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
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

    def sessions(self) -> list[SessionInfo]:
        """Every session, oldest first."""
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT session, team, title, status, created_at, updated_at, last_sequence, "
                "team_file FROM sessions ORDER BY created_at, rowid"
            ).fetchall()
        return [_session_info(row) for row in rows]

    def session(self, session: str) -> SessionInfo:
        with self._connection() as connection:
            return self._session(connection, session)

    def _session(self, connection: sqlite3.Connection, session: str) -> SessionInfo:
        row = connection.execute(
            "SELECT session, team, title, status, created_at, updated_at, last_sequence, "
            "team_file FROM sessions WHERE session = ?",
            (session,),
        ).fetchone()
        if row is None:
            raise _error(self.path, f"no session {session} (orchestrator sessions lists them)")
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

    def _facts(self, connection: sqlite3.Connection, session: str, after: int) -> list[Fact]:
        rows = connection.execute(
            "SELECT sequence, fact, checksum FROM facts WHERE session = ? AND sequence > ? "
            "ORDER BY sequence",
            (session, after),
        ).fetchall()
        source = str(self.path)
        return [
            self._decode(_checked(session, sequence, text, checksum, source=source))
            for sequence, text, checksum in rows
        ]

    def agent_messages(
        self, session: str, chat: str, *, deleted: bool = False
    ) -> list[AgentMessage]:
        """A chat's agent-channel history in replay order; ``deleted``: with the rows undo
        and truncation removed (marked, never dropped)."""
        self.session(session)
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT turn_id, message, deleted_at FROM agent_messages "
                "WHERE session = ? AND chat = ? AND (? OR deleted_at IS NULL) ORDER BY id",
                (session, chat, deleted),
            ).fetchall()
        return [
            AgentMessage(turn_id=turn_id, event=json.loads(message), deleted_at=deleted_at)
            for turn_id, message, deleted_at in rows
        ]

    def _decode(self, text: str) -> Fact:
        try:
            return decode_fact(json.loads(text))
        except (json.JSONDecodeError, PeerProtocolError) as exc:
            raise _error(self.path, f"a stored fact cannot be read: {exc}") from exc

    def open(self, session: str) -> TeamState:
        """A session's state: its latest snapshot and the facts after it.

        A snapshot that cannot be read is ignored (it is only a cache): the session is then
        folded from its first fact.
        """
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
                    log.warning("snapshot ignored", session=session, error=str(exc))
            after = start.last_sequence if start is not None else 0
            facts = self._facts(connection, session, after)
        return TeamState.fold(session, facts, start=start)


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _snapshot(
    sequence: int, header: str, parts: Sequence[tuple[str, str, int, int, str]]
) -> TeamState:
    """A snapshot's state from its ``snapshots`` and ``snapshot_parts`` rows."""
    if any(written > sequence for _, _, _, written, _ in parts):
        raise PeerProtocolError(
            "a part is newer than its snapshot", path="$.sequence", protocol="snapshot"
        )
    return decode_parts(
        json.loads(header),
        ((kind, name, at, json.loads(data)) for kind, name, at, _, data in parts),
    )


def _session_info(row: tuple[Any, ...]) -> SessionInfo:
    session, team, title, status, created_at, updated_at, last_sequence, team_file = row
    return SessionInfo(
        session=session,
        team=team,
        title=title,
        status=status,
        created_at=created_at,
        updated_at=updated_at,
        last_sequence=last_sequence,
        team_file=team_file,
    )
