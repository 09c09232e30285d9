"""The journal's tables, its schema versions and the migrations between them.

Schema versions are recorded in ``PRAGMA user_version`` (and the file marked as ours with
``PRAGMA application_id``). Opening an older file migrates it in one transaction; a newer
one, a foreign SQLite file, or a file that is not SQLite at all is refused before anything is
written to it (:mod:`._file`).

The team file a session runs is kept once, in ``session_teams``, not in the ``sessions`` row
every batch updates. SQLite reads a row whole, and writes it whole when the row changes size.
A 5 MB team file cost every batch 5 MB.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Final

from orchestrator.base import PeerProtocolError

from ._checksum import fact_checksum

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION"]

#: ``PRAGMA application_id`` of our files: "ORCH".
APPLICATION_ID: Final = 0x4F524348
#: The schema this code writes; see :data:`MIGRATIONS` for how older ones are brought up.
SCHEMA_VERSION: Final = 8

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
    # Imported here: they load the AHP model and the projections, which a reader that only
    # checks the schema version has no use for.
    from orchestrator.core import decode_fact

    from ._rows import _AgentHistory

    for statement in filter(str.strip, _AGENT_MESSAGES.split(";")):
        connection.execute(statement)
    history = _AgentHistory(checksums=False)  # schema 3's rows: schema 7 adds the column
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
    from ._rows import _SnapshotWriter
    from ._snapshot import decode_state

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


def _teams_apart_and_checksums(connection: sqlite3.Connection) -> None:
    """Schema 5: each session's team file in ``session_teams``, and a checksum with every fact.

    The team file is written once. It was in the ``sessions`` row that every batch updates. So
    every batch read the whole text, and wrote it again whenever the row changed size. The
    checksums are computed here for the facts on file. They are also computed for the
    snapshots' rows: a damaged one is ignored."""
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


#: Schema 7: a checksum with every agent-channel history row, as facts have one. Only added:
#: the rows on file keep none (NULL) and read unchecked, as do those a writer of schema 6
#: code leaves in a shared PostgreSQL journal.
_AGENT_MESSAGE_CHECKSUMS: Final = "ALTER TABLE agent_messages ADD COLUMN checksum INTEGER"


#: Schema 8: a fork's lineage in its session row (issue 40), so that ``orchestrator sessions``
#: shows the families without reading facts; the forks on file get theirs from their
#: ``team/sessionForked`` fact.
_FORK_LINEAGE: Final = """
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
ALTER TABLE sessions ADD COLUMN forked_at INTEGER;
ALTER TABLE sessions ADD COLUMN forked_turn TEXT;
UPDATE sessions SET
    forked_from = json_extract(f.fact, '$.action.source'),
    forked_at = json_extract(f.fact, '$.action.sequence'),
    forked_turn = json_extract(f.fact, '$.action.turnId')
FROM facts AS f
WHERE f.session = sessions.session AND f.type = 'team/sessionForked';
"""


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
    7: _AGENT_MESSAGE_CHECKSUMS,
    8: _FORK_LINEAGE,
}


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
