"""What each AG-UI event the projector builds looks like on the wire: its type, its camelCase
keys, the keys it leaves out when it has nothing to say; each checked against the official
``ag-ui-protocol`` models and the spec's draft schema (``tests/support/agui.validate_event``)."""

from __future__ import annotations

import pytest

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
)
from orchestrator.ahp.state import (
    ErrorInfo,
    MarkdownString,
    ToolCallResult,
    ToolResultTextContent,
)
from orchestrator.protocols._agui_events import (
    Subagent,
    attributed,
    result_text,
    run_ended,
    subagent_ended,
    subagent_started,
    subagent_suspended,
    text_of,
)
from tests.support.agui import validate_event


def subagent(**changes: object) -> Subagent:
    fields: dict[str, object] = {
        "chat": "ahp-chat:/w1",
        "name": "researcher",
        "description": "",
        "parent": None,
        "parent_tool_call_id": "call-1",
        "parent_message_id": None,
        "task": "task-1",
    }
    return Subagent(**(fields | changes))  # type: ignore[arg-type]


class TestAttributed:
    def test_a_subagent_s_event_names_its_run(self) -> None:
        event = attributed("ahp-chat:/w1", type="TEXT_MESSAGE_CONTENT", messageId="m", delta="hi")
        assert event == {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "hi",
            "subagentRunId": "ahp-chat:/w1",
        }
        validate_event(event)

    def test_the_coordinator_s_event_names_none(self) -> None:
        event = attributed(None, type="TEXT_MESSAGE_END", messageId="m")
        assert event == {"type": "TEXT_MESSAGE_END", "messageId": "m"}
        validate_event(event)


class TestSubagentStarted:
    def test_the_least_it_says(self) -> None:
        event = subagent_started(subagent())
        assert event == {
            "type": "SUBAGENT_STARTED",
            "subagentRunId": "ahp-chat:/w1",
            "name": "researcher",
            "parentToolCallId": "call-1",
            "metadata": {"task": "task-1"},
        }
        validate_event(event)

    def test_a_nested_subagent_with_its_description_and_message(self) -> None:
        event = subagent_started(
            subagent(description="digs", parent="ahp-chat:/manager", parent_message_id="msg-3")
        )
        assert (
            event["description"],
            event["parentSubagentRunId"],
            event["parentMessageId"],
        ) == ("digs", "ahp-chat:/manager", "msg-3")
        validate_event(event)


class TestSubagentEnded:
    def test_finished_with_its_result(self) -> None:
        event = subagent_ended("c", ok=True, summary="found it", code=None)
        assert event == {"type": "SUBAGENT_FINISHED", "subagentRunId": "c", "result": "found it"}
        validate_event(event)

    def test_finished_with_nothing_to_say_has_no_result(self) -> None:
        event = subagent_ended("c", ok=True, summary="", code="ignored")
        assert event == {"type": "SUBAGENT_FINISHED", "subagentRunId": "c"}

    @pytest.mark.parametrize(
        ("summary", "code", "event"),
        [
            ("the disk is full", "failed", {"message": "the disk is full", "code": "failed"}),
            ("", None, {"message": "failed"}),
        ],
    )
    def test_an_error_says_why_or_at_least_that_it_failed(
        self, summary: str, code: str | None, event: dict[str, str]
    ) -> None:
        error = subagent_ended("c", ok=False, summary=summary, code=code)
        assert error == {"type": "SUBAGENT_ERROR", "subagentRunId": "c", **event}
        validate_event(error)

    @pytest.mark.parametrize(
        ("ids", "outcome"),
        [
            (["i1", "i2"], {"type": "suspended", "interruptIds": ["i1", "i2"]}),
            (None, {"type": "suspended"}),
            ([], {"type": "suspended"}),
        ],
    )
    def test_suspended_at_an_interrupt_names_its_approvals(
        self, ids: list[str] | None, outcome: dict[str, object]
    ) -> None:
        event = subagent_suspended("c", ids)
        assert event == {"type": "SUBAGENT_FINISHED", "subagentRunId": "c", "outcome": outcome}
        validate_event(event)


class TestRunEnded:
    def test_a_complete_turn_finishes_the_run_with_its_answer(self) -> None:
        event = run_ended(
            ChatTurnCompleteAction(turn_id="t", duration=1), thread_id="th", run_id="r", result="ok"
        )
        assert event == {"type": "RUN_FINISHED", "threadId": "th", "runId": "r", "result": "ok"}
        validate_event(event)

    def test_a_failed_turn_is_a_run_error_with_its_type_as_code(self) -> None:
        action = ChatErrorAction(
            turn_id="t", duration=1, error=ErrorInfo(error_type="BackendError", message="down")
        )
        event = run_ended(action, thread_id="th", run_id="r", result="")
        assert event == {"type": "RUN_ERROR", "message": "down", "code": "BackendError"}
        validate_event(event)

    def test_a_cancelled_turn_is_a_run_error_that_says_so(self) -> None:
        event = run_ended(
            ChatTurnCancelledAction(turn_id="t", duration=1), thread_id="th", run_id="r", result=""
        )
        assert event == {
            "type": "RUN_ERROR",
            "message": "the coordinator's turn was cancelled before it answered",
            "code": "cancelled",
        }
        validate_event(event)


class TestText:
    @pytest.mark.parametrize(
        ("value", "text"),
        [(None, ""), ("", ""), ("plain", "plain"), (MarkdownString(markdown="**b**"), "**b**")],
    )
    def test_text_of_a_string_or_markdown(self, value: object, text: str) -> None:
        assert text_of(value) == text  # type: ignore[arg-type]

    def test_a_result_is_its_text_contents_joined(self) -> None:
        result = ToolCallResult(
            success=True,
            past_tense_message="Searched",
            content=(ToolResultTextContent(text="a"), ToolResultTextContent(text="b")),
        )
        assert result_text(result) == "a\nb"

    @pytest.mark.parametrize("content", [None, ()])
    def test_a_result_without_text_is_its_past_tense_message(self, content: object) -> None:
        result = ToolCallResult(
            success=True,
            past_tense_message=MarkdownString(markdown="Ran *it*"),
            content=content,  # type: ignore[arg-type]
        )
        assert result_text(result) == "Ran *it*"
