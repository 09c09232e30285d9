"""The chat validator's refusals beyond the tool-call table: what an action names that the chat
does not hold, and the actions that are legal even when they change nothing.
"""

from __future__ import annotations

import attrs
import pytest

from orchestrator.ahp import (
    IDEMPOTENT_CHAT_ACTIONS,
    reduce_chat,
    validate_chat_action,
)
from orchestrator.ahp.actions import (
    ChatAction,
    ChatActivityChangedAction,
    ChatDeltaAction,
    ChatDraftChangedAction,
    ChatInputAnswerChangedAction,
    ChatInputCompletedAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatQueuedMessagesReorderedAction,
    ChatResponsePartAction,
    ChatToolCallStartAction,
    ChatTruncatedAction,
    ChatTurnsLoadedAction,
    ChatUsageAction,
    ChatWorkingDirectoryRemovedAction,
    ChatWorkingDirectorySetAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ChatInputAnswered,
    ChatInputAnswerValue,
    ChatInputBooleanQuestion,
    ChatInputNumberAnswerValue,
    ChatInputNumberQuestion,
    ChatInputOption,
    ChatInputQuestion,
    ChatInputRequest,
    ChatInputResponseKind,
    ChatInputSelectedAnswerValue,
    ChatInputSingleSelectQuestion,
    ChatInputSkipped,
    ChatInputTextAnswerValue,
    ChatState,
    InputRequestResponsePart,
    MarkdownResponsePart,
    PendingMessage,
    PendingMessageKind,
    ReasoningResponsePart,
    Turn,
    TurnState,
    UsageInfo,
)
from tests.support.ahp_chats import (
    _IDS,
    BEFORE,
    CHANNEL,
    HELLO,
    NOW,
    TURN,
    active_turn,
    chat,
    refusal,
)


def completed_turn(turn_id: str) -> Turn:
    return Turn(
        id=turn_id,
        started_at=BEFORE,
        duration=1,
        message=HELLO,
        response_parts=(),
        state=TurnState.COMPLETE,
    )


class TestOtherRefusals:
    def test_delta_to_unknown_part(self) -> None:
        """A delta names a part the turn does not have."""
        action = ChatDeltaAction(turn_id=TURN, part_id="md-1", content="x")
        assert refusal(chat(), action).reason == "turn 'turn-1' has no response part 'md-1'"

    def test_delta_to_reasoning_part(self) -> None:
        """A markdown delta aimed at a reasoning part is refused (and dropped by the reducer)."""
        state = chat(ReasoningResponsePart(id="md-1", content=""))
        action = ChatDeltaAction(turn_id=TURN, part_id="md-1", content="x")
        assert "not a markdown part" in refusal(state, action).reason
        assert reduce_chat(state, action, now=NOW) is state

    def test_duplicate_part_id(self) -> None:
        """A second part with an id the turn already uses is refused."""
        state = chat(MarkdownResponsePart(id="tc-1", content=""))
        action = ChatToolCallStartAction(**_IDS, tool_name="search", display_name="Search")
        assert "already has a response part" in refusal(state, action).reason
        part = ChatResponsePartAction(
            turn_id=TURN, part=MarkdownResponsePart(id="tc-1", content="")
        )
        assert "already has a response part" in refusal(state, part).reason

    def test_pending_message_removal_of_unknown_id(self) -> None:
        """Removing a pending message that is not there is refused."""
        action = ChatPendingMessageRemovedAction(kind=PendingMessageKind.QUEUED, id="m-1")
        assert refusal(chat(active=False), action).reason == "there is no queued message 'm-1'"

    def test_reorder_without_queue(self) -> None:
        """Reordering nothing is refused."""
        action = ChatQueuedMessagesReorderedAction(order=("m-1",))
        assert refusal(chat(active=False), action).reason == "there are no queued messages"

    def test_truncation_to_unknown_turn(self) -> None:
        """Truncating after a turn that is not in the history is refused."""
        action = ChatTruncatedAction(turn_id="turn-9")
        assert "no completed turn" in refusal(chat(active=False), action).reason

    def test_older_turns_repeating_an_id(self) -> None:
        """A page of older turns that lists one turn id twice would break turn-id uniqueness."""
        old = completed_turn("turn-0")
        action = ChatTurnsLoadedAction(turns=(old, old))
        assert "lists turn id 'turn-0' twice" in refusal(chat(active=False), action).reason
        validate_chat_action(
            chat(active=False), attrs.evolve(action, turns=(old,)), channel=CHANNEL
        )

    def test_older_turns_holding_the_active_turn(self) -> None:
        """A loaded turn may not reuse the id of the turn that is running."""
        old = completed_turn(TURN)
        action = ChatTurnsLoadedAction(turns=(old,))
        assert "which is active" in refusal(chat(), action).reason

    @pytest.mark.parametrize(
        ("question", "value", "problem"),
        [
            (
                ChatInputBooleanQuestion(id="q-1", message="Go?"),
                ChatInputTextAnswerValue(value="maybe"),
                "q-1 is a boolean question, answered with a text value",
            ),
            (
                ChatInputNumberQuestion(id="q-1", message="How many?", kind="integer"),
                ChatInputNumberAnswerValue(value=2.5),
                "q-1 takes an integer, not 2.5",
            ),
            (
                ChatInputSingleSelectQuestion(
                    id="q-1", message="Which?", options=(ChatInputOption(id="a", label="A"),)
                ),
                ChatInputSelectedAnswerValue(value="b"),
                "q-1 offers no option b",
            ),
        ],
    )
    def test_an_answer_the_question_cannot_take(
        self, question: ChatInputQuestion, value: ChatInputAnswerValue, problem: str
    ) -> None:
        """An answer of the wrong kind, or naming an option not offered, is refused."""
        request = ChatInputRequest(id="r-1", questions=(question,))
        state = chat(InputRequestResponsePart(request=request))
        answer = ChatInputAnswered(state="submitted", value=value)
        action = ChatInputCompletedAction(
            request_id="r-1", response=ChatInputResponseKind.ACCEPT, answers={"q-1": answer}
        )
        assert refusal(state, action).reason == f"input request 'r-1': {problem}"

    def test_input_answer_to_unknown_question(self) -> None:
        """An answer to a question the request does not ask would break its invariant."""
        question = ChatInputBooleanQuestion(id="q-1", message="Continue?")
        request = ChatInputRequest(id="r-1", questions=(question,))
        state = chat(InputRequestResponsePart(request=request))
        action = ChatInputAnswerChangedAction(
            request_id="r-1", question_id="q-2", answer=ChatInputSkipped()
        )
        assert refusal(state, action).reason == "input request 'r-1' does not ask q-2"
        ok = attrs.evolve(action, question_id="q-1")
        validate_chat_action(state, ok, channel=CHANNEL)

    def test_unknown_action_type(self) -> None:
        """A type this server does not model is refused; the reducer ignores it."""
        action = UnknownAction(raw={"type": "chat/somethingNew"})
        assert "not a chat action" in refusal(chat(), action).reason
        state = chat()
        assert reduce_chat(state, action, now=NOW) is state


class TestIdempotentActions:
    SAME_AGAIN: tuple[tuple[ChatState, ChatAction], ...] = (
        (chat(activity="thinking"), ChatActivityChangedAction(activity="thinking")),
        (chat(), ChatDraftChangedAction()),
        (chat(working_directories=("/a",)), ChatWorkingDirectorySetAction(directory="/a")),
        (chat(), ChatWorkingDirectoryRemovedAction(directory="/a")),
        (chat(), ChatTurnsLoadedAction(turns=())),
        (
            chat(steering_message=PendingMessage(id="m-1", message=HELLO)),
            ChatPendingMessageSetAction(kind=PendingMessageKind.STEERING, id="m-1", message=HELLO),
        ),
        (
            chat(queued_messages=(PendingMessage(id="m-1", message=HELLO),)),
            ChatQueuedMessagesReorderedAction(order=("m-1",)),
        ),
        (
            attrs.evolve(chat(), active_turn=attrs.evolve(active_turn(chat()), usage=UsageInfo())),
            ChatUsageAction(turn_id=TURN, usage=UsageInfo()),
        ),
    )

    def test_list_names_chat_actions_only(self) -> None:
        """Each always-legal type is a chat action type with a reason beside it."""
        assert all(t.startswith("chat/") and why for t, why in IDEMPOTENT_CHAT_ACTIONS.items())

    @pytest.mark.parametrize(("state", "action"), SAME_AGAIN, ids=lambda v: getattr(v, "type", ""))
    def test_setting_the_same_value_again_is_accepted(
        self, state: ChatState, action: ChatAction
    ) -> None:
        """Saying the same thing twice is harmless: accepted, and the reducer returns ``state``."""
        assert action.type in IDEMPOTENT_CHAT_ACTIONS
        validate_chat_action(state, action, channel=CHANNEL)
        assert reduce_chat(state, action, now=NOW) == state
