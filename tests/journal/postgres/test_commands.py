"""The command table forwarded commands travel through (issue 21), on a throwaway
PostgreSQL cluster: each command claimed once under two claimers, answered, withdrawn,
deleted."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import strategies as st

from orchestrator.journal import PostgresCommands, open_journal

SESSION = "ahp-session:/forwarded"
OTHER = "ahp-session:/other"


@pytest.fixture
def table(postgres_database: str) -> Iterator[str]:
    journal = open_journal(postgres_database, node="a")
    journal.open()  # the schema, migrated
    try:
        yield postgres_database
    finally:
        journal.close()


@pytest.fixture
def two(table: str) -> Iterator[tuple[PostgresCommands, PostgresCommands]]:
    a, b = PostgresCommands(table, node="a"), PostgresCommands(table, node="b")
    try:
        yield a, b
    finally:
        a.close()
        b.close()


PAYLOAD_KEYS = (
    "chat",
    "text",
    "request",
    "response",
    "approval",
    "approved",
    "principal",
    "view_type",
    "content",
    "message",
    "origins",
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from((*PAYLOAD_KEYS, "x")), inner, max_size=5)
    ),
    max_leaves=20,
)


class TestCommandTable:
    def test_each_command_is_claimed_once_under_two_claimers(
        self, two: tuple[PostgresCommands, PostgresCommands]
    ) -> None:
        a, b = two
        sent = [a.send(SESSION, "cancel", {"n": n}) for n in range(60)]
        other = a.send(OTHER, "cancel", {})
        claimed: dict[str, list[int]] = {"a": [], "b": []}

        def claim(commands: PostgresCommands) -> None:
            while rows := commands.claim([SESSION], limit=3):
                claimed[commands.node].extend(row.id for row in rows)

        threads = [threading.Thread(target=claim, args=(c,)) for c in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sorted(claimed["a"] + claimed["b"]) == sent, "every command, once"
        assert not set(claimed["a"]) & set(claimed["b"])
        assert other not in claimed["a"] + claimed["b"], "only the sessions held"
        assert [row.id for row in b.claim([OTHER])] == [other]

    def test_an_answer_reaches_the_sender(
        self, two: tuple[PostgresCommands, PostgresCommands]
    ) -> None:
        follower, owner = two
        sent = follower.send(SESSION, "queue", {"chat": "c", "text": "hi"})
        assert follower.outcome(sent) is None
        (row,) = owner.claim([SESSION])
        assert (row.id, row.kind, row.payload, row.sender) == (
            sent,
            "queue",
            {"chat": "c", "text": "hi"},
            "a",
        )
        assert follower.outcome(sent) is None, "claimed, not answered"
        owner.answer(sent, result={"value": {"message": "m1"}, "sequence": 7})
        answer = follower.outcome(sent)
        assert answer is not None
        assert answer.result == {"value": {"message": "m1"}, "sequence": 7}
        assert answer.error is None
        assert answer.claimed_by == "b"

    def test_a_command_nobody_claimed_is_withdrawn_and_never_runs(
        self, two: tuple[PostgresCommands, PostgresCommands]
    ) -> None:
        follower, owner = two
        expired = follower.send(SESSION, "cancel", {})
        assert follower.withdraw(expired, {"type": "RunError", "message": "expired"})
        assert owner.claim([SESSION]) == [], "withdrawn: never claimed"
        claimed = follower.send(SESSION, "cancel", {})
        assert [row.id for row in owner.claim([SESSION])] == [claimed]
        assert not follower.withdraw(claimed, {}), "claimed: its owner answers it"

    def test_old_commands_are_deleted(self, two: tuple[PostgresCommands, PostgresCommands]) -> None:
        follower, _ = two
        follower.send(SESSION, "cancel", {})
        assert follower.delete_old() == 0, "an hour by default"
        assert follower.delete_old(older_than=0) == 1
