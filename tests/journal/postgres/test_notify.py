"""What a node hears of the others: the facts channel's payload (what it says, what a
payload that cannot be read comes to, fuzzed: a payload is another node's word), and the
listener, which listens again after its connection is cut (a throwaway PostgreSQL cluster)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.journal import (
    FACTS_CHANNEL,
    PostgresListener,
    facts_payload,
    open_journal,
    read_facts_payload,
)
from orchestrator.journal.postgres._notify import MAX_PAYLOAD
from tests.support.examples import examples
from tests.support.postgres import direct_sql


@pytest.fixture
def table(postgres_database: str) -> Iterator[str]:
    journal = open_journal(postgres_database, node="a")
    journal.open()  # the schema, migrated
    try:
        yield postgres_database
    finally:
        journal.close()


class TestFactsPayload:
    @settings(max_examples=examples(100))
    @given(session=st.text(max_size=200), sequence=st.integers(min_value=0))
    def test_a_payload_reads_back_as_the_session_and_sequence_it_says(
        self, session: str, sequence: int
    ) -> None:
        assert read_facts_payload(facts_payload(session, sequence)) == (session, sequence)

    def test_a_session_too_long_for_a_payload_is_left_out_not_cut(self) -> None:
        """A cut URI would name another session: left out, followers read every session."""
        session = "ahp-session:/" + "é" * MAX_PAYLOAD  # two bytes a character
        payload = facts_payload(session, 7)
        assert len(payload.encode()) <= MAX_PAYLOAD
        assert read_facts_payload(payload) == (None, 7)

    def test_a_payload_at_the_limit_keeps_its_session(self) -> None:
        overhead = len(facts_payload("", 7).encode())
        session = "s" * (MAX_PAYLOAD - overhead)
        assert read_facts_payload(facts_payload(session, 7)) == (session, 7)
        assert read_facts_payload(facts_payload(session + "s", 7)) == (None, 7)

    @pytest.mark.parametrize(
        ("payload", "read"),
        [
            ("not json", (None, None)),
            ("[1, 2]", (None, None)),
            ('"ahp-session:/a"', (None, None)),
            ('{"session": 3, "sequence": 4}', (None, 4)),
            ('{"session": "ahp-session:/a", "sequence": "4"}', ("ahp-session:/a", None)),
            ('{"session": "ahp-session:/a", "sequence": true}', ("ahp-session:/a", None)),
            ('{"other": 1}', (None, None)),
        ],
    )
    def test_what_cannot_be_read_is_none_never_an_error(
        self, payload: str, read: tuple[str | None, int | None]
    ) -> None:
        assert read_facts_payload(payload) == read

    @settings(max_examples=examples(100))
    @given(payload=st.text(max_size=100))
    def test_any_payload_reads_as_a_session_and_sequence_or_none(self, payload: str) -> None:
        session, sequence = read_facts_payload(payload)
        assert session is None or isinstance(session, str)
        assert sequence is None or type(sequence) is int


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
