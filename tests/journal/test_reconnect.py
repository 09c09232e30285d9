"""The reconnect loop: its back-off, its bound, its stop, and what it tries again."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.journal._reconnect import (
    ReconnectStoppedError,
    UnreachableError,
    backoff,
    reconnect,
)


class FakeClock(threading.Event):
    """``time.monotonic`` and a ``threading.Event`` whose waits advance it."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0
        self.waits: list[float] = []
        self.stop_after: int | None = None

    def __call__(self) -> float:
        return self.now

    def is_set(self) -> bool:
        return self.stop_after is not None and len(self.waits) >= self.stop_after

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        seconds = timeout
        self.waits.append(seconds)
        self.now += seconds
        return self.is_set()


class TestBackoff:
    def test_the_pauses_double_from_a_tenth_of_a_second_to_five(self) -> None:
        pauses = backoff()
        assert [next(pauses) for _ in range(9)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]

    @given(failures=st.integers(0, 40), within=st.floats(0, 60))
    def test_it_tries_until_it_connects_or_the_bound_passes(
        self, failures: int, within: float
    ) -> None:
        """Tried at once, then after each pause; never waits past ``within`` of the loss;
        past it, says for how long the server was unreachable and the last reason."""
        clock = FakeClock()
        tries: list[float] = []

        def connect_once_up() -> str:
            tries.append(clock.now)
            if len(tries) <= failures:
                raise OSError(f"refused {len(tries)}")
            return "connected"

        since = clock.now
        outcome: str | UnreachableError
        try:
            outcome = reconnect(
                connect_once_up, since=since, within=within, stop=clock, clock=clock
            )
        except UnreachableError as exc:
            outcome = exc
        if isinstance(outcome, UnreachableError):
            assert len(tries) <= failures
            assert clock.now >= since + within
            assert f"unreachable for {clock.now - since:.0f} s (refused {len(tries)})" in str(
                outcome
            )
        else:
            assert outcome == "connected"
            assert len(tries) == failures + 1
        assert clock.now <= since + within + 1e-9 or not clock.waits
        assert tries[0] == since, "the first try at once"
        expected = backoff()
        for waited in clock.waits[:-1]:
            assert waited == next(expected)

    def test_a_stop_cuts_it_short(self) -> None:
        clock = FakeClock()
        clock.stop_after = 2

        def refused() -> None:
            raise OSError("refused")

        with pytest.raises(ReconnectStoppedError):
            reconnect(refused, since=clock.now, within=60, stop=clock, clock=clock)
        assert clock.waits == [0.1, 0.2]

    def test_only_what_retry_accepts_is_tried_again(self) -> None:
        """With ``retry`` (a SQLite journal's: only a lock another connection holds), a
        failure it refuses is raised at once, as it is, not waited on until the bound."""
        clock = FakeClock()
        failures = [TimeoutError("locked"), TimeoutError("locked"), OSError("disk I/O error")]

        def fails() -> None:
            raise failures.pop(0)

        with pytest.raises(OSError, match="disk I/O error"):
            reconnect(
                fails,
                since=clock.now,
                within=60,
                stop=clock,
                clock=clock,
                retry=lambda exc: isinstance(exc, TimeoutError),
            )
        assert clock.waits == [0.1, 0.2]
