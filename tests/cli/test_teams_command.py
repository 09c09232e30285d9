"""``orchestrator teams check``, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.command_line import DELIVERY, HANDOFF, orchestrator
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestTeamsCheck:
    def test_shipped_team_files_are_valid(self) -> None:
        done = orchestrator("teams", "check", DELIVERY, HANDOFF)
        assert done.returncode == 0, done.stdout
        assert done.stdout.count("ok:") == 2

    def test_every_shipped_team_file_is_valid(self) -> None:
        """`orchestrator teams check` with no path checks teams/*.toml, nightly.toml too."""
        done = orchestrator("teams", "check")
        assert done.returncode == 0, done.stdout
        assert "ok: teams/nightly.toml" in done.stdout.splitlines()

    def test_a_bad_background_entry_exits_1(self, tmp_path: Path) -> None:
        """A bad [[background]] value is named by file and key path, saying what is expected."""
        bad = tmp_path / "nightly.toml"
        text = (PROJECT_ROOT / "teams" / "nightly.toml").read_text(encoding="utf-8")
        bad.write_text(text.replace('schedule = "0 3 * * *"', 'schedule = "0 25 * * *"'))
        done = orchestrator("teams", "check", str(bad))
        assert done.returncode == 1
        assert done.stdout.startswith(
            f"{bad}: background[0].schedule: invalid cron expression '0 25 * * *'"
        )
        assert "expected 5 fields (minute hour day-of-month month day-of-week)" in done.stdout

    def test_a_bad_team_file_exits_1_as_a_graph_check_does(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text("[team\n")
        done = orchestrator("teams", "check", str(bad))
        assert done.returncode == 1
        assert str(bad) in done.stdout

    def test_a_directory_is_checked_file_by_file(self, tmp_path: Path) -> None:
        """A directory means its *.toml; each file's result, good and bad, in name order."""
        (tmp_path / "a.toml").write_text((PROJECT_ROOT / "teams" / "handoff.toml").read_text())
        (tmp_path / "b.toml").write_text("[team\n")
        (tmp_path / "notes.txt").write_text("not a team")
        done = orchestrator("teams", "check", str(tmp_path))
        assert done.returncode == 1
        lines = done.stdout.splitlines()
        assert lines[0] == f"ok: {tmp_path / 'a.toml'}"
        assert lines[1].startswith(f"{tmp_path / 'b.toml'}: invalid TOML")
        assert len(lines) == 2

    def test_json_lists_every_file(self, tmp_path: Path) -> None:
        (tmp_path / "b.toml").write_text("[team\n")
        done = orchestrator("teams", "check", HANDOFF, str(tmp_path / "b.toml"), "--json")
        assert done.returncode == 1
        report = json.loads(done.stdout)
        assert [(r["file"], r["ok"]) for r in report] == [
            (HANDOFF, True),
            (str(tmp_path / "b.toml"), False),
        ]
        assert report[0]["problems"] == []
        assert "invalid TOML" in report[1]["problems"][0]

    @pytest.mark.parametrize("where", ["hosted", "local"])
    def test_an_agent_that_cannot_run_here_is_a_warning(self, where: str) -> None:
        """The file is fine (exit 0); the hosted API with no key set is said, per agent; a
        local server (OPENAI_BASE_URL) needs no key, so nothing is said (``--offline``: the
        server is not probed, see tests/runtime/backends/test_probe.py)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        if where == "local":
            env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
        shipped = str(PROJECT_ROOT / "teams" / "openai-delivery.toml")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "teams",
                "check",
                shipped,
                "--json",
                "--offline",
            ],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (report,) = json.loads(done.stdout)
        assert report["ok"] is True
        if where == "local":
            assert report["warnings"] == []
        else:
            assert [w.split("'")[1] for w in report["warnings"]] == ["lead", "researcher"]
            assert all("OPENAI_API_KEY" in w for w in report["warnings"])

    def test_a_path_that_is_not_there_is_bad_input(self, tmp_path: Path) -> None:
        done = orchestrator("teams", "check", str(tmp_path / "nope.toml"))
        assert done.returncode == 2
        assert "nope.toml: no such file or directory" in done.stderr


#: A module defining a team in Python, for the commands that take ``module:attr``.
PYTHON_TEAM = '''
from orchestrator import Agent, Team, tool

@tool(needs_approval=True)
def shout(text: str) -> str:
    """Say a text louder."""
    return text.upper() + "!"

lead = Agent(
    "lead",
    role="coordinator",
    tools=[shout],
    turns=[{"steps": [{"tool": shout, "input": {"text": "{task}"}}, {"say": "{outcomes}"}]}],
)
loud = Team("loud", coordinator=lead)
broken = Team.__name__
'''


def in_directory(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line run in ``directory`` (its modules import from there)."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=directory,
        check=False,
    )


class TestTeamsInPython:
    """`module:attr` names a team defined in Python wherever a team file is taken."""

    def test_teams_check_takes_module_attr(self, tmp_path: Path) -> None:
        (tmp_path / "loudteam.py").write_text(PYTHON_TEAM, encoding="utf-8")
        done = in_directory(tmp_path, "teams", "check", "--offline", "--tools", "loudteam:loud")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: loudteam:loud" in done.stdout.splitlines()
        assert "shout" in done.stdout

    def test_teams_check_names_what_is_not_a_team(self, tmp_path: Path) -> None:
        (tmp_path / "loudteam.py").write_text(PYTHON_TEAM, encoding="utf-8")
        done = in_directory(tmp_path, "teams", "check", "--offline", "loudteam:broken")
        assert done.returncode == 1
        assert (
            "loudteam:broken: broken is str, not a team: name an orchestrator.Team (or a TeamSpec)"
            in done.stdout + done.stderr
        )
        missing = in_directory(tmp_path, "teams", "check", "--offline", "quiet:loud")
        assert missing.returncode == 1
        assert "quiet:loud: no module 'quiet' here" in missing.stdout + missing.stderr

    def test_run_takes_module_attr_and_calls_the_function(self, tmp_path: Path) -> None:
        (tmp_path / "loudteam.py").write_text(PYTHON_TEAM, encoding="utf-8")
        done = in_directory(
            tmp_path, "run", "loudteam:loud", "hello", "--approve", "auto", "--db", "runs.db"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "HELLO!"
