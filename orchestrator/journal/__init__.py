"""The durable log: the journal (write-ahead, group commit, recovery on open) on a SQLite
file or a PostgreSQL database (:mod:`orchestrator.journal.postgres`, whose public names
are exported here too), snapshots in parts, and history editing.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._checksum import fact_checksum
    from ._durability import Durability
    from ._group_commit import JournalStatistics
    from ._history import Edit, edit_history, resolve_chat
    from ._interface import Db, Journal, db_location, open_journal, open_reader, prune
    from ._ownership import HeldElsewhere, OwnershipStatistics, SessionOwnership, SoleOwnership
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
    from ._sqlite_journal import SqliteJournal
    from .postgres import (
        ANSWERS_CHANNEL,
        COMMANDS_CHANNEL,
        FACTS_CHANNEL,
        PG_SCHEMA_VERSION,
        CommandAnswer,
        ForwardedCommand,
        Lease,
        LeaseLostError,
        PostgresCommands,
        PostgresJournal,
        PostgresLeases,
        PostgresListener,
        PostgresReader,
        facts_payload,
        is_postgres_url,
        prune_postgres,
        read_facts_payload,
    )

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
    "HeldElsewhere",
    "Holder",
    "Journal",
    "JournalReader",
    "JournalStatistics",
    "Lease",
    "LeaseLostError",
    "OwnershipStatistics",
    "PartKey",
    "PostgresCommands",
    "PostgresJournal",
    "PostgresLeases",
    "PostgresListener",
    "PostgresReader",
    "PruneReport",
    "SessionInfo",
    "SessionLocks",
    "SessionOwnership",
    "SoleOwnership",
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
            "._group_commit": ("JournalStatistics",),
            "._ownership": (
                "HeldElsewhere",
                "OwnershipStatistics",
                "SessionOwnership",
                "SoleOwnership",
            ),
            "._prune": ("PruneReport", "prune_sqlite"),
            "._reader": ("SESSION_STATUSES", "AgentMessage", "JournalReader", "SessionInfo"),
            "._session_locks": ("Holder", "SessionLocks", "lock_path"),
            "._schema": ("APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION"),
            "._sqlite_changes": ("SqliteChanges",),
            "._sqlite_journal": ("SqliteJournal",),
            ".postgres": (
                "ANSWERS_CHANNEL",
                "COMMANDS_CHANNEL",
                "FACTS_CHANNEL",
                "PG_SCHEMA_VERSION",
                "CommandAnswer",
                "ForwardedCommand",
                "Lease",
                "LeaseLostError",
                "PostgresCommands",
                "PostgresJournal",
                "PostgresLeases",
                "PostgresListener",
                "PostgresReader",
                "facts_payload",
                "is_postgres_url",
                "prune_postgres",
                "read_facts_payload",
            ),
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
