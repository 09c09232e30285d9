"""Replaying a session: its model rounds read back from its facts, and matched to a new run.

Theory of operation
-------------------
The journal keeps what each model round streamed, as facts: a text part and its deltas, the
reasoning, each tool call's start, input and request, the usage. :func:`recorded_rounds` reads
them back into :class:`RecordedRound` values, one per round of each turn of each chat, with
the events a backend would stream to produce those facts again. It also keeps what the round
was asked: the turn's message, and the outcomes of the previous round's tool calls.

:class:`ReplayScript` answers a new run's rounds from them. A new chat is bound to a recorded
chat of the same agent whose first message is the same, the first such chat not yet bound
(so parallel workers doing the same task are told apart by the order they start in). Each of
its rounds is then the recorded round at the same turn and round index. Before it answers, it
checks that the round is asked the same thing as recorded. :class:`ReplayMismatchError` says
where the request first differs: which chat, turn and round, and which field.

The tool call ids are the recorded ones, so a run whose requests all match produces the same
facts as the recorded run, up to its ids and times (:func:`~._diff.diff_sessions` compares
them so). Pure: facts in, events out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnStartedAction,
    ChatUsageAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    MarkdownResponsePart,
    ReasoningResponsePart,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallCompletedState,
)
from orchestrator.base import RunError

from ._facts import Fact
from ._model_round import (
    ModelEvent,
    ReasoningDelta,
    RoundContext,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolOutcome,
    UsageReport,
)
from ._queries import calls_in, outcome_of, round_of
from ._reports import OUTPUT_RETRY_META
from ._team_state import TeamState

__all__ = [
    "RecordedChat",
    "RecordedRound",
    "ReplayExhaustedError",
    "ReplayMismatchError",
    "ReplayScript",
    "recorded_rounds",
]


class ReplayMismatchError(RunError):
    """A replayed round is asked something else than the recorded one was."""


class ReplayExhaustedError(ReplayMismatchError):
    """A replayed round was not recorded (the recording ends before it, or was cut)."""


@attrs.frozen(kw_only=True)
class RecordedRound:
    """One model round as recorded: what it was asked, and what it streamed."""

    message: str  # the turn's message
    outcomes: tuple[ToolOutcome, ...]  # the previous round's tool calls, as the model saw them
    events: tuple[ModelEvent, ...]
    last_sequence: int  # the round's last fact


@attrs.frozen(kw_only=True)
class RecordedChat:
    """A recorded chat's rounds, turn by turn (its turns in order, each its rounds)."""

    chat: str
    agent: str
    first_message: str
    turns: tuple[tuple[RecordedRound, ...], ...]


class _Turn:
    def __init__(self, message: str) -> None:
        self.message = message
        self.rounds: list[list[ModelEvent]] = [[]]
        self.first: list[int] = [0]
        self.last: list[int] = [0]
        self.requested = False  # the round being read asked for tool calls
        self.called = False  # and one of them has ended since: the next model event is a new round
        self.started: dict[str, ToolCallStarted] = {}  # started calls, their deltas not yet read
        self.deltas: dict[str, list[str]] = {}

    def add(self, event: ModelEvent, sequence: int) -> None:
        if self.requested and self.called:
            self.rounds.append([])
            self.first.append(0)
            self.last.append(0)
            self.requested = self.called = False
        self.rounds[-1].append(event)
        self.first[-1] = self.first[-1] or sequence
        self.last[-1] = sequence


def recorded_rounds(facts: Sequence[Fact], *, until: int | None = None) -> list[RecordedChat]:
    """Every chat's recorded rounds in ``facts`` (a session's, in order), chats in the order
    they joined; with ``until``, only the rounds begun at or before it."""
    state = TeamState.fold(facts[0].session if facts else "", facts)
    agents: dict[str, str] = {chat: member.agent for chat, member in state.members.items()}
    order: list[str] = []
    turns: dict[str, list[_Turn]] = {}
    for fact in facts:
        action = fact.action
        chat = fact.channel
        if isinstance(action, SessionChatAddedAction):
            order.append(action.summary.resource)
            continue
        if isinstance(action, ChatTurnStartedAction):
            turns.setdefault(chat, []).append(_Turn(action.message.text))
            continue
        current = turns.get(chat)
        if not current:
            continue
        turn = current[-1]
        match action:
            case ChatResponsePartAction(part=MarkdownResponsePart(content=text)):
                turn.add(TextDelta(text=text), fact.sequence)
            case ChatResponsePartAction(part=ReasoningResponsePart(content=text)):
                turn.add(ReasoningDelta(text=text), fact.sequence)
            case ChatResponsePartAction(part=SystemNotificationResponsePart(meta=meta)):
                if meta and OUTPUT_RETRY_META in meta:
                    # The answer did not fit the agent's output_schema: asked again, in a
                    # round of its own.
                    turn.requested = turn.called = True
            case ChatDeltaAction(content=text):
                turn.add(TextDelta(text=text), fact.sequence)
            case ChatReasoningAction(content=text):
                turn.add(ReasoningDelta(text=text), fact.sequence)
            case ChatToolCallStartAction(tool_call_id=call_id, tool_name=name):
                turn.started[call_id] = ToolCallStarted(tool_call_id=call_id, tool_name=name)
                turn.deltas[call_id] = []
                turn.last[-1] = fact.sequence
            case ChatToolCallDeltaAction(tool_call_id=call_id, content=str(text)):
                if call_id in turn.started:
                    if not turn.deltas[call_id]:
                        turn.add(turn.started[call_id], fact.sequence)
                    turn.deltas[call_id].append(text)
                    turn.add(ToolCallInputDelta(tool_call_id=call_id, text=text), fact.sequence)
            case ChatToolCallReadyAction(tool_call_id=call_id, tool_input=tool_input):
                # A call without deltas was asked whole (its start and readiness: one batch).
                started = turn.started.pop(call_id, None)
                turn.deltas.pop(call_id, None)
                if started is None:
                    continue  # a re-confirmation, not a model's request
                turn.add(_request(started, tool_input), fact.sequence)
                turn.requested = True
            case ChatToolCallCompleteAction() | ChatToolCallDeniedAction():
                turn.called = turn.requested
            case ChatUsageAction(usage=usage):
                report = UsageReport(
                    input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0
                )
                turn.add(report, fact.sequence)
            case _:
                pass
    out = []
    for chat in order:
        if chat not in turns or chat not in state.chats:
            continue
        chat_state = state.chats[chat]
        finished = list(chat_state.turns) + (
            [chat_state.active_turn] if chat_state.active_turn is not None else []
        )
        recorded_turns = []
        for index, turn in enumerate(turns[chat]):
            outcomes = _outcomes(finished[index]) if index < len(finished) else {}
            rounds = []
            for number, events in enumerate(turn.rounds):
                if until is not None and turn.first[number] > until:
                    break
                rounds.append(
                    RecordedRound(
                        message=turn.message,
                        outcomes=tuple(outcomes.get(number - 1, ())),
                        events=tuple(events),
                        last_sequence=turn.last[number],
                    )
                )
            recorded_turns.append(tuple(rounds))
        out.append(
            RecordedChat(
                chat=chat,
                agent=agents.get(chat, ""),
                first_message=turns[chat][0].message,
                turns=tuple(recorded_turns),
            )
        )
    return out


def _request(started: ToolCallStarted, tool_input: Any) -> ToolCallRequest:
    arguments: Mapping[str, Any] = {}
    raw = tool_input if isinstance(tool_input, str) else None
    if raw is not None:
        try:
            decoded = json.loads(raw)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            arguments = decoded
    return ToolCallRequest(
        tool_call_id=started.tool_call_id, tool_name=started.tool_name, arguments=arguments
    )


def _outcomes(turn: Any) -> dict[int, list[ToolOutcome]]:
    """A turn's ended tool calls' outcomes, by the round that asked for them."""
    by_round: dict[int, list[ToolOutcome]] = {}
    for _, call in calls_in(turn):
        number = round_of(call)
        if number is not None and isinstance(call, ToolCallCompletedState | ToolCallCancelledState):
            by_round.setdefault(number, []).append(outcome_of(call))
    return by_round


class ReplayScript:
    """Answers a new run's model rounds with a recorded session's (see the module)."""

    def __init__(self, chats: Sequence[RecordedChat]) -> None:
        self._unbound = list(chats)
        self._bound: dict[str, RecordedChat] = {}

    def round_for(self, context: RoundContext) -> RecordedRound:
        """The recorded round ``context`` asks for; :class:`ReplayMismatchError` if there is
        none, or if it was asked something else."""
        chat_state = context.chat_state
        turns = list(chat_state.turns) if chat_state is not None else []
        active = chat_state.active_turn if chat_state is not None else None
        first = turns[0].message.text if turns else (active.message.text if active else "")
        recorded = self._bound.get(context.chat)
        if recorded is None:
            recorded = next(
                (c for c in self._unbound if c.agent == context.agent and c.first_message == first),
                None,
            )
            if recorded is None:
                raise ReplayExhaustedError(
                    f"replay: {context.agent} ({context.chat}) starts with {first!r}; no "
                    "recorded chat of that agent did"
                )
            self._unbound.remove(recorded)
            self._bound[context.chat] = recorded
        where = f"replay: {context.agent} ({recorded.chat}), turn {len(turns) + 1}, round " + str(
            context.round_index + 1
        )
        if len(turns) >= len(recorded.turns):
            raise ReplayExhaustedError(f"{where}: the recorded chat has no such turn")
        rounds = recorded.turns[len(turns)]
        if context.round_index >= len(rounds):
            raise ReplayExhaustedError(f"{where}: no such round was recorded")
        found = rounds[context.round_index]
        message = active.message.text if active is not None else ""
        if message != found.message:
            raise ReplayMismatchError(
                f"{where}: the message differs: {message!r}, recorded {found.message!r}"
            )
        asked = tuple(context.outcomes)
        if asked != found.outcomes:
            raise ReplayMismatchError(f"{where}: {_first_difference(asked, found.outcomes)}")
        return found


def _first_difference(asked: Sequence[ToolOutcome], recorded: Sequence[ToolOutcome]) -> str:
    for index, (now, then) in enumerate(zip(asked, recorded, strict=False)):
        if now != then:
            for field in ("tool_call_id", "tool_name", "success", "output"):
                if getattr(now, field) != getattr(then, field):
                    return (
                        f"tool outcome {index + 1} differs in {field}: "
                        f"{getattr(now, field)!r}, recorded {getattr(then, field)!r}"
                    )
    return f"{len(asked)} tool outcomes, recorded {len(recorded)}"
