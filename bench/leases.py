"""Session leases on PostgreSQL (issue 21): what they cost a node.

* ``renew``: one heartbeat (:meth:`PostgresLeases.renew`: one ``UPDATE`` of every lease
  the node holds), for 1, 100 and 1000 held leases; median of 20;
* ``append``: one-fact batches of one session, pipelined (many in flight: the writer
  commits what is queued together), on a journal without leases (``orchestrator run``)
  and with them (a daemon's: each transaction fences its sessions with a ``SELECT ...
  FOR SHARE`` of their lease rows); facts a second, best of 3.

A throwaway PostgreSQL cluster is started as the tests start it (``tests/support/postgres.py``:
``fsync=off``, so the figures are the journal's and the server's work, not the disk's).

    .venv/bin/python bench/leases.py
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.journal import Journal, PostgresLeases, open_journal
from tests.support.facts import facts
from tests.support.postgres import find_postgres_binaries, start_postgres

SESSION = "ahp-session:/00000000-0000-0000-0000-000000000001"


def new_database(server: Any) -> str:
    url: str = server.create_database()
    return url


def renew_cost(url: str, held: int) -> float:
    journal = open_journal(url, node="bench")
    journal.open()
    leases = journal.ownership
    assert isinstance(leases, PostgresLeases)
    for n in range(held):
        leases.acquire(f"ahp-session:/bench-{n}")
    times = []
    for _ in range(20):
        began = time.perf_counter()
        lost = leases.renew()
        times.append(time.perf_counter() - began)
        assert lost == []
    journal.close()
    return statistics.median(times)


async def append_rate(url: str, *, leased: bool, count: int = 5_000) -> float:
    journal: Journal = open_journal(url, node="bench") if leased else open_journal(url)
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        journal.ownership.claim(SESSION)
        began = time.perf_counter()
        tickets = [journal.submit(facts(n, 1)) for n in range(1, count + 1)]
        for ticket in tickets:
            await ticket.wait()
            assert ticket.error is None, ticket.error
        took = time.perf_counter() - began
        nursery.cancel_scope.cancel()
    return count / took


def main() -> None:
    binaries = find_postgres_binaries()
    if binaries is None:
        sys.exit("no PostgreSQL binaries (apt-get install postgresql)")
    server = start_postgres(binaries)
    try:

        def make() -> str:
            return new_database(server)

        print("| held leases | one renewal (ms) |")
        print("|---:|---:|")
        for held in (1, 100, 1000):
            print(f"| {held} | {renew_cost(make(), held) * 1000:.2f} |")
        print()
        print("| journal | one-fact batches pipelined (facts/s, best of 3) |")
        print("|---|---:|")
        for leased in (False, True):
            best = max(trio.run(_append, make(), leased) for _ in range(3))
            name = "with leases (a daemon's)" if leased else "without leases"
            print(f"| {name} | {best:,.0f} |")
    finally:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


async def _append(url: str, leased: bool) -> float:
    return await append_rate(url, leased=leased)


if __name__ == "__main__":
    main()
