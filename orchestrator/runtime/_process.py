"""Process-wide settings of a long-running orchestrator, applied once at start.

Garbage collection: the state of a run is a large, growing heap of small immutable values
(chat states, parts, summaries, facts) that never form reference cycles. CPython's cyclic
collector still walks it. With its default thresholds (700, 10, 10) it runs a young collection
every 700 allocations. As the heap grows, it also runs full collections that visit every
object. At 10,000 workers those cost a third of the runtime. Measured with
``bench/fanout.py``, per worker:

- 750 µs with the defaults;
- 400 µs with the thresholds below;
- 450 µs with no collection at all.

A young generation of 50,000 objects keeps the collector for what it is for (cycles from
tracebacks, trio tasks, closures) at a fraction of the cost. Reference counting still frees
everything else at once, so memory use does not change measurably.

Freed memory: glibc's malloc keeps what a thread freed in that thread's arena. An arena is a
heap of its own per thread that allocates, up to 8 per core. malloc gives back to the system
only the top of a heap. So what a thread held and let go of stays in the process's RSS. The
journal's writer thread is one. SQLite's memory (its page cache and the compiled multi-row
statements it keeps, some 7 MB) and the snapshots' texts are allocated there. All of it is
freed when the journal closes, yet stays resident. Measured with ``bench/peers/run.py``: 9 MB of a
9.4 MB arena free at N = 1,000, 9 KB of RSS per worker. :func:`release_free_memory`, called when a
journal closes, hands the free pages of every arena back (``malloc_trim``: a few ms, once).
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable
from typing import Final

__all__ = [
    "release_free_memory",
    "tune_gc",
]

#: (young generation, middle, old) collection thresholds; see the module docstring.
GC_THRESHOLDS: Final = (50_000, 20, 10)


def tune_gc() -> None:
    """Apply :data:`GC_THRESHOLDS` to this process."""
    gc.set_threshold(*GC_THRESHOLDS)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere: musl, macOS, which have no arenas to trim)."""
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> bool:
    """Hand the pages malloc holds free, in every thread's arena, back to the system (see
    the module docstring); whether the C library could. Blocking, a few ms: call it when a
    large user of memory is done (a journal closed), not on a hot path."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
