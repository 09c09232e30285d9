"""What :meth:`orchestrator.TeamRun.stream` hands out, mode by mode: the items and the pure
projections that make them from the run's facts.

Theory of operation: a stream reads the run's durable batches of facts from the first one on
(:class:`~orchestrator.TeamRun` keeps them), and hands each batch to the projection of its
mode. A projection owns its own :class:`~orchestrator.core.TeamState` and folds every fact
into it, so each item is a function of the facts alone: the same facts cut into other batches
give the same items (``values`` aside, which gives one item per batch). The modes:

* ``messages``: :class:`MessageDelta` for each piece of text or reasoning a chat streams, and
  :class:`MessageEnd` when that message ends (its chat's next part, a tool call, or the end
  of its turn);
* ``updates``: one :class:`FactUpdate` per fact, with what it changed in the team view
  (:func:`~orchestrator.protocols.team_view`, as RFC 6902 operations);
* ``values``: one :class:`TeamSnapshot` after each batch;
* ``events``: the Agent UI envelopes of each fact (:class:`~orchestrator.protocols.Envelope`);
* ``agui``: AG-UI events (JSON-ready dicts) as the daemon's ``/agui`` endpoint sends them;
  an AG-UI run that ends interrupted by the user's approvals is continued by the next one
  once they are decided.

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any, Final, Literal, TypeAlias, get_args

import attrs

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    SessionChatUpdatedAction,
)
from orchestrator.ahp.state import MarkdownResponsePart, ReasoningResponsePart
from orchestrator.core import (
    ApprovalRequested,
    Fact,
    Member,
    MemberStatus,
    RunStatus,
    TaskRecord,
    TaskStatus,
    TeamState,
    member_name,
)
from orchestrator.protocols import (
    AgentUiProjector,
    AguiProjector,
    AguiRunStatus,
    Envelope,
    TeamView,
)

__all__ = [
    "STREAM_MODES",
    "FactUpdate",
    "MemberSnapshot",
    "MessageDelta",
    "MessageEnd",
    "StreamMode",
    "TaskSnapshot",
    "TeamSnapshot",
]

#: A mode of :meth:`orchestrator.TeamRun.stream`.
StreamMode: TypeAlias = Literal["messages", "updates", "values", "events", "agui"]
#: Every stream mode, in the order the documentation lists them.
STREAM_MODES: Final[tuple[str, ...]] = get_args(StreamMode)


# ── the items ─────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class MessageDelta:
    """A piece of a message as a chat streams it (``messages`` mode).

    A UI puts it in the bubble ``message`` of chat ``chat``: the pieces of one message,
    joined in order, are its text as the chat's facts hold it.
    """

    chat: str  # the chat's URI
    agent: str  # its agent's name ("" for a chat that is no member of the team)
    name: str  # who speaks as people are shown it: "researcher #3" (the chat's URI if no member)
    turn: str  # the turn's id
    message: str  # the message's id (its response part's, unique in the session)
    text: str
    reasoning: bool = False  # the model's reasoning rather than its answer


@attrs.frozen(kw_only=True)
class MessageEnd:
    """The end of message ``message`` (``messages`` mode): nothing more will be added to it."""

    chat: str
    agent: str
    name: str
    turn: str
    message: str
    reasoning: bool = False


@attrs.frozen(kw_only=True)
class FactUpdate:
    """One recorded fact and what it changed (``updates`` mode).

    ``changes`` are RFC 6902 operations on the team view
    (:func:`orchestrator.protocols.team_view`: the team, its members' and tasks' statuses and
    the pending approvals, as AG-UI's ``STATE_DELTA`` carries them). Applied in order to the
    view of an empty team, they give the view of the state the facts fold to. Empty when the
    fact changed nothing the view shows (a piece of streamed text, say).
    """

    fact: Fact
    changes: tuple[dict[str, Any], ...]


@attrs.frozen(kw_only=True)
class MemberSnapshot:
    """A member of the team (a chat), as :class:`TeamSnapshot` lists it."""

    chat: str  # the chat's URI
    agent: str
    name: str  # "researcher #3": its agent's name and its number among that agent's chats
    status: MemberStatus
    task: str  # the task it works on


@attrs.frozen(kw_only=True)
class TaskSnapshot:
    """A piece of work (the root task or a delegation), as :class:`TeamSnapshot` lists it."""

    id: str
    title: str
    agent: str  # the agent it is for
    status: TaskStatus
    requested_by: str | None  # the delegating chat; None for the root task
    chat: str | None  # the chat working on it, once started
    summary: str  # its outcome, once finished


@attrs.frozen(kw_only=True)
class TeamSnapshot:
    """The team's state after a batch of facts (``values`` mode).

    ``status`` is None while the run goes on. ``answer`` is the coordinator's final answer
    once the run has completed, and ``error`` why it failed.
    """

    session: str
    sequence: int  # the last fact's
    team: str | None  # the team's name (None before the run has started)
    status: RunStatus | None
    members: tuple[MemberSnapshot, ...]  # in join order
    tasks: tuple[TaskSnapshot, ...]  # in creation order
    pending_approvals: tuple[ApprovalRequested, ...]  # in the order asked
    answer: str | None = None
    error: str | None = None

    @classmethod
    def from_state(cls, state: TeamState) -> TeamSnapshot:
        """The snapshot of ``state``."""
        return _Snapshots().take(state)


class _Snapshots:
    """Takes snapshots of one state as it moves on, making again only the entries whose
    inputs changed: the state's entries are immutable values, replaced when they change, so
    an entry made from the same objects as last time is the same entry."""

    def __init__(self) -> None:
        self._joined: Counter[str] = Counter()  # agent -> its chats that joined
        self._names: dict[str, str] = {}  # chat -> "researcher #3", fixed when it joins
        # chat -> what its status was made of, and its snapshot
        self._members: dict[str, tuple[tuple[object, ...], MemberSnapshot]] = {}
        self._tasks: dict[str, tuple[TaskRecord, TaskSnapshot]] = {}  # task id -> record, snapshot
        self._places: dict[str, int] = {}  # chat -> its place among the members
        self._last: TeamSnapshot | None = None

    def take(self, state: TeamState, *, chats: Collection[str] | None = None) -> TeamSnapshot:
        """The snapshot of ``state``. ``chats``: when the facts since the last snapshot were
        all ``chat/*`` or ``session/chatUpdated`` facts, the chats they were about (only
        their members' statuses can have changed)."""
        last = self._last
        if chats is not None and last is not None:
            members = list(last.members)
            for chat in chats:
                place = self._places.get(chat)
                if place is not None:
                    members[place] = self._member(state, chat, state.members[chat])
            self._last = attrs.evolve(last, sequence=state.last_sequence, members=tuple(members))
            return self._last
        self._last = self._take(state)
        return self._last

    def _take(self, state: TeamState) -> TeamSnapshot:
        run = state.run
        status = run.status if run is not None else None
        return TeamSnapshot(
            session=state.session_uri,
            sequence=state.last_sequence,
            team=run.team if run is not None else None,
            status=status,
            members=tuple(
                self._member(state, chat, member) for chat, member in state.members.items()
            ),
            tasks=tuple(self._task(task) for task in state.tasks.values()),
            pending_approvals=tuple(record.request for record in state.pending_approvals()),
            answer=run.result if run is not None and status is RunStatus.COMPLETED else None,
            error=(run.error or None) if run is not None and status is RunStatus.FAILED else None,
        )

    def _member(self, state: TeamState, chat: str, member: Member) -> MemberSnapshot:
        name = self._names.get(chat)
        if name is None:  # members join in order and stay: the number is the join count
            self._places[chat] = len(self._places)
            self._joined[member.agent] += 1
            name = self._names[chat] = f"{member.agent} #{self._joined[member.agent]}"
        # What TeamState.member_status reads.
        inputs = (member, state.chats.get(chat), state.tasks.get(member.task), state.run)
        made = self._members.get(chat)
        if made is not None and all(a is b for a, b in zip(made[0], inputs, strict=True)):
            return made[1]
        snapshot = MemberSnapshot(
            chat=chat,
            agent=member.agent,
            name=name,
            status=state.member_status(chat),
            task=member.task,
        )
        self._members[chat] = (inputs, snapshot)
        return snapshot

    def _task(self, task: TaskRecord) -> TaskSnapshot:
        made = self._tasks.get(task.task)
        if made is not None and made[0] is task:
            return made[1]
        snapshot = TaskSnapshot(
            id=task.task,
            title=task.title,
            agent=task.agent,
            status=task.status,
            requested_by=task.requested_by,
            chat=task.chat,
            summary=task.summary,
        )
        self._tasks[task.task] = (task, snapshot)
        return snapshot


# ── the projections ───────────────────────────────────────────────────────────


class Projection:
    """A stream mode's projection: batches of facts in order, the mode's items out; made
    from the state the run starts from."""

    def __init__(self, state: TeamState) -> None:
        self.state = state.copy()

    def feed(self, batch: Sequence[Fact]) -> list[Any]:
        """The items of ``batch`` (the next facts of the run, in order)."""
        raise NotImplementedError


class _FactByFact(Projection):
    """A projection whose items are each fact's, the fact folded into :attr:`state` first."""

    def feed(self, batch: Sequence[Fact]) -> list[Any]:
        items: list[Any] = []
        for fact in batch:
            self.state.apply(fact)
            items += self.fact_items(fact)
        return items

    def fact_items(self, fact: Fact) -> list[Any]:
        """The items of ``fact``, just folded into :attr:`state`."""
        raise NotImplementedError


@attrs.frozen
class _Open:
    """A message a chat is streaming: where its deltas go."""

    message: str
    turn: str
    reasoning: bool


class MessagesProjection(_FactByFact):
    """``messages``: the text and reasoning each chat streams, and each message's end."""

    def __init__(self, state: TeamState) -> None:
        super().__init__(state)
        self._open: dict[str, _Open] = {}  # chat -> the message it streams now
        self._names: dict[str, tuple[str, str]] = {}  # chat -> its agent and name

    def fact_items(self, fact: Fact) -> list[Any]:
        action = fact.action
        chat = fact.channel
        items: list[Any] = []
        match action:
            case ChatResponsePartAction():
                self._end(chat, items)
                part = action.part
                if isinstance(part, MarkdownResponsePart | ReasoningResponsePart):
                    reasoning = isinstance(part, ReasoningResponsePart)
                    self._open[chat] = _Open(part.id, action.turn_id, reasoning)
                    self._delta(chat, part.id, action.turn_id, part.content, reasoning, items)
            case ChatDeltaAction() | ChatReasoningAction():
                reasoning = isinstance(action, ChatReasoningAction)
                self._delta(chat, action.part_id, action.turn_id, action.content, reasoning, items)
            case (
                ChatToolCallStartAction()
                | ChatToolCallReadyAction()
                | ChatTurnCompleteAction()
                | ChatErrorAction()
                | ChatTurnCancelledAction()
            ):
                self._end(chat, items)
        return items

    def _who(self, chat: str) -> tuple[str, str]:
        """The agent and the name of ``chat``: fixed once it has joined, so kept."""
        who = self._names.get(chat)
        if who is None:
            name = member_name(self.state, chat)  # a pass over the members
            if name is None:
                return "", chat
            who = self._names[chat] = (name.agent, name.label)
        return who

    def _delta(
        self, chat: str, message: str, turn: str, text: str, reasoning: bool, items: list[Any]
    ) -> None:
        if self._open.get(chat) != _Open(message, turn, reasoning):
            # A delta to another message than the one open (no part announced it first):
            # the open one has ended, this one is streaming now.
            self._end(chat, items)
            self._open[chat] = _Open(message, turn, reasoning)
        if text:
            agent, name = self._who(chat)
            items.append(
                MessageDelta(
                    chat=chat,
                    agent=agent,
                    name=name,
                    turn=turn,
                    message=message,
                    text=text,
                    reasoning=reasoning,
                )
            )

    def _end(self, chat: str, items: list[Any]) -> None:
        open_message = self._open.pop(chat, None)
        if open_message is not None:
            agent, name = self._who(chat)
            items.append(
                MessageEnd(
                    chat=chat,
                    agent=agent,
                    name=name,
                    turn=open_message.turn,
                    message=open_message.message,
                    reasoning=open_message.reasoning,
                )
            )


class UpdatesProjection(_FactByFact):
    """``updates``: each fact with the team view's changes it made."""

    def __init__(self, state: TeamState) -> None:
        super().__init__(state)
        self._view = TeamView(self.state)

    def fact_items(self, fact: Fact) -> list[Any]:
        return [FactUpdate(fact=fact, changes=tuple(self._view.update(self.state, fact)))]


class ValuesProjection(Projection):
    """``values``: the team's snapshot after each batch."""

    def __init__(self, state: TeamState) -> None:
        super().__init__(state)
        self._snapshots = _Snapshots()

    def feed(self, batch: Sequence[Fact]) -> list[Any]:
        if not batch:
            return []
        # Most batches are a chat's streaming: they can change that chat's member alone.
        chats: set[str] | None = set()
        for fact in batch:
            self.state.apply(fact)
            if chats is None:
                continue
            if fact.type.startswith("chat/"):
                chats.add(fact.channel)
            elif not isinstance(fact.action, SessionChatUpdatedAction):
                chats = None
        return [self._snapshots.take(self.state, chats=chats)]


class EventsProjection(_FactByFact):
    """``events``: the Agent UI envelopes of each fact."""

    def __init__(self, state: TeamState) -> None:
        super().__init__(state)
        self._projector = AgentUiProjector(state.session_uri, self.state)

    def fact_items(self, fact: Fact) -> list[Envelope]:
        return self._projector.feed(fact)


class AguiProjection(Projection):
    """``agui``: the AG-UI runs of the coordinator's turn, as the ``/agui`` endpoint sends
    them, in the thread named by the session's URI. A run interrupted by approvals routed to
    the user is continued (a run of its own: ``run-2``, ``run-3``...) once every one of them
    is decided."""

    def __init__(self, state: TeamState) -> None:
        super().__init__(state)
        self._runs = 1
        # The projector folds the facts into a copy of its own.
        self._projector = AguiProjector(
            state.session_uri, thread_id=state.session_uri, run_id="run-1", state=self.state
        )
        self._head: list[dict[str, Any]] = self._projector.start()

    def feed(self, batch: Sequence[Fact]) -> list[Any]:
        items, self._head = self._head, []
        for fact in batch:
            items += self._projector.feed(fact)
            if self._decided():
                self._runs += 1
                items += self._projector.resume(f"run-{self._runs}")
        return items

    def _decided(self) -> bool:
        """Whether the run is interrupted on approvals that are all decided now."""
        projector = self._projector
        if projector.status is not AguiRunStatus.INTERRUPTED:
            return False
        approvals = projector.state.approvals
        return all(
            approvals[approval].decision is not None
            for approval in projector.interrupts
            if approval in approvals
        )


_PROJECTIONS: Final[dict[str, type[Projection]]] = {
    "messages": MessagesProjection,
    "updates": UpdatesProjection,
    "values": ValuesProjection,
    "events": EventsProjection,
    "agui": AguiProjection,
}


def projection(mode: str, state: TeamState) -> Projection:
    """The projection of stream mode ``mode``, starting from ``state`` (the run's first).

    Raises :class:`ValueError` naming the modes for an unknown one.
    """
    made = _PROJECTIONS.get(mode)
    if made is None:
        raise ValueError(
            f"no stream mode {mode!r}: the modes are " + ", ".join(repr(m) for m in STREAM_MODES)
        )
    return made(state)
