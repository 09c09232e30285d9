"""The journal on PostgreSQL, for several daemons on one database.

It holds the connection and its errors, the schema, the journal and its reader, and the
session leases. It also holds the notifications and forwarded commands between nodes, and
pruning. psycopg is imported only when one of these
is used (a SQLite journal never loads it).
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._commands import *  # noqa: F403
    from ._connection import *  # noqa: F403
    from ._journal import *  # noqa: F403
    from ._leases import *  # noqa: F403
    from ._notify import *  # noqa: F403
    from ._prune import *  # noqa: F403
    from ._reader import *  # noqa: F403
    from ._schema import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ANSWERS_CHANNEL": "._notify",
            "COMMANDS_CHANNEL": "._notify",
            "CommandAnswer": "._commands",
            "FACTS_CHANNEL": "._notify",
            "ForwardedCommand": "._commands",
            "Lease": "._leases",
            "LeaseLostError": "._leases",
            "PG_SCHEMA_VERSION": "._schema",
            "PostgresCommands": "._commands",
            "PostgresJournal": "._journal",
            "PostgresLeases": "._leases",
            "PostgresListener": "._notify",
            "PostgresReader": "._reader",
            "facts_payload": "._notify",
            "is_postgres_url": "._connection",
            "prune_postgres": "._prune",
            "read_facts_payload": "._notify",
        },
    )
