"""The team reducer: ``reduce_action(tr, channel, action, ...)`` folds one action of a team run.

Theory of operation
-------------------
A team run's state is its channels' AHP states plus the team's records (the run, members,
tasks, approvals), and a fact is folded by routing its action to the reducer of its kind:

* ``chat/*`` to :func:`~orchestrator.ahp._chat_reducer.reduce_chat`, on the chat the fact's
  channel names (an action on a chat the run does not have is ignored);
* ``session/*`` to :func:`~orchestrator.ahp._session_reducer.reduce_session`, when the channel
  is the run's session and the session exists; ``session/chatAdded`` also creates the chat
  it announces, ``session/chatRemoved`` keeps its history readable;
* ``team/*`` to one handler per action class (:data:`_HANDLERS`);
* anything else (an :class:`~orchestrator.ahp.actions.UnknownAction`) to nothing.

The reducer is **total**, like the AHP reducers: it never raises for a well-typed action. It
applies what the state can take and ignores what it cannot: a task, approval or run that does
not exist, an approval already decided, a resume that is not newer than the last one. Whether
an action *should* be applied is :func:`orchestrator.core._team_validate.validate_action`'s
question. The runtime asks it before appending; replaying a stored log never does. So replay
costs exactly one reduction per fact.

Where the validator refuses an action that the reducer can still apply, the reducer applies
it, as the fold of a stored log always has:

- a second ``team/runStarted`` starts the run again;
- a ``team/taskCreated`` or ``team/approvalRequested`` with a known id replaces the record;
- ``team/taskStarted`` and ``team/taskFinished`` overwrite a task whatever its status;
- a ``team/runFinished`` of a finished run finishes it again.

**The task lifecycle is a table**, in :mod:`._task_lifecycle`: :data:`TASK_TRANSITIONS`
maps a task's status to the statuses it may move to; a status with an empty row is terminal.
The validator refuses a ``team/taskStarted`` or ``team/taskFinished`` the table does not
allow; the reducer reads it to decide whether the end of the run also ends its root task.

The reducer writes into a :class:`~orchestrator.core._team_records.Transition` (an overlay
over the state: nothing committed changes) and is pure: no IO, no clock (the time it stamps
comes in as ``now``), no trio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from orchestrator.ahp import TURN_ENDS, reduce_chat, reduce_session
from orchestrator.ahp.actions import (
    ChatAction,
    SessionAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    UnknownAction,
)
from orchestrator.ahp.state import ChatState, SessionLifecycle, SessionState, SessionStatus, Turn
from orchestrator.base import IllegalTransitionError, evolve, registrar

from ._board import reduce_board
from ._board_actions import BOARD_ACTION_TYPES
from ._facts import Action
from ._review_actions import REVIEW_ACTION_TYPES
from ._reviews import reduce_review
from ._task_lifecycle import TASK_TRANSITIONS
from ._team_actions import (
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunResumed,
    RunStarted,
    RunStatus,
    SessionForked,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamAction,
    ViewUpdated,
)
from ._team_records import (
    ApprovalRecord,
    ForkedFrom,
    Member,
    RunRecord,
    TaskRecord,
    Transition,
)

__all__ = [
    "new_session_state",
    "prompt_title",
    "reduce_action",
    "reduce_team_action",
]


#: The status the root task ends in, by how the run ended.
_ROOT_TASK_STATUS: Final[Mapping[RunStatus, TaskStatus]] = {
    RunStatus.COMPLETED: TaskStatus.COMPLETED,
    RunStatus.FAILED: TaskStatus.FAILED,
    RunStatus.CANCELLED: TaskStatus.KILLED,
}


def prompt_title(prompt: str, limit: int = 80) -> str:
    """The title a run gives its session and root task: the prompt's first line, shortened."""
    line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def new_session_state(title: str = "") -> SessionState:
    """A session's state as it begins: ready, no chats yet, and the given title.

    Its ``status`` is idle, and stays what session actions make it (read, archived, input
    needed). No session action says a session's activity. So the state never claims one it
    could not announce to a subscriber. What a session is doing is its chats' status, which
    its catalog carries. A session not yet prompted shows this state untitled, and the run's
    start changes only its title (``session/titleChanged`` on the session channel).
    """
    return SessionState(
        provider="orchestrator",
        title=title,
        status=SessionStatus.IDLE,
        lifecycle=SessionLifecycle.READY,
        active_clients=(),
        chats=(),
    )


# ─── Team handlers, one per action class ─────────────────────────────────────

_Handler: TypeAlias = Callable[[Transition, Any, str, str], None]
_HANDLERS: dict[type, _Handler] = {}


_handles = registrar(_HANDLERS)


@_handles(RunStarted)
def _run_started(tr: Transition, action: RunStarted, session_uri: str, now: str) -> None:
    tr.run = RunRecord(
        run=action.run,
        session=session_uri,
        team=action.team,
        topology=action.topology,
        parallel_budget=action.parallel_budget,
        coordinator=action.coordinator,
        prompt=action.prompt,
        task=action.task,
        started_at=now,
        background=action.background,
        trace_parent=action.trace_parent,
        model=action.model,
    )
    tr.session = new_session_state(prompt_title(action.prompt))
    tr.tasks[action.task] = TaskRecord(
        task=action.task,
        title=prompt_title(action.prompt),
        agent=action.coordinator,
        status=TaskStatus.RUNNING,
        created_at=now,
        started_at=now,
    )


@_handles(MemberJoined)
def _member_joined(tr: Transition, action: MemberJoined, session_uri: str, now: str) -> None:
    tr.members[action.chat] = Member(
        chat=action.chat,
        agent=action.agent,
        role=action.role,
        task=action.task,
        remote=action.remote,
        context=action.context,
    )
    run = tr.run
    if run is not None and run.coordinator_chat is None and action.task == run.task:
        tr.run = evolve(run, coordinator_chat=action.chat)
    task = tr.tasks.get(action.task)
    if task is not None and task.owner is None:
        tr.tasks[action.task] = evolve(task, owner=action.chat)
    if action.starts:
        _task_started(tr, action.started(), session_uri, now)


@_handles(TaskCreated)
def _task_created(tr: Transition, action: TaskCreated, session_uri: str, now: str) -> None:
    run = tr.run
    owner = None
    if action.requested_by is None and run is not None:
        # A conversation's next prompt: its root task is the run's task from now on, the
        # coordinator's, which owns it (as it owned the first prompt's).
        owner = run.coordinator_chat
        tr.run = evolve(run, task=action.task, trace_parent=action.trace_parent)
        member = tr.members.get(owner) if owner is not None else None
        if member is not None:
            tr.members[member.chat] = evolve(member, task=action.task)
    tr.tasks[action.task] = TaskRecord(
        task=action.task,
        title=action.title,
        agent=action.agent,
        status=action.status,
        requested_by=action.requested_by,
        tool_call_id=action.tool_call_id,
        parent_task=action.parent_task,
        created_at=now,
        owner=owner,
    )


@_handles(TaskStarted)
def _task_started(tr: Transition, action: TaskStarted, session_uri: str, now: str) -> None:
    task = tr.tasks.get(action.task)
    if task is None:
        return
    tr.tasks[action.task] = evolve(
        task,
        status=TaskStatus.RUNNING,
        chat=action.chat,
        owner=action.chat,
        started_at=now,
    )


@_handles(TaskFinished)
def _task_finished(tr: Transition, action: TaskFinished, session_uri: str, now: str) -> None:
    task = tr.tasks.get(action.task)
    if task is None:
        return
    tr.tasks[action.task] = evolve(
        task,
        status=action.status,
        chat=action.chat or task.chat,
        finished_at=now,
        summary=action.summary,
        duration_ms=action.duration_ms,
        input_tokens=action.input_tokens,
        output_tokens=action.output_tokens,
    )


@_handles(HandoffRecorded)
def _handoff(tr: Transition, action: HandoffRecorded, session_uri: str, now: str) -> None:
    task = tr.tasks.get(action.task)
    if task is None:
        return
    tr.tasks[action.task] = evolve(task, owner=action.to_chat)


@_handles(ApprovalRequested)
def _approval_requested(
    tr: Transition, action: ApprovalRequested, session_uri: str, now: str
) -> None:
    tr.approvals[action.approval] = ApprovalRecord(request=action)


@_handles(ApprovalResolved)
def _approval_resolved(
    tr: Transition, action: ApprovalResolved, session_uri: str, now: str
) -> None:
    record = tr.approvals.get(action.approval)
    if record is None or record.decision is not None:
        return
    tr.approvals[action.approval] = evolve(
        record, decision=action.decision, resolved_by=action.resolved_by
    )


@_handles(RunResumed)
def _run_resumed(tr: Transition, action: RunResumed, session_uri: str, now: str) -> None:
    run = tr.run
    if run is None or run.status is not None or action.restart <= run.restarts:
        return
    tr.run = evolve(run, restarts=action.restart)


@_handles(SessionForked)
def _session_forked(tr: Transition, action: SessionForked, session_uri: str, now: str) -> None:
    if tr.run is None:
        return
    lineage = ForkedFrom(session=action.source, sequence=action.sequence, turn_id=action.turn_id)
    tr.run = evolve(tr.run, forked_from=lineage)


@_handles(ViewUpdated)
def _view_updated(tr: Transition, action: ViewUpdated, session_uri: str, now: str) -> None:
    run = tr.run
    if run is None:
        return
    views = {k: v for k, v in run.views.items() if k != action.view_type}
    if action.content:
        views[action.view_type] = action.content
    tr.run = evolve(run, views=views)


@_handles(RunFinished)
def _run_finished(tr: Transition, action: RunFinished, session_uri: str, now: str) -> None:
    if tr.run is None:
        return
    tr.run = evolve(tr.run, status=action.status, result=action.result, error=action.error)
    root = tr.tasks.get(tr.run.task)
    target = _ROOT_TASK_STATUS[action.status]
    if root is not None and target in TASK_TRANSITIONS[root.status]:
        tr.tasks[root.task] = evolve(
            root,
            status=target,
            finished_at=now,
            summary=action.result or action.error,
        )


def _board_changed(tr: Transition, action: Any, session_uri: str, now: str) -> None:
    """A board action (see core/_board.py): the run's board after it."""
    if tr.run is None:
        return
    tr.run = evolve(tr.run, board=reduce_board(tr.run.board, action, now=now))


for _board_action in BOARD_ACTION_TYPES.values():
    _HANDLERS[_board_action] = _board_changed


def _review_changed(tr: Transition, action: Any, session_uri: str, now: str) -> None:
    """A review action (see core/_reviews.py): the run's reviews after it. One the review's
    lifecycle refuses changes nothing (the runtime records only what it takes; a reader of
    a log it did not write skips it, as :meth:`Reviews.fold` does when lenient)."""
    if tr.run is None:
        return
    try:
        reviews = reduce_review(tr.run.reviews, action)
    except IllegalTransitionError:
        return
    tr.run = evolve(tr.run, reviews=reviews)


for _review_action in REVIEW_ACTION_TYPES.values():
    _HANDLERS[_review_action] = _review_changed


def reduce_team_action(tr: Transition, action: TeamAction, *, session_uri: str, now: str) -> None:
    """Reduce one ``team/*`` action into ``tr``; an action the state cannot take changes nothing.

    ``session_uri`` is the run's session; ``now`` (an ISO 8601 timestamp) is stamped where a
    record says when (a run or task started or finished, a task was created).
    """
    handler = _HANDLERS.get(type(action))
    if handler is not None:
        handler(tr, action, session_uri, now)


# ─── Chat and session actions ────────────────────────────────────────────────


def _reduce_chat(
    tr: Transition, channel: str, action: ChatAction, now: str, reduced: ChatState | None
) -> Turn | None:
    chat = tr.chats.get(channel)
    if chat is None:
        return None
    if reduced is None:
        reduced = reduce_chat(chat, action, now=now)
    tr.chats[channel] = reduced
    if reduced is not chat and isinstance(action, TURN_ENDS):
        return reduced.turns[-1]  # an end that applied appends its turn
    return None


def _reduce_session(
    tr: Transition, channel: str, action: SessionAction, session_uri: str, now: str
) -> None:
    session = tr.session
    if session is None or channel != session_uri:
        return
    tr.session = reduce_session(session, action, now=now)
    if isinstance(action, SessionChatAddedAction):
        summary = action.summary
        existing = tr.chats.get(summary.resource)
        if existing is None:
            tr.chats[summary.resource] = ChatState(
                resource=summary.resource,
                title=summary.title,
                status=summary.status,
                activity=summary.activity,
                modified_at=summary.modified_at,
                origin=summary.origin,
                interactivity=summary.interactivity,
                working_directories=summary.working_directories,
                turns=(),
            )
    elif isinstance(action, SessionChatRemovedAction):
        pass  # the chat's history stays readable; only the catalog entry goes


# ─── The reducer ─────────────────────────────────────────────────────────────


def reduce_action(
    tr: Transition,
    channel: str,
    action: Action,
    *,
    session_uri: str,
    now: str,
    reduced_chat: ChatState | None = None,
) -> Turn | None:
    """Reduce one action on ``channel`` into ``tr``; the turn it ended, if it ended one.

    Never raises for a well-typed action: what the state cannot take is ignored. Whether the
    action *should* be applied is :func:`orchestrator.core._team_validate.validate_action`'s
    question, asked before this one. ``reduced_chat`` is a chat action's reduction when the
    caller has it already (the validator returns it); it is computed here otherwise.
    """
    # Routed by the type's prefix, so that an unknown ``chat/*`` action meets its chat (whose
    # reducer ignores it) and an unknown ``team/*`` action no handler.
    if action.type.startswith("team/"):
        reduce_team_action(tr, action, session_uri=session_uri, now=now)  # type: ignore[arg-type]
    elif action.type.startswith("chat/"):
        return _reduce_chat(tr, channel, action, now, reduced_chat)  # type: ignore[arg-type]
    elif not isinstance(action, UnknownAction):
        _reduce_session(tr, channel, action, session_uri, now)  # type: ignore[arg-type]
    return None
