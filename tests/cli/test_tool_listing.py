"""``orchestrator teams check --tools``: the tools each agent is offered, from the servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli._tool_listing import signature
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

TOOLS_TEAM = PROJECT_ROOT / "teams" / "tools.toml"


def check(*args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "teams", "check", "--tools", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=180,
        check=False,
    )


class TestSignature:
    @pytest.mark.parametrize(
        ("schema", "rendered"),
        [
            ({"type": "object"}, "..."),
            ({"type": "object", "additionalProperties": False}, ""),
            ({"type": "object", "properties": {}}, ""),
            (
                {
                    "type": "object",
                    "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                    "required": ["q"],
                },
                "q: string, n?: integer",
            ),
            (
                {
                    "type": "object",
                    "properties": {
                        "kind": {"enum": ["a", 1]},
                        "ids": {"type": "array", "items": {"type": "integer"}},
                        "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        "fixed": {"const": "x"},
                        "odd": {"type": ["string", "null"]},
                        "free": {},
                    },
                    "required": ["kind", "ids", "when", "fixed", "odd", "free"],
                },
                'kind: "a" | 1, ids: integer[], when: string | null, fixed: "x", '
                "odd: string | null, free: any",
            ),
        ],
    )
    def test_a_schema_as_a_person_reads_it(self, schema: dict[str, Any], rendered: str) -> None:
        assert signature(schema) == rendered


class TestCommand:
    def test_the_shipped_tools_team_lists_the_server_s_tools_per_agent(self) -> None:
        done = check(str(TOOLS_TEAM))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[:2] == [f"ok: {TOOLS_TEAM}", "  mcp.notes: 3 tools listed"]
        assert "  lead is offered 4 tools:" in lines
        assert "    word_count(text: string)" in lines
        assert any(
            line.split()
            == ["notes__add_note(title:", "string,", "text:", "string)", "mcp.notes/add_note"]
            for line in lines
        )
        assert not done.stderr  # the servers' start is logged at info: not shown

    def test_json_has_the_schemas_whole(self) -> None:
        done = check("--json", str(TOOLS_TEAM))
        assert done.returncode == 0, done.stderr
        [report] = json.loads(done.stdout)
        tools = report["tools"]
        assert tools["servers"] == {"notes": {"ok": True, "tools": 3}}
        scribe = {t["name"]: t for t in tools["agents"]["scribe"]}
        add = scribe["mcp.notes/add_note"]
        assert add["function_name"] == "notes__add_note"
        assert add["parameters"]["required"] == ["title", "text"]
        assert add["description"].startswith("Write a note under a title")

    def test_a_server_that_cannot_be_reached_is_a_problem(self, tmp_path: Path) -> None:
        team = tmp_path / "team.toml"
        team.write_text(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[mcp.tracker]\nurl = "http://127.0.0.1:9/mcp"\nstart_timeout = "5s"\n'
            '[mcp.gone]\ncommand = ["/nonexistent/mcp-server"]\n'
            '[agents.lead]\nrole = "coordinator"\ntools = ["mcp.tracker/*", "mcp.gone/x"]\n'
            '[[agents.lead.turns]]\nsteps = [{ say = "x" }]\n'
        )
        done = check(str(team))
        assert done.returncode == 1
        problems = [line for line in done.stdout.splitlines() if line.startswith(str(team))]
        assert [p.split(": ")[1] for p in problems] == ["mcp.tracker", "mcp.gone"]
        assert "MCP server 'tracker'" in problems[0]
        assert "/nonexistent/mcp-server" in problems[1]
        assert "  mcp.tracker: not reached, so none of its tools are offered" in done.stdout
        assert "  lead is offered no tools" in done.stdout.splitlines()
        assert not done.stderr  # the problems are the report: not logged again
