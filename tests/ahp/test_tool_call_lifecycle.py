"""The tool-call table (:data:`TOOL_CALL_TRANSITIONS`) drives both the validator and the chat
reducer: every transition it forbids is refused with an error naming the chat, the tool call,
its state and the action, and every one it allows lands where it says.
"""

from __future__ import annotations

import pytest

from orchestrator.ahp import (
    TOOL_CALL_TRANSITIONS,
    ToolCallEvent,
    ToolCallStatus,
    reduce_chat,
    tool_call_event,
    validate_chat_action,
)
from orchestrator.ahp.actions import (
    ChatToolCallContentChangedAction,
    ChatToolCallDeltaAction,
)
from orchestrator.ahp.state import (
    ChatState,
    ToolCallClientContributor,
    ToolCallResponsePart,
    ToolCallRunningState,
    ToolCallState,
)
from tests.support.ahp_chats import (
    _DONE,
    _IDS,
    ACTIONS,
    CHANNEL,
    NOW,
    TOOL_CALL,
    TOOL_CALLS,
    chat,
    refusal,
    with_tool_call,
)


def tool_call_of(state: ChatState) -> ToolCallState:
    assert state.active_turn is not None
    (part,) = state.active_turn.response_parts
    assert isinstance(part, ToolCallResponsePart)
    return part.tool_call


_FORBIDDEN = [
    (status, event)
    for status in ToolCallStatus
    for event in ToolCallEvent
    if event not in TOOL_CALL_TRANSITIONS[status]
]


_ALLOWED = [
    (status, event, target)
    for status, row in TOOL_CALL_TRANSITIONS.items()
    for event, target in row.items()
]


class TestToolCallTable:
    def test_every_status_has_a_row_and_every_event_a_use(self) -> None:
        """The table is complete: all seven statuses, every event legal somewhere."""
        assert set(TOOL_CALL_TRANSITIONS) == set(ToolCallStatus)
        assert {e for row in TOOL_CALL_TRANSITIONS.values() for e in row} == set(ToolCallEvent)

    def test_terminal_statuses(self) -> None:
        """Only completed and cancelled have no way out."""
        terminal = {s for s, row in TOOL_CALL_TRANSITIONS.items() if not row}
        assert terminal == {ToolCallStatus.COMPLETED, ToolCallStatus.CANCELLED}

    def test_samples_cover_the_table(self) -> None:
        """The samples below hold a tool call per status and an action per event."""
        assert {ToolCallStatus(tc.status) for tc in TOOL_CALLS.values()} == set(TOOL_CALLS)
        assert all(tool_call_event(a) is e for e, a in ACTIONS.items())
        assert set(TOOL_CALLS) == set(ToolCallStatus)
        assert set(ACTIONS) == set(ToolCallEvent)

    @pytest.mark.parametrize(("status", "event"), _FORBIDDEN, ids=lambda v: str(v))
    def test_forbidden_transition_is_refused(
        self, status: ToolCallStatus, event: ToolCallEvent
    ) -> None:
        """A transition missing from the table is refused: the error names the chat, the tool
        call, its state and the action; the reducer ignores it (same object back)."""
        state = with_tool_call(TOOL_CALLS[status])
        action = ACTIONS[event]
        error = refusal(state, action)
        assert error.tool_call_id == TOOL_CALL
        assert error.state == f"tool call {status}"
        assert event in error.reason
        for text in (CHANNEL, repr(TOOL_CALL), f"tool call {status}", action.type):
            assert text in str(error)
        assert reduce_chat(state, action, now=NOW) is state

    @pytest.mark.parametrize(("status", "event", "target"), _ALLOWED, ids=lambda v: str(v))
    def test_allowed_transition_moves_to_the_table_target(
        self, status: ToolCallStatus, event: ToolCallEvent, target: ToolCallStatus
    ) -> None:
        """A transition in the table is accepted and lands exactly where the table says."""
        state = with_tool_call(TOOL_CALLS[status])
        validate_chat_action(state, ACTIONS[event], channel=CHANNEL)
        assert tool_call_of(reduce_chat(state, ACTIONS[event], now=NOW)).status == target

    def test_auth_required_needs_an_mcp_contributor(self) -> None:
        """running → auth-required is in the table, but a client tool cannot take it."""
        client = ToolCallClientContributor(client_id="client-1")
        state = with_tool_call(ToolCallRunningState(**{**_DONE, "contributor": client}))
        action = ACTIONS[ToolCallEvent.AUTH_REQUIRED]
        error = refusal(state, action)
        assert error.state == "tool call running"
        assert "MCP" in error.reason
        assert reduce_chat(state, action, now=NOW) is state

    @pytest.mark.parametrize(
        "action",
        [ACTIONS[ToolCallEvent.DELTA], ChatToolCallDeltaAction(**_IDS, content="")],
        ids=["delta", "empty delta"],
    )
    def test_tool_call_of_another_id_is_refused(self, action: ChatToolCallDeltaAction) -> None:
        """An action for a tool call the turn does not hold names it and the turn."""
        state = chat()
        error = refusal(state, action)
        assert error.tool_call_id == TOOL_CALL
        assert error.state == "turn 'turn-1' active"

    def test_legal_but_empty_change_is_refused_as_no_op(self) -> None:
        """Content changed to what it already is: legal per the table, but a no-op."""
        running = TOOL_CALLS[ToolCallStatus.RUNNING]
        assert isinstance(running, ToolCallRunningState)
        action = ChatToolCallContentChangedAction(**_IDS, content=running.content or ())
        error = refusal(with_tool_call(running), action)
        assert error.state == "tool call running"
        assert "would not change" in error.reason
