"""The ``orchestrator`` command run to its end as a user runs it: a subprocess, real files,
real stdin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.paths import PROJECT_ROOT

DELIVERY = str(PROJECT_ROOT / "teams" / "delivery.toml")
HANDOFF = str(PROJECT_ROOT / "teams" / "handoff.toml")


def orchestrator(
    *args: str, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PROJECT_ROOT,
        check=False,
    )


def run_delivery_team(out: Path) -> subprocess.CompletedProcess[str]:
    """One auto-approved run of the delivery team, its events and facts written in ``out``."""
    return orchestrator(
        "run",
        DELIVERY,
        "Ship the release notes",
        "--approve",
        "auto",
        "--events",
        str(out / "run.jsonl"),
        "--facts",
        str(out / "run.facts.jsonl"),
    )
