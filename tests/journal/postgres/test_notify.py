"""The PostgreSQL listener: it listens again after its connection is cut."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import trio

from orchestrator.journal import FACTS_CHANNEL, PostgresListener, open_journal
from tests.support.postgres import direct_sql


@pytest.fixture
def table(postgres_database: str) -> Iterator[str]:
    journal = open_journal(postgres_database, node="a")
    journal.open()  # the schema, migrated
    try:
        yield postgres_database
    finally:
        journal.close()


class TestListener:
    async def test_it_listens_again_after_its_connection_is_cut(self, table: str) -> None:
        """The listening connection is terminated by the server: the listener connects
        again, says so (whoever follows then reads everything again), and hears the
        notifications sent after."""
        listener = PostgresListener(table)
        heard: list[tuple[str, str]] = []
        connections = 0
        changed = trio.Event()

        def on_notify(channel: str, payload: str) -> None:
            heard.append((channel, payload))
            changed.set()

        def on_connected() -> None:
            nonlocal connections
            connections += 1
            changed.set()

        async def until(condition: Callable[[], bool]) -> None:
            nonlocal changed
            with trio.fail_after(20):
                while not condition():
                    changed = trio.Event()
                    with trio.move_on_after(0.2):  # a notification sent meanwhile
                        await changed.wait()

        def notify(payload: str) -> None:
            with direct_sql(table) as connection:
                connection.execute("SELECT pg_notify(?, ?)", (FACTS_CHANNEL, payload))

        async with trio.open_nursery() as nursery:
            await nursery.start(listener.serve, on_notify, on_connected)
            await until(lambda: connections == 1)
            await trio.to_thread.run_sync(notify, "one")
            await until(lambda: (FACTS_CHANNEL, "one") in heard)
            with direct_sql(table) as connection:
                connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'orchestrator listener'"
                )
            await until(lambda: connections == 2)
            await trio.to_thread.run_sync(notify, "two")
            await until(lambda: (FACTS_CHANNEL, "two") in heard)
            nursery.cancel_scope.cancel()
        assert listener.reconnections >= 1
