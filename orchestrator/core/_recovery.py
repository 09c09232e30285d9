"""What a restart finds of an unfinished run, and the facts that take it up again.

A process that stops (``kill -9``, power loss) leaves every chat of the run as the last
durable fact left it. A new process folds the log and asks of each active turn: can it go
on where it stood, or did the stop cut it off?

* A turn is **parked** when its last model round had finished streaming and its tool calls
  were running: each call is done, or waits on something that survived the stop (an
  approval, a question, a worker, a place in the parallel budget). It goes on: the waits
  are taken up again, and once the round's calls are done the next round streams.
* A forked chat's or side chat's active turn (AHP ``createChat`` with a source) is looked at
  the same way: it answers no task, so it is parked or cut off on its own.
* Any other active turn was **cut off** (mid-stream, or in a tool nobody can tell ran). It
  ends as ``chat/error`` of type ``Interrupted``; its open approvals are withdrawn, its
  questions cancelled and its workers' subtrees cut off and reported killed, so that no
  approval waits for a tool call that will not run and every spawn edge stays matched.
  The team's ``on_restart`` policy then decides: ``resume`` runs the turn again from its
  message (the runtime does that), ``fail`` reports a worker's task failed to its
  delegating chat (here, with a worker notification) and fails a cut-off coordinator's run.

:func:`plan_recovery` returns all of this as one batch, headed by ``team/runResumed``, so
recovery is itself atomic: a stop during recovery leaves the log as the first stop did.

The model round a tool call came from is recorded in the call's ``_meta``
(:data:`._queries.ROUND_META`); that is how a parked turn knows which calls belong to its last
round.

Pure: state in, facts out; no trio, no IO.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

import attrs

from orchestrator.ahp.actions import ChatErrorAction, ChatInputCompletedAction
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatInputResponseKind,
    ErrorInfo,
    InputRequestResponsePart,
    ToolCallCancelledState,
    ToolCallCompletedState,
    ToolCallPendingConfirmationState,
    ToolCallRunningState,
    ToolCallState,
    ToolResultSubagentContent,
)
from orchestrator.spec import RestartPolicy

from ._facts import Action
from ._model_round import ToolCallRequest, ToolOutcome
from ._queries import (
    INTERRUPTED,
    TEXT_PARTS,
    calls_in,
    forked_chats,
    has_open_input,
    input_request_id,
    outcome_of,
    pending_approval_of,
    round_of,
    subagent_of,
    task_of_call,
    tool_call_of,
)
from ._reports import delegation_report, denied_calls, tool_result_actions
from ._team_actions import (
    FINISHED_TASK_STATUSES,
    ApprovalDecision,
    ApprovalResolved,
    HandoffRecorded,
    RunResumed,
    TaskFinished,
    TaskStatus,
)
from ._team_state import TeamState

__all__ = [
    "INTERRUPTED_SUMMARY",
    "RecoveryPlan",
    "ResumePoint",
    "cancel_removed",
    "cut_off",
    "plan_recovery",
    "resume_point",
]

#: What a cut-off turn's error, and a task it ended, say.
INTERRUPTED_SUMMARY = "interrupted: the process running the team stopped before this ended"

_WAITING_TOOLS = frozenset({"delegate", "handoff", "ask"})

Batch = list[tuple[str, Action]]


# ── looking things up ───────────────────────────────────────────────────────


def _terminal(call: ToolCallState) -> bool:
    return isinstance(call, ToolCallCompletedState | ToolCallCancelledState)


def _request(call: ToolCallState) -> ToolCallRequest | None:
    tool_input = getattr(call, "tool_input", None)
    if tool_input is None:
        arguments: Mapping[str, Any] = {}
    elif isinstance(tool_input, str):
        try:
            decoded = json.loads(tool_input)
        # ValueError: not JSON, or a number past the digit limit; RecursionError: too deep
        except (ValueError, RecursionError):
            return None
        if not isinstance(decoded, dict):
            return None
        arguments = decoded
    else:
        return None  # input by reference: not something the runtime records itself
    return ToolCallRequest(
        tool_call_id=call.tool_call_id, tool_name=call.tool_name, arguments=arguments
    )


# ── parked or cut off ───────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class ResumePoint:
    """Where a parked turn goes on: round ``round_index``'s calls, some already done."""

    turn_id: str
    round_index: int
    requests: tuple[ToolCallRequest, ...]  # the round's calls, in the order they were asked
    done: Mapping[str, ToolOutcome]  # outcomes of those already done, by tool call id

    @property
    def outstanding(self) -> tuple[ToolCallRequest, ...]:
        return tuple(r for r in self.requests if r.tool_call_id not in self.done)


def _begun(state: TeamState, chat: str, turn: ActiveTurn, call: ToolCallState) -> bool:
    """Whether the runtime had started to run ``call`` (which it does only once the round
    has streamed): its approval was asked for, its worker exists, its question was put."""
    if isinstance(call, ToolCallPendingConfirmationState):
        return pending_approval_of(state, chat, call.tool_call_id) is not None
    if not isinstance(call, ToolCallRunningState):
        return False
    match call.tool_name:
        case "delegate":
            return task_of_call(state, chat, call.tool_call_id) is not None
        case "handoff" | "review":
            # A review call's reviewer chat, spawned by it (see runtime/_reviewing.py).
            return subagent_of(call) is not None
        case "ask":
            return has_open_input(turn, input_request_id(call.tool_call_id))
        case _:
            return False


def resume_point(state: TeamState, chat: str) -> ResumePoint | None:
    """Where ``chat``'s active turn goes on, or None if the stop cut it off."""
    turn = state.chats[chat].active_turn
    if turn is None:
        return None
    calls = list(calls_in(turn))
    rounds = [round_of(call) for _, call in calls]
    if not calls or any(r is None for r in rounds):
        return None
    last = max(r for r in rounds if r is not None)
    current = [(index, call) for (index, call), r in zip(calls, rounds, strict=True) if r == last]
    requests = [_request(call) for _, call in current]
    if any(r is None for r in requests):
        return None
    done = {
        call.tool_call_id: outcome_of(call)
        for _, call in current
        if isinstance(call, ToolCallCompletedState | ToolCallCancelledState)
    }
    if len(done) == len(current):
        # Every call is done, so the round had streamed; text after its calls can only be
        # the next round, cut off mid-stream.
        after = list(turn.response_parts)[current[-1][0] + 1 :]
        if any(isinstance(part, TEXT_PARTS) for part in after):
            return None
    elif not done and not any(_begun(state, chat, turn, call) for _, call in current):
        return None  # maybe still streaming when the stop came: nothing says otherwise
    return ResumePoint(
        turn_id=turn.id,
        round_index=last,
        requests=tuple(r for r in requests if r is not None),
        done=done,
    )


# ── the recovery batch ──────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class RecoveryPlan:
    """The batch that takes a run up again, and what it decided."""

    actions: tuple[tuple[str, Action], ...]
    interrupted: tuple[str, ...]  # chats whose turn was cut off, parents before workers
    coordinator_cut_off: bool


def plan_recovery(state: TeamState, policy: RestartPolicy, *, now: str) -> RecoveryPlan:
    """The facts that end what a stop cut off, headed by ``team/runResumed``.

    Raises ValueError for a session without an unfinished run.
    """
    run = state.run
    coordinator = state.coordinator_chat()
    if run is None or coordinator is None or run.status is not None:
        raise ValueError(f"{state.session_uri} has no unfinished run to resume")
    planner = _Planner(state, policy, now)
    if resume_point(state, coordinator) is None and state.chats[coordinator].active_turn:
        planner.cut(coordinator)
        cut_coordinator = True
    else:
        planner.visit(coordinator)
        cut_coordinator = False
    for chat in forked_chats(state):
        # A forked chat's or side chat's turn answers no task: it is parked or cut off as a
        # worker's is, and (cut off) runs again or stays failed as ``on_restart`` says.
        if resume_point(state, chat) is None:
            planner.cut(chat)
        else:
            planner.visit(chat)
    head = RunResumed(
        run=run.run,
        restart=run.restarts + 1,
        policy=str(policy),
        interrupted=tuple(planner.interrupted),
    )
    return RecoveryPlan(
        actions=((state.session_uri, head), *planner.actions),
        interrupted=tuple(planner.interrupted),
        coordinator_cut_off=cut_coordinator,
    )


def cut_off(state: TeamState, chat: str, *, now: str) -> Batch:
    """The facts that end ``chat``'s active turn as interrupted, and all that waits under
    it (its workers' subtrees, reported killed; approvals withdrawn; questions cancelled)."""
    planner = _Planner(state, RestartPolicy.FAIL, now)
    planner.cut(chat)
    return planner.actions


def cancel_removed(state: TeamState, agents: frozenset[str], *, now: str) -> Batch:
    """The facts that cancel the open work of agents not in ``agents`` (a team file that
    removed them), each with the reason.

    A removed agent's running worker has its turn cut off, with its subtree; its task and
    each of its queued tasks are reported killed to the delegating chat, saying why. Work a
    removed chat delegated goes with it.
    """
    planner = _Planner(state, RestartPolicy.FAIL, now)
    cut: set[str] = set()
    for task in state.tasks.values():
        if task.status in FINISHED_TASK_STATUSES or task.agent in agents:
            continue
        parent = task.requested_by
        if parent is None or task.tool_call_id is None or parent in cut:
            continue
        reason = f"cancelled: the team file has no agent {task.agent!r} any more"
        worker = task.chat
        if worker is not None and state.chats[worker].active_turn is not None:
            planner.cut(worker)
            cut.add(worker)
        turn = state.chats[parent].active_turn
        call = tool_call_of(state, parent, task.tool_call_id)
        if turn is None or call is None:
            continue
        planner.report(parent, turn.id, call, worker, TaskStatus.KILLED, summary=reason)
    return planner.actions


class _Planner:
    def __init__(self, state: TeamState, policy: RestartPolicy, now: str) -> None:
        self.state = state
        self.policy = policy
        self.now = now
        self.actions: Batch = []
        self.interrupted: list[str] = []

    def visit(self, chat: str) -> None:
        """``chat``'s turn is parked (or idle): look at the workers its calls wait on."""
        point = resume_point(self.state, chat)
        turn = self.state.chats[chat].active_turn
        if point is None or turn is None:
            return
        for request in point.outstanding:
            call = tool_call_of(self.state, chat, request.tool_call_id)
            assert call is not None
            worker = self._worker(chat, call)
            for other in self._reviewers(call, worker):
                # A reviewer the call spawned: its round goes on, or is cut off and run again
                # (or failed), as a worker's turn; the call's task reports for both.
                if resume_point(self.state, other) is None:
                    self.cut(other)
                else:
                    self.visit(other)
            if worker is None:
                continue
            worker_turn = self.state.chats[worker].active_turn
            if worker_turn is None or resume_point(self.state, worker) is not None:
                self.visit(worker)
                continue
            self.cut(worker)
            if self.policy is RestartPolicy.FAIL:
                self.report(chat, turn.id, call, worker, TaskStatus.FAILED)

    def _worker(self, chat: str, call: ToolCallState) -> str | None:
        if call.tool_name == "delegate":
            task = task_of_call(self.state, chat, call.tool_call_id)
            if task is None or task.status in FINISHED_TASK_STATUSES:
                return None
            return task.chat
        if call.tool_name == "handoff":
            subagent = subagent_of(call)
            return None if subagent is None else subagent.resource
        return None

    def _reviewers(self, call: ToolCallState, worker: str | None) -> list[str]:
        """The chats a ``delegate`` or ``review`` call spawned besides its worker: its
        reviewer (see runtime/_reviewing.py)."""
        if call.tool_name not in {"delegate", "review"}:
            return []
        return [
            c.resource
            for c in getattr(call, "content", None) or ()
            if isinstance(c, ToolResultSubagentContent)
            and c.resource != worker
            and c.resource in self.state.chats
        ]

    def cut(self, chat: str) -> None:
        """End ``chat``'s active turn as interrupted, after everything that waits under it."""
        turn = self.state.chats[chat].active_turn
        if turn is None:
            return
        self.interrupted.append(chat)
        for _, call in calls_in(turn):
            if _terminal(call):
                continue
            approval = pending_approval_of(self.state, chat, call.tool_call_id)
            if approval is not None:
                withdrawn = ApprovalResolved(
                    approval=approval.request.approval,
                    decision=ApprovalDecision.WITHDRAWN,
                    resolved_by=chat,
                )
                self.actions.append((self.state.session_uri, withdrawn))
            worker = self._worker(chat, call)
            if worker is not None:
                self.cut(worker)
            for other in self._reviewers(call, worker):
                self.cut(other)
            if call.tool_name == "delegate" and isinstance(call, ToolCallRunningState):
                task = task_of_call(self.state, chat, call.tool_call_id)
                if task is not None and task.status not in FINISHED_TASK_STATUSES:
                    self.report(chat, turn.id, call, worker, TaskStatus.KILLED)
            elif worker is not None:  # a handoff
                self.report(chat, turn.id, call, worker, TaskStatus.KILLED)
        for part in turn.response_parts:
            if isinstance(part, InputRequestResponsePart) and part.response is None:
                self.actions.append(
                    (
                        chat,
                        ChatInputCompletedAction(
                            request_id=part.request.id, response=ChatInputResponseKind.CANCEL
                        ),
                    )
                )
        error = ErrorInfo(error_type=INTERRUPTED, message=INTERRUPTED_SUMMARY)
        self.actions.append(
            (
                chat,
                ChatErrorAction(
                    turn_id=turn.id, duration=_ms_between(turn.started_at, self.now), error=error
                ),
            )
        )

    def report(
        self,
        chat: str,
        turn_id: str,
        call: ToolCallState,
        worker: str | None,
        status: TaskStatus,
        *,
        summary: str = INTERRUPTED_SUMMARY,
    ) -> None:
        """Finish ``call`` of ``chat`` as its worker ended: ``status``, for ``summary``.

        Args:
            chat: The delegating (or handing-off) chat.
            turn_id: Its active turn.
            call: The ``delegate`` or ``handoff`` call the worker answers.
            worker: The worker's chat (None: a task that never started).
            status: How the task ended.
            summary: Why.
        """
        subagent = subagent_of(call)
        if call.tool_name == "handoff":
            assert worker is not None
            assert subagent is not None
            member = self.state.members[chat]
            back = HandoffRecorded(
                task=member.task,
                from_chat=worker,
                to_chat=chat,
                to_agent=member.agent,
                reason=f"{subagent.agent_name or 'specialist'} {status}",
                resume_target=member.agent,
                tool_call_id=call.tool_call_id,
            )
            self.actions += tool_result_actions(
                chat,
                turn_id,
                call.tool_call_id,
                call.tool_name,
                success=False,
                output=f"[{subagent.agent_name}, {status}] {summary}",
                content_before=(subagent,),
                extra=[(self.state.session_uri, back)],
            )
            return
        task = task_of_call(self.state, chat, call.tool_call_id)
        assert task is not None
        started = task.started_at or task.created_at
        finished = TaskFinished(
            task=task.task,
            status=status,
            summary=summary,
            duration_ms=int(_ms_between(started, self.now)),
            chat=worker,
        )
        self.actions += delegation_report(
            self.state.session_uri,
            chat,
            turn_id,
            call.tool_call_id,
            finished,
            worker=task.agent,
            subagent=subagent,
            task_title=task.title,
            denied=0 if worker is None else denied_calls(self.state.approvals, worker),
        )


def _ms_between(start: str, end: str) -> float:
    """Milliseconds from one AHP timestamp to another (0 if either cannot be read)."""
    try:
        begun = datetime.datetime.fromisoformat(start)
        ended = datetime.datetime.fromisoformat(end)
    except ValueError:
        return 0
    return max(0.0, (ended - begun).total_seconds() * 1000)
