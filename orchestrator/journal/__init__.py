"""The durable log: the journal (write-ahead, group commit, recovery on open) on a SQLite
file or a PostgreSQL database, snapshots in parts, and history editing.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._checksum import *  # noqa: F403
    from ._durability import *  # noqa: F403
    from ._history import *  # noqa: F403
    from ._interface import *  # noqa: F403
    from ._journal import *  # noqa: F403
    from ._pg_commands import *  # noqa: F403
    from ._pg_connection import *  # noqa: F403
    from ._pg_journal import *  # noqa: F403
    from ._pg_leases import *  # noqa: F403
    from ._pg_notify import *  # noqa: F403
    from ._pg_prune import *  # noqa: F403
    from ._pg_reader import *  # noqa: F403
    from ._pg_schema import *  # noqa: F403
    from ._prune import *  # noqa: F403
    from ._reader import *  # noqa: F403
    from ._schema import *  # noqa: F403
    from ._session_locks import *  # noqa: F403
    from ._snapshot import *  # noqa: F403
    from ._sqlite_changes import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ANSWERS_CHANNEL": "._pg_notify",
            "APPLICATION_ID": "._schema",
            "AgentMessage": "._reader",
            "CHUNK": "._snapshot",
            "COMMANDS_CHANNEL": "._pg_notify",
            "CommandAnswer": "._pg_commands",
            "Db": "._interface",
            "Durability": "._durability",
            "Edit": "._history",
            "FACTS_CHANNEL": "._pg_notify",
            "ForwardedCommand": "._pg_commands",
            "Holder": "._session_locks",
            "Journal": "._interface",
            "JournalReader": "._reader",
            "JournalStatistics": "._journal",
            "Lease": "._pg_leases",
            "LeaseLostError": "._pg_leases",
            "LeaseStatistics": "._pg_leases",
            "MIGRATIONS": "._schema",
            "PG_SCHEMA_VERSION": "._pg_schema",
            "PartKey": "._snapshot",
            "PostgresCommands": "._pg_commands",
            "PostgresJournal": "._pg_journal",
            "PostgresLeases": "._pg_leases",
            "PostgresListener": "._pg_notify",
            "PostgresReader": "._pg_reader",
            "PruneReport": "._prune",
            "SCHEMA_VERSION": "._schema",
            "SESSION_STATUSES": "._reader",
            "SNAPSHOT_FORMAT": "._snapshot",
            "SessionInfo": "._reader",
            "SessionLocks": "._session_locks",
            "SqliteChanges": "._sqlite_changes",
            "SqliteJournal": "._journal",
            "db_location": "._interface",
            "decode_parts": "._snapshot",
            "decode_state": "._snapshot",
            "edit_history": "._history",
            "encode_part": "._snapshot",
            "encode_state": "._snapshot",
            "fact_checksum": "._checksum",
            "facts_payload": "._pg_notify",
            "is_postgres_url": "._pg_connection",
            "lock_path": "._session_locks",
            "open_journal": "._interface",
            "open_reader": "._interface",
            "prune": "._interface",
            "prune_postgres": "._pg_prune",
            "prune_sqlite": "._prune",
            "read_facts_payload": "._pg_notify",
            "resolve_chat": "._history",
            "same_values": "._snapshot",
            "snapshot_due": "._snapshot",
            "snapshot_header": "._snapshot",
            "snapshot_parts": "._snapshot",
            "state_entries": "._snapshot",
        },
    )
