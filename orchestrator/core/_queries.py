"""Questions asked of a team's state by everyone who reads it: a turn's text, a tool call
and the task or approval behind it, the open questions, what a finished call came to.

The runtime, recovery, the projections, the transcript a model reads and the sockets all
ask these; one answer each, so they cannot drift apart.

Pure: state in, values out; no trio, no IO.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, overload

import attrs

from orchestrator.ahp.state import (
    ActiveTurn,
    ChatInputAnswerValue,
    ChatInputBooleanAnswerValue,
    ChatInputRequest,
    ChatInputSelectedManyAnswerValue,
    ChatState,
    ForkChatOrigin,
    InputRequestResponsePart,
    MarkdownResponsePart,
    ReasoningResponsePart,
    SideChatOrigin,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallCompletedState,
    ToolCallResponsePart,
    ToolCallState,
    ToolResultSubagentContent,
    ToolResultTextContent,
    Turn,
    TurnState,
    UnknownChatInputAnswerValue,
)

from ._model_round import ToolOutcome
from ._reports import OUTPUT_RETRY_META
from ._team_actions import USER
from ._team_records import ApprovalRecord, TaskRecord
from ._team_state import TeamState

__all__ = [
    "ASKED_BY_META",
    "INTERRUPTED",
    "ROUND_META",
    "Conversation",
    "Conversations",
    "MemberName",
    "answer_text",
    "conversation",
    "forked_chats",
    "has_open_input",
    "input_request_id",
    "interrupted_turns",
    "is_forked_chat",
    "is_interrupted",
    "member_name",
    "open_questions",
    "outcome_of",
    "party_name",
    "pending_approval_of",
    "round_of",
    "subagent_of",
    "task_of_call",
    "tool_call_of",
    "turn_text",
]

#: The key in a tool call's ``_meta`` naming the model round (0, 1, ...) that asked for it.
ROUND_META = "round"
#: The key in the ``_meta`` of a call put to a person (a gated call, an ``ask``) naming
#: who asks: ``{"agent", "number", "name", "task", "taskTitle"}`` (see :class:`MemberName`).
ASKED_BY_META = "askedBy"
#: ``errorType`` of a turn a stop cut off.
INTERRUPTED = "Interrupted"

#: The parts a model streams as text: a turn's answer and its reasoning.
TEXT_PARTS = (MarkdownResponsePart, ReasoningResponsePart)


def is_interrupted(turn: Turn) -> bool:
    """Whether a stop cut ``turn`` off (it ran again, or was reported failed)."""
    return (
        turn.state is TurnState.ERROR
        and turn.error is not None
        and turn.error.error_type == INTERRUPTED
    )


def interrupted_turns(chat: ChatState) -> int:
    """How many of the chat's turns a stop cut off (a backend numbers its retries by it)."""
    return sum(1 for turn in chat.turns if is_interrupted(turn))


def answer_text(value: ChatInputAnswerValue) -> str:
    """An answer as the asking model reads it."""
    if isinstance(value, ChatInputBooleanAnswerValue):
        return "yes" if value.value else "no"
    if isinstance(value, ChatInputSelectedManyAnswerValue):
        return ", ".join(value.value)
    if isinstance(value, UnknownChatInputAnswerValue):
        return json.dumps(value.raw.get("value"))  # as sent: the model may still read it
    return str(value.value)


def input_request_id(tool_call_id: str) -> str:
    """The id of the question an ``ask`` tool call puts: derived, so a restart finds it."""
    return f"input-{tool_call_id}"


def turn_text(turn: Turn) -> str:
    """The answer a finished turn gave: its markdown after its last tool call, and after the
    last request to answer again (an answer that did not fit the agent's output_schema)."""
    parts = list(turn.response_parts)
    last_call = max(
        (
            i
            for i, part in enumerate(parts)
            if isinstance(part, ToolCallResponsePart)
            or (
                isinstance(part, SystemNotificationResponsePart)
                and OUTPUT_RETRY_META in (part.meta or {})
            )
        ),
        default=-1,
    )
    return "".join(
        part.content for part in parts[last_call + 1 :] if isinstance(part, MarkdownResponsePart)
    )


def calls_in(turn: ActiveTurn | Turn) -> Iterator[tuple[int, ToolCallState]]:
    for index, part in enumerate(turn.response_parts):
        if isinstance(part, ToolCallResponsePart):
            yield index, part.tool_call


def tool_call_of(state: TeamState, chat: str, tool_call_id: str) -> ToolCallState | None:
    """The current state of a tool call of ``chat``'s active turn."""
    turn = state.chats[chat].active_turn
    index = None if turn is None else turn.response_parts.find(("tool", tool_call_id))
    if turn is None or index is None:
        return None
    part = turn.response_parts[index]
    assert isinstance(part, ToolCallResponsePart)
    return part.tool_call


def task_of_call(state: TeamState, chat: str, tool_call_id: str) -> TaskRecord | None:
    """The task a ``delegate`` call of ``chat`` created, if it got that far."""
    return next(
        (
            task
            for task in state.tasks.values()
            if task.requested_by == chat and task.tool_call_id == tool_call_id
        ),
        None,
    )


def pending_approval_of(state: TeamState, chat: str, tool_call_id: str) -> ApprovalRecord | None:
    """The undecided approval a call of ``chat`` waits on, if it got that far."""
    return next(
        (
            record
            for record in state.approvals.values()
            if record.decision is None
            and record.request.chat == chat
            and record.request.tool_call_id == tool_call_id
        ),
        None,
    )


def subagent_of(call: ToolCallState) -> ToolResultSubagentContent | None:
    """The chat a running ``delegate`` or ``handoff`` call spawned (its subagent content)."""
    content = getattr(call, "content", None) or ()
    return next((c for c in content if isinstance(c, ToolResultSubagentContent)), None)


def has_open_input(turn: ActiveTurn, request_id: str) -> bool:
    """Whether ``turn`` has an unanswered input request ``request_id``."""
    return turn.response_parts.find(("input", request_id)) is not None


def open_questions(state: TeamState) -> list[tuple[str, ChatInputRequest]]:
    """Every unanswered input request of the team's running turns, with its chat."""
    questions: list[tuple[str, ChatInputRequest]] = []
    for chat in state.members:
        turn = state.chats[chat].active_turn
        parts = turn.response_parts if turn is not None else ()
        questions += [
            (chat, part.request)
            for part in parts
            if isinstance(part, InputRequestResponsePart) and part.response is None
        ]
    return questions


def round_of(call: ToolCallState) -> int | None:
    """The model round that asked for ``call`` (``_meta.round``), if it says."""
    value = (call.meta or {}).get(ROUND_META)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def outcome_of(call: ToolCallCompletedState | ToolCallCancelledState) -> ToolOutcome:
    """What a finished call came to, as the live run told the model."""
    if isinstance(call, ToolCallCompletedState):
        output = "\n".join(
            c.text for c in call.content or () if isinstance(c, ToolResultTextContent)
        )
        success = call.success
    else:
        reason = call.reason_message if isinstance(call.reason_message, str) else None
        output = f"{call.tool_name} was {reason or call.reason}"
        success = False
    return ToolOutcome(
        tool_call_id=call.tool_call_id, tool_name=call.tool_name, success=success, output=output
    )


def conversation(chat: ChatState) -> tuple[tuple[str, str], ...]:
    """The chat's conversation as (role, text) pairs, derived from its state.

    A turn a restart interrupted is left out: it runs again (or was reported failed), and
    the model should see the conversation as if the attempt had not happened.
    """
    history: list[tuple[str, str]] = []
    for turn in chat.turns:
        _add_turn(history, turn)
    if chat.active_turn is not None:
        history.append(("user", chat.active_turn.message.text))
    return tuple(history)


def _add_turn(history: list[tuple[str, str]], turn: Turn) -> None:
    """Append a finished turn's pairs to ``history`` (none for an interrupted turn)."""
    if is_interrupted(turn):
        return
    history.append(("user", turn.message.text))
    text = "".join(p.content for p in turn.response_parts if isinstance(p, MarkdownResponsePart))
    if text:
        history.append(("assistant", text))


class Conversation(Sequence[tuple[str, str]]):
    """What :func:`conversation` gives, as a view made in constant time by :class:`Conversations`.

    What a backend asks of it is already counted: ``users`` (the user messages),
    ``characters`` (of every text) and ``interrupted`` (the turns a restart cut off, which it
    leaves out).

    It views the first ``length`` pairs of a list that only grows (the finished turns'),
    then ``tail`` (the running turn's message): a later turn does not change it.
    """

    __slots__ = ("_finished", "_length", "_tail", "characters", "interrupted", "users")

    def __init__(
        self,
        finished: list[tuple[str, str]],
        length: int,
        tail: tuple[tuple[str, str], ...],
        *,
        users: int,
        characters: int,
        interrupted: int,
    ) -> None:
        self._finished = finished
        self._length = length
        self._tail = tail
        self.users = users
        self.characters = characters
        self.interrupted = interrupted

    def __len__(self) -> int:
        return self._length + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[tuple[str, str], ...]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("conversation index out of range")
        if index < self._length:
            return self._finished[index]
        return self._tail[index - self._length]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for index in range(self._length):
            yield self._finished[index]
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Conversation({tuple(self)!r})"


class _Folded:
    """One chat's conversation so far: the finished turns it has taken in, and their pairs."""

    __slots__ = ("characters", "interrupted", "pairs", "turns", "users")

    def __init__(self) -> None:
        self.turns: Sequence[Turn] = ()
        self.pairs: list[tuple[str, str]] = []
        self.users = self.characters = self.interrupted = 0

    def take(self, turns: Sequence[Turn]) -> None:
        """Take in the turns that ended since (the chat's turns only grow at the end; a
        truncation or restore, which change earlier ones, starts it over)."""
        seen = len(self.turns)
        if turns is self.turns:
            return
        if seen and not (len(turns) >= seen and turns[seen - 1] is self.turns[-1]):
            # Not an extension of what was taken in: start again, on a new list (the
            # conversations handed out view the old one).
            self.pairs, self.users, self.characters, self.interrupted = [], 0, 0, 0
            seen = 0
        for turn in turns[seen:]:
            length = len(self.pairs)
            _add_turn(self.pairs, turn)
            if len(self.pairs) == length:
                self.interrupted += 1
                continue
            self.users += 1
            self.characters += sum(len(text) for _, text in self.pairs[length:])
        self.turns = turns


class Conversations:
    """Each chat's :class:`Conversation`, extended by the turns that ended since it was last
    asked for, instead of made again from every turn: a chat's hundredth turn costs what its
    first did (see :func:`conversation`, whose pairs it gives).

    :meth:`forget` a chat when its turns are done, to let go of its pairs.
    """

    def __init__(self) -> None:
        self._chats: dict[str, _Folded] = {}

    def of(self, chat: ChatState) -> Conversation:
        """``chat``'s conversation as its state has it now."""
        folded = self._chats.get(chat.resource)
        if folded is None:
            folded = self._chats[chat.resource] = _Folded()
        folded.take(chat.turns)
        tail: tuple[tuple[str, str], ...] = ()
        users, characters = folded.users, folded.characters
        if chat.active_turn is not None:
            text = chat.active_turn.message.text
            tail = (("user", text),)
            users, characters = users + 1, characters + len(text)
        return Conversation(
            folded.pairs,
            len(folded.pairs),
            tail,
            users=users,
            characters=characters,
            interrupted=folded.interrupted,
        )

    def forget(self, chat: str) -> None:
        """Let go of what is kept of ``chat``."""
        self._chats.pop(chat, None)


# ── who asks, who decides ────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class MemberName:
    """A member as people are shown it: its agent's name and number, and its task.

    ``number`` counts the chats that joined the run as ``agent``, from 1 in join order (the
    ``#<n>`` of an Agent UI ``agentId``), so six analysts are ``analyst #1`` to ``#6``.
    """

    chat: str
    agent: str
    number: int
    task: str
    task_title: str | None  # None when the task is not (yet) known

    @property
    def label(self) -> str:
        """``"analyst #3"``."""
        return f"{self.agent} #{self.number}"

    def meta(self) -> dict[str, Any]:
        """As the ``_meta`` of a call put to a person carries it (:data:`ASKED_BY_META`)."""
        meta: dict[str, Any] = {
            "agent": self.agent,
            "number": self.number,
            "name": self.label,
            "task": self.task,
        }
        if self.task_title is not None:
            meta["taskTitle"] = self.task_title
        return meta


def member_name(state: TeamState, chat: str) -> MemberName | None:
    """``chat``'s name and number, and its task; None for a chat that is no member."""
    member = state.members.get(chat)
    if member is None:
        return None
    number = 0
    for other in state.members.values():  # in join order
        if other.agent == member.agent:
            number += 1
        if other.chat == chat:
            break
    task = state.tasks.get(member.task)
    return MemberName(
        chat=chat,
        agent=member.agent,
        number=number,
        task=member.task,
        task_title=task.title if task is not None else None,
    )


def party_name(state: TeamState, party: str, principal: str | None = None) -> str:
    """Who an approval is routed to or was decided by, as people say it.

    - A member by its name and number (``boss #1``).
    - The user by the principal behind the decision when one is known (``alice``), else
      ``user``.
    - Anything else as recorded.
    """
    if party == USER:
        return principal or USER
    name = member_name(state, party)
    return name.label if name is not None else party


def is_forked_chat(state: TeamState, chat: str) -> bool:
    """Whether ``chat`` is a forked chat or a side chat opened in this session (AHP
    ``createChat`` with a source): a chat outside the coordinator's tree of delegations,
    whose turns answer the messages clients send it.

    A forked session's copied root chats (its coordinator among them) also have a fork
    origin, but theirs names a chat of the source session: they are not such chats.
    """
    chat_state = state.chats.get(chat)
    return (
        chat_state is not None
        and isinstance(chat_state.origin, ForkChatOrigin | SideChatOrigin)
        and chat_state.origin.chat in state.chats
        and chat != state.coordinator_chat()
    )


def forked_chats(state: TeamState) -> tuple[str, ...]:
    """The session's forked chats and side chats (:func:`is_forked_chat`), in the order
    they were opened."""
    return tuple(chat for chat in state.chats if is_forked_chat(state, chat))
