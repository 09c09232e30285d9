"""The agent channel's replay and live projection meet without a gap or a duplicate."""

from __future__ import annotations

from typing import Any

from orchestrator.ahp.actions import (
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import Message, MessageKind, MessageOrigin
from orchestrator.core import Action, Fact, TeamState
from orchestrator.protocols import AgentChannelProjector, replay
from tests.support.sessions import solo_opening

SESSION = "ahp-session:/replay"
CHAT = "ahp-chat:/lead"
NOW = "2026-11-24T00:00:00.000Z"


class Session:
    """A session's state, folded fact by fact, and a client projector fed the same facts."""

    def __init__(self) -> None:
        self.state = TeamState(SESSION)
        self.sequence = 0

    def record(self, channel: str, action: Action) -> Fact:
        self.sequence += 1
        fact = Fact(sequence=self.sequence, session=SESSION, channel=channel, at=NOW, action=action)
        self.state.apply(fact)
        return fact


def running_turn() -> Session:
    """A coordinator chat with a turn running."""
    session = Session()
    for channel, action in solo_opening(SESSION, CHAT, prompt="go", at=NOW):
        session.record(channel, action)
    message = Message(text="go", origin=MessageOrigin(kind=MessageKind.USER))
    session.record(CHAT, ChatTurnStartedAction(turn_id="turn-1", started_at=NOW, message=message))
    return session


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


class TestReplayThenLive:
    def test_a_tool_call_whose_input_streams_at_attach_time_is_shown_once(self) -> None:
        """Attached while a call's input streams: the replay leaves the call out, and it
        comes live with chat/toolCallReady, as to a client that saw the turn start."""
        session = running_turn()
        session.record(
            CHAT,
            ChatToolCallStartAction(
                turn_id="turn-1", tool_call_id="call-1", tool_name="search", display_name="Search"
            ),
        )
        replayed = replay(session.state)
        projector = AgentChannelProjector()
        projector.prime(session.state)
        ready = session.record(
            CHAT,
            ChatToolCallReadyAction(
                turn_id="turn-1",
                tool_call_id="call-1",
                invocation_message="Search",
                tool_input='{"q": "x"}',
            ),
        )
        live = projector.feed(ready, session.state)
        assert kinds(replayed) == ["prompt"]
        assert live == [
            {
                "channel": "agent",
                "type": "tool_invocation",
                "toolCallId": "call-1",
                "toolName": "search",
                "args": {"q": "x"},
            }
        ]
        assert kinds(replay(session.state)) == ["prompt", "tool_invocation"], "once it is ready"

    def test_the_running_turns_task_id_tags_its_result_for_a_client_that_attached_late(
        self,
    ) -> None:
        session = running_turn()
        projector = AgentChannelProjector()
        projector.prime(session.state, running_task="task-a")
        end = session.record(CHAT, ChatTurnCompleteAction(turn_id="turn-1", duration=1))
        events = projector.feed(end, session.state)
        assert [(e["type"], e.get("taskId")) for e in events] == [
            ("result", "task-a"),
            ("done", "task-a"),
        ]
