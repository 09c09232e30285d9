"""Team actions: the facts a team run records that the AHP chat channel does not cover.

AHP actions (``chat/*``, ``session/*``) describe each chat and the session's chat
catalog. A team run also has to record who is on the team, which piece of work
(a *task*) each worker was given and how it ended, who handed work to whom, and
how approvals were routed and decided. Those are the ``team/*`` actions here.
Together with the AHP actions they are the one vocabulary of the fact log; both
kinds are discriminated on ``type`` and travel in the same :class:`Fact`.

Ids: a run has one ``session`` URI (``ahp-session:/<uuid>``); every chat is an
``ahp-chat:/<uuid>`` URI; a task id is ``task-<n>``; an approval id is
``approval-<n>``. Agent names are the team file's agent keys.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "FINISHED_TASK_STATUSES",
    "USER",
    "ApprovalDecision",
    "ApprovalRequested",
    "ApprovalResolved",
    "HandoffRecorded",
    "MemberJoined",
    "RunFinished",
    "RunResumed",
    "RunStarted",
    "RunStatus",
    "SessionForked",
    "TaskCreated",
    "TaskFinished",
    "TaskStarted",
    "TaskStatus",
    "TeamAction",
    "ViewUpdated",
    "task_started",
]

#: The decider of approvals routed to a person rather than to a chat.
USER = "user"


class RunStatus(enum.StrEnum):
    """How a run ended."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskStatus(enum.StrEnum):
    """Lifecycle of one piece of delegated work (Agent UI teammate status values)."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"


#: Statuses a task can finish in.
FINISHED_TASK_STATUSES = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.KILLED})


class ApprovalDecision(enum.StrEnum):
    """What came of an approval request."""

    APPROVED = "approved"
    DENIED = "denied"
    # The requester stopped (cancelled, timed out) before anyone decided: the tool call it
    # gated will never run, so the request is closed rather than left pending.
    WITHDRAWN = "withdrawn"


@attrs.frozen(kw_only=True)
class RunStarted:
    """A team run began: the session exists and the coordinator chat is about to be added."""

    type: str = attrs.field(default="team/runStarted", init=False)
    run: str
    team: str
    topology: str
    parallel_budget: int
    coordinator: str  # the coordinator's agent name
    prompt: str
    task: str  # the root task: the user's request, owned by the coordinator
    # The [[background]] teammate whose wake started the run (None: a person did); such a
    # run ends with its coordinator's first turn, and its coordinator is that teammate.
    background: str | None = None
    # The W3C traceparent the prompt came with (an app's trace this run continues; see
    # core/_spans.py). None: the run's trace is its own. Omitted on the wire when None.
    trace_parent: str | None = None
    # The model the session's OpenAI-compatible agents ask instead of the team file's, chosen
    # when it was opened (``/ws?model=``, ``run --model``). None: the team file's. Omitted on
    # the wire when None, so journals written before it read as they did.
    model: str | None = None


@attrs.frozen(kw_only=True)
class MemberJoined:
    """A chat joined the team as ``agent`` (the coordinator, a worker or a specialist).

    Recorded in the same append as the ``session/chatAdded`` of that chat. With ``starts``,
    the chat takes up ``task`` as it joins: the fact is also that task's
    :class:`TaskStarted` (a spawn's two facts in one, issue 35; journals before it hold both).
    """

    type: str = attrs.field(default="team/memberJoined", init=False)
    chat: str
    agent: str
    role: str
    task: str  # the task this chat works on
    # A remote teammate's A2A agent URL (its turns are that agent's task); None: a local agent.
    remote: str | None = None
    # A side chat's context as it was given when the chat opened: its source's conversation
    # through the turn (and the selected text), as (role, text) pairs its model reads before
    # its own turns. Recorded, so a restart gives the side chat the same context. None: not
    # a side chat.
    context: tuple[tuple[str, str], ...] | None = None
    # The chat starts ``task`` as it joins (a TaskStarted folded with it); omitted when False.
    starts: bool = False

    def started(self) -> TaskStarted:
        """The :class:`TaskStarted` this fact also is (``starts``)."""
        return TaskStarted(task=self.task, chat=self.chat)


@attrs.frozen(kw_only=True)
class TaskCreated:
    """A piece of work was delegated: one per ``delegate`` tool call; or a conversation's
    next prompt began (its root task, with no ``requested_by``).

    ``status`` is ``queued`` when the team's parallel budget was exhausted at the
    time of the call, ``running`` when the worker starts at once (a
    :class:`TaskStarted` follows in the same append).

    A root task (``requested_by`` None) is the run's task from then on: the prompt a
    daemon conversation's coordinator answers now (each prompt is its own root task; the
    first is :class:`RunStarted`'s). It is recorded with the ``chat/turnStarted`` of that
    prompt's turn, and ended by a :class:`TaskFinished` with that turn's end.
    """

    type: str = attrs.field(default="team/taskCreated", init=False)
    task: str
    title: str
    agent: str  # the agent definition that will do the work
    # Invariant: (requested_by is None) == (tool_call_id is None) == (parent_task is None),
    # but for a board item's task: requested_by is the coordinator's chat, and no tool call
    # (nor parent task) made it (see runtime/_board.py)
    requested_by: str | None = None  # the delegating chat; None: a prompt's root task
    tool_call_id: str | None = None  # the delegate tool call in ``requested_by``
    parent_task: str | None = None
    status: TaskStatus
    # A root task's traceparent, as on RunStarted (omitted on the wire when None).
    trace_parent: str | None = None


@attrs.frozen(kw_only=True)
class TaskStarted:
    """A worker chat began the task (after waiting in the queue, or at once)."""

    type: str = attrs.field(default="team/taskStarted", init=False)
    task: str
    chat: str


def task_started(action: object) -> TaskStarted | None:
    """The task start ``action`` is, or carries: a :class:`TaskStarted`, or a
    :class:`MemberJoined` that ``starts`` its task (issue 35); else ``None``."""
    if isinstance(action, TaskStarted):
        return action
    if isinstance(action, MemberJoined) and action.starts:
        return action.started()
    return None


@attrs.frozen(kw_only=True)
class TaskFinished:
    """A task ended; projected as the worker notification.

    ``summary`` is the worker's last answer (or the error), ``duration_ms`` the
    wall time from start to finish, tokens its usage.
    """

    type: str = attrs.field(default="team/taskFinished", init=False)
    task: str
    status: TaskStatus
    summary: str
    duration_ms: int
    input_tokens: int = 0
    output_tokens: int = 0
    chat: str | None = None  # the worker chat, absent if it never started
    # The answer's parsed JSON value when the agent has an output_schema and its answer fit
    # it (None otherwise; omitted on the wire then, so older journals read as before).
    value: Any = None


@attrs.frozen(kw_only=True)
class HandoffRecorded:
    """The active owner of ``task`` moved from one chat to another.

    Past messages keep their authors: only ownership changes. ``resume_target``
    names the agent that takes the task back when the specialist is done.
    """

    type: str = attrs.field(default="team/handoff", init=False)
    task: str
    from_chat: str
    to_chat: str
    to_agent: str
    reason: str
    resume_target: str
    tool_call_id: str


@attrs.frozen(kw_only=True)
class ApprovalRequested:
    """A tool call waits in pending-confirmation for a decision.

    ``routed_to`` is ``"user"`` or the URI of the chat allowed to decide (the
    coordinator, where the team's policy grants it). ``summary`` is a safe,
    shortened rendering of the tool input.
    """

    type: str = attrs.field(default="team/approvalRequested", init=False)
    approval: str
    chat: str
    turn_id: str
    tool_call_id: str
    tool_name: str
    requested_by: str  # the requesting agent's name
    routed_to: str
    policy_scope: str
    summary: str


@attrs.frozen(kw_only=True)
class ApprovalResolved:
    """The decision was applied to the tool call (it is running or cancelled now)."""

    type: str = attrs.field(default="team/approvalResolved", init=False)
    approval: str
    decision: ApprovalDecision
    resolved_by: str
    # Who, behind ``resolved_by``, decided: the client's identity (its token's name) when a
    # user decided through the daemon; None for the console, the policy and withdrawals.
    principal: str | None = None


@attrs.frozen(kw_only=True)
class RunFinished:
    """The run ended; ``result`` is the coordinator's final answer when it completed, and
    ``value`` its parsed JSON value when the coordinator has an output_schema."""

    type: str = attrs.field(default="team/runFinished", init=False)
    run: str
    status: RunStatus
    result: str = ""
    error: str = ""
    value: Any = None  # omitted on the wire when None (see TaskFinished.value)


@attrs.frozen(kw_only=True)
class ViewUpdated:
    """A tool pushed the latest content of one of the session's views (view-updates spec).

    ``content`` is kept and forwarded exactly as received, never interpreted; an empty
    object clears the view.
    """

    type: str = attrs.field(default="team/viewUpdated", init=False)
    view_type: str
    content: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class RunResumed:
    """The process running the team stopped before the run finished, and a new one took
    the run up again from its facts (``restart`` counts these, from 1).

    ``interrupted`` lists the chats whose turn the stop cut off (each ended as
    ``chat/error`` of type ``Interrupted`` in the same append); ``policy`` is the team's
    ``on_restart`` (``resume`` runs them again, ``fail`` reports them failed).
    """

    type: str = attrs.field(default="team/runResumed", init=False)
    run: str
    restart: int
    policy: str
    interrupted: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class SessionForked:
    """This session is a fork: its facts before this one copy ``source``'s first ``sequence``.

    Recorded once, right after the copied facts (see :mod:`._fork`). ``chats`` maps each
    source chat to its copy here, so the delegation graph draws a ``forked`` edge from each.
    ``turn_id`` is the turn the fork was asked at (None: at a sequence).
    """

    type: str = attrs.field(default="team/sessionForked", init=False)
    source: str
    sequence: int
    turn_id: str | None = None
    chats: Mapping[str, str] = attrs.field(factory=dict)


TeamAction = (
    RunStarted
    | RunResumed
    | MemberJoined
    | TaskCreated
    | TaskStarted
    | TaskFinished
    | HandoffRecorded
    | ApprovalRequested
    | ApprovalResolved
    | RunFinished
    | ViewUpdated
    | SessionForked
)

#: Wire ``type`` of every team action, for the converter's tagged union.
TEAM_ACTION_TYPES: dict[str, type[TeamAction]] = {
    "team/runStarted": RunStarted,
    "team/runResumed": RunResumed,
    "team/memberJoined": MemberJoined,
    "team/taskCreated": TaskCreated,
    "team/taskStarted": TaskStarted,
    "team/taskFinished": TaskFinished,
    "team/handoff": HandoffRecorded,
    "team/approvalRequested": ApprovalRequested,
    "team/approvalResolved": ApprovalResolved,
    "team/runFinished": RunFinished,
    "team/viewUpdated": ViewUpdated,
    "team/sessionForked": SessionForked,
}
