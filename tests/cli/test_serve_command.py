"""``orchestrator serve``, run as a user runs it, up to where the daemon would listen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestBadInput:
    def test_serve_without_team_files_says_what_to_do(self, tmp_path: Path) -> None:
        """In a directory without ``teams/`` (or with an empty one): exit 2, said once, with
        the way out (``--teams DIR`` or ``orchestrator init``), before anything listens."""
        serve = [sys.executable, "-m", "orchestrator", "serve", "--log-format", "console"]
        done = subprocess.run(
            [*serve, "--db", str(tmp_path / "j.db"), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "orchestrator: teams: not a directory of team files: name the directory of your "
            "team files with --teams DIR (or `teams =` in the config file), or run "
            "`orchestrator init` to write starter teams there\n"
        )
        (tmp_path / "empty").mkdir()
        done = subprocess.run(
            [*serve, "--db", str(tmp_path / "j.db"), "--port", "0", "--teams", "empty"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "orchestrator: empty: teams: no team files (*.toml) here: run "
            "`orchestrator init empty` to write starter teams\n"
        )
