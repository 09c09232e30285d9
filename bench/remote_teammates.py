"""Remote teammate benchmark: the orchestrator's own CPU per delegation to an A2A agent,
beside the same delegation to a local scripted worker.

A coordinator delegates N tasks in one round (all in parallel) to a remote teammate, the
example glossary agent (``teams/servers/glossary_agent.py``) started as its own process on
loopback, so that its CPU is not counted; then the same N tasks to a local scripted worker.
The figure is this process's CPU time (``time.process_time``: the runtime, the fold, the
memory fact log, the SDK's client, httpx and protobuf) per delegation, the best of
``--repeat`` runs, with the wall time and the facts recorded per delegation beside it.

    .venv/bin/python bench/remote_teammates.py              # N = 10, 50, 200
    .venv/bin/python bench/remote_teammates.py 20 100       # chosen sizes
    .venv/bin/python bench/remote_teammates.py --repeat 1 50

Outside the clock, each run is checked: it completed and every delegation's outcome is there.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import httpx
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (10, 50, 200)


def _team(n: int, *, url: str | None) -> str:
    """A coordinator that delegates ``n`` tasks at once to ``worker``: remote at ``url``, or
    local (scripted) when None."""
    calls = ", ".join(f'{{ agent = "worker", task = "Define semver ({i})" }}' for i in range(n))
    worker = (
        f'[agents.worker]\nrole = "remote glossary"\na2a = "{url}"\n'
        if url is not None
        else '[agents.worker]\nrole = "local glossary"\n'
        '[[agents.worker.turns]]\nsteps = [ { say = "Defined 1 term: semver." } ]\n'
    )
    return f"""
[team]
name = "bench"
coordinator = "lead"
parallel_budget = {n}
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ {{ delegate = [ {calls} ] }}, {{ say = "done: {{outcomes}}" }} ]
{worker}"""


async def _run(n: int, url: str | None) -> tuple[float, float, int]:
    """CPU seconds and wall seconds of one run, and its facts."""
    from orchestrator.runtime import MemoryFactLog, TeamRuntime
    from orchestrator.runtime.backends import backend_factory
    from orchestrator.spec import parse_team

    team = parse_team(_team(n, url=url), file="bench.toml")
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=n)) as client:
        log = MemoryFactLog()
        runtime = TeamRuntime(
            team, backends=backend_factory(team, client=client, environ={}), factlog=log
        )
        cpu, wall = time.process_time(), time.perf_counter()
        outcome = await runtime.run("go")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert outcome.status == "completed", outcome
    assert outcome.result.count("Defined 1 term: semver.") == n, outcome.result[:500]
    return cpu, wall, len(log.facts)


def main(argv: list[str]) -> None:
    from orchestrator.runtime import configure_logging

    configure_logging(level=logging.WARNING)
    repeat = 3
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    sizes = [int(a) for a in argv] or list(SIZES)
    agent = subprocess.Popen(
        [sys.executable, str(ROOT / "teams" / "servers" / "glossary_agent.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert agent.stdout is not None
        url = agent.stdout.readline().strip()
        print(f"remote teammate: the glossary agent at {url} (its own process)")
        print(f"best of {repeat}; CPU is this process's, per delegation")
        print()
        print(f"{'N':>5} {'worker':>7} {'CPU ms':>9} {'wall ms':>9} {'facts':>7}")
        for n in sizes:
            for kind, target in (("local", None), ("remote", url)):
                runs = [trio.run(_run, n, target) for _ in range(repeat)]
                cpu, wall, facts = min(runs)
                print(
                    f"{n:>5} {kind:>7} {cpu / n * 1000:>9.2f} {wall / n * 1000:>9.2f} "
                    f"{facts / n:>7.1f}"
                )
    finally:
        agent.terminate()
        agent.wait(timeout=10)


if __name__ == "__main__":
    main(sys.argv[1:])
