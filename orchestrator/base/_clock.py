"""The one wall clock and the one timestamp form of every fact.

A fact's ``at`` (and every other timestamp the daemon writes) is ISO 8601 in UTC with
milliseconds and ``Z``, the AHP form: :func:`timestamp` makes it from an aware instant,
:func:`parse_timestamp` reads it back, :func:`now_timestamp` is now in that form (the
runtime's default clock). :func:`utc_now` is the aware instant itself, for schedules and
durations. Tests pass their own clocks instead of patching these.

Pure: reading the system clock is the only thing here that touches the world.
"""

from __future__ import annotations

import datetime

__all__ = ["now_timestamp", "parse_timestamp", "timestamp", "utc_now"]


def utc_now() -> datetime.datetime:
    """Now, as an aware UTC instant."""
    return datetime.datetime.now(datetime.UTC)


def timestamp(instant: datetime.datetime) -> str:
    """``instant`` (aware) as an ISO 8601 UTC timestamp with milliseconds and ``Z`` (the AHP
    timestamp form, every fact's ``at``)."""
    utc = instant.astimezone(datetime.UTC)
    return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_timestamp() -> str:
    """Now, as a fact's timestamp (see :func:`timestamp`)."""
    return timestamp(utc_now())


def parse_timestamp(text: str) -> datetime.datetime:
    """A timestamp written by :func:`timestamp` (or any ISO 8601 with ``Z`` or an offset),
    back to an aware instant."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
