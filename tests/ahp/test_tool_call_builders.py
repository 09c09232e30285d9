"""The builders of a tool call's next state: each lands in the status the table chose and
carries over what the upstream reducer carries (ids, names, contributor, unknown fields, the
input, the confirmation); :func:`force_cancel` is what an ended turn leaves of a call."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from orchestrator.ahp import (
    TOOL_CALL_BUILDERS,
    TOOL_CALL_TRANSITIONS,
    ToolCallEvent,
    ToolCallStatus,
    force_cancel,
)
from orchestrator.ahp.actions import (
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeltaAction,
    ChatToolCallReadyAction,
)
from orchestrator.ahp.state import (
    ConfirmationOption,
    ConfirmationOptionKind,
    ContentRef,
    ToolCallAuthRequiredState,
    ToolCallCancellationReason,
    ToolCallCancelledState,
    ToolCallClientContributor,
    ToolCallCompletedState,
    ToolCallConfirmationReason,
    ToolCallContributor,
    ToolCallMcpContributor,
    ToolCallPendingConfirmationState,
    ToolCallResult,
    ToolCallRunningState,
    ToolCallState,
    ToolCallStreamingState,
    UnknownToolCallContributor,
)
from tests.support.ahp_chats import _IDS, ACTIONS, MCP, TOOL_CALLS

ALLOWED = [
    (status, event, target)
    for status, row in TOOL_CALL_TRANSITIONS.items()
    for event, target in row.items()
]
NEWER: dict[str, Any] = {"x-newer": {"kept": True}}


def build(tool_call: ToolCallState, action: Any, event: ToolCallEvent) -> ToolCallState:
    target = TOOL_CALL_TRANSITIONS[ToolCallStatus(tool_call.status)][event]
    return TOOL_CALL_BUILDERS[event](tool_call, action, target)


def test_every_event_has_a_builder() -> None:
    assert set(TOOL_CALL_BUILDERS) == set(ToolCallEvent)


@pytest.mark.parametrize(("status", "event", "target"), ALLOWED, ids=str)
def test_a_builder_lands_in_the_target_and_keeps_the_call_s_identity(
    status: ToolCallStatus, event: ToolCallEvent, target: ToolCallStatus
) -> None:
    """Whatever the move, the call stays the same call: its id, names, contributor (MCP here,
    which no ready refines away) and a newer peer's fields."""
    before = attrs.evolve(TOOL_CALLS[status], unknown_fields=NEWER)
    after = TOOL_CALL_BUILDERS[event](before, ACTIONS[event], target)
    assert after.status == target
    for field in ("tool_call_id", "tool_name", "display_name", "contributor", "unknown_fields"):
        assert getattr(after, field) == getattr(before, field), field


@pytest.mark.parametrize(("status", "event", "target"), ALLOWED, ids=str)
def test_an_action_s_meta_replaces_the_call_s_and_its_absence_keeps_it(
    status: ToolCallStatus, event: ToolCallEvent, target: ToolCallStatus
) -> None:
    before = attrs.evolve(TOOL_CALLS[status], meta={"from": "call"})
    builder = TOOL_CALL_BUILDERS[event]
    assert builder(before, ACTIONS[event], target).meta == {"from": "call"}
    action = attrs.evolve(ACTIONS[event], meta={"from": "action"})
    assert builder(before, action, target).meta == {"from": "action"}


def test_a_delta_that_adds_nothing_is_the_call_itself() -> None:
    streaming = TOOL_CALLS[ToolCallStatus.STREAMING]
    assert build(streaming, ChatToolCallDeltaAction(**_IDS), ToolCallEvent.DELTA) is streaming
    grown = build(streaming, ChatToolCallDeltaAction(**_IDS, content='"x"}'), ToolCallEvent.DELTA)
    assert isinstance(grown, ToolCallStreamingState)
    assert grown.partial_input == '{"q":"x"}'


CLIENT = ToolCallClientContributor(client_id="client-1")


@pytest.mark.parametrize(
    ("current", "proposed", "kept"),
    [
        (MCP, ToolCallMcpContributor(customization_id="mcp-2"), "proposed"),
        (MCP, None, "current"),
        (MCP, CLIENT, "current"),  # a client cannot take a call over late
        (CLIENT, ToolCallClientContributor(client_id="client-2"), "current"),
        (CLIENT, MCP, "current"),
        (CLIENT, attrs.evolve(CLIENT, unknown_fields={"x-refined": 1}), "proposed"),
        (MCP, UnknownToolCallContributor(raw={"kind": "agent", "id": "a"}), "current"),
    ],
)
def test_a_ready_refines_the_contributor_only_where_it_may(
    current: ToolCallContributor, proposed: ToolCallContributor | None, kept: str
) -> None:
    sample = TOOL_CALLS[ToolCallStatus.STREAMING]
    assert isinstance(sample, ToolCallStreamingState)
    streaming = attrs.evolve(sample, contributor=current)
    ready = ChatToolCallReadyAction(**_IDS, invocation_message="Search", contributor=proposed)
    after = build(streaming, ready, ToolCallEvent.READY)
    assert after.contributor == (proposed if kept == "proposed" else current)


def test_a_second_ready_keeps_what_it_leaves_out() -> None:
    pending = TOOL_CALLS[ToolCallStatus.PENDING_CONFIRMATION]
    assert isinstance(pending, ToolCallPendingConfirmationState)
    after = build(
        pending, ChatToolCallReadyAction(**_IDS, invocation_message="Again"), ToolCallEvent.READY
    )
    assert isinstance(after, ToolCallPendingConfirmationState)
    assert (after.invocation_message, after.options, after.tool_input) == (
        "Again",
        pending.options,
        pending.tool_input,
    )


class TestApproval:
    OPTIONS = (
        ConfirmationOption(id="once", label="Once", kind=ConfirmationOptionKind.APPROVE),
        ConfirmationOption(id="never", label="Never", kind=ConfirmationOptionKind.DENY),
    )

    def approve(self, tool_input: Any, **fields: Any) -> ToolCallState:
        sample = TOOL_CALLS[ToolCallStatus.PENDING_CONFIRMATION]
        assert isinstance(sample, ToolCallPendingConfirmationState)
        pending = attrs.evolve(sample, tool_input=tool_input, options=self.OPTIONS)
        action = ChatToolCallApprovedAction(
            **_IDS, confirmed=ToolCallConfirmationReason.USER_ACTION, **fields
        )
        return build(pending, action, ToolCallEvent.APPROVED)

    def test_an_edit_replaces_inline_input(self) -> None:
        running = self.approve('{"q": "a"}', edited_tool_input='{"q": "b"}')
        assert isinstance(running, ToolCallRunningState)
        assert running.tool_input == '{"q": "b"}'

    def test_input_held_by_reference_stays(self) -> None:
        reference = ContentRef(uri="blob:1")
        running = self.approve(reference, edited_tool_input='{"q": "b"}')
        assert isinstance(running, ToolCallRunningState)
        assert running.tool_input == reference

    def test_the_selected_option_is_looked_up_among_the_call_s(self) -> None:
        running = self.approve("{}", selected_option_id="once")
        assert isinstance(running, ToolCallRunningState)
        assert running.selected_option == self.OPTIONS[0]
        missing = self.approve("{}", selected_option_id="gone")
        assert isinstance(missing, ToolCallRunningState)
        assert missing.selected_option is None


class TestCompletion:
    def test_a_call_completed_without_confirmation_says_it_was_not_needed(self) -> None:
        pending = TOOL_CALLS[ToolCallStatus.PENDING_CONFIRMATION]
        done = build(pending, ACTIONS[ToolCallEvent.COMPLETE], ToolCallEvent.COMPLETE)
        assert isinstance(done, ToolCallCompletedState)
        assert done.confirmed is ToolCallConfirmationReason.NOT_NEEDED

    def test_a_call_waiting_for_authentication_keeps_its_partial_output(self) -> None:
        waiting = TOOL_CALLS[ToolCallStatus.AUTH_REQUIRED]
        assert isinstance(waiting, ToolCallAuthRequiredState)
        failed = ChatToolCallCompleteAction(
            **_IDS, result=ToolCallResult(success=False, past_tense_message="Gave up")
        )
        done = build(waiting, failed, ToolCallEvent.COMPLETE_FAILED)
        assert isinstance(done, ToolCallCompletedState)
        assert (done.success, done.content) == (False, waiting.content)

    def test_a_running_call_s_content_is_the_result_s(self) -> None:
        running = TOOL_CALLS[ToolCallStatus.RUNNING]
        done = build(running, ACTIONS[ToolCallEvent.COMPLETE], ToolCallEvent.COMPLETE)
        assert isinstance(done, ToolCallCompletedState)
        assert done.content is None


class TestForceCancel:
    @pytest.mark.parametrize("status", list(ToolCallStatus), ids=str)
    def test_any_call_ends_cancelled_as_skipped_keeping_what_it_was(
        self, status: ToolCallStatus
    ) -> None:
        before = attrs.evolve(TOOL_CALLS[status], unknown_fields=NEWER)
        cancelled = force_cancel(before)
        assert isinstance(cancelled, ToolCallCancelledState)
        assert cancelled.reason is ToolCallCancellationReason.SKIPPED
        assert (cancelled.tool_call_id, cancelled.contributor, cancelled.unknown_fields) == (
            before.tool_call_id,
            before.contributor,
            NEWER,
        )

    def test_a_call_still_streaming_has_no_input(self) -> None:
        cancelled = force_cancel(TOOL_CALLS[ToolCallStatus.STREAMING])
        assert (cancelled.invocation_message, cancelled.tool_input) == ("", None)

    def test_a_ready_call_keeps_its_input_and_message(self) -> None:
        cancelled = force_cancel(TOOL_CALLS[ToolCallStatus.RUNNING])
        assert (cancelled.invocation_message, cancelled.tool_input) == ("Search foo", "{}")
