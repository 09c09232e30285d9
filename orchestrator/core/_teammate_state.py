"""A background teammate's state: a pure fold of its stream of facts.

The scheduler (:mod:`orchestrator.sessions._scheduler`) records :mod:`._teammate_actions` facts
and folds them here. After a restart it folds the stream read back from the journal. From that
alone it knows:

- which scheduled wakes were handled (every wake before :attr:`TeammateState.due_from`);
- whether a run is going, and in which session;
- which wakes wait for it;
- whether the teammate is paused.

Nothing here reads a clock or does IO.

The teammate's status is the Agent UI background-job status:

- ``scheduled``: it has not run yet;
- ``sleeping``: between runs;
- ``waking``: a wake waits to start its run;
- ``running``;
- ``blocked``: the run waits for a person (the scheduler knows, the facts do not);
- ``paused``.

How each run ended (``completed``, ``failed``...) is the run's outcome, shown as
the last run beside the status: a teammate that wakes again is never itself "completed".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

import attrs

from ._facts import Fact
from ._teammate_actions import (
    TeammatePaused,
    TeammateResumed,
    TeammateRunFinished,
    TeammateRunOutcome,
    TeammateRunStarted,
    TeammateSlept,
    TeammateWoke,
    WakeDecision,
    WakeReason,
)

__all__ = [
    "RUNS_KEPT",
    "BackgroundJobStatus",
    "TeammateRun",
    "TeammateState",
    "Wake",
    "fold_teammate",
]

#: Ended runs a state keeps (the journal keeps them all): enough for any history a person
#: reads, and a bound on what a teammate that wakes every minute holds in memory.
RUNS_KEPT = 1_000


class BackgroundJobStatus(StrEnum):
    """Status of a background job or scheduled teammate run: Agent UI's vocabulary
    (``protocols`` re-exports it), decided here by :meth:`TeammateState.status`."""

    SCHEDULED = "scheduled"
    SLEEPING = "sleeping"
    WAKING = "waking"
    RUNNING = "running"
    BLOCKED = "blocked"
    PAUSED = "paused"
    FAILED = "failed"
    COMPLETED = "completed"


@attrs.frozen(kw_only=True)
class Wake:
    """A wake that waits for the running run to end (overlap "queue" or "replace", or a
    catch-up backlog)."""

    reason: WakeReason
    scheduled_for: str | None = None
    by: str | None = None


@attrs.frozen(kw_only=True)
class TeammateRun:
    """One run: where it ran, why, and (once ended) how it ended."""

    session: str
    reason: WakeReason
    scheduled_for: str | None
    started_at: str
    by: str | None = None
    ended_at: str | None = None
    outcome: TeammateRunOutcome | None = None
    summary: str = ""
    error: str = ""
    usage: Mapping[str, int] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The run as ``teammates history --json`` prints it."""
        return {
            "start": self.started_at,
            "end": self.ended_at,
            "outcome": None if self.outcome is None else self.outcome.value,
            "reason": self.reason.value,
            "scheduledFor": self.scheduled_for,
            "session": self.session,
            "summary": self.summary,
            "error": self.error,
            "by": self.by,
            "usage": dict(self.usage),
        }


@attrs.frozen(kw_only=True)
class TeammateState:
    """What the stream of one teammate says, after its last fact.

    Invariant: self.running is None or self.running.outcome is None
    Invariant: all(run.outcome is not None for run in self.runs)
    Invariant: len(self.runs) == min(self.run_count, RUNS_KEPT)
    """

    team: str
    name: str
    last_sequence: int = 0
    schedule: str = ""
    # The first instant a scheduled wake is not handled yet (None: the teammate has never
    # slept: the scheduler starts its schedule from now).
    due_from: str | None = None
    paused: bool = False
    paused_by: str | None = None
    running: TeammateRun | None = None
    backlog: tuple[Wake, ...] = ()
    runs: tuple[TeammateRun, ...] = ()  # the last RUNS_KEPT ended runs, oldest first
    run_count: int = 0  # every ended run
    last_wake: TeammateWoke | None = None

    @property
    def last_run(self) -> TeammateRun | None:
        return self.runs[-1] if self.runs else None

    def status(self, *, blocked: bool = False) -> BackgroundJobStatus:
        """The Agent UI background-job status; ``blocked``: the running run waits for a
        person (an approval or a question)."""
        if self.running is not None:
            return BackgroundJobStatus.BLOCKED if blocked else BackgroundJobStatus.RUNNING
        if self.paused:
            return BackgroundJobStatus.PAUSED
        if self.backlog:
            return BackgroundJobStatus.WAKING
        return BackgroundJobStatus.SLEEPING if self.runs else BackgroundJobStatus.SCHEDULED

    def apply(self, fact: Fact) -> TeammateState:
        """The state after ``fact`` (facts of other streams, or of other kinds, change
        nothing but the sequence)."""
        action = fact.action
        changes: dict[str, Any] = {"last_sequence": fact.sequence}
        match action:
            case TeammateSlept():
                changes.update(schedule=action.schedule, due_from=action.next_wake)
            case TeammateWoke():
                changes["last_wake"] = action
                if action.decision in (WakeDecision.QUEUE, WakeDecision.REPLACE):
                    wake = Wake(
                        reason=action.reason, scheduled_for=action.scheduled_for, by=action.by
                    )
                    changes["backlog"] = (*self.backlog, wake)
            case TeammateRunStarted():
                changes["running"] = TeammateRun(
                    session=action.session,
                    reason=action.reason,
                    scheduled_for=action.scheduled_for,
                    started_at=fact.at,
                    by=action.by,
                )
                # The run answers the oldest waiting wake, if it is that one.
                if self.backlog and self.backlog[0] == Wake(
                    reason=action.reason, scheduled_for=action.scheduled_for, by=action.by
                ):
                    changes["backlog"] = self.backlog[1:]
            case TeammateRunFinished():
                if self.running is not None and self.running.session == action.session:
                    ended = attrs.evolve(
                        self.running,
                        ended_at=fact.at,
                        outcome=action.outcome,
                        summary=action.summary,
                        error=action.error,
                        usage=dict(action.usage),
                        by=action.by or self.running.by,
                    )
                    changes.update(
                        running=None,
                        runs=(*self.runs[-(RUNS_KEPT - 1) :], ended),
                        run_count=self.run_count + 1,
                    )
            case TeammatePaused():
                changes.update(paused=True, paused_by=action.by)
            case TeammateResumed():
                changes.update(paused=False, paused_by=None)
            case _:
                pass
        return attrs.evolve(self, **changes)

    def to_json(self, *, next_wake: str | None, blocked: bool = False) -> dict[str, Any]:
        """The teammate as ``teammates list --json`` prints it (``next_wake``: when it
        wakes next, which the scheduler knows and the facts may not yet)."""
        last = self.last_run
        return {
            "name": self.name,
            "team": self.team,
            "state": self.status(blocked=blocked).value,
            "schedule": self.schedule,
            "nextWake": None if self.paused else next_wake,
            "paused": self.paused,
            "pausedBy": self.paused_by,
            "running": None if self.running is None else self.running.to_json(),
            "waiting": len(self.backlog),
            "lastRun": None if last is None else last.to_json(),
            "runs": self.run_count,
        }


def fold_teammate(team: str, name: str, facts: Iterable[Fact]) -> TeammateState:
    """The state of teammate ``name`` of ``team`` after ``facts`` (its stream, in order)."""
    state = TeammateState(team=team, name=name)
    for fact in facts:
        state = state.apply(fact)
    return state
