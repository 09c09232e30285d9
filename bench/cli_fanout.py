"""The fan-out through the command line, as users run it: the marginal cost of a worker.

``orchestrator run`` of a scripted team whose coordinator delegates N one-line tasks in one
round (every worker its own chat, one turn), with the journal on (default durability,
``power``) and the console on: its progress lines on a pipe, or its live tree on a
pseudo-terminal (``--tty``). Each run is a fresh process; the marginal cost per worker is
``(wall(N_large) - wall(N_small)) / (N_large - N_small)``, so the start-up, the imports and
the first and last facts cancel out. Plain trio (a nursery of N tasks, one memory channel:
``bench/fanout.py``'s floor) is measured in the same run, and the table gives the multiple
(issue 17's target through the CLI: at most 8x).

    .venv/bin/python bench/cli_fanout.py                  # N = 300 and 3000, median of 3
    .venv/bin/python bench/cli_fanout.py 300 3000 --repeat 5 --tty
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FANOUT = ROOT / "bench" / "fanout.py"


def team_toml(n: int) -> str:
    delegations = ", ".join(f'{{ agent = "worker", task = "task {i}" }}' for i in range(n))
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
steps = [{{ delegate = [{delegations}] }}, {{ say = "collected" }}]

[agents.worker]
role = "worker"

[[agents.worker.turns]]
steps = [{{ say = "done: {{task}}" }}]
"""


def run_once(n: int, directory: Path, *, tty: bool) -> tuple[float, float]:
    """Seconds of one ``orchestrator run`` of the N-worker team, in a fresh process: wall
    time, and the process's CPU time (user + system, every thread)."""
    team = directory / f"bench-{n}.toml"
    team.write_text(team_toml(n))
    db = directory / f"journal-{n}-{time.monotonic_ns()}.db"
    command = [
        *(sys.executable, "-m", "orchestrator", "run", "--approve", "deny"),
        *("--db", str(db), str(team), "go"),
    ]
    env = {**os.environ, "COLUMNS": "120", "LINES": "40"}
    cpu_before = _children_cpu()
    started = time.perf_counter()
    if tty:
        # The console draws its live tree when stderr is a terminal: give it one, and
        # read what it draws as a terminal would (else it would block on a full buffer).
        controller, terminal = pty.openpty()
        reader = threading.Thread(target=_drain, args=(controller,), daemon=True)
        reader.start()
        done = subprocess.run(
            command, stdout=subprocess.DEVNULL, stderr=terminal, env=env, check=False
        )
        os.close(terminal)
        reader.join(timeout=5)
    else:
        done = subprocess.run(command, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"orchestrator run failed at N = {n}: {done.stderr!r}")
    return wall, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def trio_per_worker_us(n: int) -> float:
    done = subprocess.run(
        [sys.executable, str(FANOUT), "--one", "trio", str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout)["per_worker_us"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[300, 3000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tty", action="store_true", help="the live tree on a terminal")
    options = parser.parse_args()
    small, large = min(options.sizes), max(options.sizes)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        runs = {
            n: [run_once(n, directory, tty=options.tty) for _ in range(options.repeat)]
            for n in (small, large)
        }
    walls = {n: statistics.median(wall for wall, _ in rows) for n, rows in runs.items()}
    cpus = {n: statistics.median(cpu for _, cpu in rows) for n, rows in runs.items()}
    floor = statistics.median(trio_per_worker_us(large) for _ in range(options.repeat))
    marginal = (walls[large] - walls[small]) / (large - small) * 1e6
    marginal_cpu = (cpus[large] - cpus[small]) / (large - small) * 1e6
    console = "live tree on a terminal" if options.tty else "progress lines on a pipe"
    print(f"orchestrator run, journal on (power), console: {console}; median of {options.repeat}")
    print(f"{'N':>6} {'wall (s)':>9} {'CPU (s)':>8}")
    for n, wall in walls.items():
        print(f"{n:>6} {wall:>9.3f} {cpus[n]:>8.3f}")
    print(f"marginal cost per worker: {marginal:,.0f} µs (CPU {marginal_cpu:,.0f} µs)")
    print(f"plain trio at N = {large}: {floor:,.1f} µs per worker")
    print(f"multiple of plain trio: {marginal / floor:.1f}x (target: at most 8x)")


if __name__ == "__main__":
    main()
