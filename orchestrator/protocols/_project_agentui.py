"""The Agent UI projection: facts in, Agent UI envelopes out.

Theory of operation
-------------------
:class:`AgentUiProjector` projects each fact from the fact and the
:class:`~orchestrator.core._team_state.TeamState` as that fact left it. So a live client and a
client hydrating from the log get the same envelopes. The output is a function of the fact
sequence and nothing else (no clock, no ids of its own beyond counters derived from the facts).
The state is one of two:

- its own, into which it folds every fact (``state.apply(fact)``) before projecting it
  (:func:`project_facts` is that fold over a whole log);
- given: a live reader's view of the runtime's state (a bus subscription's ``state``). That
  view is already at the fact when it is fed. So the session's facts are reduced once, by the
  runtime, however many readers project them.

Both give the same envelopes (the state after a fact is the same either way).

Each fact is projected in three steps, always in this order:

1. the envelopes the fact *is* (``run.started`` for ``team/runStarted``, ``task.changed`` for
   ``team/taskCreated``, ...);
2. ``agent.changed`` for every member whose roster status differs from the last status this
   projector announced for it (``agent.spawned`` and ``agent.completed`` announce a status
   too), in the order the members joined;
3. ``team.changed`` when the team's view (phase, parallel budget, active and queued counts)
   differs from the last one announced.

``*.changed`` envelopes are edge-triggered. A fact that leaves a member's status (or the team's
view) as it was emits nothing for it. So a stream of text deltas emits nothing at all (text
streams on the AHP channel). No envelope is ever a repeat of the previous one. A fact whose
``sequence`` is not beyond the last one folded (a replay overlapping a live feed) is ignored.
``team/runFinished`` is the one exception to the order: its ``team.changed`` (phase ``done``)
comes before ``run.finished``, so the terminal envelope of a run is the run's own.

Roster status is :meth:`TeamState.member_status`, except for approvals: the runtime records a
tool call's ``pending-confirmation`` before it routes the approval, and records the decision
on the chat before ``team/approvalResolved``. A member is announced ``needs_approval`` exactly
while a routed approval of its chat is pending, so ``agent.changed(needs_approval)`` follows
``action.required`` and the member leaves that status only after ``action.resolved`` (the
spec: an action is resolved only once the runtime confirmed it).

Ids
---
* ``sessionId`` is the session URI. ``runId`` is the run id of ``team/runStarted``.
  ``sequence`` counts this session's envelopes from 1 without gaps. ``timestamp`` is the fact's
  ``at``. ``rawEventRef`` is ``fact:<sequence>``, the fact the envelope was projected from.
* ``agentId`` is ``"<agent>@<team>#<n>"``: the n-th chat (from 1, in join order) that joined
  the run as that agent. Agent names cannot contain ``@`` or ``#`` (team file rule), and the
  team is fixed for a run. So the id is unique per chat. It depends only on the order of
  ``team/memberJoined`` facts, so it is the same live and on replay. The chat URI is the
  ``threadId`` of the same envelopes, and ``payload.chat``.
* Lineage: a worker's or specialist's ``parentThreadId`` and ``toolCallId`` come from its chat's
  ``ToolChatOrigin`` (the canonical delegation edge). ``parentSessionId`` is the session. The
  coordinator has no parent: its envelopes carry no parent ids.
* ``taskId`` is the team task (``task-<n>``), ``actionId`` the approval id (``approval-<n>``).

The projector's bases hold these ids and build the envelopes that carry them:
:class:`~orchestrator.protocols._agentui_envelopes.EnvelopeBuilder` every envelope's, and
:class:`~orchestrator.protocols._agentui_requests.ActionRequests` the ``action.*`` cards of
approvals and questions.

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from orchestrator.ahp.actions import (
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatResponsePartAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import ChatInteractivity, PendingMessageKind, ToolChatOrigin
from orchestrator.base import IllegalTransitionError, resolve_subclass
from orchestrator.core import (
    BOARD_ACTION_TYPES,
    TERMINAL_REMOTE_STATES,
    Action,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    HandoffRecorded,
    MemberJoined,
    MemberStatus,
    ReviewCompleted,
    ReviewRecord,
    ReviewRequested,
    Reviews,
    ReviewStarted,
    RunFinished,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamState,
    artifact_of,
    remote_task_of,
)

from ._agentui import (
    Control,
    CoordinatorTeamStatus,
    Envelope,
    EventType,
    HandoffStatus,
    Owner,
    Persistence,
    Phase,
    QueuedTurnStatus,
    RemoteTaskStatus,
    ReviewStatus,
    RuntimeEntity,
    Scope,
    Surface,
    Topology,
)
from ._agentui_envelopes import card_ref, compact
from ._agentui_requests import ActionRequests
from ._project_board import feed_board

__all__ = ["AgentUiProjector", "project_facts"]

#: Roster statuses that end a member's work on its task.
_TERMINAL: Final = frozenset({MemberStatus.COMPLETED, MemberStatus.FAILED, MemberStatus.KILLED})

_MEMBER_PHASE: Final[dict[MemberStatus, Phase]] = {
    MemberStatus.SPAWNING: Phase.PREPARING,
    MemberStatus.RUNNING: Phase.ACTING,
    MemberStatus.WAITING: Phase.WAITING,
    MemberStatus.NEEDS_APPROVAL: Phase.WAITING,
    MemberStatus.NEEDS_INPUT: Phase.WAITING,
    MemberStatus.IDLE: Phase.COMPLETED,
    MemberStatus.COMPLETED: Phase.COMPLETED,
    MemberStatus.FAILED: Phase.FAILED,
    MemberStatus.KILLED: Phase.CANCELLED,
}

_TASK_PHASE: Final[dict[TaskStatus, Phase]] = {
    TaskStatus.QUEUED: Phase.WAITING,
    TaskStatus.RUNNING: Phase.ACTING,
    TaskStatus.COMPLETED: Phase.COMPLETED,
    TaskStatus.FAILED: Phase.FAILED,
    TaskStatus.KILLED: Phase.CANCELLED,
}

#: The phase of a remote teammate's task, by its state.
_REMOTE_PHASE: Final[dict[str, Phase]] = {
    "sending": Phase.SUBMITTED,
    "submitted": Phase.SUBMITTED,
    "working": Phase.ACTING,
    "input_required": Phase.WAITING,
    "auth_required": Phase.WAITING,
    "completed": Phase.COMPLETED,
    "failed": Phase.FAILED,
    "canceled": Phase.CANCELLED,
    "rejected": Phase.FAILED,
}
_REMOTE_STATUSES: Final = frozenset(status.value for status in RemoteTaskStatus)

_RUN_PHASE: Final[dict[RunStatus, Phase]] = {
    RunStatus.COMPLETED: Phase.COMPLETED,
    RunStatus.FAILED: Phase.FAILED,
    RunStatus.CANCELLED: Phase.CANCELLED,
}

_TEAM_PHASE: Final[dict[CoordinatorTeamStatus, Phase]] = {
    CoordinatorTeamStatus.FORMING: Phase.ROUTING,
    CoordinatorTeamStatus.ACTIVE: Phase.ACTING,
    CoordinatorTeamStatus.WAITING: Phase.WAITING,
    CoordinatorTeamStatus.MERGING: Phase.PRODUCING,
}


#: What a ``team.changed`` envelope says; one is emitted when this changes: the team's
#: phase, parallel budget, active and queued counts (a tuple: compared at every team fact).
_TeamView = tuple[CoordinatorTeamStatus, int, int, int]


class AgentUiProjector(ActionRequests):
    """Projects one session's facts, in order, to Agent UI envelopes.

    ``feed`` folds the fact into the projector's own
    :class:`~orchestrator.core._team_state.TeamState` (available as
    :attr:`state`) and returns the envelopes for it, numbered on from the previous ones.
    Given a ``state``, the projector folds nothing: whoever keeps that state brings it to
    each fact before feeding it (a subscription's state, from the session's first fact on).
    """

    def __init__(self, session: str, state: TeamState | None = None) -> None:
        super().__init__(session, state)
        self._last_sequence = 0  # of the last fact fed
        self._joins: Counter[str] = Counter()  # agent name -> chats joined as it
        self._team_view: _TeamView | None = None
        self._handed_from: set[tuple[str, str]] = set()  # (task, chat) that handed a task off
        # The session's reviews, folded from their facts (from the state's, when it has some).
        self._reviews = Reviews(self.state.run.reviews if self.state.run is not None else None)

    # ── feeding ────────────────────────────────────────────────────────────

    def feed(self, fact: Fact) -> list[Envelope]:
        """Fold ``fact`` and return its envelopes (none for a fact already folded)."""
        if fact.sequence <= self._last_sequence:
            return []
        if not self.follows:
            self.state.apply(fact)
        elif self.state.last_sequence != fact.sequence:
            raise ValueError(
                f"the state followed is at fact {self.state.last_sequence}, "
                f"not at fact {fact.sequence} fed"
            )
        self._last_sequence = fact.sequence
        action = fact.action
        project = _PROJECTIONS.get(type(action), _UNRESOLVED)
        if project is _UNRESOLVED:
            project = resolve_subclass(
                _PROJECTIONS, _PROJECTED_TYPES, type(action), AgentUiProjector._feed_other
            )
        envelopes: list[Envelope] = project(self, fact, action)
        return envelopes

    # One method per action type, looked up by the action's type (_PROJECTIONS): a fact
    # costs one dict lookup to find what it projects to. A team fact's envelopes are those
    # it is, then _after_team_fact's; an AHP fact's are its own, then its chat's change.

    def _after_team_fact(
        self, fact: Fact, head: list[Envelope], touched: Iterable[str]
    ) -> list[Envelope]:
        """``head``, then ``agent.changed`` of the members ``touched``, then ``team.changed``
        (steps 1 to 3 of the module docstring).

        ``touched``: the members whose roster status the team fact can change (after it was
        folded). A member's status is a function of its chat, its task and its pending
        approvals, so a team fact can only move the members it names; listing them keeps a
        fact's cost independent of the size of the team. The end of the run can move anyone.
        """
        envelopes = head + self._status_changes(fact, touched) if touched else head
        team = self._team_changed(fact)
        if team is not None:
            envelopes.append(team)
        return envelopes

    def _feed_run_started(self, fact: Fact, action: RunStarted) -> list[Envelope]:
        # A run that starts (again) can move anyone who owns a finished root task (idle
        # while a run goes on); a run's first fact has no members yet.
        return self._after_team_fact(fact, [self._run_started(fact, action)], self.state.members)

    def _feed_member_joined(self, fact: Fact, action: MemberJoined) -> list[Envelope]:
        spawned = self._member_joined(fact, action)
        head = [] if spawned is None else [spawned]
        if action.starts and action.task in self.state.tasks:
            # Also the task's start (a spawn's two facts in one): its task.changed.
            head.append(self._task_changed(fact, action.task))
        return self._after_team_fact(fact, head, (action.chat,))

    def _feed_task_created(self, fact: Fact, action: TaskCreated) -> list[Envelope]:
        # A conversation's next prompt moves its coordinator onto the prompt's root task.
        coordinator = self.state.coordinator_chat() if action.requested_by is None else None
        touched = () if coordinator is None else (coordinator,)
        return self._after_team_fact(fact, [self._task_changed(fact, action.task)], touched)

    def _feed_task_started(self, fact: Fact, action: TaskStarted) -> list[Envelope]:
        if action.task not in self.state.tasks:
            return []  # the fold ignores a fact about an unknown task; so does the projection
        head = [self._task_changed(fact, action.task)]
        return self._after_team_fact(fact, head, (action.chat,))

    def _feed_task_finished(self, fact: Fact, action: TaskFinished) -> list[Envelope]:
        if action.task not in self.state.tasks:
            return []
        head = self._task_finished(fact, action)
        worker = self.state.tasks[action.task].chat
        # Its reviewer's work ends with the task too (see TeamState.member_status).
        reviewers = {r.chat for r in self._reviews.of_task(action.task) if r.chat is not None}
        touched = (*(() if worker is None else (worker,)), *sorted(reviewers))
        return self._after_team_fact(fact, head, touched)

    def _feed_handoff(self, fact: Fact, action: HandoffRecorded) -> list[Envelope]:
        if action.task not in self.state.tasks:
            return []
        head = [self._handoff(fact, action)]
        return self._after_team_fact(fact, head, (action.from_chat, action.to_chat))

    def _feed_approval_requested(self, fact: Fact, action: ApprovalRequested) -> list[Envelope]:
        return self._after_team_fact(fact, [self._action_required(fact, action)], (action.chat,))

    def _feed_approval_resolved(self, fact: Fact, action: ApprovalResolved) -> list[Envelope]:
        resolved = self._action_resolved(fact, action)
        head = [] if resolved is None else [resolved]
        record = self.state.approvals.get(action.approval)
        return self._after_team_fact(fact, head, () if record is None else (record.request.chat,))

    def _feed_run_finished(self, fact: Fact, action: RunFinished) -> list[Envelope]:
        # The end of the run can move anyone; run.finished closes the run's envelopes.
        envelopes = self._after_team_fact(fact, [], self.state.members)
        envelopes.append(self._run_finished(fact, action))
        return envelopes

    def _feed_chat_added(self, fact: Fact, action: SessionChatAddedAction) -> list[Envelope]:
        # A chat's state begins with its catalog entry: only that chat can change.
        return self._status_change(fact, action.summary.resource)

    def _feed_input_requested(self, fact: Fact, action: ChatInputRequestedAction) -> list[Envelope]:
        if fact.channel not in self.state.members:
            return []
        return self._input_required(fact, action) + self._status_change(fact, fact.channel)

    def _feed_input_completed(self, fact: Fact, action: ChatInputCompletedAction) -> list[Envelope]:
        if fact.channel not in self.state.members:
            return []
        return self._input_resolved(fact, action) + self._status_change(fact, fact.channel)

    def _feed_queue(
        self,
        fact: Fact,
        action: ChatPendingMessageSetAction
        | ChatPendingMessageRemovedAction
        | ChatTurnStartedAction,
    ) -> list[Envelope]:
        if fact.channel not in self.state.members:
            return []
        return self._queue_changed(fact, action) + self._status_change(fact, fact.channel)

    def _feed_response_part(self, fact: Fact, action: ChatResponsePartAction) -> list[Envelope]:
        # A remote teammate's part may record its remote task's state or an artifact.
        chat = fact.channel
        member = self.state.members.get(chat)
        if member is None:
            return []
        head: list[Envelope] = []
        if member.remote is not None:
            remote = remote_task_of(action.part)
            if remote is not None and remote.get("remoteTaskId"):
                head.append(self._remote_task_changed(fact, chat, remote))
        # A remote teammate's artifact chunk, or a tool's result an agent declared an artifact.
        artifact = artifact_of(action.part)
        if artifact is not None:
            head.append(self._artifact_changed(fact, chat, artifact))
        return head + self._status_change(fact, chat)

    def _feed_review(
        self, fact: Fact, action: ReviewRequested | ReviewStarted | ReviewCompleted
    ) -> list[Envelope]:
        """A review's facts: ``review.requested``; the reviewer's ``agent.changed`` (status
        ``reviewing``); ``evidence.changed`` then ``review.completed`` (see module docstring)."""
        try:
            record = self._reviews.apply(fact)
        except IllegalTransitionError:
            return []  # a log the fold refuses projects nothing of it
        assert record is not None
        reviewer = self._reviewer_chat(record)
        head: list[Envelope] = []
        match action:
            case ReviewRequested():
                head.append(self._review_envelope(fact, EventType.REVIEW_REQUESTED, record))
            case ReviewStarted():
                if reviewer in self.state.members:
                    status = self._roster_status(reviewer) or MemberStatus.RUNNING
                    head.append(
                        self._agent_envelope(
                            fact,
                            EventType.AGENT_CHANGED,
                            reviewer,
                            status,
                            phase=Phase.REVIEWING,
                            reviewStatus=ReviewStatus.REVIEWING.value,
                            reviewId=record.review,
                        )
                    )
            case ReviewCompleted():
                head.append(self._review_envelope(fact, EventType.EVIDENCE_CHANGED, record))
                head.append(self._review_envelope(fact, EventType.REVIEW_COMPLETED, record))
        touched = tuple(c for c in (reviewer, record.worker_chat) if c in self.state.members)
        return self._after_team_fact(fact, head, touched)

    def _reviewer_chat(self, record: ReviewRecord) -> str | None:
        if record.chat is not None:
            return record.chat
        return next(
            (
                m.chat
                for m in self.state.members.values()
                if m.task == record.task and m.agent == record.reviewer
            ),
            None,
        )

    def _review_envelope(self, fact: Fact, event: EventType, record: ReviewRecord) -> Envelope:
        """A ``review.*`` or ``evidence.changed`` envelope of ``record``: the reviewer's
        lane entry, its target (the worker), the verdict, fixes and evidence."""
        reviewer = self._reviewer_chat(record)
        worker = self.state.members.get(record.worker_chat)
        finished = record.finished
        evidence = [compact(kind=e.kind, text=e.text, ref=e.ref) for e in record.evidence]
        return self._envelope(
            fact,
            event,
            owner=Owner.EVIDENCE,
            scope=Scope.EVIDENCE,
            phase=Phase.ARCHIVED if event is EventType.EVIDENCE_CHANGED else Phase.REVIEWING,
            surface=(
                Surface.TIMELINE_EVIDENCE
                if event is EventType.EVIDENCE_CHANGED
                else Surface.REVIEW_LANE
            ),
            persistence=Persistence.EVIDENCE_PACK,
            control=None if finished else Control.STOP,
            topology=Topology.REVIEW_TEAM,
            thread_id=reviewer,
            task_id=record.task,
            agent_id=self._agent_ids.get(reviewer) if reviewer is not None else None,
            parent_session_id=self.session,
            parent_thread_id=record.requested_by,
            tool_call_id=record.tool_call_id,
            evidence_id=record.review,
            payload=compact(
                reviewId=record.review,
                status=record.status.value,
                round=record.round,
                reviewer=record.reviewer,
                target=worker.agent if worker is not None else None,
                targetAgentId=self._agent_ids.get(record.worker_chat),
                targetChat=record.worker_chat,
                verdict=record.status.value if finished else None,
                summary=record.summary or None,
                fixes=list(record.fixes) if finished else None,
                evidence=evidence if finished else None,
                error=record.error,
            ),
            refs=compact(
                transcript=reviewer,
                target=record.worker_chat,
                evidence=[e.ref for e in record.evidence if e.ref] or None,
            ),
        )

    def _feed_other(self, fact: Fact, action: Action) -> list[Envelope]:
        # Any other AHP action changes the chat it is on; on the session channel it mirrors
        # a chat's summary, which says nothing new about a member's status. (A team action
        # without a projection of its own, on the session channel, is no member's either.)
        if fact.channel in self.state.members:
            return self._status_change(fact, fact.channel)
        return []

    # ── team facts ─────────────────────────────────────────────────────────

    def _run_started(self, fact: Fact, action: RunStarted) -> Envelope:
        return self._envelope(
            fact,
            EventType.RUN_STARTED,
            owner=Owner.RUNTIME,
            scope=Scope.RUN,
            phase=Phase.ACCEPTED,
            surface=Surface.RUNTIME_STATUS,
            persistence=Persistence.SNAPSHOT,
            control=Control.INTERRUPT,
            task_id=action.task,
            payload={
                "team": action.team,
                "coordinator": action.coordinator,
                "prompt": action.prompt,
                "parallelBudget": action.parallel_budget,
                "runtimeEntity": (
                    RuntimeEntity.AGENT_TURN.value
                    if action.background is None
                    else RuntimeEntity.AUTOMATION_JOB.value  # a background teammate's wake
                ),
                **({} if action.background is None else {"background": action.background}),
                # The model chosen for the session (absent: each agent asks the team file's).
                **({} if action.model is None else {"model": action.model}),
            },
        )

    def _member_joined(self, fact: Fact, action: MemberJoined) -> Envelope | None:
        chat = action.chat
        if chat in self._agent_ids:
            return None  # a re-join: the roster entry exists; its status is diffed below
        self._joins[action.agent] += 1
        team = self._team_name()
        suffix = f"@{team}" if team is not None else ""
        self._agent_ids[chat] = f"{action.agent}{suffix}#{self._joins[action.agent]}"
        chat_state = self.state.chats.get(chat)
        origin = chat_state.origin if chat_state is not None else None
        if isinstance(origin, ToolChatOrigin):
            self._lineage[chat] = (origin.chat, origin.tool_call_id)
        else:
            # No chat state recorded yet: fall back on the task's delegation, if this chat
            # is (or will be) that task's worker rather than the coordinator.
            task = self.state.tasks.get(action.task)
            if (
                origin is None
                and task is not None
                and task.requested_by is not None
                and task.tool_call_id is not None
                and task.chat in (None, chat)
            ):
                self._lineage[chat] = (task.requested_by, task.tool_call_id)
        status = self._roster_status(chat) or MemberStatus.SPAWNING
        interactivity = (
            chat_state.interactivity if chat_state is not None else None
        ) or ChatInteractivity.FULL
        return self._agent_envelope(
            fact,
            EventType.AGENT_SPAWNED,
            chat,
            status,
            phase=Phase.ACTING,
            interactivity=interactivity.value,
        )

    def _task_changed(self, fact: Fact, task_id: str) -> Envelope:
        task = self.state.tasks[task_id]
        budget = self.state.run.parallel_budget if self.state.run is not None else None
        queue_reason = None
        if task.status is TaskStatus.QUEUED:
            queue_reason = (
                f"parallel budget of {budget} in use"
                if budget is not None
                else "waiting for a free worker slot"
            )
        live = task.status in (TaskStatus.QUEUED, TaskStatus.RUNNING)
        return self._envelope(
            fact,
            EventType.TASK_CHANGED,
            owner=Owner.TASK,
            scope=Scope.TASK,
            phase=_TASK_PHASE[task.status],
            surface=Surface.TASK_CAPSULE,
            persistence=Persistence.SNAPSHOT,
            control=Control.STOP if live and task.chat is not None else None,
            **self._task_ids(task),
            payload=compact(
                status=task.status.value,
                title=task.title,
                agentName=task.agent,
                runtimeEntity=(
                    RuntimeEntity.SUBAGENT_TURN
                    if task.requested_by is not None
                    else RuntimeEntity.AGENT_TURN
                ).value,
                parentTaskId=task.parent_task,
                teamQueuedCount=self.state.queued_count(),
                teamActiveCount=self.state.active_count(),
                teamParallelBudget=budget,
                queueReason=queue_reason,
            ),
        )

    def _remote_task_changed(self, fact: Fact, chat: str, remote: Mapping[str, Any]) -> Envelope:
        """``task.changed`` of a remote teammate's task: the remote truth, as it was recorded."""
        member = self.state.members[chat]
        state = str(remote.get("state", ""))
        card = remote.get("card")
        card = card if isinstance(card, Mapping) else {}
        needs = {"input_required": "input", "auth_required": "auth"}.get(state)
        return self._envelope(
            fact,
            EventType.TASK_CHANGED,
            owner=Owner.TASK,
            scope=Scope.TASK,
            phase=_REMOTE_PHASE.get(state, Phase.ACTING),
            surface=Surface.REMOTE_TEAMMATE,
            persistence=Persistence.SNAPSHOT,
            control=Control.STOP if state not in TERMINAL_REMOTE_STATES else None,
            topology=Topology.REMOTE_TEAMMATE,
            thread_id=chat,
            task_id=member.task,
            agent_id=self._agent_ids.get(chat),
            parent_session_id=self.session if chat in self._lineage else None,
            parent_thread_id=self._lineage[chat][0] if chat in self._lineage else None,
            payload=compact(
                runtimeEntity=RuntimeEntity.EXTERNAL_TASK.value,
                agentName=member.agent,
                remoteTaskId=str(remote.get("remoteTaskId")),
                contextId=remote.get("contextId") or None,
                runtimeStatus=state if state in _REMOTE_STATUSES else "unknown",
                rawStatus=remote.get("rawState") or None,
                cardRef=card_ref(member.remote) if member.remote is not None else None,
                cardName=card.get("name") or None,
                cardVersion=card.get("version") or None,
                skills=list(card.get("skills") or ()) or None,
                needs=needs,
                message=remote.get("message") or None,
            ),
        )

    def _artifact_changed(self, fact: Fact, chat: str, artifact: Mapping[str, Any]) -> Envelope:
        """``artifact.changed`` of an artifact (or a chunk of one) a remote teammate sent (its
        external task's), or of a tool's result a local agent declared an artifact (its
        turn's, in the run's topology)."""
        member = self.state.members[chat]
        last = bool(artifact.get("lastChunk", True))
        remote = member.remote is not None
        entity = (
            RuntimeEntity.EXTERNAL_TASK
            if remote
            else RuntimeEntity.SUBAGENT_TURN
            if chat != self.state.coordinator_chat()
            else RuntimeEntity.AGENT_TURN
        )
        return self._envelope(
            fact,
            EventType.ARTIFACT_CHANGED,
            owner=Owner.ARTIFACT,
            scope=Scope.ARTIFACT,
            phase=Phase.COMPLETED if last else Phase.PRODUCING,
            surface=Surface.ARTIFACT_WORKSPACE,
            persistence=Persistence.ARTIFACT_STORE,
            topology=Topology.REMOTE_TEAMMATE if remote else None,
            thread_id=chat,
            task_id=member.task,
            agent_id=self._agent_ids.get(chat),
            artifact_id=str(artifact.get("artifactId")) or None,
            payload=compact(
                runtimeEntity=entity.value,
                toolCallId=artifact.get("toolCallId") or None,
                agentName=member.agent,
                remoteTaskId=artifact.get("remoteTaskId") or None,
                name=artifact.get("name") or None,
                mediaType=artifact.get("mediaType") or None,
                append=bool(artifact.get("append", False)),
                lastChunk=last,
                parts=list(artifact.get("parts") or ()),
            ),
        )

    def _task_finished(self, fact: Fact, action: TaskFinished) -> list[Envelope]:
        task = self.state.tasks[action.task]
        if task.requested_by is None:
            # A conversation's prompt answered: no worker reports back; its coordinator's
            # change (idle, waiting for the next message) follows as agent.changed.
            return [self._task_changed(fact, action.task)]
        worker = task.chat
        result_ref: dict[str, Any] | None = None
        if worker is not None:
            chat_state = self.state.chats.get(worker)
            last_turn = chat_state.turns[-1].id if chat_state and chat_state.turns else None
            result_ref = compact(chat=worker, turnId=last_turn)
        envelopes = [
            self._envelope(
                fact,
                EventType.WORKER_NOTIFICATION,
                owner=Owner.AGENT,
                scope=Scope.TASK,
                phase=Phase.ARCHIVED,
                surface=Surface.WORKER_NOTIFICATIONS,
                persistence=Persistence.ARCHIVE,
                control=Control.OPEN_DETAIL if worker is not None else None,
                **self._task_ids(task),
                payload=compact(
                    status=action.status.value,
                    agentName=task.agent,
                    title=task.title,
                    summary=action.summary,
                    resultRef=result_ref,
                    durationMs=action.duration_ms,
                    usage={
                        "inputTokens": action.input_tokens,
                        "outputTokens": action.output_tokens,
                    },
                ),
                refs={"transcript": worker} if worker is not None else None,
            )
        ]
        if worker is not None and worker in self.state.members:
            status = MemberStatus(action.status.value)
            envelopes.append(
                self._agent_envelope(
                    fact,
                    EventType.AGENT_COMPLETED,
                    worker,
                    status,
                    phase=_MEMBER_PHASE[status],
                    summary=action.summary,
                )
            )
        envelopes.append(self._task_changed(fact, action.task))
        return envelopes

    def _handoff(self, fact: Fact, action: HandoffRecorded) -> Envelope:
        returned = (action.task, action.to_chat) in self._handed_from
        self._handed_from.add((action.task, action.from_chat))
        from_member = self.state.members.get(action.from_chat)
        return self._envelope(
            fact,
            EventType.AGENT_HANDOFF,
            owner=Owner.AGENT,
            scope=Scope.AGENT,
            phase=Phase.ROUTING,
            surface=Surface.HANDOFF_LANE,
            persistence=Persistence.ARCHIVE,
            thread_id=action.to_chat,
            task_id=action.task,
            agent_id=self._agent_ids.get(action.to_chat),
            tool_call_id=action.tool_call_id,
            payload=compact(
                fromAgent=from_member.agent if from_member is not None else None,
                fromAgentId=self._agent_ids.get(action.from_chat),
                fromChat=action.from_chat,
                toAgent=action.to_agent,
                toAgentId=self._agent_ids.get(action.to_chat),
                toChat=action.to_chat,
                reason=action.reason,
                resumeTarget=action.resume_target,
                status=(HandoffStatus.RETURNED if returned else HandoffStatus.ACCEPTED).value,
            ),
        )

    def _run_finished(self, fact: Fact, action: RunFinished) -> Envelope:
        failed = action.status is RunStatus.FAILED
        return self._envelope(
            fact,
            EventType.RUN_FAILED if failed else EventType.RUN_FINISHED,
            owner=Owner.RUNTIME,
            scope=Scope.RUN,
            phase=_RUN_PHASE[action.status],
            surface=Surface.RUNTIME_STATUS,
            persistence=Persistence.ARCHIVE,
            task_id=self.state.run.task if self.state.run is not None else None,
            payload=compact(
                status=action.status.value,
                result=action.result or None,
                error=action.error or None,
            ),
        )

    # ── pending messages ───────────────────────────────────────────────────

    def _queue_changed(
        self,
        fact: Fact,
        action: ChatPendingMessageSetAction
        | ChatPendingMessageRemovedAction
        | ChatTurnStartedAction,
    ) -> list[Envelope]:
        """Steering and queued messages of a member: ``queue.changed`` (queued turns are the
        spec's "queued turn" items: queued, removed, started)."""
        match action:
            case ChatPendingMessageSetAction():
                kind, message_id, status = action.kind, action.id, QueuedTurnStatus.QUEUED
            case ChatPendingMessageRemovedAction():
                kind, message_id, status = action.kind, action.id, QueuedTurnStatus.REMOVED
            case ChatTurnStartedAction(queued_message_id=str(queued_id)):
                kind, message_id = PendingMessageKind.QUEUED, queued_id
                status = QueuedTurnStatus.STARTED
            case _:
                return []
        chat_state = self.state.chats[fact.channel]
        member = self.state.members[fact.channel]
        return [
            self._envelope(
                fact,
                EventType.QUEUE_CHANGED,
                owner=Owner.RUNTIME,
                scope=Scope.TASK,
                phase=Phase.SUBMITTED,
                surface=Surface.TASK_CAPSULE,
                persistence=Persistence.SNAPSHOT,
                control=Control.STEER if kind is PendingMessageKind.STEERING else Control.QUEUE,
                thread_id=fact.channel,
                task_id=member.task,
                agent_id=self._agent_ids.get(fact.channel),
                payload={
                    "kind": kind.value,
                    "messageId": message_id,
                    "status": status.value,
                    "runtimeEntity": self._runtime_entity(fact.channel),
                    "queuedTurnCount": len(chat_state.queued_messages or ()),
                    "steeringPending": chat_state.steering_message is not None,
                },
            )
        ]

    # ── derived changes ────────────────────────────────────────────────────

    def _roster_status(self, chat: str) -> MemberStatus | None:
        """The status to announce for ``chat``; ``None`` while it is not yet announceable.

        ``needs_approval`` is tied to routed approvals (see the module docstring): a tool
        call waiting for a confirmation that has not been routed yet is not announced.
        """
        status = self.state.member_status(chat)
        if status in _TERMINAL:
            return status
        if self.state.has_pending_approval(chat):
            return MemberStatus.NEEDS_APPROVAL
        return None if status is MemberStatus.NEEDS_APPROVAL else status

    def _status_change(self, fact: Fact, chat: str) -> list[Envelope]:
        """:meth:`_status_changes` of one chat (an AHP fact's: the chat it is on)."""
        if chat not in self._agent_ids:
            return []  # not a member (yet): team/memberJoined announces it
        status = self._roster_status(chat)
        if status is None or status is self._announced.get(chat):
            return []
        return [
            self._agent_envelope(
                fact, EventType.AGENT_CHANGED, chat, status, phase=_MEMBER_PHASE[status]
            )
        ]

    def _status_changes(self, fact: Fact, chats: Iterable[str]) -> list[Envelope]:
        envelopes = []
        for chat in chats:
            if chat not in self._agent_ids:
                continue  # not a member (yet): team/memberJoined announces it
            status = self._roster_status(chat)
            if status is None or status is self._announced.get(chat):
                continue
            envelopes.append(
                self._agent_envelope(
                    fact, EventType.AGENT_CHANGED, chat, status, phase=_MEMBER_PHASE[status]
                )
            )
        return envelopes

    def _team_changed(self, fact: Fact) -> Envelope | None:
        run = self.state.run
        if run is None:
            return None
        team_phase = self._team_phase()
        active = self.state.active_count()
        queued = self.state.queued_count()
        view = (team_phase, run.parallel_budget, active, queued)
        if view == self._team_view:
            return None
        self._team_view = view
        if team_phase is CoordinatorTeamStatus.DONE:
            phase = _RUN_PHASE[run.status] if run.status is not None else Phase.COMPLETED
        else:
            phase = _TEAM_PHASE[team_phase]
        return self._envelope(
            fact,
            EventType.TEAM_CHANGED,
            owner=Owner.AGENT,
            scope=Scope.TEAM,
            phase=phase,
            surface=Surface.TEAM_ROSTER,
            persistence=Persistence.SNAPSHOT,
            payload={
                "teamName": run.team,
                "teamPhase": team_phase.value,
                "teamParallelBudget": run.parallel_budget,
                "teamActiveCount": active,
                "teamQueuedCount": queued,
            },
        )

    def _team_phase(self) -> CoordinatorTeamStatus:
        """The team's phase.

        - ``forming`` until the first delegation.
        - ``waiting`` while an approval is pending.
        - ``active`` while delegated work runs or waits in the queue.
        - ``merging`` once it has all finished (the coordinator synthesizes).
        - ``waiting`` too while a conversation waits for its next message.
        - ``done`` when the run ended.
        """
        run = self.state.run
        if run is not None and run.status is not None:
            return CoordinatorTeamStatus.DONE
        if self.state.has_pending_approval():
            return CoordinatorTeamStatus.WAITING
        coordinator = self.state.coordinator_chat()
        if coordinator is not None and self.state.member_status(coordinator) is MemberStatus.IDLE:
            return CoordinatorTeamStatus.WAITING
        if not self.state.delegated_count():
            return CoordinatorTeamStatus.FORMING
        if self.state.unfinished_count():
            return CoordinatorTeamStatus.ACTIVE
        return CoordinatorTeamStatus.MERGING


#: What each action type projects to (``AgentUiProjector.feed``); any other type is
#: resolved by base.resolve_subclass on its first fact.
_PROJECTIONS: dict[type, Callable[[AgentUiProjector, Fact, Any], list[Envelope]]] = {
    RunStarted: AgentUiProjector._feed_run_started,
    MemberJoined: AgentUiProjector._feed_member_joined,
    TaskCreated: AgentUiProjector._feed_task_created,
    TaskStarted: AgentUiProjector._feed_task_started,
    TaskFinished: AgentUiProjector._feed_task_finished,
    HandoffRecorded: AgentUiProjector._feed_handoff,
    ApprovalRequested: AgentUiProjector._feed_approval_requested,
    ApprovalResolved: AgentUiProjector._feed_approval_resolved,
    RunFinished: AgentUiProjector._feed_run_finished,
    SessionChatAddedAction: AgentUiProjector._feed_chat_added,
    ChatInputRequestedAction: AgentUiProjector._feed_input_requested,
    ChatInputCompletedAction: AgentUiProjector._feed_input_completed,
    ChatPendingMessageSetAction: AgentUiProjector._feed_queue,
    ChatPendingMessageRemovedAction: AgentUiProjector._feed_queue,
    ChatTurnStartedAction: AgentUiProjector._feed_queue,
    ChatResponsePartAction: AgentUiProjector._feed_response_part,
    ReviewRequested: AgentUiProjector._feed_review,
    ReviewStarted: AgentUiProjector._feed_review,
    ReviewCompleted: AgentUiProjector._feed_review,
}
# The board's facts: each a work item's task.changed (see _project_board.py).
_PROJECTIONS.update(dict.fromkeys(BOARD_ACTION_TYPES.values(), feed_board))
_PROJECTED_TYPES: Final = tuple(_PROJECTIONS)
_UNRESOLVED: Final[Any] = object()


def project_facts(session: str, facts: Iterable[Fact]) -> list[Envelope]:
    """Every envelope of ``facts`` (one session's log, in order): a fresh projector's feed."""
    projector = AgentUiProjector(session)
    return [envelope for fact in facts for envelope in projector.feed(fact)]
