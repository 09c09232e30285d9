"""The records of a team run beside its channels' states, and the transition a batch builds.

A team run's state (:class:`~orchestrator.core._team_state.TeamState`) holds every channel's
AHP state plus the team's own bookkeeping, which the ``team/*`` actions describe: the run
(:class:`RunRecord`), who is on the team (:class:`Member`), the work handed out
(:class:`TaskRecord`) and the routed approvals (:class:`ApprovalRecord`). Each is an
immutable value; a reducer replaces it, never edits it.

A batch of actions is reduced into a :class:`Transition`: the run and session it leaves, and
its writes to each kind of entity, kept in an overlay over the state (:class:`Overlay`)
until the batch is committed. Reads through the overlay see the batch's own writes first,
then those of the batches in flight before it, then the committed state. The transition also
notes what each of its actions wrote (:meth:`Transition.changes`, one :class:`FactChange` per
fact): readers advance their view of the state by these instead of reducing the facts again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, Literal, TypeVar

import attrs

from orchestrator.ahp.actions import SessionChatAddedAction, SessionChatUpdatedAction
from orchestrator.ahp.state import ChatState, SessionState, Turn

from ._board import Board
from ._facts import Action
from ._reviews import ReviewRecord
from ._team_actions import ApprovalDecision, ApprovalRequested, RunStatus, TaskStatus

__all__ = [
    "ApprovalRecord",
    "FactChange",
    "ForkedFrom",
    "Member",
    "RunRecord",
    "TaskRecord",
    "Transition",
]


@attrs.frozen(kw_only=True)
class ForkedFrom:
    """A fork's lineage: the source session, the last sequence copied, the turn asked for."""

    session: str
    sequence: int
    turn_id: str | None = None


@attrs.frozen(kw_only=True)
class RunRecord:
    """What ``team/runStarted`` and ``team/runFinished`` said about the run."""

    run: str
    session: str
    team: str
    topology: str
    parallel_budget: int
    coordinator: str
    prompt: str  # the first prompt (the run's title)
    # The root task of the prompt answered now: team/runStarted's, then each later prompt's
    # (a team/taskCreated with no requested_by; see TaskCreated).
    task: str
    started_at: str
    # The chat of the first member that joined on the root task: the coordinator.
    coordinator_chat: str | None = None
    status: RunStatus | None = None
    result: str = ""
    error: str = ""
    background: str | None = None  # the background teammate whose wake started the run
    restarts: int = 0  # how many times a new process took the run up again (team/runResumed)
    # The traceparent the prompt answered now came with (team/runStarted's, then each later
    # prompt's root team/taskCreated's): a resumed run's spans continue that trace.
    trace_parent: str | None = None
    # The latest content of each view the session's tools pushed, by view type
    # (team/viewUpdated; an empty content removes the view).
    views: Mapping[str, Any] = attrs.field(factory=dict)
    # Where this session was forked from (team/sessionForked); None: it is no fork.
    forked_from: ForkedFrom | None = None
    # The team's board: its work items as the team/boardItem* facts left them.
    board: Board = attrs.field(factory=Board)
    # The session's reviews by id, as the team/review* facts left them (in the order
    # requested): a client that joins mid-session gets the review lane from here.
    reviews: Mapping[str, ReviewRecord] = attrs.field(factory=dict)
    # The model chosen for the session's OpenAI-compatible agents (team/runStarted's); None:
    # the team file's. A run taken up after a restart asks it again.
    model: str | None = None


@attrs.frozen(kw_only=True)
class Member:
    """A chat on the team: which agent definition it runs and which task it works on."""

    chat: str
    agent: str
    role: str
    task: str
    remote: str | None = None  # a remote teammate's A2A agent URL
    # A side chat's context, as recorded when it opened (see MemberJoined.context).
    context: tuple[tuple[str, str], ...] | None = None


@attrs.frozen(kw_only=True)
class TaskRecord:
    """One piece of work: the root request or a delegation."""

    task: str
    title: str
    agent: str
    status: TaskStatus
    requested_by: str | None = None  # the delegating chat; None for the root task
    tool_call_id: str | None = None
    parent_task: str | None = None
    chat: str | None = None  # the worker chat once started
    owner: str | None = None  # the chat that currently owns the task (moves on handoff)
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    summary: str = ""
    duration_ms: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@attrs.frozen(kw_only=True)
class ApprovalRecord:
    """A routed approval request and, once applied, its decision."""

    request: ApprovalRequested
    decision: ApprovalDecision | None = None
    resolved_by: str | None = None


K = TypeVar("K")
V = TypeVar("V")

#: Which store of the team state an entry belongs to.
StoreKind = Literal["chat", "member", "task", "approval"]


class Overlay(Generic[K, V]):
    """A batch's writes over a store: reads see the batch's own writes first, then the
    writes of batches in flight before it (``pending``), then the committed ``base``.

    With a ``log`` (a batch prepared to be handed to readers), every write is also appended
    to it in the order made. The log is shared by the batch's overlays, and each write is
    tagged with ``kind``. So what each action of the batch wrote can be handed out
    (:meth:`Transition.changes`)."""

    __slots__ = ("base", "kind", "log", "pending", "writes")

    def __init__(
        self,
        base: dict[K, V],
        pending: dict[K, V],
        *,
        kind: StoreKind = "chat",
        log: list[tuple[StoreKind, Any, Any]] | None = None,
    ) -> None:
        self.base = base
        self.pending = pending
        self.writes: dict[K, V] = {}
        self.kind: StoreKind = kind
        self.log = log

    def get(self, key: K) -> V | None:
        if key in self.writes:
            return self.writes[key]
        if key in self.pending:
            return self.pending[key]
        return self.base.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.writes[key] = value
        if self.log is not None:
            self.log.append((self.kind, key, value))


@attrs.define
class Transition:
    """The effect of a batch, computed but not yet applied (see :meth:`TeamState.prepare`)."""

    actions: list[tuple[str, Action]]
    session: SessionState | None
    run: RunRecord | None
    chats: Overlay[str, ChatState]
    members: Overlay[str, Member]
    tasks: Overlay[str, TaskRecord]
    approvals: Overlay[str, ApprovalRecord]
    #: The session actions that kept a chat's catalog entry equal to its state, by the
    #: position in ``actions`` of the chat action that changed it: derived, never recorded
    #: (:meth:`TeamState.prepare`; AHP clients are sent them at that action's sequence).
    summaries: dict[int, SessionChatUpdatedAction | SessionChatAddedAction] = attrs.field(
        factory=dict
    )
    #: The turns the batch's actions ended, by the action's position in ``actions``: the
    #: journal writes a finished turn's history from it instead of folding its facts again.
    ended_turns: dict[int, Turn] = attrs.field(factory=dict)
    #: Set by :meth:`TeamState.push`: the batch's place among those in flight.
    serial: int | None = None
    #: After each action of ``actions``, by position: the session and run it left and how
    #: long the overlays' shared write log was (:meth:`changes` slices it per action).
    steps: list[tuple[SessionState | None, RunRecord | None, int]] = attrs.field(factory=list)

    @property
    def recorded(self) -> bool:
        """Whether the batch notes what each action wrote (``prepare(record=True)``)."""
        return self.chats.log is not None

    def step(self) -> None:
        """The next action of ``actions`` has been reduced: note what it left (recorded
        batches only)."""
        log = self.chats.log
        assert log is not None, "a batch prepared without record notes no steps"
        self.steps.append((self.session, self.run, len(log)))

    def changes(self) -> list[FactChange]:
        """What each action wrote, in order, one :class:`FactChange` per action (a recorded
        batch, once prepared: every action has been reduced, and stepped)."""
        log = self.chats.log
        assert log is not None, "a batch prepared without record has no changes"
        assert len(self.steps) == len(self.actions), "an action was not stepped"
        changes = []
        start = 0
        for session, run, end in self.steps:
            changes.append(FactChange(session=session, run=run, writes=tuple(log[start:end])))
            start = end
        return changes


@attrs.frozen(slots=True)
class FactChange:
    """What one recorded fact changed in the team state, as the runtime reduced it: the
    session and run after it and the entries it wrote (store, key, new value), in order.

    A reader's :class:`~orchestrator.core._team_state.TeamState` advanced by these
    (:meth:`~orchestrator.core._team_state.TeamState.follow`) is the state a fold of the
    same facts makes, without running a reducer again: the values are the runtime's own.
    """

    session: SessionState | None
    run: RunRecord | None
    writes: tuple[tuple[StoreKind, Any, Any], ...]
