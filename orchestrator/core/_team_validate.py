"""Validation: may this action be appended to this team run, given the state it meets?

Theory of operation
-------------------
Reduction and validation are separate, as on the chat side (:mod:`orchestrator.ahp._validate`).
The team reducer (:mod:`._team_reducer`) is total: it applies what it can and ignores the
rest, because folding a stored log must never fail. Validation runs *before* the runtime
appends a batch, action by action against the state the batch has built so far
(a :class:`~orchestrator.core._team_records.Transition`), and refuses, with
:class:`~orchestrator.IllegalTransitionError`, an action that

* names what the run does not have: a chat, the session, a task, a pending approval, the run
  itself (``team/runFinished``, ``team/runResumed``, ``team/viewUpdated`` before it started);
* creates what exists: a second run, a task or approval id already taken;
* is an **illegal task transition**: a status change :data:`TASK_TRANSITIONS` does not allow
  (starting a task that already started, finishing one that already finished), or an illegal
  run transition (finishing a finished run, resuming a finished one or resuming twice for one
  restart);
* is a chat action the chat refuses (:func:`~orchestrator.ahp._validate.validate_chat_action`:
  an illegal transition or a no-op), or an action of a kind this server does not know outside
  the ``chat/*`` and ``team/*`` namespaces.

Validation is pure and reads the state only; on a refusal the batch is refused whole and
nothing changes. It never runs on replay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

from orchestrator.ahp import reduce_chat, validate_chat_action
from orchestrator.ahp.actions import ChatAction, UnknownAction
from orchestrator.ahp.state import ChatState
from orchestrator.base import IllegalTransitionError, registrar

from ._board import board_refusal
from ._board_actions import BOARD_ACTION_TYPES
from ._facts import Action
from ._task_lifecycle import TASK_TRANSITIONS
from ._team_actions import (
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunResumed,
    RunStarted,
    SessionForked,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamAction,
    ViewUpdated,
)
from ._team_records import TaskRecord, Transition

__all__ = [
    "validate_action",
    "validate_team_action",
]


def _refuse(
    reason: str,
    action: Action,
    channel: str,
    state: str,
    tool_call_id: str | None = None,
) -> NoReturn:
    raise IllegalTransitionError(
        reason, action_type=action.type, channel=channel, state=state, tool_call_id=tool_call_id
    )


# ─── Team checks, one per action class that has preconditions ────────────────

_Check: TypeAlias = Callable[[Transition, Any, str], None]
_CHECKS: dict[type, _Check] = {}


_checks = registrar(_CHECKS)


def _existing_task(
    tr: Transition, action: TaskStarted | TaskFinished | HandoffRecorded, session_uri: str
) -> TaskRecord:
    task = tr.tasks.get(action.task)
    if task is None:
        _refuse("no such task", action, session_uri, "unknown task")
    return task


@_checks(RunStarted)
def _check_run_started(tr: Transition, action: RunStarted, session_uri: str) -> None:
    if tr.run is not None:
        _refuse("the run has already started", action, session_uri, "running")


@_checks(TaskCreated)
def _check_task_created(tr: Transition, action: TaskCreated, session_uri: str) -> None:
    if tr.tasks.get(action.task) is not None:
        _refuse(
            "a task with this id exists", action, session_uri, "task exists", action.tool_call_id
        )
    if action.requested_by is None and (tr.run is None or tr.run.status is not None):
        # A prompt's root task: the prompt of a conversation that goes on.
        _refuse(
            "a prompt's root task needs a running run",
            action,
            session_uri,
            "not started" if tr.run is None else f"run {tr.run.status}",
        )


@_checks(TaskStarted)
def _check_task_started(tr: Transition, action: TaskStarted, session_uri: str) -> None:
    task = _existing_task(tr, action, session_uri)
    # A task that no worker chat has taken up yet may be started whatever the table says:
    # ``team/taskCreated`` with status ``running`` leaves its ``team/taskStarted`` (in the
    # same append) to attach the worker chat.
    if TaskStatus.RUNNING not in TASK_TRANSITIONS[task.status] and task.chat is not None:
        _refuse("the task has already started", action, session_uri, f"task {task.status}")


@_checks(MemberJoined)
def _check_member_joined(tr: Transition, action: MemberJoined, session_uri: str) -> None:
    if action.starts:
        _check_task_started(tr, action.started(), session_uri)


@_checks(TaskFinished)
def _check_task_finished(tr: Transition, action: TaskFinished, session_uri: str) -> None:
    task = _existing_task(tr, action, session_uri)
    if not TASK_TRANSITIONS[task.status]:
        _refuse("the task has already finished", action, session_uri, f"task {task.status}")


@_checks(HandoffRecorded)
def _check_handoff(tr: Transition, action: HandoffRecorded, session_uri: str) -> None:
    _existing_task(tr, action, session_uri)


@_checks(ApprovalRequested)
def _check_approval_requested(tr: Transition, action: ApprovalRequested, session_uri: str) -> None:
    if tr.approvals.get(action.approval) is not None:
        _refuse(
            "an approval with this id exists",
            action,
            action.chat,
            "approval exists",
            action.tool_call_id,
        )


@_checks(ApprovalResolved)
def _check_approval_resolved(tr: Transition, action: ApprovalResolved, session_uri: str) -> None:
    record = tr.approvals.get(action.approval)
    if record is None or record.decision is not None:
        _refuse(
            "no pending approval with this id",
            action,
            session_uri,
            "resolved" if record else "unknown approval",
        )


@_checks(RunResumed)
def _check_run_resumed(tr: Transition, action: RunResumed, session_uri: str) -> None:
    run = tr.run
    if run is None or run.status is not None or action.restart <= run.restarts:
        _refuse(
            "only an unfinished run can be resumed, once per restart",
            action,
            session_uri,
            "not started" if run is None else f"{run.status or 'running'}, restart {run.restarts}",
        )


@_checks(ViewUpdated)
def _check_view_updated(tr: Transition, action: ViewUpdated, session_uri: str) -> None:
    if tr.run is None:
        _refuse(
            "the session has no run yet: views belong to a started run",
            action,
            session_uri,
            "not started",
        )


@_checks(SessionForked)
def _check_session_forked(tr: Transition, action: SessionForked, session_uri: str) -> None:
    if tr.run is None or tr.run.forked_from is not None:
        _refuse(
            "a fork's lineage is recorded once, after the copied run's start",
            action,
            session_uri,
            "not started" if tr.run is None else "already a fork",
        )


@_checks(RunFinished)
def _check_run_finished(tr: Transition, action: RunFinished, session_uri: str) -> None:
    if tr.run is None or tr.run.status is not None:
        _refuse(
            "the run is not running", action, session_uri, "finished" if tr.run else "not started"
        )


def _check_board(tr: Transition, action: Any, session_uri: str) -> None:
    """A board action the board refuses (see core/_board.py: claims race here)."""
    if tr.run is None:
        _refuse("the run has not started: there is no board yet", action, session_uri, "no run")
    refusal = board_refusal(tr.run.board, action)
    if refusal is not None:
        reason, status = refusal
        _refuse(reason, action, session_uri, f"item {action.item} {status}")


for _board_action in BOARD_ACTION_TYPES.values():
    _CHECKS[_board_action] = _check_board


def validate_team_action(tr: Transition, action: TeamAction, *, session_uri: str) -> None:
    """Refuse the ``team/*`` ``action`` if the state ``tr`` has built cannot take it.

    Raises :class:`~orchestrator.IllegalTransitionError` naming the session as the channel
    (an approval request names the requesting chat); returns None when the action may be
    appended.
    """
    check = _CHECKS.get(type(action))
    if check is not None:
        check(tr, action, session_uri)


# ─── Every action ────────────────────────────────────────────────────────────


def validate_action(
    tr: Transition, channel: str, action: Action, *, session_uri: str, now: str
) -> ChatState | None:
    """Refuse ``action`` on ``channel`` if the state ``tr`` has built so far cannot take it.

    Raises :class:`~orchestrator.IllegalTransitionError`; when the action may be appended,
    :func:`~orchestrator.core._team_reducer.reduce_action` applies it next. Routed by the
    type's prefix as the reducer routes it. A chat action is refused when its chat refuses it,
    which takes reducing it (a no-op is refused); the chat it leaves is returned so that the
    reducer need not reduce it again. Returns None for every other action.
    """
    if action.type.startswith("team/"):
        validate_team_action(tr, action, session_uri=session_uri)  # type: ignore[arg-type]
    elif action.type.startswith("chat/"):
        chat = tr.chats.get(channel)
        if chat is None:
            _refuse("no such chat in this session", action, channel, "unknown chat")
        chat_action: ChatAction = action  # type: ignore[assignment]
        reduced = reduce_chat(chat, chat_action, now=now)
        validate_chat_action(chat, chat_action, channel=channel, reduced=reduced)
        return reduced
    elif isinstance(action, UnknownAction):
        _refuse("unknown action type", action, channel, "any")
    elif tr.session is None or channel != session_uri:
        _refuse("no such session", action, channel, "no session")
    return None
