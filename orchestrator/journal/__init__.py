"""The durable log: the journal (write-ahead, group commit, recovery on open) on a SQLite
file or a PostgreSQL database (:mod:`orchestrator.journal.postgres`, whose public names
are exported here too), snapshots in parts, and history editing.
"""

# Re-exports: postgres

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._checksum import *  # noqa: F403
    from ._durability import *  # noqa: F403
    from ._group_commit import *  # noqa: F403
    from ._history import *  # noqa: F403
    from ._interface import *  # noqa: F403
    from ._ownership import *  # noqa: F403
    from ._prune import *  # noqa: F403
    from ._reader import *  # noqa: F403
    from ._schema import *  # noqa: F403
    from ._session_locks import *  # noqa: F403
    from ._snapshot import *  # noqa: F403
    from ._sqlite_changes import *  # noqa: F403
    from ._sqlite_journal import *  # noqa: F403
    from .postgres import ANSWERS_CHANNEL as ANSWERS_CHANNEL
    from .postgres import COMMANDS_CHANNEL as COMMANDS_CHANNEL
    from .postgres import FACTS_CHANNEL as FACTS_CHANNEL
    from .postgres import PG_SCHEMA_VERSION as PG_SCHEMA_VERSION
    from .postgres import CommandAnswer as CommandAnswer
    from .postgres import ForwardedCommand as ForwardedCommand
    from .postgres import Lease as Lease
    from .postgres import LeaseLostError as LeaseLostError
    from .postgres import PostgresCommands as PostgresCommands
    from .postgres import PostgresJournal as PostgresJournal
    from .postgres import PostgresLeases as PostgresLeases
    from .postgres import PostgresListener as PostgresListener
    from .postgres import PostgresReader as PostgresReader
    from .postgres import facts_payload as facts_payload
    from .postgres import is_postgres_url as is_postgres_url
    from .postgres import prune_postgres as prune_postgres
    from .postgres import read_facts_payload as read_facts_payload
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ANSWERS_CHANNEL": ".postgres",
            "APPLICATION_ID": "._schema",
            "AgentMessage": "._reader",
            "CHUNK": "._snapshot",
            "COMMANDS_CHANNEL": ".postgres",
            "CommandAnswer": ".postgres",
            "Db": "._interface",
            "Durability": "._durability",
            "Edit": "._history",
            "FACTS_CHANNEL": ".postgres",
            "ForwardedCommand": ".postgres",
            "HeldElsewhere": "._ownership",
            "Holder": "._session_locks",
            "Journal": "._interface",
            "JournalReader": "._reader",
            "JournalStatistics": "._group_commit",
            "Lease": ".postgres",
            "LeaseLostError": ".postgres",
            "MIGRATIONS": "._schema",
            "OwnershipStatistics": "._ownership",
            "PG_SCHEMA_VERSION": ".postgres",
            "PartKey": "._snapshot",
            "PostgresCommands": ".postgres",
            "PostgresJournal": ".postgres",
            "PostgresLeases": ".postgres",
            "PostgresListener": ".postgres",
            "PostgresReader": ".postgres",
            "PruneReport": "._prune",
            "SCHEMA_VERSION": "._schema",
            "SESSION_STATUSES": "._reader",
            "SNAPSHOT_FORMAT": "._snapshot",
            "SessionInfo": "._reader",
            "SessionLocks": "._session_locks",
            "SessionOwnership": "._ownership",
            "SoleOwnership": "._ownership",
            "SqliteChanges": "._sqlite_changes",
            "SqliteJournal": "._sqlite_journal",
            "db_location": "._interface",
            "decode_parts": "._snapshot",
            "decode_state": "._snapshot",
            "edit_history": "._history",
            "encode_part": "._snapshot",
            "encode_state": "._snapshot",
            "fact_checksum": "._checksum",
            "facts_payload": ".postgres",
            "is_postgres_url": ".postgres",
            "lock_path": "._session_locks",
            "open_journal": "._interface",
            "open_reader": "._interface",
            "prune": "._interface",
            "prune_postgres": ".postgres",
            "prune_sqlite": "._prune",
            "read_facts_payload": ".postgres",
            "resolve_chat": "._history",
            "same_values": "._snapshot",
            "snapshot_due": "._snapshot",
            "snapshot_header": "._snapshot",
            "snapshot_parts": "._snapshot",
            "state_entries": "._snapshot",
        },
    )
