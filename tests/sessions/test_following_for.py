"""Which following a daemon holds, chosen once from its journal's ownership: a cluster's for
PostgreSQL leases, the file's lock holders for SQLite locks, none for a journal nobody else
writes. Making one opens nothing: no connection, no file."""

from __future__ import annotations

from pathlib import Path

from orchestrator.journal import JournalReader, PostgresLeases, SessionLocks, SoleOwnership
from orchestrator.sessions import (
    Cluster,
    Following,
    LiveSession,
    NoFollowing,
    SqliteFollowing,
    following_for,
)
from orchestrator.sessions._live_session import SessionObserver

URL = "postgresql://me:secret@127.0.0.1:1/journal"  # nobody listens: nothing may connect


class Host:
    """A daemon as far as the following is concerned: never called while it is chosen."""

    subscriber_buffer = 16

    @property
    def observer(self) -> SessionObserver:
        raise AssertionError("not asked while the following is chosen")

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        raise AssertionError("not asked while the following is chosen")


def chosen(ownership: object, reader: JournalReader) -> Following:
    async def owned(uri: str) -> LiveSession | None:
        return None

    async def take_up(uri: str) -> None:
        return None

    return following_for(
        Host(),
        ownership,  # type: ignore[arg-type]
        node="node-a",
        reader=reader,
        add=lambda live: None,
        remove=lambda live: None,
        owned=owned,
        take_up=take_up,
    )


def test_leases_are_followed_as_a_cluster_of_their_database(tmp_path: Path) -> None:
    following = chosen(PostgresLeases(URL, node="node-a"), JournalReader(tmp_path / "j.db"))
    assert isinstance(following, Cluster)
    assert following.listener.url == following.commands.url == URL
    assert following.commands.node == "node-a"


def test_a_file_s_locks_are_followed_through_its_lock_holders(tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    following = chosen(SessionLocks(journal, node="node-a"), JournalReader(journal))
    assert isinstance(following, SqliteFollowing)
    assert list(tmp_path.iterdir()) == [], "nothing opened"


def test_a_journal_nobody_else_writes_follows_nothing(tmp_path: Path) -> None:
    following = chosen(SoleOwnership(node="node-a"), JournalReader(tmp_path / "j.db"))
    assert isinstance(following, NoFollowing)
