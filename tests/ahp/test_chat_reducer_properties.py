"""Properties of the chat reducer and its validator over generated action sequences.

Generated actions come from the shared strategies
(:func:`tests.support.strategies.ahp_values`), with
their ids drawn from small pools, so that a sequence keeps hitting the turns, tool calls,
parts, requests and pending messages that earlier actions created, and the interesting paths
(tool-call transitions, input requests, stale turn ids) are exercised, not just the no-ops.
"""

from __future__ import annotations

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import IllegalTransitionError
from orchestrator.ahp import (
    IDEMPOTENT_CHAT_ACTIONS,
    TOOL_CALL_TRANSITIONS,
    ToolCallAction,
    ToolCallStatus,
    _tool_call_lifecycle,
    answer_problem,
    part_id,
    reduce_chat,
    tool_call_event,
    tool_call_guard,
    tool_call_status,
    validate_chat_action,
)
from orchestrator.ahp.actions import (
    ChatAction,
    ChatInputAnswerChangedAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatResponsePartAction,
    ChatToolCallStartAction,
    ChatTruncatedAction,
    ChatTurnsLoadedAction,
    ChatTurnStartedAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatInputRequest,
    ChatState,
    InputRequestResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    SessionStatus,
    ToolCallResponsePart,
    ToolCallState,
    known_questions,
)
from tests.support.examples import examples
from tests.support.strategies import (
    CHANNEL,
    NOW,
    TOOL_CALL_ACTION_CLASSES,
    chat_actions,
    chat_states,
    empty_chats,
    pooled_actions,
    tool_call_states,
)

LATER = "2025-01-01T00:00:20.000Z"
HELLO = Message(text="Hello", origin=MessageOrigin(kind=MessageKind.USER))


def accepted(state: ChatState, action: ChatAction | UnknownAction) -> bool:
    try:
        validate_chat_action(state, action, channel=CHANNEL)
    except IllegalTransitionError:
        return False
    return True


def breaks_turn_table_or_invariant(state: ChatState, action: ChatAction | UnknownAction) -> bool:
    """Refusals the reducer would not ignore: a turn started over an active one, a reused turn
    id (started or loaded), a second part with one id, answers to questions not asked."""
    turn = state.active_turn
    if isinstance(action, ChatTurnStartedAction):
        return turn is not None or any(t.id == action.turn_id for t in state.turns)
    if isinstance(action, ChatTurnsLoadedAction):
        # A page of older turns that repeats an id, or holds the active turn's id.
        ids = [t.id for t in action.turns]
        return len(set(ids)) < len(ids) or (turn is not None and turn.id in ids)
    if turn is None:
        return False
    request = None
    if isinstance(action, ChatInputRequestedAction):
        request = action.request
        drafted = next(
            (
                p.request.answers
                for p in turn.response_parts
                if isinstance(p, InputRequestResponsePart)
                and p.response is None
                and p.request.id == request.id
            ),
            None,
        )
        if request.answers is None and drafted:
            # A re-sent request carries the drafted answers over (see the validator).
            request = attrs.evolve(request, answers=drafted)
    elif isinstance(action, ChatResponsePartAction) and isinstance(
        action.part, InputRequestResponsePart
    ):
        request = action.part.request
    if request is not None and not answers_fit(request):
        return True
    if isinstance(action, ChatToolCallStartAction | ChatResponsePartAction):
        new_id = (
            action.tool_call_id
            if isinstance(action, ChatToolCallStartAction)
            else part_id(action.part)
        )
        return new_id is not None and any(part_id(p) == new_id for p in turn.response_parts)
    if isinstance(action, ChatInputRequestedAction):
        return False
    # Answers: refused while changing only when one names a question that was not asked.
    return isinstance(action, ChatInputAnswerChangedAction | ChatInputCompletedAction)


def answers_fit(request: ChatInputRequest) -> bool:
    """Every answer answers a question the request asks, as that question can be answered."""
    questions = {q.id: q for q in known_questions(request.questions)}
    return all(
        question_id in questions and answer_problem(questions[question_id], answer) is None
        for question_id, answer in (request.answers or {}).items()
    )


def invariants_hold(state: ChatState) -> None:
    """The ``# Invariant:`` comments of the state types that validation protects."""
    turn_ids = [t.id for t in state.turns]
    assert len(set(turn_ids)) == len(turn_ids)
    turn: ActiveTurn | None = state.active_turn
    if turn is not None:
        assert turn.id not in turn_ids
        ids = [i for i in map(part_id, turn.response_parts) if i is not None]
        assert len(set(ids)) == len(ids)
        for part in turn.response_parts:
            if isinstance(part, InputRequestResponsePart):
                assert answers_fit(part.request), part.request
    queued = [m.id for m in state.queued_messages or ()]
    assert len(set(queued)) == len(queued)


def refused_cleanly(state: ChatState, action: ChatAction) -> None:
    """Validation either accepts or raises our error with a reason, nothing else."""
    refusal: IllegalTransitionError | None = None
    try:
        validate_chat_action(state, action, channel=CHANNEL)
    except IllegalTransitionError as error:
        refusal = error
    if refusal is not None:
        assert refusal.reason
        assert refusal.channel == CHANNEL


RUN = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEQUENCES = settings(RUN, max_examples=examples(50))
"""Sequence tests draw up to 40 deep actions per example: fewer examples, same reach."""


class TestReducerIsTotal:
    @RUN
    @given(chat_states(), st.lists(chat_actions(), max_size=5))
    def test_arbitrary_actions_on_arbitrary_states_never_crash(
        self, state: ChatState, actions: list[ChatAction]
    ) -> None:
        """Any well-typed action on any well-typed state gives a state, never an exception."""
        for action in actions:
            refused_cleanly(state, action)
            state = reduce_chat(state, action, now=NOW)
        assert isinstance(state, ChatState)

    @SEQUENCES
    @given(empty_chats(), st.data())
    def test_sequences_never_crash(self, state: ChatState, data: st.DataObject) -> None:
        """Folding a sequence that keeps hitting live ids, valid or not, never fails."""
        for _ in range(data.draw(st.integers(0, 30))):
            action = data.draw(pooled_actions(live=state))
            refused_cleanly(state, action)
            state = reduce_chat(state, action, now=NOW)
        assert isinstance(state, ChatState)


class TestNoOpIsIdentity:
    """The validator refuses no-ops by identity (``reduced is state``), never by comparing two
    states of thousands of parts; so an unchanged state must be the very same object."""

    @RUN
    @given(chat_states(), chat_actions())
    def test_on_arbitrary_states(self, state: ChatState, action: ChatAction) -> None:
        reduced = reduce_chat(state, action, now=state.modified_at)
        assert (reduced == state) is (reduced is state), action

    @SEQUENCES
    @given(empty_chats(), st.data())
    def test_along_sequences(self, state: ChatState, data: st.DataObject) -> None:
        for _ in range(data.draw(st.integers(0, 30))):
            action = data.draw(pooled_actions(live=state))
            reduced = reduce_chat(state, action, now=state.modified_at)
            assert (reduced == state) is (reduced is state), action
            state = reduce_chat(state, action, now=NOW)

    @SEQUENCES
    @given(empty_chats(), st.data())
    def test_whatever_the_time(self, state: ChatState, data: st.DataObject) -> None:
        """A no-op at the chat's own time is a no-op later too (the runtime reduces once, with
        the time of the fact, and validates that): only truncation stamps a chat regardless."""
        for _ in range(data.draw(st.integers(0, 30))):
            action = data.draw(pooled_actions(live=state))
            same = reduce_chat(state, action, now=state.modified_at) is state
            later = reduce_chat(state, action, now=LATER) is state
            if not isinstance(action, ChatTruncatedAction):
                assert same is later, action
            state = reduce_chat(state, action, now=NOW)


class TestValidatorAgreesWithReducer:
    @SEQUENCES
    @given(empty_chats(), st.data())
    def test_accepted_changes_refused_does_not(self, state: ChatState, data: st.DataObject) -> None:
        """Accepted ⇒ the reducer changes the state (unless the type is always legal);
        refused ⇒ the reducer leaves it as it is, or the action breaks the turn table or an
        invariant. Folding only the accepted actions keeps the invariants."""
        for _ in range(data.draw(st.integers(0, 40))):
            action = data.draw(pooled_actions(live=state))
            reduced = reduce_chat(state, action, now=state.modified_at)
            if accepted(state, action):
                if action.type not in IDEMPOTENT_CHAT_ACTIONS:
                    assert reduced != state, action
                state = reduce_chat(state, action, now=NOW)
                invariants_hold(state)
            else:
                assert reduced == state or breaks_turn_table_or_invariant(state, action), action

    @RUN
    @given(tool_call_states(), pooled_actions(TOOL_CALL_ACTION_CLASSES))
    def test_the_lookups_answer_as_the_enum_and_the_match(
        self, tool_call: ToolCallState, action: ToolCallAction
    ) -> None:
        """tool_call_status and tool_call_event look up by value and by class what the
        enum's call and the match by class and payload answer."""
        assert tool_call_status(tool_call) is ToolCallStatus(tool_call.status)
        assert tool_call_event(action) is _tool_call_lifecycle._event_of(action)

    @RUN
    @given(tool_call_states(), pooled_actions(TOOL_CALL_ACTION_CLASSES))
    def test_accepts_exactly_the_legal_tool_call_transitions(
        self, tool_call: ToolCallState, action: ToolCallAction
    ) -> None:
        """For a tool call in any status, the validator accepts an action only if the table
        (and its guard) allow the transition, and accepts every allowed one that changes
        something; the reducer ignores every transition the table forbids."""
        turn = ActiveTurn(
            id="turn-1",
            started_at="2025-01-01T00:00:00.000Z",
            message=HELLO,
            response_parts=(ToolCallResponsePart(tool_call=tool_call),),
        )
        state = ChatState(
            resource=CHANNEL,
            title="Chat",
            status=SessionStatus.IN_PROGRESS,
            modified_at="2025-01-01T00:00:00.000Z",
            turns=(),
            active_turn=turn,
        )
        action = attrs.evolve(action, turn_id="turn-1", tool_call_id=tool_call.tool_call_id)
        event = tool_call_event(action)
        legal = (
            event in TOOL_CALL_TRANSITIONS[ToolCallStatus(tool_call.status)]
            and tool_call_guard(tool_call, event) is None
        )
        reduced = reduce_chat(state, action, now=state.modified_at)
        if accepted(state, action):
            assert legal
            assert reduced != state
        elif legal:
            assert reduced == state
        else:
            assert reduced is state
