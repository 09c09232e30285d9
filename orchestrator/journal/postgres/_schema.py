"""The PostgreSQL journal's tables, its schema versions and the migrations between them.

The same tables and columns as the SQLite journal's schema 8 (:mod:`.._schema`). So the
writer's rows (:mod:`.._rows`) and the reader's queries (:mod:`.._reader`) are the same
statements. The types are PostgreSQL's:

- ``bigint`` sequences and checksums (a CRC32 does not fit an ``integer``);
- identity columns where SQLite has its ``rowid``: ``sessions.id`` orders the sessions made at
  the same instant; ``agent_messages.id`` is the replay order.

Each session's sequence is unique: ``facts`` has the primary key ``(session, sequence)``,
so a second writer of the same session (a node that lost its lease, say) fails on its
first duplicate instead of forking the log. Gap-free is the writer's own numbering (the
runtime's ``last_sequence + 1``), which one owner per session keeps.

The version is a row per applied migration in ``journal_migrations``. A database that
has tables but no ``journal_migrations`` is not a journal and is refused, as is one whose
version is newer than this code's, before anything is written. Migrations run in one
transaction under a transaction-scoped advisory lock, so that two daemons starting on an
empty database at once do not both create the tables.
"""

from __future__ import annotations

from typing import Any, Final

from orchestrator.base import FactLogError

__all__ = ["PG_SCHEMA_VERSION"]

#: The schema this code writes.
PG_SCHEMA_VERSION: Final = 5
#: The advisory lock key migrations hold ("ORCH"): one migrating node at a time.
_MIGRATION_LOCK: Final = 0x4F524348

_SCHEMA_V1: Final = (
    """CREATE TABLE sessions (
    id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    session text PRIMARY KEY,
    team text NOT NULL,
    title text NOT NULL,
    status text NOT NULL,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    last_sequence bigint NOT NULL,
    team_file text
)""",
    """CREATE TABLE facts (
    session text NOT NULL,
    sequence bigint NOT NULL,
    channel text NOT NULL,
    at text NOT NULL,
    type text NOT NULL,
    fact text NOT NULL,
    checksum bigint NOT NULL,
    PRIMARY KEY (session, sequence)
)""",
    """CREATE TABLE session_teams (
    session text PRIMARY KEY,
    team_file text,
    team_toml text NOT NULL
)""",
    """CREATE TABLE snapshots (
    session text NOT NULL,
    sequence bigint NOT NULL,
    state text NOT NULL,
    checksum bigint NOT NULL,
    PRIMARY KEY (session, sequence)
)""",
    """CREATE TABLE snapshot_parts (
    session text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    position integer NOT NULL,
    sequence bigint NOT NULL,
    data text NOT NULL,
    checksum bigint NOT NULL,
    PRIMARY KEY (session, kind, name, position)
)""",
    """CREATE TABLE agent_messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session text NOT NULL,
    chat text NOT NULL,
    turn_id text NOT NULL,
    part integer NOT NULL,
    sequence bigint NOT NULL,
    type text NOT NULL,
    message text NOT NULL,
    deleted_at text,
    deleted_by bigint,
    UNIQUE (session, chat, turn_id, part)
)""",
    "CREATE INDEX agent_messages_replay ON agent_messages (session, chat, id)",
    """CREATE TABLE chats (
    chat text PRIMARY KEY,
    session text NOT NULL
)""",
)

#: Version 2: several daemons on one database (issue 21). ``session_leases``: the node that
#: owns each running session (and each background teammate's stream), until when, and the
#: epoch every write of it is fenced by (see :mod:`._leases`).
_SCHEMA_V2: Final = (
    """CREATE TABLE session_leases (
    session text PRIMARY KEY,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    expires_at timestamptz NOT NULL
)""",
    "CREATE INDEX session_leases_expiry ON session_leases (expires_at)",
)

#: Version 3: commands forwarded to a session's owner (issue 21). A node that follows
#: another node's session writes what its client asked (a prompt, an approval, a cancel) as
#: a row of ``session_commands``; the owner claims it, carries it out and writes the outcome
#: in ``result`` or ``error`` (see :mod:`._commands`).
_SCHEMA_V3: Final = (
    """CREATE TABLE session_commands (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session text NOT NULL,
    kind text NOT NULL,
    payload jsonb NOT NULL,
    sender text NOT NULL,
    created timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_by text,
    claimed_at timestamptz,
    answered_at timestamptz,
    result jsonb,
    error jsonb
)""",
    "CREATE INDEX session_commands_open ON session_commands (session, id) "
    "WHERE claimed_by IS NULL AND answered_at IS NULL",
    "CREATE INDEX session_commands_created ON session_commands (created)",
)

#: Version 4: a checksum with every agent-channel history row (SQLite's schema 7). Only
#: added: rows on file, and rows a node still running version 3 code writes, have none
#: (NULL) and read unchecked.
_SCHEMA_V4: Final = ("ALTER TABLE agent_messages ADD COLUMN checksum bigint",)

#: Version 5: a fork's lineage in its session row (SQLite's schema 8), filled in for the
#: forks on file from their ``team/sessionForked`` fact.
_SCHEMA_V5: Final = (
    "ALTER TABLE sessions ADD COLUMN forked_from text, ADD COLUMN forked_at bigint, "
    "ADD COLUMN forked_turn text",
    """UPDATE sessions AS s SET
    forked_from = f.fact::jsonb -> 'action' ->> 'source',
    forked_at = (f.fact::jsonb -> 'action' ->> 'sequence')::bigint,
    forked_turn = f.fact::jsonb -> 'action' ->> 'turnId'
FROM facts AS f
WHERE f.session = s.session AND f.type = 'team/sessionForked'""",
)

#: Each entry brings a database from the version before it to its own.
PG_MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    1: _SCHEMA_V1,
    2: _SCHEMA_V2,
    3: _SCHEMA_V3,
    4: _SCHEMA_V4,
    5: _SCHEMA_V5,
}


def schema_version(connection: Any, source: str) -> int:
    """The journal's schema version (0: an empty database); refuses a database that is not
    a journal and one written by a newer orchestrator."""
    if not _has_migrations(connection):
        tables = connection.execute(
            "SELECT count(*) FROM pg_catalog.pg_tables "
            "WHERE schemaname = current_schema() AND tablename IN ('sessions', 'facts')"
        ).fetchone()[0]
        # Asked again: another node's migration (one transaction: its tables and the
        # migrations table together) may have committed between the two questions.
        if tables and not _has_migrations(connection):
            raise FactLogError(
                "this database holds tables of something that is not an orchestrator "
                "journal; name another database in --db",
                source=source,
            )
        if not tables:
            return 0
    version = int(
        connection.execute("SELECT coalesce(max(version), 0) FROM journal_migrations").fetchone()[0]
    )
    if version > PG_SCHEMA_VERSION:
        raise FactLogError(
            f"this journal was written by a newer orchestrator (schema {version}; this one "
            f"reads up to {PG_SCHEMA_VERSION}); upgrade the orchestrator or use another --db",
            source=source,
        )
    return version


def _has_migrations(connection: Any) -> bool:
    return bool(
        connection.execute("SELECT to_regclass('journal_migrations') IS NOT NULL").fetchone()[0]
    )


def migrate(connection: Any, source: str) -> int:
    """Bring the database up to :data:`PG_SCHEMA_VERSION` in one transaction; the version
    it had."""
    if schema_version(connection, source) == PG_SCHEMA_VERSION:
        return PG_SCHEMA_VERSION
    connection.execute("BEGIN")
    try:
        connection.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS journal_migrations (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        version = schema_version(connection, source)  # again: another node may have done it
        for target in range(version + 1, PG_SCHEMA_VERSION + 1):
            for statement in PG_MIGRATIONS[target]:
                connection.execute(statement)
            connection.execute("INSERT INTO journal_migrations (version) VALUES (?)", (target,))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return version
