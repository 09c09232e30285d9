"""Agent UI envelopes of a background teammate: ``task.changed`` and ``agent.changed``.

Spec: ``shared/spec/agent-ui-flow-and-taxonomy.txt``, "Runtime execution alignment": a
durable automation job maps to ``task.changed`` and, when agent-owned, ``agent.changed`` with
``runtimeEntity = "automation_job"``, carrying the task id, the schedule or wake reason,
the runtime status and a reference to the last run. A background teammate is always
agent-owned (its agent runs each wake's turn), so every change yields both envelopes, the
task first. Topology ``background_teammate``, surface ``background_teammate``.

Ids: the task id is ``teammate:<team>/<name>``; the agent id ``<name>@<team>``, the
teammate as one teammate across its runs (each run's session has its own roster). The
current run's session is ``refs.session``; the last run's is in ``payload.lastRun``.

Pure: envelopes from a fact and the state it led to; the caller passes what the facts do
not say (when the teammate wakes next, and whether its run waits for a person).
"""

from __future__ import annotations

from typing import Any

from orchestrator.core import TeammateState

from ._agentui import (
    BackgroundJobStatus,
    Control,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    RuntimeEntity,
    Scope,
    Surface,
    Topology,
)

__all__ = [
    "teammate_envelopes",
]

_PHASE = {
    BackgroundJobStatus.SCHEDULED: Phase.WAITING,
    BackgroundJobStatus.SLEEPING: Phase.WAITING,
    BackgroundJobStatus.WAKING: Phase.PREPARING,
    BackgroundJobStatus.RUNNING: Phase.ACTING,
    BackgroundJobStatus.BLOCKED: Phase.WAITING,
    BackgroundJobStatus.PAUSED: Phase.WAITING,
    BackgroundJobStatus.FAILED: Phase.FAILED,
    BackgroundJobStatus.COMPLETED: Phase.COMPLETED,
}


def teammate_task_id(team: str, name: str) -> str:
    return f"teammate:{team}/{name}"


def teammate_agent_id(team: str, name: str) -> str:
    return f"{name}@{team}"


def teammate_envelopes(
    state: TeammateState,
    *,
    sequence: int,
    at: str,
    agent: str,
    next_wake: str | None,
    blocked: bool = False,
) -> list[Envelope]:
    """The ``task.changed`` and ``agent.changed`` envelopes of ``state`` as of ``at``,
    numbered from ``sequence`` (the fact that led to it, times two, keeps a stream's
    envelopes ordered and distinct: see :func:`envelope_sequence`)."""
    status = state.status(blocked=blocked)
    wake = state.last_wake
    last = state.last_run
    payload: dict[str, Any] = {
        "runtimeEntity": RuntimeEntity.AUTOMATION_JOB.value,
        "runtimeStatus": status.value,
        "status": status.value,
        "title": state.name,
        "teamName": state.team,
        "agentName": agent,
        "schedule": state.schedule,
        "nextWake": None if state.paused else next_wake,
        "paused": state.paused,
    }
    if wake is not None:
        payload["wakeReason"] = wake.reason.value
        payload["wakeDecision"] = wake.decision.value
        if wake.scheduled_for is not None:
            payload["scheduledFor"] = wake.scheduled_for
    if state.paused_by is not None:
        payload["pausedBy"] = state.paused_by
    if state.backlog:
        payload["queuedCount"] = len(state.backlog)
    if last is not None:
        payload["lastRun"] = last.to_json()
    refs: dict[str, Any] | None = None
    if state.running is not None:
        refs = {"session": state.running.session}
        payload["currentRun"] = state.running.to_json()
    control = Control.STOP if state.running is not None else None
    common: dict[str, Any] = {
        "timestamp": at,
        "session_id": state.running.session if state.running is not None else None,
        "task_id": teammate_task_id(state.team, state.name),
        "agent_id": teammate_agent_id(state.team, state.name),
        "phase": _PHASE[status],
        "surface": Surface.BACKGROUND_TEAMMATE,
        "persistence": Persistence.SNAPSHOT,
        "control": control,
        "topology": Topology.BACKGROUND_TEAMMATE,
        "refs": refs,
    }
    return [
        Envelope(
            type=EventType.TASK_CHANGED,
            sequence=envelope_sequence(sequence, 0),
            owner=Owner.TASK,
            scope=Scope.TASK,
            payload=payload,
            raw_event_ref=f"fact:{sequence}",
            **common,
        ),
        Envelope(
            type=EventType.AGENT_CHANGED,
            sequence=envelope_sequence(sequence, 1),
            owner=Owner.AGENT,
            scope=Scope.AGENT,
            payload=payload,
            raw_event_ref=f"fact:{sequence}",
            **common,
        ),
    ]


def envelope_sequence(fact_sequence: int, index: int) -> int:
    """The envelope sequence of the ``index``-th envelope of a stream's fact."""
    return fact_sequence * 2 + index
