"""The fact timestamp: ``now_timestamp`` reuses the text of the current millisecond."""

from __future__ import annotations

import datetime
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import now_timestamp, parse_timestamp, timestamp


@given(st.integers(min_value=0, max_value=253_402_300_799_999))
def test_now_timestamp_is_the_timestamp_of_the_millisecond(millisecond: int) -> None:
    """For any millisecond, the text is what ``timestamp`` makes of that instant, and a
    second call within it returns the same text."""
    ns = millisecond * 1_000_000 + 999_999  # late in the millisecond: truncated, not rounded
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time_ns", lambda: ns)
        text = now_timestamp()
        assert now_timestamp() == text
    instant = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
        milliseconds=millisecond
    )
    assert text == timestamp(instant)
    assert parse_timestamp(text) == instant


def test_now_timestamp_follows_the_clock() -> None:
    """A new millisecond gets its own text, a new second its own prefix; the caches never
    answer for another one."""
    ticks = iter(
        [5_000_000, 5_999_999, 6_000_000, 999_999_999, 1_000_000_000, 1_700_000_000_123_000_000]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time_ns", lambda: next(ticks))
        seen = [now_timestamp() for _ in range(6)]
    assert seen == [
        "1970-01-01T00:00:00.005Z",
        "1970-01-01T00:00:00.005Z",
        "1970-01-01T00:00:00.006Z",
        "1970-01-01T00:00:00.999Z",
        "1970-01-01T00:00:01.000Z",
        "2023-11-14T22:13:20.123Z",
    ]


def test_now_timestamp_is_now() -> None:
    before = time.time()
    stamped = parse_timestamp(now_timestamp()).timestamp()
    after = time.time()
    assert before - 0.001 <= stamped <= after
