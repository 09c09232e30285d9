"""The recorder stamps a client's origin on the fact that carries the client's action."""

from __future__ import annotations

from orchestrator.ahp import (
    ActionOrigin,
    ChatTurnCancelledAction,
    ChatTurnStartedAction,
    Message,
    MessageKind,
    MessageOrigin,
)
from orchestrator.core import Action, TeamState
from orchestrator.runtime import FactBus, MemoryFactLog, Recorder

from .sessions import solo_opening

SESSION = "ahp-session:/origins"
CHAT = "ahp-chat:/origins"
NOW = "2026-11-26T00:00:00.000Z"
FIRST = ActionOrigin(client_id="ui", client_seq=1)
SECOND = ActionOrigin(client_id="ui", client_seq=2)


def turn(turn_id: str) -> ChatTurnStartedAction:
    message = Message(text=turn_id, origin=MessageOrigin(kind=MessageKind.USER))
    return ChatTurnStartedAction(turn_id=turn_id, started_at=NOW, message=message)


def turn_started(action: Action) -> bool:
    return isinstance(action, ChatTurnStartedAction)


async def opened() -> Recorder:
    recorder = Recorder(TeamState(SESSION), MemoryFactLog(), FactBus(), clock=lambda: NOW)
    await recorder.record(solo_opening(SESSION, CHAT, prompt="go", at=NOW, member=False))
    return recorder


class TestOrigins:
    async def test_the_first_matching_fact_carries_the_origin_once(self) -> None:
        """Only the fact on the expected channel whose action matches gets the origin (the
        summary update the same batch derives gets none), and only the first such fact."""
        recorder = await opened()
        recorder.expect_origin(CHAT, turn_started, FIRST)
        recorder.expect_origin("ahp-chat:/other", turn_started, SECOND)
        started = await recorder.record([(CHAT, turn("t1"))])
        assert [(f.type, f.origin) for f in started] == [
            ("chat/turnStarted", FIRST),
            ("session/chatUpdated", None),
        ]
        await recorder.record([(CHAT, ChatTurnCancelledAction(turn_id="t1", duration=0))])
        again = await recorder.record([(CHAT, turn("t2"))])
        assert [f.origin for f in again] == [None, None]

    async def test_a_refused_action_is_forgotten(self) -> None:
        """A client action that was refused after it was expected (forget_origin) stamps
        nothing: the next client's action gets its own origin, not the refused one's."""
        recorder = await opened()
        recorder.expect_origin(CHAT, turn_started, FIRST)
        recorder.forget_origin(FIRST)
        recorder.expect_origin(CHAT, turn_started, SECOND)
        (started, _) = await recorder.record([(CHAT, turn("t1"))])
        assert started.origin == SECOND
