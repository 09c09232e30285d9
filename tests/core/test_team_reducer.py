"""The team reducer over generated histories.

The team reducer (:mod:`orchestrator.core._team_reducer`) and validator
(:mod:`orchestrator.core._team_validate`) replaced one method that did both under a
``validate`` flag. That method is kept below, verbatim, as the reference
(:func:`legacy_reduce`): on any batches of generated actions, the reducer never raises, the
validator refuses what it refused with the same error, what it accepts reduces to the same
transition, and replay (no validation) folds to the same state.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp import (
    TURN_ENDS,
    reduce_chat,
    reduce_session,
    summary_action,
    summary_of,
    validate_chat_action,
)
from orchestrator.ahp.actions import (
    ChatAction,
    SessionAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    UnknownAction,
)
from orchestrator.ahp.state import ChatState, SessionLifecycle, SessionState, SessionStatus, Turn
from orchestrator.base import IllegalTransitionError, evolve
from orchestrator.core import (
    FINISHED_TASK_STATUSES,
    Action,
    ApprovalRecord,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    HandoffRecorded,
    Member,
    MemberJoined,
    RunFinished,
    RunRecord,
    RunResumed,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskRecord,
    TaskStarted,
    TaskStatus,
    TeamAction,
    TeamState,
    Transition,
    ViewUpdated,
    fact_from_json,
    fact_to_json,
    reduce_action,
)
from tests.support.examples import examples
from tests.support.team_state import NOW, assert_same, batches, fanout_facts


def transition_parts(tr: Transition) -> tuple[object, ...]:
    """Everything a prepared transition would change or report."""
    return (
        tr.actions,
        tr.session,
        tr.run,
        tr.chats.writes,
        tr.members.writes,
        tr.tasks.writes,
        tr.approvals.writes,
        tr.summaries,
        tr.ended_turns,
    )


def error_parts(error: IllegalTransitionError) -> tuple[object, ...]:
    return (
        str(error),
        error.reason,
        error.action_type,
        error.channel,
        error.state,
        error.tool_call_id,
    )


def legacy_prepare(
    state: TeamState, actions: Sequence[tuple[str, Action]], *, validate: bool
) -> Transition:
    """``TeamState.prepare`` as it was: one pass of :func:`legacy_reduce` per action."""
    tr = state.prepare([], now=NOW, validate=False)  # an empty transition over the state
    tr.actions = list(actions)
    for index, (channel, action) in enumerate(actions):
        before = tr.chats.get(channel)
        ended = legacy_reduce(state, tr, channel, action, now=NOW, validate=validate)
        if ended is not None:
            tr.ended_turns[index] = ended
        after = tr.chats.get(channel)
        if action.type.startswith("chat/") and after is not before and tr.session is not None:
            # The catalog entry follows its chat, fact by fact (derived since issue 35).
            entry = next((c for c in tr.session.chats if c.resource == channel), None)
            if entry is not None and after is not None and entry != summary_of(after):
                update = summary_action(entry, summary_of(after))
                assert update is not None
                tr.session = reduce_session(tr.session, update, now=NOW)
                tr.summaries[index] = update
    return tr


class TestTeamReducer:
    @settings(max_examples=examples(100), deadline=None)
    @given(drawn=batches())
    def test_the_reducer_never_raises(
        self, drawn: tuple[int, list[list[tuple[str, Action]]]]
    ) -> None:
        """Any sequence of well-typed actions, legal or not, reduces without an error."""
        prefix, steps = drawn
        facts = fanout_facts()
        session = facts[0].session
        state = TeamState.fold(session, facts[:prefix])
        tr = state.prepare([], now=NOW, validate=False)
        for batch in steps:
            for channel, action in batch:
                reduce_action(tr, channel, action, session_uri=session, now=NOW)

    @settings(max_examples=examples(100), deadline=None)
    @given(drawn=batches())
    def test_validated_batches_fold_as_before(
        self, drawn: tuple[int, list[list[tuple[str, Action]]]]
    ) -> None:
        """The validator refuses the batches the combined path refused, with the same error;
        a batch it accepts reduces to the same transition, summary updates included."""
        prefix, steps = drawn
        facts = fanout_facts()
        session = facts[0].session
        new = TeamState.fold(session, facts[:prefix])
        old = TeamState.fold(session, facts[:prefix])
        sequence = new.last_sequence
        for batch in steps:
            new_error = old_error = None
            try:
                new_tr = new.prepare(batch, now=NOW)
            except IllegalTransitionError as exc:  # compared with the combined path's below
                new_error = exc
            try:
                old_tr = legacy_prepare(old, batch, validate=True)
            except IllegalTransitionError as exc:  # compared with the new path's above
                old_error = exc
            assert type(new_error) is type(old_error), (batch, new_error, old_error)
            if new_error is not None:
                assert old_error is not None
                assert error_parts(new_error) == error_parts(old_error)
                continue
            assert transition_parts(new_tr) == transition_parts(old_tr)
            sequence += len(new_tr.actions)
            new.commit(new_tr, sequence)
            old.commit(old_tr, sequence)
        assert_same(new, old)

    @settings(max_examples=examples(100), deadline=None)
    @given(drawn=batches())
    def test_replay_folds_as_before(
        self, drawn: tuple[int, list[list[tuple[str, Action]]]]
    ) -> None:
        """Without validation (replay), every batch, legal or not, reduces as it did."""
        prefix, steps = drawn
        facts = fanout_facts()
        session = facts[0].session
        new = TeamState.fold(session, facts[:prefix])
        old = TeamState.fold(session, facts[:prefix])
        sequence = new.last_sequence
        for batch in steps:
            new_tr = new.prepare(batch, now=NOW, validate=False)
            old_tr = legacy_prepare(old, batch, validate=False)
            assert transition_parts(new_tr) == transition_parts(old_tr)
            sequence += len(batch)
            new.commit(new_tr, sequence)
            old.commit(old_tr, sequence)
        assert_same(new, old)


class TestChosenModel:
    """The model chosen when a session was opened (``team/runStarted``'s ``model``)."""

    @settings(max_examples=examples(100), deadline=None)
    @given(
        model=st.none() | st.text(min_size=1, max_size=40),
        later=st.lists(st.sampled_from(["prompt", "resume", "finish"]), max_size=4),
    )
    def test_the_run_keeps_the_model_it_started_with(
        self, model: str | None, later: list[str]
    ) -> None:
        """Folded from its facts, encoded and read back or not, the run's record keeps the
        started run's model whatever follows (a next prompt, a restart, the end)."""
        session = "ahp-session:/s"
        started = RunStarted(
            run="run-1",
            team="t",
            topology="coordinator_team",
            parallel_budget=2,
            coordinator="lead",
            prompt="go",
            task="task-1",
            model=model,
        )
        following: dict[str, Action] = {
            "prompt": TaskCreated(
                task="task-2", title="next", agent="lead", status=TaskStatus.RUNNING
            ),
            "resume": RunResumed(run="run-1", restart=1, policy="resume", interrupted=()),
            "finish": RunFinished(run="run-1", status=RunStatus.COMPLETED),
        }
        actions = [started, *(following[name] for name in later)]
        facts = [
            Fact(sequence=n, session=session, channel=session, at=NOW, action=action)
            for n, action in enumerate(actions, start=1)
        ]
        for log in (facts, [fact_from_json(fact_to_json(f)) for f in facts]):
            state = TeamState.fold(session, log)
            assert state.run is not None
            assert state.run.model == model


_LEGACY_ROOT_TASK_STATUS = {
    RunStatus.COMPLETED: TaskStatus.COMPLETED,
    RunStatus.FAILED: TaskStatus.FAILED,
    RunStatus.CANCELLED: TaskStatus.KILLED,
}


def _legacy_title(prompt: str, limit: int = 80) -> str:
    line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def legacy_reduce(
    state: TeamState, tr: Transition, channel: str, action: Action, *, now: str, validate: bool
) -> Turn | None:
    """Reduce one action into ``tr``; returns the turn it ended, if it ended one."""
    if action.type.startswith("team/"):
        _legacy_reduce_team(state, tr, action, now=now, validate=validate)  # type: ignore[arg-type]
    elif action.type.startswith("chat/"):
        chat = tr.chats.get(channel)
        if chat is None:
            if validate:
                raise IllegalTransitionError(
                    "no such chat in this session",
                    action_type=action.type,
                    channel=channel,
                    state="unknown chat",
                )
            return None
        chat_action: ChatAction = action  # type: ignore[assignment]
        reduced = reduce_chat(chat, chat_action, now=now)
        if validate:
            validate_chat_action(chat, chat_action, channel=channel, reduced=reduced)
        tr.chats[channel] = reduced
        if reduced is not chat and isinstance(chat_action, TURN_ENDS):
            return reduced.turns[-1]  # an end that applied appends its turn
    elif isinstance(action, UnknownAction):
        if validate:
            raise IllegalTransitionError(
                "unknown action type",
                action_type=action.type,
                channel=channel,
                state="any",
            )
    else:
        _legacy_reduce_session(state, tr, channel, action, now=now, validate=validate)  # type: ignore[arg-type]
    return None


def _legacy_reduce_session(
    state: TeamState,
    tr: Transition,
    channel: str,
    action: SessionAction,
    *,
    now: str,
    validate: bool,
) -> None:
    session = tr.session
    if session is None or channel != state.session_uri:
        if validate:
            raise IllegalTransitionError(
                "no such session",
                action_type=action.type,
                channel=channel,
                state="no session",
            )
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


def _legacy_reduce_team(
    state: TeamState, tr: Transition, action: TeamAction, *, now: str, validate: bool
) -> None:
    match action:
        case RunStarted():
            if validate and tr.run is not None:
                raise IllegalTransitionError(
                    "the run has already started",
                    action_type=action.type,
                    channel=state.session_uri,
                    state="running",
                )
            tr.run = RunRecord(
                run=action.run,
                session=state.session_uri,
                team=action.team,
                topology=action.topology,
                parallel_budget=action.parallel_budget,
                coordinator=action.coordinator,
                prompt=action.prompt,
                task=action.task,
                started_at=now,
                background=action.background,
                # Changed on purpose (issue 37): the model chosen for the session is kept.
                model=action.model,
            )
            tr.session = SessionState(
                provider="orchestrator",
                title=_legacy_title(action.prompt),
                # Changed on purpose (issue 22): the run's start leaves the status idle, as a
                # session not yet prompted shows it, since no action could announce it.
                status=SessionStatus.IDLE,
                lifecycle=SessionLifecycle.READY,
                active_clients=(),
                chats=(),
            )
            tr.tasks[action.task] = TaskRecord(
                task=action.task,
                title=_legacy_title(action.prompt),
                agent=action.coordinator,
                status=TaskStatus.RUNNING,
                created_at=now,
                started_at=now,
            )
        case MemberJoined():
            tr.members[action.chat] = Member(
                chat=action.chat,
                agent=action.agent,
                role=action.role,
                task=action.task,
                remote=action.remote,
                context=action.context,  # a side chat's, since issue 40
            )
            run = tr.run
            if run is not None and run.coordinator_chat is None and action.task == run.task:
                tr.run = evolve(run, coordinator_chat=action.chat)
            task = tr.tasks.get(action.task)
            if task is not None and task.owner is None:
                tr.tasks[action.task] = evolve(task, owner=action.chat)
        case TaskCreated():
            if validate and tr.tasks.get(action.task) is not None:
                raise IllegalTransitionError(
                    "a task with this id exists",
                    action_type=action.type,
                    channel=state.session_uri,
                    state="task exists",
                    tool_call_id=action.tool_call_id,
                )
            run, owner = tr.run, None
            if action.requested_by is None:
                # A conversation's next prompt (each prompt its own root task, issue 33).
                if validate and (run is None or run.status is not None):
                    raise IllegalTransitionError(
                        "a prompt's root task needs a running run",
                        action_type=action.type,
                        channel=state.session_uri,
                        state="not started" if run is None else f"run {run.status}",
                    )
                if run is not None:
                    owner = run.coordinator_chat
                    tr.run = evolve(run, task=action.task)
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
        case TaskStarted():
            task = _legacy_task_for(state, tr, action, validate=validate)
            if task is None:
                return
            if validate and task.status is not TaskStatus.QUEUED and task.chat is not None:
                raise IllegalTransitionError(
                    "the task has already started",
                    action_type=action.type,
                    channel=state.session_uri,
                    state=f"task {task.status}",
                )
            tr.tasks[action.task] = evolve(
                task,
                status=TaskStatus.RUNNING,
                chat=action.chat,
                owner=action.chat,
                started_at=now,
            )
        case TaskFinished():
            task = _legacy_task_for(state, tr, action, validate=validate)
            if task is None:
                return
            if validate and task.status in FINISHED_TASK_STATUSES:
                raise IllegalTransitionError(
                    "the task has already finished",
                    action_type=action.type,
                    channel=state.session_uri,
                    state=f"task {task.status}",
                )
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
        case HandoffRecorded():
            task = _legacy_task_for(state, tr, action, validate=validate)
            if task is None:
                return
            tr.tasks[action.task] = evolve(task, owner=action.to_chat)
        case ApprovalRequested():
            if validate and tr.approvals.get(action.approval) is not None:
                raise IllegalTransitionError(
                    "an approval with this id exists",
                    action_type=action.type,
                    channel=action.chat,
                    state="approval exists",
                    tool_call_id=action.tool_call_id,
                )
            tr.approvals[action.approval] = ApprovalRecord(request=action)
        case ApprovalResolved():
            record = tr.approvals.get(action.approval)
            if record is None or record.decision is not None:
                if validate:
                    raise IllegalTransitionError(
                        "no pending approval with this id",
                        action_type=action.type,
                        channel=state.session_uri,
                        state="resolved" if record else "unknown approval",
                    )
                return
            tr.approvals[action.approval] = evolve(
                record, decision=action.decision, resolved_by=action.resolved_by
            )
        case RunResumed():
            if tr.run is None or tr.run.status is not None or action.restart <= tr.run.restarts:
                if validate:
                    raise IllegalTransitionError(
                        "only an unfinished run can be resumed, once per restart",
                        action_type=action.type,
                        channel=state.session_uri,
                        state=(
                            "not started"
                            if tr.run is None
                            else f"{tr.run.status or 'running'}, restart {tr.run.restarts}"
                        ),
                    )
                return
            tr.run = evolve(tr.run, restarts=action.restart)
        case ViewUpdated():
            if tr.run is None:
                if validate:
                    raise IllegalTransitionError(
                        "the session has no run yet: views belong to a started run",
                        action_type=action.type,
                        channel=state.session_uri,
                        state="not started",
                    )
                return
            views = {k: v for k, v in tr.run.views.items() if k != action.view_type}
            if action.content:
                views[action.view_type] = action.content
            tr.run = evolve(tr.run, views=views)
        case RunFinished():
            if tr.run is None or (validate and tr.run.status is not None):
                if validate:
                    raise IllegalTransitionError(
                        "the run is not running",
                        action_type=action.type,
                        channel=state.session_uri,
                        state="finished" if tr.run else "not started",
                    )
                return
            tr.run = evolve(tr.run, status=action.status, result=action.result, error=action.error)
            root = tr.tasks.get(tr.run.task)
            if root is not None and root.status not in FINISHED_TASK_STATUSES:
                tr.tasks[root.task] = evolve(
                    root,
                    status=_LEGACY_ROOT_TASK_STATUS[action.status],
                    finished_at=now,
                    summary=action.result or action.error,
                )


def _legacy_task_for(
    state: TeamState,
    tr: Transition,
    action: TaskStarted | TaskFinished | HandoffRecorded,
    *,
    validate: bool,
) -> TaskRecord | None:
    task = tr.tasks.get(action.task)
    if task is None and validate:
        raise IllegalTransitionError(
            "no such task",
            action_type=action.type,
            channel=state.session_uri,
            state="unknown task",
        )
    return task
