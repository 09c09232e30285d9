"""Commands forwarded to a session's owner through the database (issue 21): the decoding
of a row's payload (fuzzed: a row is the sender's word), and the owner's command loop,
which garbage rows must not end. The command table and the listener are tested in
``journal/postgres``; the whole path between two ``orchestrator serve`` processes in
``sessions/test_cluster``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import trio
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from orchestrator.ahp.actions import ActionOrigin
from orchestrator.ahp.state import SideChatSelection
from orchestrator.base import PeerProtocolError, RunError
from orchestrator.journal import PostgresCommands, open_journal
from orchestrator.sessions import (
    Command,
    CommandServer,
    ExpectedAction,
    Forwarder,
    decode_command,
    decode_error,
    decode_selection,
    encode_error,
    encode_selection,
)
from orchestrator.sessions._forwarding import KINDS, Origin
from tests.support.examples import examples
from tests.support.postgres import direct_sql

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


class TestDecoding:
    @hypothesis.seed(21)
    @hypothesis.settings(max_examples=examples(500))
    @hypothesis.given(kind=st.sampled_from((*KINDS, "rm -rf", "")) | JSON, payload=JSON)
    def test_a_row_is_a_command_or_refused(self, kind: Any, payload: Any) -> None:
        """Whatever a row holds: a command, or PeerProtocolError; never anything else."""
        try:
            command = decode_command(kind, payload)
        except PeerProtocolError:
            return
        assert command.kind in KINDS
        assert decode_command(command.kind, command.payload()) == command

    def test_a_command_travels_whole(self) -> None:
        command = Command(
            kind="decide",
            approval="approval-1",
            approved=True,
            principal="ops",
            origins=(
                Origin(
                    chat="ahp-chat:/c",
                    expected=ExpectedAction(kind="confirmation", key="call-1"),
                    origin=ActionOrigin(client_id="tablet", client_seq=4),
                ),
            ),
        )
        assert decode_command("decide", command.payload()) == command

    def test_a_queued_message_id_is_a_followers_uuid_or_none(self) -> None:
        """A follower chooses its queued message's id (``message-`` and a UUID, which no
        id the owner numbers can equal); anything else is refused, never queued."""
        chosen = "message-0b8f0d4e-7f43-4a8e-9a64-3c1f4bb0a1f2"
        command = Command(kind="queue", chat="ahp-chat:/c", text="go", message=chosen)
        assert decode_command("queue", command.payload()).message == chosen
        assert decode_command("queue", {"chat": "ahp-chat:/c", "text": "go"}).message == ""
        for bad in ("message-3", "approval-" + chosen.removeprefix("message-"), "x" * 40):
            with pytest.raises(PeerProtocolError, match="is not message-UUID"):
                decode_command("queue", {**command.payload(), "message": bad})

    def test_an_owners_refusal_is_raised_as_it_was(self) -> None:
        from orchestrator.base import IllegalTransitionError, RunError

        refused = RunError("no pending approval 'x'")
        again = decode_error(encode_error(refused))
        assert (type(again), str(again)) == (RunError, str(refused))
        illegal = IllegalTransitionError(
            "not waiting", action_type="chat/x", channel="c", state="idle"
        )
        back = decode_error(encode_error(illegal))
        assert isinstance(back, IllegalTransitionError)
        assert (str(back), back.reason) == (str(illegal), "not waiting")
        assert isinstance(decode_error(["garbage"]), RunError)
        from orchestrator.runtime import BoardRefusedError

        claimed = BoardRefusedError("item 'approve' is claimed by olivia")
        board = decode_error(encode_error(claimed))
        assert (type(board), str(board)) == (BoardRefusedError, str(claimed))

    def test_a_board_request_travels_whole(self) -> None:
        command = Command(
            kind="board", request="comment", text="approve", content={"text": "go"}, principal="ops"
        )
        assert decode_command("board", command.payload()) == command

    @pytest.mark.parametrize(
        "selection", [None, SideChatSelection(text="this part", response_part_id="part-3")]
    )
    def test_a_forked_chat_travels_whole_with_its_selection(
        self, selection: SideChatSelection | None
    ) -> None:
        """``createChat`` with a source, forwarded: the source chat, its turn and a side
        chat's selection come out as they went in."""
        command = Command(
            kind="side_chat",
            chat="ahp-chat:/side",
            request="ahp-chat:/lead",
            approval="turn-1",
            content={} if selection is None else encode_selection(selection),
        )
        decoded = decode_command("side_chat", command.payload())
        assert decoded == command
        assert decode_selection(decoded.content) == selection

    @hypothesis.seed(40)
    @hypothesis.settings(max_examples=examples(300))
    @hypothesis.given(
        content=st.dictionaries(st.sampled_from(("text", "responsePartId", "x")), JSON)
    )
    def test_a_selection_is_one_or_refused(self, content: dict[str, Any]) -> None:
        try:
            selection = decode_selection(content)
        except PeerProtocolError:
            return
        if selection is not None:
            assert decode_selection(encode_selection(selection)) == selection


GARBAGE: list[tuple[str, Any]] = [
    ("rm -rf", {}),
    ("queue", []),
    ("queue", {"chat": 7}),
    ("decide", {"approved": "yes"}),
    ("answer_input", {"response": "maybe"}),
    ("view", {"content": "not an object"}),
    ("queue", {"origins": [{"chat": "c", "expected": {"kind": "?"}, "origin": {}}]}),
    ("cancel", None),
]


class TestCommandLoop:
    async def test_garbage_rows_are_answered_and_the_loop_goes_on(
        self, two: tuple[PostgresCommands, PostgresCommands]
    ) -> None:
        """Rows that are not commands are each answered with an error (the sender's
        client is told), and the command after them is carried out (here: refused, the
        session is not running on this node) by the same loop."""
        follower, owner = two
        with direct_sql(follower.url) as connection:
            for kind, payload in GARBAGE:
                connection.execute(
                    "INSERT INTO session_commands (session, kind, payload, sender) "
                    "VALUES (?, ?, ?, 'a')",
                    (SESSION, kind, Jsonb(payload)),
                )
        last = follower.send(SESSION, "cancel", {})

        async def nothing_here(session: str) -> None:
            return None

        server = CommandServer(owner, held=lambda: {SESSION}, find=nothing_here, poll=0.05)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve)
            with trio.fail_after(20):
                while (await trio.to_thread.run_sync(follower.outcome, last)) is None:  # noqa: ASYNC110
                    await trio.sleep(0.05)  # the loop works in threads: polled
            nursery.cancel_scope.cancel()
        answer = follower.outcome(last)
        assert answer is not None
        assert "not running any more" in answer.error["message"]
        assert server.refused == len(GARBAGE) + 1
        ids = range(last - len(GARBAGE), last)
        for command in ids:
            garbage = follower.outcome(command)
            assert garbage is not None
            assert garbage.error["message"].startswith("forwarding: "), garbage.error


class TestForwarder:
    async def test_no_answer_in_time_is_an_error_naming_the_owner(
        self, two: tuple[PostgresCommands, PostgresCommands]
    ) -> None:
        """Nobody claims the command: after the limit the client is told which node did
        not answer, and the command is withdrawn (no owner runs it later)."""
        follower, owner = two
        forwarder = Forwarder(follower, limit=0.3)
        with trio.fail_after(20), pytest.raises(RunError, match="node a-node, which runs"):
            await forwarder.call(SESSION, Command(kind="cancel"), owner="a-node")
        assert owner.claim([SESSION]) == []

    async def test_the_owners_answer_is_returned_or_raised(
        self, two: tuple[PostgresCommands, PostgresCommands]
    ) -> None:
        follower, owner = two
        forwarder = Forwarder(follower, limit=20)

        async def owner_answers(**outcome: Any) -> None:
            while not (rows := await trio.to_thread.run_sync(owner.claim, [SESSION])):  # noqa: ASYNC110
                await trio.sleep(0.05)  # polling the table (no listener here)
            await trio.to_thread.run_sync(lambda: owner.answer(rows[0].id, **outcome))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: owner_answers(result={"value": 1, "sequence": 2}))
            with trio.fail_after(20):
                answer = await forwarder.call(SESSION, Command(kind="cancel"), owner="b")
        assert answer == {"value": 1, "sequence": 2}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: owner_answers(error=encode_error(RunError("no pending approval 'x'")))
            )
            with trio.fail_after(20), pytest.raises(RunError) as refused:
                await forwarder.call(SESSION, Command(kind="cancel"), owner="b")
        assert str(refused.value) == "no pending approval 'x'"
