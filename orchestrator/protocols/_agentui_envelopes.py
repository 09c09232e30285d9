"""Numbering and addressing Agent UI envelopes: what every envelope of a session carries.

:class:`EnvelopeBuilder` is the base of
:class:`~orchestrator.protocols._project_agentui.AgentUiProjector` (through
:class:`~orchestrator.protocols._agentui_requests.ActionRequests`): it holds what an
envelope's ids come from (the session's :class:`~orchestrator.core._team_state.TeamState`, the
envelope count, each member's ``agentId`` and lineage) and builds envelopes from them; the
projector decides which envelopes a fact makes. How the ids are chosen is the "Ids" section of
:mod:`orchestrator.protocols._project_agentui`. A subclass rather than a held object, so that
an envelope costs no extra attribute hop.

:func:`compact` drops a payload's absent fields, and ``agent.*`` payloads show a roster status
as the teammate status of the spec (``_WIRE_STATUS``).

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from typing import Any, Final

from orchestrator.core import Fact, MemberStatus, RunRecord, TaskRecord, TeamState

from ._agentui import (
    Control,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    RuntimeEntity,
    Scope,
    Surface,
    TeammateStatus,
    Topology,
)

__all__: list[str] = []

#: The teammate status a roster status is shown as on the wire (the spec's list has no
#: separate "needs approval": it is input the teammate needs, ``waitingFor`` says which).
_WIRE_STATUS: Final[dict[MemberStatus, tuple[TeammateStatus, str | None]]] = {
    MemberStatus.SPAWNING: (TeammateStatus.SPAWNING, None),
    MemberStatus.RUNNING: (TeammateStatus.RUNNING, None),
    MemberStatus.WAITING: (TeammateStatus.WAITING, "teammate"),
    MemberStatus.NEEDS_APPROVAL: (TeammateStatus.NEEDS_INPUT, "approval"),
    MemberStatus.NEEDS_INPUT: (TeammateStatus.NEEDS_INPUT, "answer"),
    # Its turn is over: it waits for its next message (a conversation's coordinator between
    # prompts; a teammate done with its part).
    MemberStatus.IDLE: (TeammateStatus.IDLE, "message"),
    MemberStatus.COMPLETED: (TeammateStatus.COMPLETED, None),
    MemberStatus.FAILED: (TeammateStatus.FAILED, None),
    MemberStatus.KILLED: (TeammateStatus.KILLED, None),
}


#: _WIRE_STATUS with the teammate status as its plain value, as payloads carry it.
_WIRE_STATUS_VALUE: Final[dict[MemberStatus, tuple[str, str | None]]] = {
    status: (teammate.value, waiting_for)
    for status, (teammate, waiting_for) in _WIRE_STATUS.items()
}
_AGENT_TURN: Final = RuntimeEntity.AGENT_TURN.value
_SUBAGENT_TURN: Final = RuntimeEntity.SUBAGENT_TURN.value
_AUTOMATION_JOB: Final = RuntimeEntity.AUTOMATION_JOB.value
_EXTERNAL_TASK: Final = RuntimeEntity.EXTERNAL_TASK.value


def compact(**fields: Any) -> dict[str, Any]:
    """A payload without its absent (``None``) fields: absent is not ``null`` on the wire."""
    return {key: value for key, value in fields.items() if value is not None}


def _topology(run: RunRecord) -> Topology | None:
    try:
        return Topology(run.topology)
    except ValueError:
        return None  # not a spec topology: say nothing rather than guess


class EnvelopeBuilder:
    """Numbers and addresses the Agent UI envelopes of one session.

    Holds what every envelope's ids come from: the session's :class:`TeamState` (folded by the
    subclass, or given and kept by someone else), the envelope count, each member's
    ``agentId`` and lineage, and the status last announced for each member (which
    :meth:`_agent_envelope` records).
    """

    def __init__(self, session: str, state: TeamState | None = None) -> None:
        self.session = session
        #: Whether :attr:`state` is someone else's, kept at each fact before it is fed
        #: (the projector then folds nothing: see AgentUiProjector).
        self.follows = state is not None
        self.state = TeamState(session) if state is None else state
        self._sequence = 0
        # Invariant: set(self._agent_ids) == set(self.state.members) between feeds
        self._agent_ids: dict[str, str] = {}  # chat URI -> agentId
        # chat URI -> (parent chat, delegating tool call); only for chats with a parent.
        self._lineage: dict[str, tuple[str, str]] = {}
        self._announced: dict[str, MemberStatus] = {}  # chat URI -> last status sent
        # What every envelope takes from the run record, worked out once per record (a
        # frozen RunRecord: a change of the run is a new record).
        self._run: RunRecord | None = None
        self._run_id: str | None = None
        self._run_topology: Topology | None = None

    def _envelope(
        self,
        fact: Fact,
        event: EventType,
        *,
        owner: Owner,
        scope: Scope,
        phase: Phase,
        surface: Surface,
        persistence: Persistence,
        control: Control | None = None,
        thread_id: str | None = None,
        turn_id: str | None = None,
        task_id: str | None = None,
        agent_id: str | None = None,
        parent_session_id: str | None = None,
        parent_thread_id: str | None = None,
        tool_call_id: str | None = None,
        action_id: str | None = None,
        artifact_id: str | None = None,
        evidence_id: str | None = None,
        topology: Topology | None = None,
        payload: dict[str, Any] | None = None,
        refs: dict[str, Any] | None = None,
    ) -> Envelope:
        self._sequence += 1
        run = self.state.run
        if run is not self._run:
            self._run = run
            self._run_id = run.run if run is not None else None
            self._run_topology = _topology(run) if run is not None else None
        # Every field of Envelope, in declaration order (Envelope.from_values).
        return Envelope.from_values(
            (
                event,  # type
                self._sequence,
                fact.at,  # timestamp
                self.session,  # session_id
                thread_id,
                self._run_id,
                turn_id,
                None,  # message_id
                None,  # part_id
                task_id,
                agent_id,
                parent_session_id,
                parent_thread_id,
                tool_call_id,
                action_id,
                artifact_id,
                evidence_id,
                owner,
                scope,
                phase,
                surface,
                persistence,
                control,
                topology or self._run_topology,
                payload,
                refs,
                f"fact:{fact.sequence}",  # raw_event_ref
                {},  # extra
            )
        )

    def _agent_envelope(
        self,
        fact: Fact,
        event: EventType,
        chat: str,
        status: MemberStatus,
        *,
        phase: Phase,
        **extra: Any,
    ) -> Envelope:
        """An ``agent.*`` envelope about member ``chat``, with its ids and lineage."""
        member = self.state.members[chat]
        parent = self._lineage.get(chat)
        chat_state = self.state.chats.get(chat)
        latest: str | None = None
        if chat_state is not None:
            if chat_state.active_turn is not None:
                latest = "running"
            elif chat_state.turns:
                latest = chat_state.turns[-1].state.value
        task = self.state.tasks.get(member.task)
        runtime_status = task.status.value if task is not None and task.chat == chat else None
        wire_status, waiting_for = _WIRE_STATUS_VALUE[status]
        payload = compact(
            agentName=member.agent,
            teamName=self._team_name(),
            role=member.role,
            status=wire_status,
            waitingFor=waiting_for,
            chat=chat,
            runtimeEntity=self._runtime_entity(chat),
            runtimeStatus=runtime_status,
            latestTurnStatus=latest,
            cardRef=card_ref(member.remote) if member.remote is not None else None,
            **extra,
        )
        self._announced[chat] = status
        return self._envelope(
            fact,
            event,
            owner=Owner.AGENT,
            scope=Scope.AGENT,
            phase=phase,
            surface=Surface.TEAM_ROSTER,
            persistence=Persistence.SNAPSHOT,
            thread_id=chat,
            task_id=member.task,
            agent_id=self._agent_ids[chat],
            parent_session_id=self.session if parent is not None else None,
            parent_thread_id=parent[0] if parent is not None else None,
            tool_call_id=parent[1] if parent is not None else None,
            payload=payload,
        )

    def _task_ids(self, task: TaskRecord) -> dict[str, Any]:
        """The ids of a task's envelopes: its worker (once started) and its delegation."""
        worker = task.chat
        return {
            "thread_id": worker,
            "task_id": task.task,
            "agent_id": self._agent_ids.get(worker) if worker is not None else None,
            "parent_session_id": self.session if task.requested_by is not None else None,
            "parent_thread_id": task.requested_by,
            "tool_call_id": task.tool_call_id,
        }

    # ── small lookups ──────────────────────────────────────────────────────

    def _team_name(self) -> str | None:
        return self.state.run.team if self.state.run is not None else None

    def _runtime_entity(self, chat: str) -> str:
        member = self.state.members.get(chat)
        if member is not None and member.remote is not None:
            return _EXTERNAL_TASK  # a remote teammate: its turns are a remote agent's task
        if chat == self.state.coordinator_chat():
            run = self.state.run
            if run is not None and run.background is not None:
                return _AUTOMATION_JOB  # a background teammate's wake
            return _AGENT_TURN
        return _SUBAGENT_TURN


def card_ref(url: str) -> str:
    """Where a remote teammate's Agent Card is published, from its base URL."""
    return url.rstrip("/") + "/.well-known/agent-card.json"
