"""Process-wide settings: the collector's thresholds, and handing freed memory back."""

from __future__ import annotations

import gc
import platform

from orchestrator.runtime import release_free_memory, tune_gc
from orchestrator.runtime._process import GC_THRESHOLDS


def test_tune_gc_sets_the_thresholds() -> None:
    saved = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.set_threshold(*saved)


def test_freed_memory_is_handed_back_where_the_c_library_can() -> None:
    """glibc has ``malloc_trim``; another C library has no arenas to trim and is left be."""
    assert release_free_memory() is (platform.libc_ver()[0] == "glibc")
