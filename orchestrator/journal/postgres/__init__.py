"""The journal on PostgreSQL, for several daemons on one database: the connection and its
errors, the schema, the journal and its reader, the session leases, the notifications and
forwarded commands between nodes, and pruning. psycopg is imported only when one of these
is used (a SQLite journal never loads it).
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._commands import CommandAnswer, ForwardedCommand, PostgresCommands
    from ._connection import is_postgres_url
    from ._journal import PostgresJournal
    from ._leases import Lease, LeaseLostError, PostgresLeases
    from ._notify import (
        ANSWERS_CHANNEL,
        COMMANDS_CHANNEL,
        FACTS_CHANNEL,
        PostgresListener,
        facts_payload,
        read_facts_payload,
    )
    from ._prune import prune_postgres
    from ._reader import PostgresReader
    from ._schema import PG_SCHEMA_VERSION

__all__ = [
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
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._commands": ("CommandAnswer", "ForwardedCommand", "PostgresCommands"),
            "._connection": ("is_postgres_url",),
            "._journal": ("PostgresJournal",),
            "._leases": ("Lease", "LeaseLostError", "PostgresLeases"),
            "._notify": (
                "ANSWERS_CHANNEL",
                "COMMANDS_CHANNEL",
                "FACTS_CHANNEL",
                "PostgresListener",
                "facts_payload",
                "read_facts_payload",
            ),
            "._prune": ("prune_postgres",),
            "._reader": ("PostgresReader",),
            "._schema": ("PG_SCHEMA_VERSION",),
        },
    )
