"""MCP tool servers in team files: ``[mcp.<name>]`` tables and the ``mcp.<server>/<tool>``
names agents list, and the errors a bad one gets."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.base import TeamFileError
from orchestrator.spec import (
    McpServer,
    ToolStep,
    lint_team,
    parse_team,
)
from tests.support.mcp_team_files import FILE, VALID, parse, replaced
from tests.support.paths import PROJECT_ROOT


def parse_error(text: str) -> TeamFileError:
    with pytest.raises(TeamFileError) as info:
        parse(text)
    return info.value


class TestServers:
    def test_both_transports_with_every_key(self) -> None:
        team = parse(VALID)
        assert team.mcp_servers == (
            McpServer(
                name="time",
                command=("python", "-m", "mcp_server_time", "--local-timezone", "UTC"),
                env={"TZ": "UTC"},
                env_passthrough=("GITHUB_TOKEN",),
                timeout=dt.timedelta(seconds=20),
            ),
            McpServer(
                name="tracker",
                url="http://127.0.0.1:9100/mcp",
                headers={"X-Team": "alpha"},
                env_headers={"Authorization": "TRACKER_TOKEN"},
                start_timeout=dt.timedelta(seconds=5),
            ),
        )
        assert [s.transport for s in team.mcp_servers] == ["stdio", "http"]
        assert team.mcp_server("tracker") is team.mcp_servers[1]
        assert team.mcp_server("nope") is None
        assert lint_team(team) == []

    def test_a_relative_cwd_is_the_team_file_s_directory(self, tmp_path: Path) -> None:
        text = replaced('env = { TZ = "UTC" }', 'cwd = "servers"')
        team = parse_team(text, file=str(tmp_path / "team.toml"))
        assert team.mcp_servers[0].cwd == str(tmp_path / "servers")

    def test_agents_name_tools_and_wildcards(self) -> None:
        team = parse(VALID)
        lead = team.agent("lead")
        assert lead.may_call("mcp.tracker/anything")
        assert lead.may_call("mcp.time/get_current_time")
        assert not lead.may_call("mcp.time/convert_time")
        assert lead.needs_approval_for("mcp.tracker/create_issue")
        assert not lead.needs_approval_for("mcp.tracker/list_issues")
        assert team.agents[0].turns[0].steps[1] == ToolStep(
            tool="mcp.tracker/create_issue", input={"title": "x"}
        )

    def test_a_wildcard_in_needs_approval_gates_every_tool_of_the_server(self) -> None:
        team = parse(
            replaced(
                'needs_approval = ["mcp.tracker/create_issue"]',
                'needs_approval = ["mcp.tracker/*", "mcp.time/*"]',
            )
        )
        lead = team.agent("lead")
        assert lead.needs_approval_for("mcp.tracker/anything")
        assert lead.needs_approval_for("mcp.time/get_current_time")

    def test_the_coordinator_approves_a_server_s_tools(self) -> None:
        team = parse(
            replaced(
                '[agents.worker]\nrole = "worker"', '[agents.worker]\nrole = "worker"'
            ).replace(
                'needs_approval = ["mcp.tracker/create_issue"]', 'approves = ["mcp.tracker/*"]'
            )
        )
        assert team.agent("lead").approves_tool("mcp.tracker/list_issues")
        assert not team.agent("lead").approves_tool("mcp.time/get_current_time")

    def test_lint_names_a_server_no_agent_uses(self) -> None:
        text = VALID + '\n[mcp.spare]\nurl = "https://example.org/mcp"\n'
        assert lint_team(parse(text)) == [
            f"{FILE}: mcp.spare: no agent lists a tool of 'spare' (mcp.spare/<tool> or "
            "mcp.spare/*) in its tools, so nothing can call it"
        ]


MCP_ERRORS = [
    pytest.param(
        replaced('url = "http://127.0.0.1:9100/mcp"', 'url = "http://x/mcp"\ncommand = ["x"]'),
        "mcp.tracker.url",
        "not both",
        id="command-and-url",
    ),
    pytest.param(
        replaced('url = "http://127.0.0.1:9100/mcp"', ""),
        "mcp.tracker",
        "say how to reach the server",
        id="neither",
    ),
    pytest.param(
        replaced("http://127.0.0.1:9100/mcp", "ftp://127.0.0.1/mcp"),
        "mcp.tracker.url",
        "http:// or https://",
        id="not-http",
    ),
    pytest.param(
        replaced("http://127.0.0.1:9100/mcp", "http://me:secret@127.0.0.1/mcp"),
        "mcp.tracker.url",
        "not in the URL",
        id="credentials-in-url",
    ),
    pytest.param(
        replaced('"env:TRACKER_TOKEN"', '"env:1TOKEN"'),
        "mcp.tracker.headers.Authorization",
        "after env: comes the name of an environment variable",
        id="bad-header-reference",
    ),
    pytest.param(
        replaced('"env:TRACKER_TOKEN"', '"env:"'),
        "mcp.tracker.headers.Authorization",
        "after env:",
        id="empty-header-reference",
    ),
    pytest.param(
        replaced('X-Team = "alpha"', '"Bad Header" = "alpha"'),
        'mcp.tracker.headers."Bad Header"',
        "not an HTTP header name",
        id="bad-header-name",
    ),
    pytest.param(
        replaced('X-Team = "alpha"', 'X-Team = "a\\nb"'),
        "mcp.tracker.headers.X-Team",
        "line break",
        id="header-line-break",
    ),
    pytest.param(
        replaced('env = { TZ = "UTC" }', 'headers = { A = "b" }'),
        "mcp.time.headers",
        "headers are sent to a url server",
        id="headers-on-stdio",
    ),
    pytest.param(
        replaced('start_timeout = "5s"', 'env = { A = "b" }'),
        "mcp.tracker.env",
        "a url server runs elsewhere",
        id="env-on-url",
    ),
    pytest.param(
        replaced('["GITHUB_TOKEN"]', '["GITHUB TOKEN"]'),
        "mcp.time.env_passthrough[0]",
        "not an environment variable name",
        id="bad-passthrough",
    ),
    pytest.param(
        replaced('command = ["python", "-m"', 'command = "python -m mcp_server_time"\nx = ["-m"'),
        "mcp.time.x",
        "unknown key 'x'",
        id="unknown-key",
    ),
    pytest.param(
        replaced(
            'command = ["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]',
            'command = "python -m mcp_server_time"',
        ),
        "mcp.time.command",
        'expected an array of arguments such as ["python", "-m", "mcp_server_time"]',
        id="command-as-string",
    ),
    pytest.param(
        replaced('timeout = "20s"', "timeout = 20"),
        "mcp.time.timeout",
        'expected a duration such as "90s"',
        id="timeout-number",
    ),
    pytest.param(
        replaced('"mcp.time/get_current_time", "mcp.tracker/*"]', '"mcp.tim/get_current_time"]'),
        "agents.lead.tools[1]",
        "no MCP server 'tim' is declared (did you mean 'time'?)",
        id="unknown-server",
    ),
    pytest.param(
        replaced('"mcp.tracker/*"]', '"mcp.tracker"]'),
        "agents.lead.tools[2]",
        "mcp.<server>/<tool>",
        id="no-tool-part",
    ),
    pytest.param(
        replaced('"mcp.tracker/*"]', '"mcp.tracker/a b"]'),
        "agents.lead.tools[2]",
        "not an MCP tool name",
        id="bad-tool-name",
    ),
    pytest.param(
        replaced('"mcp.tracker/*"]', '"mcp.tracker/*", "mcp.tracker/*"]'),
        "agents.lead.tools[3]",
        "listed twice",
        id="listed-twice",
    ),
    pytest.param(
        replaced(
            'needs_approval = ["mcp.tracker/create_issue"]', 'needs_approval = ["mcp.time/x"]'
        ),
        "agents.lead.needs_approval[0]",
        "not in this agent's tools",
        id="approval-of-a-tool-not-offered",
    ),
    pytest.param(
        replaced(
            'tools = ["mcp.tracker/list_issues"]',
            'tools = ["mcp.tracker/list_issues"]\n'
            'tool_results = { "mcp.tracker/list_issues" = "x" }',
        ),
        'agents.worker.tool_results."mcp.tracker/list_issues"',
        "its result is what the server answers",
        id="scripted-result-of-an-mcp-tool",
    ),
    pytest.param(
        replaced('{ tool = "mcp.time/get_current_time"', '{ tool = "mcp.time/*"'),
        "agents.lead.turns[0].steps[0].tool",
        "name one tool to call",
        id="wildcard-step",
    ),
    pytest.param(
        replaced('{ tool = "mcp.time/get_current_time"', '{ tool = "mcp.time/convert_time"'),
        "agents.lead.turns[0].steps[0].tool",
        "is not in its tools",
        id="step-of-a-tool-not-listed",
    ),
    pytest.param(
        VALID.replace("[mcp.time]", '[mcp."a.b"]'),
        'mcp."a.b"',
        "MCP server name 'a.b' must be",
        id="bad-server-name",
    ),
]


class TestErrors:
    @pytest.mark.parametrize(("text", "key_path", "fragment"), MCP_ERRORS)
    def test_error_names_path_and_problem(self, text: str, key_path: str, fragment: str) -> None:
        error = next(
            p for p in parse_error(text).problems if p.key_path == key_path
        )  # each problem at its own key path (others may follow from it)
        assert fragment in error.message, error.message

    def test_every_bad_server_is_reported_at_once(self) -> None:
        text = replaced("http://127.0.0.1:9100/mcp", "ftp://x").replace(
            'timeout = "20s"', "timeout = 1"
        )
        paths = [p.key_path for p in parse_error(text).problems]
        assert paths[:2] == ["mcp.time.timeout", "mcp.tracker.url"]

    @pytest.mark.daemon
    def test_orchestrator_run_refuses_the_file_with_exit_2(self, tmp_path: Path) -> None:
        path = tmp_path / "team.toml"
        path.write_text(replaced('url = "http://127.0.0.1:9100/mcp"', 'url = "x"\ncommand = ["x"]'))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "run",
                "--db",
                str(tmp_path / "j.db"),
                str(path),
                "hi",
            ],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "mcp.tracker.url: give command" in done.stderr
