"""The state of one team run: every channel's state, folded from facts.

Theory of operation: the AHP reducers are pure functions of one channel's state
(`reduce_chat`, `reduce_session`). A team run has many channels (the session,
one chat per agent) plus team bookkeeping (members, tasks, approvals) that the
``team/*`` actions describe. :class:`TeamState` holds all of them and folds a
fact by routing it to the reducer of its channel, so the whole run is
``fold(apply, facts)``: live, on recovery, and for an old session alike.

Changes happen in steps so that the write-ahead rule can hold: a batch of
actions is first *prepared* (validated and reduced against an overlay of the
state; nothing is changed, an illegal action raises :class:`IllegalTransitionError`
and the batch is refused whole), then *pushed* while its facts are written, then,
once they are durable, *committed* (in the order they were pushed). Several batches
can be in flight at once: each is prepared on top of the ones pushed before it,
read through a *pending view* that holds the latest value of every entry an
in-flight batch wrote, so a lookup costs O(1) however many batches are in flight.
Readers of the committed state (everything public here) see only durable facts.
If the log fails, :meth:`discard_pending` drops every batch in flight. Applying an
already-recorded fact (replay) is prepare + commit without validation.

The container is mutable (a dict per kind of entity, replaced entry by entry)
so that one fact costs what its channel's reducer costs, whatever the number
of chats; every entry is an immutable value produced by a pure reducer.
"""

from __future__ import annotations

import collections
import enum
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, Generic, TypeVar

from orchestrator.ahp._actions import (
    ChatAction,
    SessionAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    UnknownAction,
)
from orchestrator.ahp._chat_reducer import TURN_ENDS, reduce_chat
from orchestrator.ahp._session_reducer import reduce_session, summary_action, summary_of
from orchestrator.ahp._state import (
    ChatState,
    SessionLifecycle,
    SessionState,
    SessionStatus,
    Turn,
    TurnState,
)
from orchestrator.ahp._validate import validate_chat_action
from orchestrator.base._errors import IllegalTransitionError
from orchestrator.base._evolve import evolve

from ._facts import Action, Fact
from ._team_actions import (
    FINISHED_TASK_STATUSES,
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunResumed,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamAction,
    ViewUpdated,
)
from ._team_records import ApprovalRecord, Member, RunRecord, TaskRecord, Transition, _Overlay

__all__ = [
    "MemberStatus",
    "TeamState",
]

#: Team tools whose running call means "this chat waits on a teammate".
WAITING_TOOLS = frozenset({"delegate", "handoff"})


class MemberStatus(enum.StrEnum):
    """A teammate's status as the team roster shows it (Agent UI teammate status values)."""

    SPAWNING = "spawning"
    RUNNING = "running"
    WAITING = "waiting"
    NEEDS_APPROVAL = "needs_approval"
    NEEDS_INPUT = "needs_input"
    IDLE = "idle"
    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"


K = TypeVar("K")
V = TypeVar("V")


class _Pending(Generic[K, V]):
    """The in-flight writes of one store: the latest value per key, and which batch wrote it."""

    def __init__(self) -> None:
        self.values: dict[K, V] = {}
        self.writer: dict[K, int] = {}

    def push(self, writes: dict[K, V], serial: int) -> None:
        self.values.update(writes)
        for key in writes:
            self.writer[key] = serial

    def settle(self, writes: dict[K, V], serial: int) -> None:
        """``serial``'s writes are committed: forget those no later batch overwrote."""
        for key in writes:
            if self.writer.get(key) == serial:
                del self.values[key]
                del self.writer[key]

    def clear(self) -> None:
        self.values.clear()
        self.writer.clear()


class TeamState:
    """Every channel's state of one session, plus the team's members, tasks and approvals."""

    def __init__(self, session: str) -> None:
        self.session_uri = session
        self.session: SessionState | None = None
        self.run: RunRecord | None = None
        self.chats: dict[str, ChatState] = {}
        self.members: dict[str, Member] = {}
        self.tasks: dict[str, TaskRecord] = {}
        self.approvals: dict[str, ApprovalRecord] = {}
        self.last_sequence = 0
        # Batches pushed and not yet committed, oldest first, and what they wrote. A deque:
        # a delegate step has as many batches in flight as it has delegations.
        self._in_flight: collections.deque[Transition] = collections.deque()
        self._pending_chats: _Pending[str, ChatState] = _Pending()
        self._pending_members: _Pending[str, Member] = _Pending()
        self._pending_tasks: _Pending[str, TaskRecord] = _Pending()
        self._pending_approvals: _Pending[str, ApprovalRecord] = _Pending()
        self._serials = 0
        # Counters kept at commit, so that the roster and the projections ask O(1) questions
        # whatever the size of the team.
        # Invariant: self._delegated == Counter(
        #     t.status for t in self.tasks.values() if t.requested_by is not None)
        self._delegated: Counter[TaskStatus] = Counter()
        # Invariant: self._pending_by_chat == Counter(
        #     a.request.chat for a in self.approvals.values() if a.decision is None)
        self._pending_by_chat: Counter[str] = Counter()

    # ── folding ────────────────────────────────────────────────────────────

    def prepare(
        self, actions: Sequence[tuple[str, Action]], *, now: str, validate: bool = True
    ) -> Transition:
        """Reduce ``actions`` (``(channel, action)`` pairs) against an overlay of this state.

        With ``validate``, an action that the current state refuses raises
        :class:`IllegalTransitionError` and nothing changes. The returned transition
        lists the actions, followed by any ``session/chatUpdated`` needed to keep
        each chat's summary equal to the fields its state inlines.
        """
        latest = self._in_flight[-1] if self._in_flight else None
        tr = Transition(
            actions=list(actions),
            session=latest.session if latest is not None else self.session,
            run=latest.run if latest is not None else self.run,
            chats=_Overlay(self.chats, self._pending_chats.values),
            members=_Overlay(self.members, self._pending_members.values),
            tasks=_Overlay(self.tasks, self._pending_tasks.values),
            approvals=_Overlay(self.approvals, self._pending_approvals.values),
        )
        for index, (channel, action) in enumerate(actions):
            ended = self._reduce(tr, channel, action, now=now, validate=validate)
            if ended is not None:
                tr.ended_turns[index] = ended
        if validate:
            # Announce summary changes in the same batch (session/chatUpdated).
            for chat_uri in sorted(tr.touched_chats):
                self._announce_summary(tr, chat_uri, now=now)
        return tr

    def push(self, tr: Transition) -> None:
        """``tr``'s facts are being written: batches prepared from now on build on it."""
        self._serials += 1
        tr.serial = self._serials
        self._in_flight.append(tr)
        self._pending_chats.push(tr.chats.writes, tr.serial)
        self._pending_members.push(tr.members.writes, tr.serial)
        self._pending_tasks.push(tr.tasks.writes, tr.serial)
        self._pending_approvals.push(tr.approvals.writes, tr.serial)

    def discard_pending(self) -> None:
        """Forget every batch in flight: their facts did not become durable."""
        self._in_flight.clear()
        for pending in (
            self._pending_chats,
            self._pending_members,
            self._pending_tasks,
            self._pending_approvals,
        ):
            pending.clear()

    def in_flight(self) -> int:
        """How many pushed batches are not committed yet."""
        return len(self._in_flight)

    def latest_chat(self, chat_uri: str) -> ChatState | None:
        """A chat as the batches in flight leave it (what the next batch is prepared on)."""
        pending = self._pending_chats.values.get(chat_uri)
        return pending if pending is not None else self.chats.get(chat_uri)

    def commit(self, tr: Transition, last_sequence: int) -> None:
        """Make a prepared transition the current state (its facts are durable now).

        A pushed transition must be the oldest in flight; one never pushed may be committed
        only while nothing is in flight (replay).
        """
        if tr.serial is not None:
            assert self._in_flight, "nothing in flight to commit"
            assert self._in_flight[0] is tr, "commit in push order"
            self._in_flight.popleft()
        else:
            assert not self._in_flight, "an unpushed batch cannot overtake those in flight"
        self.session = tr.session
        self.run = tr.run
        for task_id, task in tr.tasks.writes.items():
            before = self.tasks.get(task_id)
            if before is not None and before.requested_by is not None:
                self._delegated[before.status] -= 1
            if task.requested_by is not None:
                self._delegated[task.status] += 1
        for approval_id, record in tr.approvals.writes.items():
            was = self.approvals.get(approval_id)
            if was is not None and was.decision is None:
                self._pending_by_chat[was.request.chat] -= 1
            if record.decision is None:
                self._pending_by_chat[record.request.chat] += 1
        self.chats.update(tr.chats.writes)
        self.members.update(tr.members.writes)
        self.tasks.update(tr.tasks.writes)
        self.approvals.update(tr.approvals.writes)
        if tr.serial is not None:
            self._pending_chats.settle(tr.chats.writes, tr.serial)
            self._pending_members.settle(tr.members.writes, tr.serial)
            self._pending_tasks.settle(tr.tasks.writes, tr.serial)
            self._pending_approvals.settle(tr.approvals.writes, tr.serial)
        self.last_sequence = last_sequence

    def apply(self, fact: Fact) -> None:
        """Fold one recorded fact (replay: no validation, no derived actions)."""
        action = fact.action
        if not self._in_flight:
            # Fast paths for the facts a run is mostly made of (a fan-out worker: 9 chat
            # actions and 2 session/chatUpdated of its 16 facts), with nothing in flight (a
            # reader's state, replay). They change one entry that no counter depends on, so
            # they write it in place: the same outcome as prepare + commit below, whose
            # transition and overlays cost a third of such a fact. A reducer that raises
            # leaves the state untouched here too.
            if action.type.startswith("chat/"):
                chat = self.chats.get(fact.channel)
                if chat is not None:
                    self.chats[fact.channel] = reduce_chat(
                        chat,
                        action,  # type: ignore[arg-type]
                        now=fact.at,
                    )
                self.last_sequence = fact.sequence
                return
            if isinstance(action, SessionChatUpdatedAction):
                if self.session is not None and fact.channel == self.session_uri:
                    self.session = reduce_session(self.session, action, now=fact.at)
                self.last_sequence = fact.sequence
                return
        tr = self.prepare([(fact.channel, action)], now=fact.at, validate=False)
        self.commit(tr, fact.sequence)

    @classmethod
    def fold(
        cls, session: str, facts: Iterable[Fact], *, start: TeamState | None = None
    ) -> TeamState:
        """The state after ``facts``, folded onto ``start`` (a snapshot) or an empty state."""
        state = cls(session) if start is None else start
        for fact in facts:
            state.apply(fact)
        return state

    @classmethod
    def restore(
        cls,
        session_uri: str,
        *,
        last_sequence: int,
        session: SessionState | None,
        run: RunRecord | None,
        chats: dict[str, ChatState],
        members: dict[str, Member],
        tasks: dict[str, TaskRecord],
        approvals: dict[str, ApprovalRecord],
    ) -> TeamState:
        """A state from its parts (a snapshot); the counters are derived again."""
        state = cls(session_uri)
        state.session, state.run, state.last_sequence = session, run, last_sequence
        state.chats, state.members, state.tasks, state.approvals = chats, members, tasks, approvals
        state._delegated.update(t.status for t in tasks.values() if t.requested_by is not None)
        state._pending_by_chat.update(
            a.request.chat for a in approvals.values() if a.decision is None
        )
        return state

    def copy(self) -> TeamState:
        """The committed state in new containers (its values are immutable, so shared)."""
        return TeamState.restore(
            self.session_uri,
            last_sequence=self.last_sequence,
            session=self.session,
            run=self.run,
            chats=dict(self.chats),
            members=dict(self.members),
            tasks=dict(self.tasks),
            approvals=dict(self.approvals),
        )

    def _announce_summary(self, tr: Transition, chat_uri: str, *, now: str) -> None:
        """Append the session action that makes the catalog entry equal the chat's summary."""
        chat = tr.chats.get(chat_uri)
        session = tr.session
        if chat is None or session is None:
            return
        index = session.chats.find(chat_uri)
        if index is None:
            return
        update = summary_action(session.chats[index], summary_of(chat))
        if update is None:
            return
        tr.actions.append((self.session_uri, update))
        tr.session = reduce_session(session, update, now=now)

    def _reduce(
        self, tr: Transition, channel: str, action: Action, *, now: str, validate: bool
    ) -> Turn | None:
        """Reduce one action into ``tr``; returns the turn it ended, if it ended one."""
        if action.type.startswith("team/"):
            self._reduce_team(tr, action, now=now, validate=validate)  # type: ignore[arg-type]
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
            tr.touched_chats.add(channel)
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
            self._reduce_session(tr, channel, action, now=now, validate=validate)  # type: ignore[arg-type]
        return None

    def _reduce_session(
        self, tr: Transition, channel: str, action: SessionAction, *, now: str, validate: bool
    ) -> None:
        session = tr.session
        if session is None or channel != self.session_uri:
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

    def _reduce_team(self, tr: Transition, action: TeamAction, *, now: str, validate: bool) -> None:
        match action:
            case RunStarted():
                if validate and tr.run is not None:
                    raise IllegalTransitionError(
                        "the run has already started",
                        action_type=action.type,
                        channel=self.session_uri,
                        state="running",
                    )
                tr.run = RunRecord(
                    run=action.run,
                    session=self.session_uri,
                    team=action.team,
                    topology=action.topology,
                    parallel_budget=action.parallel_budget,
                    coordinator=action.coordinator,
                    prompt=action.prompt,
                    task=action.task,
                    started_at=now,
                    background=action.background,
                )
                tr.session = SessionState(
                    provider="orchestrator",
                    title=_title(action.prompt),
                    status=SessionStatus.IN_PROGRESS,
                    lifecycle=SessionLifecycle.READY,
                    active_clients=(),
                    chats=(),
                )
                tr.tasks[action.task] = TaskRecord(
                    task=action.task,
                    title=_title(action.prompt),
                    agent=action.coordinator,
                    status=TaskStatus.RUNNING,
                    created_at=now,
                    started_at=now,
                )
            case MemberJoined():
                tr.members[action.chat] = Member(
                    chat=action.chat, agent=action.agent, role=action.role, task=action.task
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
                        channel=self.session_uri,
                        state="task exists",
                        tool_call_id=action.tool_call_id,
                    )
                tr.tasks[action.task] = TaskRecord(
                    task=action.task,
                    title=action.title,
                    agent=action.agent,
                    status=action.status,
                    requested_by=action.requested_by,
                    tool_call_id=action.tool_call_id,
                    parent_task=action.parent_task,
                    created_at=now,
                )
            case TaskStarted():
                task = self._task_for(tr, action, validate=validate)
                if task is None:
                    return
                if validate and task.status is not TaskStatus.QUEUED and task.chat is not None:
                    raise IllegalTransitionError(
                        "the task has already started",
                        action_type=action.type,
                        channel=self.session_uri,
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
                task = self._task_for(tr, action, validate=validate)
                if task is None:
                    return
                if validate and task.status in FINISHED_TASK_STATUSES:
                    raise IllegalTransitionError(
                        "the task has already finished",
                        action_type=action.type,
                        channel=self.session_uri,
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
                task = self._task_for(tr, action, validate=validate)
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
                            channel=self.session_uri,
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
                            channel=self.session_uri,
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
                            channel=self.session_uri,
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
                            channel=self.session_uri,
                            state="finished" if tr.run else "not started",
                        )
                    return
                tr.run = evolve(
                    tr.run, status=action.status, result=action.result, error=action.error
                )
                root = tr.tasks.get(tr.run.task)
                if root is not None and root.status not in FINISHED_TASK_STATUSES:
                    tr.tasks[root.task] = evolve(
                        root,
                        status=_ROOT_TASK_STATUS[action.status],
                        finished_at=now,
                        summary=action.result or action.error,
                    )

    def _task_for(
        self,
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
                channel=self.session_uri,
                state="unknown task",
            )
        return task

    # ── queries (used by the runtime, the tree and the projections) ──────────

    def member_status(self, chat_uri: str) -> MemberStatus:
        """The roster status of a chat, derived from its state, its task and its approvals.

        A member that owns a task (a delegated worker, or the coordinator and its root task)
        reports the task's end once it is recorded, and ``running`` from the end of its turn
        until then: the runtime is reporting the result, nothing has been decided yet.
        """
        member = self.members.get(chat_uri)
        task = self.tasks.get(member.task) if member else None
        owns_task = task is not None and (
            task.chat == chat_uri
            or (task.requested_by is None and chat_uri == self.coordinator_chat())
        )
        if owns_task and task is not None and task.status in FINISHED_TASK_STATUSES:
            return MemberStatus(task.status.value)
        chat = self.chats.get(chat_uri)
        if chat is None:
            return MemberStatus.SPAWNING
        active = chat.active_turn
        if active is None:
            if not chat.turns:
                return MemberStatus.SPAWNING
            if owns_task:
                return MemberStatus.RUNNING
            return _AFTER_TURN.get(chat.turns[-1].state, MemberStatus.IDLE)
        # What the turn waits for, from the tally its parts keep (no scan of the parts):
        # a confirmation first, then an answer, then a teammate.
        tally = active.response_parts.tally
        if any(key[0] == "tool" and key[1] == "pending-confirmation" for key in tally):
            return MemberStatus.NEEDS_APPROVAL
        if ("input",) in tally:
            return MemberStatus.NEEDS_INPUT
        if any(
            key[0] == "tool" and key[1] == "running" and key[2] in WAITING_TOOLS for key in tally
        ):
            return MemberStatus.WAITING
        return MemberStatus.RUNNING

    def queued_count(self) -> int:
        """Delegated tasks waiting for a slot in the parallel budget."""
        return self._delegated[TaskStatus.QUEUED]

    def active_count(self) -> int:
        """Delegated tasks running now."""
        return self._delegated[TaskStatus.RUNNING]

    def unfinished_count(self) -> int:
        """Delegated tasks queued or running."""
        return self.queued_count() + self.active_count()

    def delegated_count(self) -> int:
        """Every task delegated in this run, finished or not."""
        return sum(self._delegated.values())

    def pending_approvals(self) -> Iterator[ApprovalRecord]:
        return (a for a in self.approvals.values() if a.decision is None)

    def has_pending_approval(self, chat_uri: str | None = None) -> bool:
        """Whether an approval (of ``chat_uri``, or of anyone) waits for a decision."""
        if chat_uri is None:
            return any(n > 0 for n in self._pending_by_chat.values())
        return self._pending_by_chat[chat_uri] > 0

    def coordinator_chat(self) -> str | None:
        return None if self.run is None else self.run.coordinator_chat


#: The status of a member that owns no open task, by how its last turn ended.
_AFTER_TURN: Final = {
    TurnState.ERROR: MemberStatus.FAILED,
    TurnState.CANCELLED: MemberStatus.KILLED,
}

_ROOT_TASK_STATUS = {
    RunStatus.COMPLETED: TaskStatus.COMPLETED,
    RunStatus.FAILED: TaskStatus.FAILED,
    RunStatus.CANCELLED: TaskStatus.KILLED,
}


def _title(prompt: str, limit: int = 80) -> str:
    line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    return line if len(line) <= limit else line[: limit - 1] + "…"
