"""The orchestrator's command line as a child process, and the facts mirror it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from orchestrator.core import Fact, decode_fact
from tests.support.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT


TEAM = ROOT / "teams" / "delivery.toml"


def orchestrator(
    *args: str | Path, stdin: int | IO[Any] | None = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *map(str, args)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def acknowledged(path: Path) -> list[Fact]:
    """The whole lines of the ``--facts`` mirror (a kill can tear the last one)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text[: text.rfind("\n") + 1].splitlines()
    return [decode_fact(json.loads(line)) for line in lines]


def resume(db: Path | str, session: str, *extra: str | Path) -> subprocess.CompletedProcess[str]:
    process = orchestrator("resume", session, "--db", db, "--plain", "--approve", "auto", *extra)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)
