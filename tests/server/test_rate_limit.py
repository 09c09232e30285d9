"""The rate limit of a client's frames (``server/_rate_limit``): a token bucket on the
caller's clock, bursts up to ``burst``, ``rate`` a second on average after that."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.server._rate_limit import TokenBucket


def test_a_burst_passes_and_the_next_waits_for_its_token() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, now=100.0)
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(100.4) is False  # 0.8 of a token
    assert bucket.take(100.5) is True  # one token after half a second at 2 a second
    assert bucket.take(100.5) is False


def test_a_long_pause_refills_no_more_than_the_burst() -> None:
    bucket = TokenBucket(rate=10.0, burst=2, now=0.0)
    assert [bucket.take(3600.0) for _ in range(3)] == [True, True, False]


def test_a_clock_that_goes_back_mints_no_token() -> None:
    bucket = TokenBucket(rate=1.0, burst=1, now=50.0)
    assert bucket.take(50.0) is True
    assert bucket.take(10.0) is False
    assert bucket.take(50.5) is False, "the step back is not credited again going forward"


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1), (-1.0, 1), (math.nan, 1), (1.0, 0)])
def test_a_bucket_that_would_refuse_or_pass_everything_is_refused(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="rate above 0 and a burst of at least 1"):
        TokenBucket(rate=rate, burst=burst, now=0.0)


@given(
    rate=st.floats(min_value=0.01, max_value=1000),
    burst=st.integers(min_value=1, max_value=50),
    steps=st.lists(st.floats(min_value=0, max_value=5), max_size=200),
)
def test_what_passes_never_exceeds_the_burst_plus_the_rate_over_the_time(
    rate: float, burst: int, steps: list[float]
) -> None:
    bucket = TokenBucket(rate=rate, burst=burst, now=0.0)
    now = 0.0
    passed = 0
    for step in steps:
        now += step
        passed += bucket.take(now)
        assert passed <= burst + rate * now + 1e-9


class TestTokenBucket:
    @given(
        st.floats(min_value=0.1, max_value=100),
        st.integers(min_value=1, max_value=50),
        st.lists(st.floats(min_value=0, max_value=5), max_size=200),
    )
    def test_never_more_than_burst_plus_rate_times_elapsed(
        self, rate: float, burst: int, gaps: list[float]
    ) -> None:
        bucket = TokenBucket(rate=rate, burst=burst, now=0.0)
        now = 0.0
        passed = 0
        for gap in gaps:
            now += gap
            passed += bucket.take(now)
        assert passed <= burst + rate * now + 1e-6

    def test_a_burst_then_a_refill(self) -> None:
        bucket = TokenBucket(rate=2, burst=3, now=0.0)
        assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
        assert bucket.take(0.5) is True
        assert bucket.take(0.5) is False

    def test_nonsense_is_refused(self) -> None:
        with pytest.raises(ValueError, match="rate above 0"):
            TokenBucket(rate=0, burst=1, now=0)
