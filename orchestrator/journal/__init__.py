"""The durable log: the journal (write-ahead, group commit, recovery on open) on a SQLite
file or a PostgreSQL database, snapshots in parts, and history editing.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._checksum import fact_checksum
    from ._durability import Durability
    from ._history import Edit, edit_history, resolve_chat
    from ._interface import Db, Journal, db_location, open_journal, open_reader, prune
    from ._journal import JournalStatistics, SqliteJournal
    from ._pg_commands import CommandAnswer, ForwardedCommand, PostgresCommands
    from ._pg_connection import is_postgres_url
    from ._pg_journal import PostgresJournal
    from ._pg_leases import Lease, LeaseLostError, LeaseStatistics, PostgresLeases
    from ._pg_notify import (
        ANSWERS_CHANNEL,
        COMMANDS_CHANNEL,
        FACTS_CHANNEL,
        PostgresListener,
        facts_payload,
        read_facts_payload,
    )
    from ._pg_prune import prune_postgres
    from ._pg_reader import PostgresReader
    from ._pg_schema import PG_SCHEMA_VERSION
    from ._prune import PruneReport, prune_sqlite
    from ._reader import SESSION_STATUSES, AgentMessage, JournalReader, SessionInfo
    from ._schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
    from ._session_locks import Holder, SessionLocks, lock_path
    from ._snapshot import (
        CHUNK,
        SNAPSHOT_FORMAT,
        PartKey,
        decode_parts,
        decode_state,
        encode_part,
        encode_state,
        same_values,
        snapshot_due,
        snapshot_header,
        snapshot_parts,
        state_entries,
    )
    from ._sqlite_changes import SqliteChanges

__all__ = [
    "ANSWERS_CHANNEL",
    "APPLICATION_ID",
    "CHUNK",
    "COMMANDS_CHANNEL",
    "FACTS_CHANNEL",
    "MIGRATIONS",
    "PG_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "SESSION_STATUSES",
    "SNAPSHOT_FORMAT",
    "AgentMessage",
    "CommandAnswer",
    "Db",
    "Durability",
    "Edit",
    "ForwardedCommand",
    "Holder",
    "Journal",
    "JournalReader",
    "JournalStatistics",
    "Lease",
    "LeaseLostError",
    "LeaseStatistics",
    "PartKey",
    "PostgresCommands",
    "PostgresJournal",
    "PostgresLeases",
    "PostgresListener",
    "PostgresReader",
    "PruneReport",
    "SessionInfo",
    "SessionLocks",
    "SqliteChanges",
    "SqliteJournal",
    "db_location",
    "decode_parts",
    "decode_state",
    "edit_history",
    "encode_part",
    "encode_state",
    "fact_checksum",
    "facts_payload",
    "is_postgres_url",
    "lock_path",
    "open_journal",
    "open_reader",
    "prune",
    "prune_postgres",
    "prune_sqlite",
    "read_facts_payload",
    "resolve_chat",
    "same_values",
    "snapshot_due",
    "snapshot_header",
    "snapshot_parts",
    "state_entries",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._checksum": ("fact_checksum",),
            "._durability": ("Durability",),
            "._history": ("Edit", "edit_history", "resolve_chat"),
            "._interface": ("Db", "Journal", "db_location", "open_journal", "open_reader", "prune"),
            "._journal": ("JournalStatistics", "SqliteJournal"),
            "._pg_commands": ("CommandAnswer", "ForwardedCommand", "PostgresCommands"),
            "._pg_connection": ("is_postgres_url",),
            "._pg_journal": ("PostgresJournal",),
            "._pg_leases": ("Lease", "LeaseLostError", "LeaseStatistics", "PostgresLeases"),
            "._pg_notify": (
                "ANSWERS_CHANNEL",
                "COMMANDS_CHANNEL",
                "FACTS_CHANNEL",
                "PostgresListener",
                "facts_payload",
                "read_facts_payload",
            ),
            "._pg_prune": ("prune_postgres",),
            "._pg_reader": ("PostgresReader",),
            "._pg_schema": ("PG_SCHEMA_VERSION",),
            "._prune": ("PruneReport", "prune_sqlite"),
            "._reader": ("SESSION_STATUSES", "AgentMessage", "JournalReader", "SessionInfo"),
            "._session_locks": ("Holder", "SessionLocks", "lock_path"),
            "._schema": ("APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION"),
            "._sqlite_changes": ("SqliteChanges",),
            "._snapshot": (
                "CHUNK",
                "PartKey",
                "SNAPSHOT_FORMAT",
                "decode_parts",
                "decode_state",
                "encode_part",
                "encode_state",
                "same_values",
                "snapshot_due",
                "snapshot_header",
                "snapshot_parts",
                "state_entries",
            ),
        },
    )
