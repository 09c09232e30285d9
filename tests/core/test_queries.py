"""Questions asked of a team's state: a chat's conversation, made once and extended turn by
turn (:class:`~orchestrator.core.Conversations`), always what a fold of the chat gives."""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp.state import (
    ActiveTurn,
    ChatState,
    ErrorInfo,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    SessionStatus,
    Turn,
    TurnState,
)
from orchestrator.core import (
    INTERRUPTED,
    Conversation,
    Conversations,
    RoundContext,
    conversation,
    interrupted_turns,
)
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team
from tests.support import teams

CHAT = "ahp-chat:/lead"
USER = MessageOrigin(kind=MessageKind.USER)


def _turn(number: int, asked: str, said: list[str], *, interrupted: bool) -> Turn:
    parts = tuple(
        MarkdownResponsePart(id=f"p{number}-{i}", content=text) for i, text in enumerate(said)
    )
    return Turn(
        id=f"turn-{number}",
        message=Message(text=asked, origin=USER),
        response_parts=parts,
        state=TurnState.ERROR if interrupted else TurnState.COMPLETE,
        error=ErrorInfo(error_type=INTERRUPTED, message="stopped") if interrupted else None,
    )


def _chat(turns: tuple[Turn, ...], active: str | None) -> ChatState:
    return ChatState(
        resource=CHAT,
        title="lead",
        status=SessionStatus(0),
        modified_at="",
        turns=turns,
        active_turn=None
        if active is None
        else ActiveTurn(
            id="turn-active",
            started_at="",
            message=Message(text=active, origin=USER),
            response_parts=(),
        ),
    )


#: What happens to a chat between two rounds: a turn ends (interrupted or not), some are
#: cut off (undo, truncation), or nothing.
_steps = st.one_of(
    st.tuples(
        st.just("end"),
        st.text(max_size=5),
        st.lists(st.text(max_size=5), max_size=3),
        st.booleans(),
    ),
    st.tuples(st.just("cut"), st.integers(min_value=0, max_value=6)),
    st.tuples(st.just("same")),
)


class TestConversations:
    @given(steps=st.lists(_steps, max_size=25), active=st.none() | st.text(max_size=5))
    def test_each_round_sees_what_a_fold_of_the_chat_gives(
        self, steps: list[tuple[object, ...]], active: str | None
    ) -> None:
        """Asked round after round while turns end (and undo cuts some off), the kept
        conversation equals :func:`conversation` of the chat, and so do its counts; one handed
        out earlier does not change."""
        conversations = Conversations()
        turns: tuple[Turn, ...] = ()
        earlier: list[tuple[Conversation, tuple[tuple[str, str], ...]]] = []
        for number, step in enumerate(steps):
            match step:
                case ("end", str(asked), list(said), bool(interrupted)):
                    turns = (*turns, _turn(number, asked, said, interrupted=interrupted))
                case ("cut", int(keep)):
                    turns = turns[:keep]
            chat = _chat(turns, active)
            got = conversations.of(chat)
            expected = conversation(chat)
            assert got == expected
            assert tuple(got) == expected
            assert len(got) == len(expected)
            assert [got[i] for i in range(-len(got), len(got))] == [*expected, *expected]
            assert got.users == sum(1 for role, _ in expected if role == "user")
            assert got.characters == sum(len(text) for _, text in expected)
            assert got.interrupted == interrupted_turns(chat)
            earlier.append((got, expected))
        for handed_out, as_it_was in earlier:
            assert tuple(handed_out) == as_it_was

    def test_a_forgotten_chat_is_made_again(self) -> None:
        conversations = Conversations()
        chat = _chat((_turn(0, "hi", ["hello"], interrupted=False),), "and?")
        first = conversations.of(chat)
        conversations.forget(CHAT)
        assert conversations.of(chat) == first == conversation(chat)


async def test_a_scripted_round_is_handed_the_counted_conversation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Each round of a long conversation is handed its history as a :class:`Conversation`,
    counted as the chat grew (the scripted backend reads the turn and the usage from its
    counts instead of walking every turn), equal to what a fold of the chat gives."""
    seen: list[tuple[RoundContext, tuple[tuple[str, str], ...]]] = []

    class Recording(ScriptedBackend):
        async def stream_round(self, context: RoundContext):  # type: ignore[no-untyped-def]
            assert context.chat_state is not None
            seen.append((context, conversation(context.chat_state)))
            async for event in super().stream_round(context):
                yield event

    team = parse_team(teams.LONE_COORDINATOR, file="chatty.toml")
    runtime = TeamRuntime(
        team,
        backends=Recording,
        factlog=MemoryFactLog(),
        ids=Ids(deterministic=True),
        conversation=True,
    )
    subscription = runtime.bus.subscribe("test")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.run, "turn 0")
        ended = 0
        async for fact in subscription:
            if fact.type == "chat/turnComplete":
                ended += 1
                if ended == 5:
                    runtime.close()
                    break
                await runtime.queue(fact.channel, f"turn {ended}")
        nursery.cancel_scope.cancel()
    assert len(seen) == 5
    for turn, (context, folded) in enumerate(seen):
        history = context.history
        assert isinstance(history, Conversation)
        assert history == folded
        assert history.users == turn + 1
        assert history[-1] == ("user", f"turn {turn}")
