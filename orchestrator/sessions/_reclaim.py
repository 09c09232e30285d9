"""Giving back the memory of the sessions that left the daemon.

A session that leaves memory (put away when idle, ended, disposed) is not freed when the
daemon lets go of it. Its objects are in reference cycles: the live session and its
projector's and bus observer's bound methods, its trio tasks, its clients' connection objects
in hypercorn and starlette. Only the cyclic collector frees a cycle. The daemon's collector
thresholds (:func:`orchestrator.runtime.tune_gc`: a young generation of 50,000 objects) make
the old generation rarely collected. A session's state ends up there after its first minutes.
An idle daemon allocates too little for any collection to come. Measured before this module,
8 sessions put away stayed whole (chat states, turns, tasks) until the next full collection.
A daemon with no session left never gave them back.

So the daemon asks. :meth:`Reclaimer.session_left` is called as each session leaves
:attr:`~orchestrator.sessions._daemon.Daemon.sessions`. :meth:`Reclaimer.serve` then:

- waits :data:`RECLAIM_AFTER` seconds, so the session's tasks and connections finish, and a
  burst of sessions put away by one idle scan is collected once;
- runs a full collection;
- hands the pages malloc then holds free back to the system
  (:func:`orchestrator.runtime.release_free_memory`, in a worker thread).

At most one collection every :data:`RECLAIM_EVERY` seconds: a full collection walks the whole heap
(some 50 ms per million objects), which sessions ending at a high rate must not pay each.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from typing import Any, Final

import attrs
import structlog
import trio

from orchestrator.runtime import release_free_memory

__all__ = ["ReclaimStatistics", "Reclaimer"]

log = structlog.get_logger("orchestrator.daemon")

#: Seconds after a session left before its memory is collected.
RECLAIM_AFTER: Final = 1.0
#: Seconds between two collections, at least.
RECLAIM_EVERY: Final = 30.0


@attrs.frozen(kw_only=True)
class ReclaimStatistics:
    """What the reclaimer did since the daemon started."""

    collections: int  # full collections run for sessions that left
    sessions: int  # sessions that left, collected or waiting to be
    waiting: int  # sessions that left since the last collection
    objects: int  # unreachable objects the collections found


class Reclaimer:
    """Collects what the sessions that left the daemon held; start it with
    ``await nursery.start(reclaimer.serve)``."""

    def __init__(
        self,
        *,
        after: float = RECLAIM_AFTER,
        every: float = RECLAIM_EVERY,
        collect: Callable[[], int] = gc.collect,
        release: Callable[[], Any] = release_free_memory,
    ) -> None:
        self._after = after
        self._every = every
        self._collect = collect
        self._release = release
        self._left = trio.Event()
        self._waiting = 0
        self._sessions = 0
        self._collections = 0
        self._objects = 0

    def session_left(self) -> None:
        """A session left the daemon's memory: collect what it held, soon."""
        self._waiting += 1
        self._sessions += 1
        self._left.set()

    def statistics(self) -> ReclaimStatistics:
        return ReclaimStatistics(
            collections=self._collections,
            sessions=self._sessions,
            waiting=self._waiting,
            objects=self._objects,
        )

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Collect after sessions left (see the module docstring), until cancelled."""
        task_status.started()
        last = -math.inf
        while True:
            await self._left.wait()
            await trio.sleep_until(max(trio.current_time() + self._after, last + self._every))
            # Sessions that leave from here on are the next collection's.
            self._left = trio.Event()
            sessions, self._waiting = self._waiting, 0
            started = time.perf_counter()
            found = self._collect()
            collected = time.perf_counter() - started
            self._collections += 1
            self._objects += found
            await trio.to_thread.run_sync(self._release)
            last = trio.current_time()
            log.info(
                "memory of sessions that left collected",
                sessions=sessions,
                objects=found,
                collect_ms=round(collected * 1000, 1),
            )
