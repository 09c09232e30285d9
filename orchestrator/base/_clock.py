"""The one wall clock and the one timestamp form of every fact.

A fact's ``at`` (and every other timestamp the daemon writes) is ISO 8601 in UTC with
milliseconds and ``Z``, the AHP form.

- :func:`timestamp` makes it from an aware instant.
- :func:`parse_timestamp` reads it back.
- :func:`now_timestamp` is now in that form (the runtime's default clock).

:func:`utc_now` is the aware instant itself, for schedules and durations. Tests pass their own
clocks instead of patching these.

Pure: reading the system clock is the only thing here that touches the world.
"""

from __future__ import annotations

import datetime
import time

__all__ = ["now_timestamp", "parse_timestamp", "timestamp", "utc_now"]


def utc_now() -> datetime.datetime:
    """Now, as an aware UTC instant."""
    return datetime.datetime.now(datetime.UTC)


def timestamp(instant: datetime.datetime) -> str:
    """``instant`` (aware) as an ISO 8601 UTC timestamp with milliseconds and ``Z`` (the AHP
    timestamp form, every fact's ``at``)."""
    utc = instant.astimezone(datetime.UTC)
    return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: The last millisecond :func:`now_timestamp` formatted (since the epoch), and its text.
_last_formatted: tuple[int, str] = (-1, "")
#: The last second it formatted, and its text up to the milliseconds (``...T00:14:26.``).
_last_second: tuple[int, str] = (-1, "")


def now_timestamp() -> str:
    """Now, as a fact's timestamp (see :func:`timestamp`).

    The runtime stamps every batch of facts, many a millisecond. So the text of the current
    millisecond is made once and reused. Within a second only its milliseconds are written
    again. It is the same text as ``timestamp(utc_now())``, which truncates to the
    millisecond, from the same clock, ``CLOCK_REALTIME``. Each cache is one tuple, replaced
    whole, so threads may share them.
    """
    global _last_formatted, _last_second
    millisecond = time.time_ns() // 1_000_000
    last = _last_formatted
    if last[0] == millisecond:
        return last[1]
    second, rest = divmod(millisecond, 1000)
    prefix = _last_second
    if prefix[0] != second:
        whole = timestamp(datetime.datetime.fromtimestamp(second, datetime.UTC))
        prefix = _last_second = (second, whole[:-4])  # without "000Z"
    text = f"{prefix[1]}{rest:03d}Z"
    _last_formatted = (millisecond, text)
    return text


def parse_timestamp(text: str) -> datetime.datetime:
    """A timestamp written by :func:`timestamp` (or any ISO 8601 with ``Z`` or an offset),
    back to an aware instant."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
