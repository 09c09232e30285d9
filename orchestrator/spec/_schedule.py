"""When a background teammate wakes: schedules, catch-up and overlap, as pure functions.

Theory of operation: a schedule is either a cron expression read in a time zone
(:class:`Cron`) or a fixed interval (:class:`Every`). Wake times are instants, aware
datetimes in UTC, in and out; nothing here reads a clock.

An interval counts elapsed time from the Unix epoch: ``every = "15m"`` wakes at
:00, :15, :30 and :45 of every UTC hour, whatever the process did before, so a restart
computes the same wakes as the process it replaces. A time zone would change nothing,
and the team file refuses one beside ``every``.

A cron expression matches *wall-clock* times (croniter enumerates them, naive, in the
zone's local time). This module maps each matching wall time to the instants it stands for,
itself. croniter can iterate aware datetimes too. But with ``zoneinfo`` it runs a fixed-hour
job twice on the day the clocks go back (``30 2 * * *`` wakes at 02:30 CEST and again at 02:30
CET); the tests pin that down. The rule, ISC cron's (``man 8
cron``: "Only jobs that run at a particular time (not specified as @hourly, nor with '*'
in the hour or minute specifier) are affected"):

* **Fixed-time schedules** (neither the minute nor the hour field starts with ``*``)
  keep to the wall clock. A time the clocks skip (02:30 on the day they go forward) wakes
  once, at the instant the gap ends (03:00 summer time): late, never lost. A time that
  happens twice (02:30 on the day they go back) wakes once, at its first occurrence.
* **Elapsed-time schedules** (the minute or the hour field starts with ``*``:
  ``*/15 * * * *``, ``@hourly``) follow the clock as it runs: a time the clocks skip does
  not happen, and a time that happens twice wakes twice. ``*/15`` stays 15 minutes apart
  in real time through both changes.

Searching: the instant of a wall time never decreases as the wall time grows when one
takes its *first* instant (the gap's end for a skipped time). Nor does it when one takes its
*last*. But a doubled wall time's second instant can come after later wall times' first
ones. So the forward search starts early enough to see every doubled wall time whose second
pass is still ahead. It keeps the smallest instant past ``after``. It stops at the first wall
time whose first instant is already past it. The backward search mirrors that with last
instants.
"""

from __future__ import annotations

import datetime as dt
import difflib
import enum
import functools
import re
import zoneinfo
from collections.abc import Iterator, Mapping
from typing import Final, TypeAlias

import attrs

from orchestrator.base import ScheduleError

__all__ = [
    "BackgroundSpec",
    "CatchUp",
    "Cron",
    "Decision",
    "Every",
    "Overlap",
    "Schedule",
    "missed_wakes",
    "next_wake",
    "on_wake",
    "parse_cron",
    "parse_duration",
    "parse_zone",
    "run_deadline",
]

UTC: Final = dt.UTC
#: Where intervals count from, so every process computes the same grid of wakes.
EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=UTC)
DEFAULT_CATCH_UP_LIMIT: Final = 10
#: The longest duration a team file may write (an interval or a run's max_runtime).
MAX_DURATION: Final = dt.timedelta(days=366)

_SECOND: Final = dt.timedelta(seconds=1)
_MINUTE: Final = dt.timedelta(minutes=1)
_DAY: Final = dt.timedelta(days=1)

#: The usual cron shorthands, spelled out (croniter knows them too; spelling them out
#: here lets the elapsed-time rule read the minute and hour fields of every schedule).
_ALIASES: Final[Mapping[str, str]] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS: Final = ("minute", "hour", "day-of-month", "month", "day-of-week")
_CRON_EXPECTED: Final = (
    "expected 5 fields (minute hour day-of-month month day-of-week) such as "
    '"0 3 * * *", or one of ' + ", ".join(_ALIASES)
)
#: A naive start from which a cron expression must find a match to be accepted at all.
_PROBE_START: Final = dt.datetime(2000, 1, 1)

_DURATION_RE: Final = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?\Z")
_DURATION_EXPECTED: Final = (
    'expected a whole number and a unit: "90s", "15m", "2h" or "1d" (or combined, "1h30m")'
)


class Overlap(enum.StrEnum):
    """What a wake does while the teammate's last run is still going (``overlap``)."""

    SKIP = "skip"  # the wake is dropped; the running run goes on
    QUEUE = "queue"  # the wake runs when the running run ends (at most one waits)
    REPLACE = "replace"  # the running run is stopped, then the wake starts a new one


class CatchUp(enum.StrEnum):
    """Which wakes missed while the daemon was down run when it comes back (``catch_up``)."""

    NONE = "none"  # none: the teammate waits for its next wake
    LATEST = "latest"  # the most recent missed wake runs, once
    ALL = "all"  # each missed wake runs, the most recent ``catch_up_limit`` of them


class Decision(enum.StrEnum):
    """What to do with a wake, from :func:`on_wake`."""

    START = "start"  # start a run now
    SKIP = "skip"  # drop this wake
    QUEUE = "queue"  # start a run when the running one ends
    REPLACE = "replace"  # stop the running run, then start a new one


@attrs.frozen(kw_only=True)
class Cron:
    """A cron expression read in a time zone. Build it with :func:`parse_cron`.

    ``expression`` has exactly five fields, single-spaced (an alias such as ``@daily`` is
    spelled out); ``timezone`` is an IANA name that :mod:`zoneinfo` knows.
    """

    expression: str
    timezone: str = "UTC"

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        """The time zone the expression is read in."""
        return zoneinfo.ZoneInfo(self.timezone)

    @property
    def follows_elapsed_time(self) -> bool:
        """Whether the minute or hour field starts with ``*`` (see the module's DST rule)."""
        minute, hour = self.expression.split()[:2]
        return minute.startswith("*") or hour.startswith("*")


@attrs.frozen(kw_only=True)
class Every:
    """A fixed interval, counted from the Unix epoch.

    Invariant: dt.timedelta(0) < self.interval <= MAX_DURATION
    """

    interval: dt.timedelta


Schedule: TypeAlias = Cron | Every


@attrs.frozen(kw_only=True)
class BackgroundSpec:
    """One ``[[background]]`` teammate of a team file: when it wakes and what it then does.

    ``agent`` is the agent definition that runs the wake's turn (the team's coordinator
    unless the file names another).

    Invariant: self.catch_up_limit >= 1
    Invariant: self.max_runtime is None or self.max_runtime > dt.timedelta(0)
    """

    name: str
    schedule: Schedule
    prompt: str
    agent: str
    overlap: Overlap = Overlap.SKIP
    max_runtime: dt.timedelta | None = None
    catch_up: CatchUp = CatchUp.LATEST
    catch_up_limit: int = DEFAULT_CATCH_UP_LIMIT


# --------------------------------------------------------------------------- parsing


def parse_duration(text: str) -> dt.timedelta:
    """``"90s"``, ``"15m"``, ``"2h"``, ``"1d"`` or a combination in that order (``"1h30m"``).

    :class:`ScheduleError` unless the duration is more than zero and at most 366 days.
    """
    match = _DURATION_RE.match(text)
    if match is None or not any(match.groups()):
        raise ScheduleError(f"invalid duration {text!r}: {_DURATION_EXPECTED}")
    days, hours, minutes, seconds = (int(group or 0) for group in match.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total == 0:
        raise ScheduleError(f"invalid duration {text!r}: it must be longer than zero")
    if total > MAX_DURATION.total_seconds():
        raise ScheduleError(f"invalid duration {text!r}: it must be at most {MAX_DURATION.days}d")
    return dt.timedelta(seconds=total)


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def parse_zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA time zone ``name`` (``"Europe/Berlin"``, ``"UTC"``); :class:`ScheduleError`
    with the closest names if there is none such."""
    # One membership test instead of mapping ZoneInfo's several errors (not found, a bad
    # path, a directory such as "Europe"), and the list to suggest the closest name from.
    if name not in _zone_names():
        close = difflib.get_close_matches(name, sorted(_zone_names()), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ScheduleError(
            f"unknown time zone {name!r}{hint}; expected an IANA time zone name such as "
            '"Europe/Berlin", "America/New_York" or "UTC"'
        )
    return zoneinfo.ZoneInfo(name)


def parse_cron(expression: str, timezone: str = "UTC") -> Cron:
    """Check a cron expression and a time zone; :class:`ScheduleError` says what is wrong.

    Five fields, with croniter's syntax within each (ranges, steps, lists, month and day
    names, ``L``, ``#``), or an alias. Not croniter's seconds and years columns. Not its
    hashed (``H``) or random (``R``) values either: they would wake at other times after a
    restart. An expression that never matches (``0 0 31 2 *``) is refused too.
    """
    fields = _ALIASES.get(expression.strip().lower(), expression).split()
    if len(fields) != len(_FIELDS):
        raise ScheduleError(
            f"invalid cron expression {expression!r}: {len(fields)} fields; {_CRON_EXPECTED}"
        )
    for field_name, field in zip(_FIELDS, fields, strict=True):
        if {word.lower() for word in re.findall(r"[A-Za-z]+", field)} & {"h", "r"}:
            raise ScheduleError(
                f"invalid cron expression {expression!r}: the {field_name} field {field!r} "
                "uses a hashed (H) or random (R) value; write the time itself, so a restart "
                "wakes at the same times"
            )
    normalized = " ".join(fields)
    # croniter is imported when a cron expression is read: a team without one (and
    # `teams check` of it) does not load it.
    from croniter import CroniterBadDateError, croniter

    try:
        croniter(normalized, _PROBE_START).get_next(dt.datetime)
    except CroniterBadDateError as exc:
        raise ScheduleError(
            f"invalid cron expression {expression!r}: it never matches a date"
        ) from exc
    # croniter reports bad fields as CroniterBadCronError (a ValueError); odd input has
    # also been seen to escape as the other exceptions of its own parsing.
    except (ValueError, LookupError, TypeError, OverflowError) as exc:
        raise ScheduleError(
            f"invalid cron expression {expression!r}: {exc}; {_CRON_EXPECTED}"
        ) from exc
    parse_zone(timezone)
    return Cron(expression=normalized, timezone=timezone)


# --------------------------------------------------------------------------- wakes


def next_wake(spec: BackgroundSpec, after: dt.datetime) -> dt.datetime:
    """The first wake of ``spec`` strictly after the instant ``after`` (aware; UTC out)."""
    after = _utc(after, "after")
    schedule = spec.schedule
    if isinstance(schedule, Every):
        return EPOCH + ((after - EPOCH) // schedule.interval + 1) * schedule.interval
    return _cron_next(schedule, after)


def missed_wakes(
    spec: BackgroundSpec, last_wake: dt.datetime, now: dt.datetime
) -> list[dt.datetime]:
    """The wakes in ``(last_wake, now]`` that run now, by ``spec.catch_up``, oldest first.

    ``none``: none. ``latest``: the most recent one. ``all``: the most recent
    ``spec.catch_up_limit`` ones. Empty when no wake was missed.
    """
    last_wake = _utc(last_wake, "last_wake")
    now = _utc(now, "now")
    count = {
        CatchUp.NONE: 0,
        CatchUp.LATEST: 1,
        CatchUp.ALL: spec.catch_up_limit,
    }[spec.catch_up]
    if count == 0 or now <= last_wake:
        return []
    schedule = spec.schedule
    if isinstance(schedule, Every):
        newest = (now - EPOCH) // schedule.interval
        oldest = max((last_wake - EPOCH) // schedule.interval + 1, newest - count + 1)
        return [EPOCH + k * schedule.interval for k in range(oldest, newest + 1)]
    return _cron_latest(schedule, last_wake, now, count)


#: What a wake does while a run is going, by overlap policy (no run going: it starts).
_WHILE_RUNNING: Final[Mapping[Overlap, Decision]] = {
    Overlap.SKIP: Decision.SKIP,
    Overlap.QUEUE: Decision.QUEUE,
    Overlap.REPLACE: Decision.REPLACE,
}


def on_wake(spec: BackgroundSpec, running: bool, *, queued: bool = False) -> Decision:
    """What a wake of ``spec`` does, given whether a run is going and a wake already waits.

    Nothing running: start. Otherwise the overlap policy decides; under ``queue`` at most
    one wake waits (a later one while it waits is skipped), so a run slower than its
    schedule does not pile up a backlog.
    """
    if not running:
        return Decision.START
    decision = _WHILE_RUNNING[spec.overlap]
    if decision is Decision.QUEUE and queued:
        return Decision.SKIP
    return decision


def run_deadline(spec: BackgroundSpec, started: dt.datetime) -> dt.datetime | None:
    """When a run that started at ``started`` is stopped (``max_runtime``), or None."""
    started = _utc(started, "started")
    return None if spec.max_runtime is None else started + spec.max_runtime


# --------------------------------------------------------------------------- cron search


def _utc(instant: dt.datetime, name: str) -> dt.datetime:
    if instant.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {instant.isoformat()}")
    return instant.astimezone(UTC)


def _offset_range(instant: dt.datetime, zone: dt.tzinfo) -> tuple[dt.timedelta, dt.timedelta]:
    """The smallest and largest UTC offsets of ``zone`` within a day of ``instant``."""
    offsets = [
        offset
        for shift in (-_DAY, dt.timedelta(0), _DAY)
        if (offset := (instant + shift).astimezone(zone).utcoffset()) is not None
    ]
    return min(offsets), max(offsets)


def _wall(instant: dt.datetime, offset: dt.timedelta) -> dt.datetime:
    """The naive wall time of the UTC ``instant`` under ``offset``, cut to the minute."""
    return (instant + offset).replace(tzinfo=None, second=0, microsecond=0)


def _instants(wall: dt.datetime, zone: dt.tzinfo, *, elapsed: bool) -> tuple[dt.datetime, ...]:
    """The instants (UTC, ascending) a matching wall time wakes at, by the module's rule."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if first == second:
        return (first,)
    if first < second:  # the clocks went back: the wall time happens twice
        return (first, second) if elapsed else (first,)
    # The clocks went forward over it (PEP 495: fold=0 reads a skipped time with the offset
    # before the change, so it lands after the change).
    return () if elapsed else (_gap_end(second, first, zone),)


def _gap_end(before: dt.datetime, after: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """The instant the clocks jumped, between ``before`` (old offset) and ``after`` (new),
    to the second (the time zone database records changes in whole seconds)."""
    old = before.astimezone(zone).utcoffset()
    low, high = (before - EPOCH) // _SECOND, (after - EPOCH) // _SECOND
    while high - low > 1:
        middle = (low + high) // 2
        if (EPOCH + middle * _SECOND).astimezone(zone).utcoffset() == old:
            low = middle
        else:
            high = middle
    return EPOCH + high * _SECOND


def _walls(cron: Cron, start: dt.datetime, *, backwards: bool) -> Iterator[dt.datetime]:
    """The wall times matching ``cron`` strictly after (or before) the naive ``start``."""
    from croniter import croniter

    matches = croniter(cron.expression, start)
    step = matches.get_prev if backwards else matches.get_next
    while True:
        yield step(dt.datetime)


def _cron_next(cron: Cron, after: dt.datetime) -> dt.datetime:
    zone, elapsed = cron.zone, cron.follows_elapsed_time
    # A wall time whose second pass is after `after` is later than `after` read with the
    # smallest offset around it; any wall time with an instant after `after` is too.
    lowest, _ = _offset_range(after, zone)
    best: dt.datetime | None = None
    for wall in _walls(cron, _wall(after, lowest), backwards=False):
        instants = _instants(wall, zone, elapsed=elapsed)
        for instant in instants:
            if instant > after and (best is None or instant < best):
                best = instant
        if instants and instants[0] > after:  # every later wall time's instants are too
            assert best is not None
            return best
    raise AssertionError("unreachable: croniter's iteration does not end")  # pragma: no cover


def _cron_latest(
    cron: Cron, last_wake: dt.datetime, now: dt.datetime, count: int
) -> list[dt.datetime]:
    zone, elapsed = cron.zone, cron.follows_elapsed_time
    # Every wall time with an instant at or before `now` is at or before `now` read with the
    # largest offset around it; the start is exclusive, so begin a minute past that.
    _, highest = _offset_range(now, zone)
    found: set[dt.datetime] = set()
    # The loop ends by a break: croniter's iteration does not end.
    for wall in _walls(cron, _wall(now, highest) + _MINUTE, backwards=True):  # pragma: no branch
        instants = _instants(wall, zone, elapsed=elapsed)
        if not instants:
            continue
        found.update(i for i in instants if last_wake < i <= now)
        ceiling = instants[-1]  # no earlier wall time has an instant after this
        if ceiling <= last_wake:
            break
        if len(found) >= count and sorted(found)[-count] >= ceiling:
            break
    return sorted(found)[-count:]
