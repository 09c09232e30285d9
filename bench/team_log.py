"""What a team-channel subscribe costs the daemon: the first one, and those after the session
was put away (issue 33, section 5).

A fan-out session of N scripted workers is written to a SQLite journal. Then, with the
daemon's own parts (:class:`~orchestrator.server.TeamLog`,
:class:`~orchestrator.server.EnvelopeCache`): the first subscribe makes the session's log
(reads, folds and projects every fact); the session is put away (its log goes with it: a
session that left memory keeps nothing there); the web view reads its envelopes (folded once
more, into the web view's cache); the session is taken up and subscribed to again (its log
goes on from that cache). CPU time of each.

    .venv/bin/python bench/team_log.py          # N = 100, 1000
    .venv/bin/python bench/team_log.py 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import trio

from orchestrator.journal import JournalReader, SqliteJournal
from orchestrator.runtime import Ids, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.sessions import EnvelopeCache, TeamLog
from orchestrator.spec import TeamSpec, parse_team


def _wide(n: int) -> TeamSpec:
    tasks = ", ".join(f'{{ agent = "quick", task = "q{i}" }}' for i in range(n))
    return parse_team(
        f'[team]\nname = "wide"\ncoordinator = "lead"\nparallel_budget = {n}\n'
        '[agents.lead]\nrole = "coordinator"\ntools = ["delegate"]\ndelegates_to = ["quick"]\n'
        f"[[agents.lead.turns]]\nsteps = [ {{ delegate = [{tasks}] }} ]\n"
        '[agents.quick]\nrole = "worker"\n[[agents.quick.turns]]\nsteps = [ { say = "ok" } ]\n',
        file="wide.toml",
    )


async def _session(db: Path, n: int) -> str:
    journal = SqliteJournal(db)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        runtime = TeamRuntime(_wide(n), backends=ScriptedBackend, factlog=journal, ids=Ids())
        await runtime.run("go")
        services.cancel_scope.cancel()
    return runtime.session


async def _measure(db: Path, session: str) -> tuple[int, float, float, float]:
    reader = JournalReader(db)
    cache = EnvelopeCache(reader)
    started = time.process_time()
    first = TeamLog(session, reader.facts)
    await first.ready()
    subscribed = time.process_time()
    del first  # the session is put away: its log goes with it
    read = await cache.envelopes(session)  # the web view reads it
    web = time.process_time()
    again = TeamLog(session, reader.facts, await cache.take(session))  # taken up
    await again.ready()
    ended = time.process_time()
    assert again.lines == read
    return len(read), subscribed - started, web - subscribed, ended - web


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 1000])
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        db = Path(tempfile.mkdtemp()) / "journal.db"
        session = trio.run(_session, db, n)
        rows.append((n, *trio.run(_measure, db, session)))
    print(
        f"{'N':>6} {'envelopes':>10} {'first (ms)':>11} {'web read after':>15} "
        f"{'subscribe after':>16}"
    )
    print(f"{'':>6} {'':>10} {'':>11} {'put-away (ms)':>15} {'take-up (ms)':>16}")
    for n, envelopes, first, web, again in rows:
        times = f"{first * 1e3:>11.0f} {web * 1e3:>15.1f} {again * 1e3:>16.1f}"
        print(f"{n:>6} {envelopes:>10} {times}")


if __name__ == "__main__":
    main()
