"""A token bucket: at most ``rate`` messages a second on average, bursts up to ``burst``.

Pure: the caller passes the time (trio's clock), so tests run it on any clock.
"""

from __future__ import annotations

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(self, *, rate: float, burst: int, now: float) -> None:
        if not rate > 0 or burst < 1:  # NaN too: it would let everything through
            raise ValueError("a token bucket needs a rate above 0 and a burst of at least 1")
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._at = now

    def take(self, now: float) -> bool:
        """Spend one token if there is one (the message may pass); False if not."""
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = max(self._at, now)
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False
