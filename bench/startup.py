"""Start-up benchmark: how long the command line takes before it does anything.

Each command runs ``RUNS`` times as a user runs it (a fresh ``python -m orchestrator``
process); the table gives the median and the fastest wall time, and the time Python spent
importing modules in the fastest run (``-X importtime``, the sum of the top-level imports),
against ``python -c pass`` on the same machine in the same run (the floor no command can go
under). The target is 300 ms for ``--help``, ``teams check`` and ``sessions``.

    .venv/bin/python bench/startup.py           # 15 runs of each
    .venv/bin/python bench/startup.py 40        # 40 runs of each
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: A module imported at the top level (nested ones are indented by two spaces a level).
TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| \S")


def commands(db: Path) -> dict[str, list[str]]:
    orchestrator = [sys.executable, "-m", "orchestrator"]
    return {
        "python -c pass (the floor)": [sys.executable, "-c", "pass"],
        "orchestrator --help": [*orchestrator, "--help"],
        "orchestrator teams check teams/handoff.toml": [
            *orchestrator,
            "teams",
            "check",
            str(ROOT / "teams" / "handoff.toml"),
        ],
        "orchestrator sessions (one session)": [*orchestrator, "sessions", "--db", str(db)],
    }


def run_once(command: list[str]) -> tuple[float, float]:
    """Wall seconds, and seconds of top-level imports (-X importtime)."""
    started = time.perf_counter()
    done = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - started
    imports = sum(
        int(match.group(1)) for line in done.stderr.splitlines() if (match := TOP_LEVEL.match(line))
    )
    return wall, imports / 1e6


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "journal.db"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "run",
                str(ROOT / "teams" / "handoff.toml"),
                "refund",
                "--db",
                str(db),
            ],
            capture_output=True,
            check=True,
            cwd=ROOT,
        )
        print(f"{'command':<46} {'median ms':>10} {'best ms':>8} {'imports ms':>11}")
        for name, command in commands(db).items():
            timings = [run_once(command) for _ in range(runs)]
            walls = [wall for wall, _ in timings]
            best = min(timings)
            print(
                f"{name:<46} {statistics.median(walls) * 1e3:>10.0f} {best[0] * 1e3:>8.0f}"
                f" {best[1] * 1e3:>11.0f}"
            )


if __name__ == "__main__":
    main()
