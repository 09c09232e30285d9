"""Trying again to connect, with growing pauses, for a bounded time: :func:`reconnect`.

Shared by every connection that outlives a fault of its database: the PostgreSQL
journal's writer and listener (a server restarted or failed over), and a SQLite journal's
writer waiting for a lock another connection holds (see :mod:`._group_commit`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Final, TypeVar

__all__: list[str] = []

#: The first pause between two tries to reconnect, and the longest (it doubles in between).
RECONNECT_FIRST: Final = 0.1
RECONNECT_LONGEST: Final = 5.0

_T = TypeVar("_T")


class UnreachableError(Exception):
    """:func:`reconnect` gave up: the server did not take a connection for ``seconds``."""

    def __init__(self, seconds: float, last: BaseException | None) -> None:
        what = "" if last is None else f" ({' '.join(str(last).split())})"
        super().__init__(f"the database was unreachable for {seconds:.0f} s{what}")
        self.seconds = seconds
        self.last = last


class ReconnectStoppedError(Exception):
    """:func:`reconnect` was told to stop (its service is stopping)."""


def backoff(first: float = RECONNECT_FIRST, longest: float = RECONNECT_LONGEST) -> Iterator[float]:
    """The pauses between tries to reconnect: ``first``, doubling, ``longest`` at most."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, longest)


def reconnect(
    connect: Callable[[], _T],
    *,
    since: float,
    within: float,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    pauses: Iterator[float] | None = None,
    retry: Callable[[Exception], bool] | None = None,
) -> _T:
    """What ``connect`` returns, tried at once and then after each pause; blocking (a worker
    thread's).

    Args:
        connect: Makes the connection.
        since: ``clock``'s time the connection was lost.
        within: Seconds after ``since`` that it is tried, at most.
        stop: Once set, the tries stop; it also cuts a pause short.
        clock: The clock ``since`` is read on.
        pauses: The pauses between tries (default: :func:`backoff`'s).
        retry: Whether an exception of ``connect`` is tried again (default: every
            ``Exception``). One it says not to is raised as it is.

    Raises :class:`UnreachableError` past the bound, naming the last failure. Raises
    :class:`ReconnectStoppedError` once ``stop`` is set. Every ``Exception`` is tried again by
    default because a server restarting refuses connections, or answers "the database system
    is starting up", for a while.

    Shared by every connection that outlives a server restart: the journal's writer (which
    then checks what its lost transaction left, see :mod:`.._group_commit`), and a listener; and
    by a SQLite journal's writer waiting for a lock another connection holds."""
    stop = stop if stop is not None else threading.Event()
    pauses = pauses if pauses is not None else backoff()
    while True:
        if stop.is_set():
            raise ReconnectStoppedError()
        try:
            return connect()
        except Exception as exc:  # tried again until the bound: see above
            if retry is not None and not retry(exc):
                raise
            last: BaseException = exc
        left = since + within - clock()
        if left <= 0:
            raise UnreachableError(clock() - since, last) from last
        if stop.wait(min(next(pauses), left)):
            raise ReconnectStoppedError()
