"""Logging cost: microseconds per event, through the whole chain to the written line.

Each row logs one kind of event many times through ``configure_logging`` (JSON and console
renderers) into ``/dev/null``, best of 3:

* ``info, 2 values``: a typical daemon line (``session taken up``), two context variables;
* ``warning, headers``: a dict of five headers (one ``Authorization``) and a URL (each
  with a different ``error``, so none is a repeat);
* ``error + traceback``: ``log.exception`` of a 6-frame stack, a different message each
  time (a repeat would be dropped);
* ``repeated error``: the same error again and again: past the repeat limit, dropped;
* ``1 MB value``: one string of 1,000,000 characters (redacted whole, then cut), each
  with a different ``error``.

To compare with another checkout (``main``, say) pass its path: its ``orchestrator``
package is timed instead of this one's.

    .venv/bin/python bench/logs.py
    .venv/bin/python bench/logs.py /work/main
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import structlog

from orchestrator.runtime import configure_logging

HEADERS = {
    "host": "127.0.0.1:8765",
    "user-agent": "agui-client/1.0",
    "authorization": "Bearer tok-3f9a1c7e5b2d4068",
    "content-type": "application/json",
    "content-length": "1234",
}


def fail(depth: int) -> None:
    if depth == 0:
        raise ValueError("the view type is not known")
    fail(depth - 1)


def cases(log: structlog.stdlib.BoundLogger) -> list[tuple[str, int, Callable[[int], None]]]:
    def info(i: int) -> None:
        log.info("session taken up", session="ahp:/session/8f3a2c", team="delivery")

    def warning(i: int) -> None:
        url = "http://127.0.0.1:8765/callback"
        log.warning("request refused", headers=HEADERS, url=url, error=f"#{i}")

    def error(i: int) -> None:
        try:
            fail(5)
        except ValueError:
            log.exception("callback failed", error=f"bad view {i}")

    def repeated(i: int) -> None:
        log.error("journal write failed", error="disk I/O error")

    big = "x" * 1_000_000

    def huge(i: int) -> None:
        log.warning("long value", text=big, error=f"#{i}")

    return [
        ("info, 2 values", 5_000, info),
        ("warning, headers", 5_000, warning),
        ("error + traceback", 500, error),
        ("repeated error", 5_000, repeated),
        ("1 MB value", 20, huge),
    ]


def timed(run: Callable[[int], None], count: int) -> float:
    """Best of 3, microseconds per event."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(count):
            run(i)
        best = min(best, time.perf_counter() - start)
    return best / count * 1e6


def main() -> None:
    print(f"checkout: {ROOT}")
    print(f"{'event':<20} {'JSON (µs)':>10} {'console (µs)':>13}")
    print("-" * 45)
    with open(os.devnull, "w") as sink:
        results: dict[str, list[float]] = {}
        for as_json in (True, False):
            log = structlog.get_logger("bench")
            with structlog.contextvars.bound_contextvars(chat="c-1", agent="lead"):
                for name, count, run in cases(log):
                    # Afresh for each row: no row's errors count as another's repeats.
                    configure_logging(json=as_json, level=logging.INFO, stream=sink)
                    results.setdefault(name, []).append(timed(run, count))
    for name, (in_json, in_console) in results.items():
        print(f"{name:<20} {in_json:>10,.1f} {in_console:>13,.1f}")


if __name__ == "__main__":
    main()
