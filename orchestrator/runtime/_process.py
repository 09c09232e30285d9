"""Process-wide settings of a long-running orchestrator, applied once at start.

Garbage collection: the state of a run is a large, growing heap of small immutable values
(chat states, parts, summaries, facts) that never form reference cycles. CPython's cyclic
collector still walks it: with its default thresholds (700, 10, 10) it runs a young collection
every 700 allocations and, as the heap grows, full collections that visit every object, which
at 10,000 workers cost a third of the runtime (measured with ``bench/fanout.py``: 750 µs per
worker with the defaults, 400 µs with the thresholds below, 450 µs with no collection at all).
A young generation of 50,000 objects keeps the collector for what it is for (cycles from
tracebacks, trio tasks, closures) at a fraction of the cost; reference counting still frees
everything else at once, so memory use does not change measurably.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = [
    "tune_gc",
]

#: (young generation, middle, old) collection thresholds; see the module docstring.
GC_THRESHOLDS: Final = (50_000, 20, 10)


def tune_gc() -> None:
    """Apply :data:`GC_THRESHOLDS` to this process."""
    gc.set_threshold(*GC_THRESHOLDS)
