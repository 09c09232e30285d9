"""The team validator: one test per refused transition, and the table's exceptions.

Each refusal is asked through :meth:`TeamState.prepare` (the runtime's door), and leaves the
state as it was.
"""

from __future__ import annotations

import pytest

from orchestrator.ahp.actions import ChatDraftChangedAction, SessionTitleChangedAction
from orchestrator.base import IllegalTransitionError
from orchestrator.core import (
    Action,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    RunFinished,
    RunResumed,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamState,
    ViewUpdated,
)

SESSION = "ahp-session:/session"
COORDINATOR = "ahp-chat:/coordinator"
WORKER = "ahp-chat:/worker"
NOW = "2026-01-02T03:04:05.000Z"


def run_started() -> RunStarted:
    return RunStarted(
        run="run-1",
        team="team",
        topology="star",
        parallel_budget=1,
        coordinator="lead",
        prompt="Ship it",
        task="task-1",
    )


def task_created(task: str = "task-2", status: TaskStatus = TaskStatus.QUEUED) -> TaskCreated:
    return TaskCreated(
        task=task,
        title="work",
        agent="worker",
        requested_by=COORDINATOR,
        tool_call_id="call-1",
        parent_task="task-1",
        status=status,
    )


def task_finished(task: str = "task-2", chat: str | None = WORKER) -> TaskFinished:
    return TaskFinished(
        task=task, status=TaskStatus.COMPLETED, summary="done", duration_ms=1, chat=chat
    )


def approval_requested(approval: str = "approval-1") -> ApprovalRequested:
    return ApprovalRequested(
        approval=approval,
        chat=WORKER,
        turn_id="turn-1",
        tool_call_id="call-2",
        tool_name="shell",
        requested_by="worker",
        routed_to="user",
        policy_scope="tool",
        summary="ls",
    )


def state_after(*actions: Action) -> TeamState:
    """A session's state after ``actions``, each appended (validated) in a batch of its own."""
    state = TeamState(SESSION)
    for action in actions:
        transition = state.prepare([(SESSION, action)], now=NOW)
        state.commit(transition, state.last_sequence + len(transition.actions))
    return state


def refusal(state: TeamState, action: Action, channel: str = SESSION) -> IllegalTransitionError:
    """The error ``action`` on ``channel`` meets; the state must be left as it was."""
    before = state.copy()
    with pytest.raises(IllegalTransitionError) as caught:
        state.prepare([(channel, action)], now=NOW)
    assert state.in_flight() == 0
    assert (state.run, state.tasks, state.approvals) == (before.run, before.tasks, before.approvals)
    return caught.value


class TestRun:
    def test_a_run_starts_once(self) -> None:
        """A second ``team/runStarted`` is refused while the first run stands."""
        error = refusal(state_after(run_started()), run_started())
        assert (error.reason, error.state) == ("the run has already started", "running")

    def test_a_run_that_has_not_started_cannot_finish(self) -> None:
        error = refusal(TeamState(SESSION), RunFinished(run="run-1", status=RunStatus.COMPLETED))
        assert (error.reason, error.state) == ("the run is not running", "not started")

    def test_a_run_finishes_once(self) -> None:
        finished = RunFinished(run="run-1", status=RunStatus.COMPLETED)
        error = refusal(state_after(run_started(), finished), finished)
        assert (error.reason, error.state) == ("the run is not running", "finished")

    def test_a_run_is_resumed_once_per_restart(self) -> None:
        """A resume must count a restart beyond the last one."""
        resumed = RunResumed(run="run-1", restart=1, policy="resume")
        error = refusal(state_after(run_started(), resumed), resumed)
        assert error.reason == "only an unfinished run can be resumed, once per restart"
        assert error.state == "running, restart 1"

    def test_a_finished_run_cannot_be_resumed(self) -> None:
        finished = RunFinished(run="run-1", status=RunStatus.FAILED)
        error = refusal(
            state_after(run_started(), finished),
            RunResumed(run="run-1", restart=1, policy="resume"),
        )
        assert error.state == "failed, restart 0"

    def test_views_belong_to_a_started_run(self) -> None:
        error = refusal(TeamState(SESSION), ViewUpdated(view_type="plan", content={"a": 1}))
        assert error.state == "not started"


class TestTasks:
    def test_a_task_id_is_used_once(self) -> None:
        error = refusal(state_after(run_started(), task_created()), task_created())
        assert (error.reason, error.state) == ("a task with this id exists", "task exists")
        assert error.tool_call_id == "call-1"

    @pytest.mark.parametrize(
        "action",
        [
            TaskStarted(task="task-9", chat=WORKER),
            task_finished("task-9"),
            HandoffRecorded(
                task="task-9",
                from_chat=COORDINATOR,
                to_chat=WORKER,
                to_agent="worker",
                reason="",
                resume_target="lead",
                tool_call_id="call-3",
            ),
        ],
        ids=["started", "finished", "handoff"],
    )
    def test_an_unknown_task_is_refused(self, action: Action) -> None:
        error = refusal(state_after(run_started()), action)
        assert (error.reason, error.state) == ("no such task", "unknown task")

    def test_a_started_task_cannot_start_again(self) -> None:
        state = state_after(run_started(), task_created(), TaskStarted(task="task-2", chat=WORKER))
        error = refusal(state, TaskStarted(task="task-2", chat=WORKER))
        assert (error.reason, error.state) == ("the task has already started", "task running")

    def test_a_task_created_running_is_started_by_its_worker(self) -> None:
        """The table's exception: a task no worker chat has taken up yet may be started."""
        state = state_after(
            run_started(),
            task_created(status=TaskStatus.RUNNING),
            TaskStarted(task="task-2", chat=WORKER),
        )
        assert state.tasks["task-2"].chat == WORKER

    def test_a_finished_task_cannot_finish_again(self) -> None:
        state = state_after(run_started(), task_created(), task_finished())
        error = refusal(state, task_finished())
        assert (error.reason, error.state) == ("the task has already finished", "task completed")


class TestApprovals:
    def test_an_approval_id_is_used_once(self) -> None:
        """The refusal names the requesting chat and its tool call."""
        error = refusal(state_after(run_started(), approval_requested()), approval_requested())
        assert (error.reason, error.state) == ("an approval with this id exists", "approval exists")
        assert (error.channel, error.tool_call_id) == (WORKER, "call-2")

    def test_an_unknown_approval_cannot_be_resolved(self) -> None:
        resolved = ApprovalResolved(
            approval="approval-1", decision=ApprovalDecision.APPROVED, resolved_by="user"
        )
        error = refusal(state_after(run_started()), resolved)
        assert (error.reason, error.state) == (
            "no pending approval with this id",
            "unknown approval",
        )

    def test_an_approval_is_resolved_once(self) -> None:
        resolved = ApprovalResolved(
            approval="approval-1", decision=ApprovalDecision.DENIED, resolved_by="user"
        )
        error = refusal(state_after(run_started(), approval_requested(), resolved), resolved)
        assert error.state == "resolved"


class TestChannels:
    def test_a_chat_action_needs_its_chat(self) -> None:
        error = refusal(state_after(run_started()), ChatDraftChangedAction(), WORKER)
        assert (error.reason, error.channel, error.state) == (
            "no such chat in this session",
            WORKER,
            "unknown chat",
        )

    def test_a_session_action_needs_the_session(self) -> None:
        """Before the run starts there is no session, and a chat's channel is not one."""
        title = SessionTitleChangedAction(title="t")
        assert refusal(TeamState(SESSION), title).state == "no session"
        assert refusal(state_after(run_started()), title, WORKER).reason == "no such session"
