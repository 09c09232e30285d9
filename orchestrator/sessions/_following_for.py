"""Which :class:`~._following.Following` a daemon holds: chosen once, from its journal's
ownership (:func:`following_for`).

What a node owns says how it learns who runs the rest: a lease's table and the database's
notifications (:class:`~orchestrator.journal.PostgresLeases`), a lock file's holders
(:class:`~orchestrator.journal.SessionLocks`). The ownership lives in the journal layer,
below the sessions. So it cannot make the following itself: that needs the daemon's live
sessions and its hands on them. The one dispatch on its type is here, and nowhere else. The
daemon and its parts see only the protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from orchestrator.journal import JournalReader, PostgresLeases, SessionLocks, SessionOwnership

from ._cluster import Cluster
from ._following import Following, NoFollowing
from ._live_session import LiveSession, SessionHost
from ._sqlite_following import SqliteFollowing

__all__ = ["following_for"]


def following_for(
    host: SessionHost,
    ownership: SessionOwnership,
    *,
    node: str,
    reader: JournalReader,
    add: Callable[[LiveSession], None],
    remove: Callable[[LiveSession], None],
    owned: Callable[[str], Awaitable[LiveSession | None]],
    take_up: Callable[[str], Awaitable[object]],
) -> Following:
    """How the daemon ``host``, owning its sessions through ``ownership``, follows the others.

    - For PostgreSQL leases: a cluster's.
    - For SQLite locks: the file's lock holders.
    - For a journal nobody else writes: none.

    Args:
        host: The daemon.
        ownership: How the daemon owns its sessions.
        node: This daemon's node id.
        reader: Reads the journal.
        add: The daemon's hand that adds a session.
        remove: The daemon's hand that removes a session.
        owned: A session this node runs (a forwarded command's target).
        take_up: The daemon's take-up of a session whose process died before its run ended
            (never raises).
    """
    if isinstance(ownership, PostgresLeases):
        return Cluster(
            host, leases=ownership, node=node, reader=reader, add=add, remove=remove, owned=owned
        )
    if isinstance(ownership, SessionLocks):
        return SqliteFollowing(
            host, locks=ownership, reader=reader, add=add, remove=remove, take_up=take_up
        )
    return NoFollowing()
