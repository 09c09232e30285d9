"""Teammate actions: the facts a background teammate's schedule records.

A ``[[background]]`` teammate of a team file has a log of its own beside the sessions its
runs open. The log holds:

- when it went to sleep and until when;
- each wake: why, for which scheduled instant, and what the overlap policy made of it;
- each run: the session it ran in, how it ended;
- who paused or resumed it.

Folding that log (:mod:`._teammate_state`) gives the teammate's state after a restart: which
wakes were handled, whether a run is going, whether it is paused. These are ``team/*`` actions
of the one fact vocabulary (DESIGN: "schedule wake/sleep"). They travel in the same
:class:`~._facts.Fact`. They are stored in the same journal, under the teammate's own stream
URI (:func:`teammate_uri`) rather than a session's.

Instants in these actions (``nextWake``, ``scheduledFor``) are ISO 8601 UTC strings, like a
fact's ``at``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote

import attrs

__all__ = [
    "TeammateAction",
    "TeammatePaused",
    "TeammateResumed",
    "TeammateRunFinished",
    "TeammateRunOutcome",
    "TeammateRunStarted",
    "TeammateSlept",
    "TeammateWoke",
    "WakeDecision",
    "WakeReason",
    "teammate_uri",
]

#: The URI scheme of a teammate's stream: ``orchestrator-teammate:/<team>/<name>``.
TEAMMATE_SCHEME: Final = "orchestrator-teammate"


def teammate_uri(team: str, name: str) -> str:
    """The stream (session and channel) of teammate ``name`` of team ``team``."""
    return f"{TEAMMATE_SCHEME}:/{quote(team, safe='')}/{quote(name, safe='')}"


class WakeReason(enum.StrEnum):
    """Why a teammate woke (the Agent UI "wake reason")."""

    SCHEDULE = "schedule"  # its schedule came due
    CATCH_UP = "catch_up"  # a wake missed while the daemon was down (catch_up policy)
    TRIGGER = "trigger"  # someone asked for a run now


class WakeDecision(enum.StrEnum):
    """What a wake did (see :func:`orchestrator.spec._schedule.on_wake`)."""

    START = "start"  # a run started
    SKIP = "skip"  # dropped: a run was going (overlap = "skip"), or one waits already
    QUEUE = "queue"  # waits for the running run to end
    REPLACE = "replace"  # the running run is stopped; this wake runs next


class TeammateRunOutcome(enum.StrEnum):
    """How one run of a teammate ended."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"  # the run's session was cancelled from elsewhere
    TIMED_OUT = "timed_out"  # still going after max_runtime
    STOPPED = "stopped"  # someone stopped it
    REPLACED = "replaced"  # a wake under overlap = "replace" stopped it


@attrs.frozen(kw_only=True)
class TeammateSlept:
    """The teammate sleeps until ``next_wake``: every scheduled wake before it is handled.

    Recorded when the daemon first knows the teammate, after each scheduled wake, when it
    is resumed, and when its schedule changed in the team file.
    """

    type: str = attrs.field(default="team/teammateSlept", init=False)
    name: str
    team: str
    schedule: str  # the schedule as the team file wrote it ("0 3 * * * Europe/Berlin")
    next_wake: str


@attrs.frozen(kw_only=True)
class TeammateWoke:
    """The teammate woke; ``decision`` says what came of it.

    A wake that starts a run is recorded in the same append as that run's
    :class:`TeammateRunStarted`, so no restart can see one without the other.
    """

    type: str = attrs.field(default="team/teammateWoke", init=False)
    name: str
    reason: WakeReason
    decision: WakeDecision
    scheduled_for: str | None = None  # the wake's scheduled instant (None: a trigger)
    by: str | None = None  # who triggered it (a trigger)


@attrs.frozen(kw_only=True)
class TeammateRunStarted:
    """A run began in the new session ``session`` (its turn runs under that URI).

    Recorded before the session's first fact: after a restart, a run whose session the
    journal does not know never started, and starts then under the same URI.
    """

    type: str = attrs.field(default="team/teammateRunStarted", init=False)
    name: str
    session: str
    reason: WakeReason
    scheduled_for: str | None = None
    by: str | None = None


@attrs.frozen(kw_only=True)
class TeammateRunFinished:
    """The run in ``session`` ended; ``summary`` is the start of its final answer."""

    type: str = attrs.field(default="team/teammateRunFinished", init=False)
    name: str
    session: str
    outcome: TeammateRunOutcome
    summary: str = ""
    error: str = ""
    by: str | None = None  # who stopped it (outcome "stopped")
    usage: Mapping[str, int] = attrs.field(factory=dict)  # token counts of all its chats


@attrs.frozen(kw_only=True)
class TeammatePaused:
    """No wake runs until :class:`TeammateResumed` (a trigger still does)."""

    type: str = attrs.field(default="team/teammatePaused", init=False)
    name: str
    by: str


@attrs.frozen(kw_only=True)
class TeammateResumed:
    """Wakes run again; the ones that came due while paused are dropped."""

    type: str = attrs.field(default="team/teammateResumed", init=False)
    name: str
    by: str


TeammateAction = (
    TeammateSlept
    | TeammateWoke
    | TeammateRunStarted
    | TeammateRunFinished
    | TeammatePaused
    | TeammateResumed
)

#: Wire ``type`` of every teammate action, for the converter's tagged union.
TEAMMATE_ACTION_TYPES: dict[str, type[TeammateAction]] = {
    "team/teammateSlept": TeammateSlept,
    "team/teammateWoke": TeammateWoke,
    "team/teammateRunStarted": TeammateRunStarted,
    "team/teammateRunFinished": TeammateRunFinished,
    "team/teammatePaused": TeammatePaused,
    "team/teammateResumed": TeammateResumed,
}
