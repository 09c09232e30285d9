"""Command tools (``[tools.<name>]`` with a ``command``): every key, the defaults, and the
errors a bad table gets.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import TeamFileError
from orchestrator.spec import (
    DEFAULT_COMMAND_TIMEOUT,
    CommandTool,
    check_team,
    lint_team,
)
from tests.support.examples import examples
from tests.support.team_files import (
    _TOML_VALUES,
    FILE,
    VALID,
    _parse_or_error,
    parse,
    parse_error,
)


def with_command(*lines: str, name: str = "web_search") -> str:
    """VALID with a ``[tools.<name>]`` table of ``lines`` (web_search is a researcher tool)."""
    return VALID + f"\n[tools.{name}]\n" + "".join(f"{line}\n" for line in lines)


SEARCH = 'command = ["search", "--json"]'


class TestCommandTools:
    def test_every_key(self) -> None:
        """Each key of a [tools.<name>] table lands in its CommandTool; a relative cwd is
        taken from the team file's directory."""
        team = parse(
            with_command(
                'command = ["python", "-m", "search", ""]',
                'description = "Search the web"',
                'timeout = "1h30m"',
                'cwd = "sandbox"',
                'env = { API_MODE = "offline", EMPTY = "" }',
            )
        )
        assert team.command_tools == (
            CommandTool(
                name="web_search",
                command=("python", "-m", "search", ""),
                description="Search the web",
                timeout=dt.timedelta(hours=1, minutes=30),
                cwd=str(Path(FILE).parent / "sandbox"),
                env={"API_MODE": "offline", "EMPTY": ""},
            ),
        )
        assert team.command_tool("web_search") is team.command_tools[0]
        assert team.command_tool("publish") is None
        assert lint_team(team) == []

    def test_defaults(self) -> None:
        (tool,) = parse(with_command(SEARCH)).command_tools
        assert tool == CommandTool(name="web_search", command=("search", "--json"))
        assert tool.timeout == DEFAULT_COMMAND_TIMEOUT == dt.timedelta(minutes=10)
        assert (tool.description, tool.cwd, tool.env) == ("", None, {})

    def test_an_absolute_cwd_is_kept(self) -> None:
        (tool,) = parse(with_command(SEARCH, 'cwd = "/srv/sandbox"')).command_tools
        assert tool.cwd == "/srv/sandbox"

    def test_tools_keep_file_order(self) -> None:
        text = with_command(SEARCH) + '\n[tools.publish]\ncommand = ["publish"]\n'
        assert [t.name for t in parse(text).command_tools] == ["web_search", "publish"]

    def test_a_command_tool_and_an_agent_are_each_reported(self) -> None:
        text = with_command("command = []").replace('role = "researcher"', 'role = ""')
        error = parse_error(text)
        assert [p.key_path for p in error.problems] == [
            "tools.web_search.command",
            "agents.researcher.role",
        ]

    def test_a_command_tool_no_agent_lists_is_linted(self) -> None:
        team = parse(with_command('command = ["x"]', name="deploy"))
        assert lint_team(team) == [
            f"{FILE}: tools.deploy: no agent lists 'deploy' in its tools, so nothing can call it"
        ]

    def test_a_near_miss_of_a_command_tool_s_name_is_linted(self) -> None:
        """A typo in an agent's tools would quietly answer a scripted "ok" instead."""
        text = with_command(SEARCH).replace(
            'tools = ["web_search", "publish"]', 'tools = ["web_search", "publish", "web_serch"]'
        )
        assert lint_team(parse(text)) == [
            f"{FILE}: agents.researcher.tools[2]: 'web_serch' is no [tools] command (did you "
            "mean 'web_search'?), so it answers a scripted result"
        ]

    def test_teams_check_lists_the_problems(self, tmp_path: Path) -> None:
        path = tmp_path / "team.toml"
        path.write_text(with_command("command = 'search --json'"), encoding="utf-8")
        (line,) = check_team(path)
        assert line == (
            f"{path}: tools.web_search.command: expected an array of arguments such as "
            '["search", "--json"] (no shell reads it), got string "search --json"'
        )


COMMAND_TOOL_ERRORS = [
    pytest.param(
        'tools = "web_search"\n' + VALID,
        "tools",
        'expected tables such as [tools.run_tests] command = ["..."], got string',
        id="not-a-table",
    ),
    pytest.param(
        'tools = { web_search = ["search"] }\n' + VALID,
        "tools.web_search",
        'expected a [tools.<name>] table with command = ["..."], got an array',
        id="tool-not-a-table",
    ),
    pytest.param(
        with_command('description = "x"'),
        "tools.web_search.command",
        "missing required key 'command'",
        id="no-command",
    ),
    pytest.param(
        with_command('comand = ["search"]'),
        "tools.web_search.comand",
        "unknown key 'comand' (did you mean 'command'?); allowed keys: command, description, "
        "timeout, cwd, env",
        id="unknown-key",
    ),
    pytest.param(
        with_command('command = "pytest -q"'),
        "tools.web_search.command",
        'expected an array of arguments such as ["pytest", "-q"] (no shell reads it)',
        id="command-is-a-string",
    ),
    pytest.param(
        with_command("command = []"),
        "tools.web_search.command",
        'name at least the program to run, e.g. ["python", "tool.py"]',
        id="empty-command",
    ),
    pytest.param(
        with_command('command = ["", "x"]'),
        "tools.web_search.command[0]",
        "must not be empty",
        id="empty-program",
    ),
    pytest.param(
        with_command('command = ["search", 3]'),
        "tools.web_search.command[1]",
        "expected a string, got integer 3",
        id="argument-not-a-string",
    ),
    pytest.param(
        with_command('command = ["search", "a\\u0000b"]'),
        "tools.web_search.command[1]",
        "must not contain a NUL character",
        id="nul-in-argument",
    ),
    pytest.param(
        with_command(SEARCH, 'description = ""'),
        "tools.web_search.description",
        "must not be empty",
        id="empty-description",
    ),
    pytest.param(
        with_command(SEARCH, "timeout = 300"),
        "tools.web_search.timeout",
        'expected a duration such as "90s", "5m" or "1h30m", got integer 300',
        id="timeout-a-number",
    ),
    pytest.param(
        with_command(SEARCH, 'timeout = "5 minutes"'),
        "tools.web_search.timeout",
        "invalid duration '5 minutes'",
        id="bad-timeout",
    ),
    pytest.param(
        with_command(SEARCH, 'timeout = "0s"'),
        "tools.web_search.timeout",
        "it must be longer than zero",
        id="zero-timeout",
    ),
    pytest.param(
        with_command(SEARCH, 'cwd = ""'),
        "tools.web_search.cwd",
        "must not be empty",
        id="empty-cwd",
    ),
    pytest.param(
        with_command(SEARCH, 'env = "A=1"'),
        "tools.web_search.env",
        "expected a table of variables, got string",
        id="env-not-a-table",
    ),
    pytest.param(
        with_command(SEARCH, 'env = { "API-KEY" = "x" }'),
        "tools.web_search.env.API-KEY",
        "'API-KEY' is not an environment variable name",
        id="bad-variable-name",
    ),
    pytest.param(
        with_command(SEARCH, 'env = { ORCHESTRATOR_GROUP_ID = "mine" }'),
        "tools.web_search.env.ORCHESTRATOR_GROUP_ID",
        "variables starting with ORCHESTRATOR_ are set by the runtime for each call",
        id="reserved-variable",
    ),
    pytest.param(
        with_command(SEARCH, "env = { MODE = 1 }"),
        "tools.web_search.env.MODE",
        "expected a string, got integer 1",
        id="variable-not-a-string",
    ),
    pytest.param(
        with_command(SEARCH, name="delegate"),
        "tools.delegate",
        "'delegate' is a team tool the runtime runs itself; give the command tool another name",
        id="team-tool-name",
    ),
    pytest.param(
        with_command(SEARCH, name='"web search"'),
        'tools."web search"',
        "tool name 'web search' must be 1-64 letters, digits, '_' or '-'",
        id="bad-name",
    ),
    pytest.param(
        with_command(SEARCH) + '\n[agents.researcher.tool_results]\nweb_search = "3 results"\n',
        "agents.researcher.tool_results.web_search",
        "'web_search' runs a command ([tools.web_search]): its result is what the program "
        "prints, not a text from tool_results",
        id="scripted-result-for-a-command-tool",
    ),
]


class TestCommandToolErrors:
    @pytest.mark.parametrize(("text", "key_path", "fragment"), COMMAND_TOOL_ERRORS)
    def test_error_names_path_and_problem(self, text: str, key_path: str, fragment: str) -> None:
        """Each bad [tools.<name>] value is reported at its key path, saying what is expected."""
        error = parse_error(text)
        assert (error.key_path, fragment in error.message) == (key_path, True), error.message

    @settings(max_examples=examples(300))
    @given(
        st.dictionaries(
            st.sampled_from(["command", "description", "timeout", "cwd", "env", "comand"]),
            _TOML_VALUES
            | st.lists(st.text(max_size=6), max_size=3)
            | st.sampled_from(["5m", "1h30m", "0s", "/tmp", "."]),
        )
    )
    def test_any_table_parses_or_is_a_team_file_error(self, table: dict[str, Any]) -> None:
        """Whatever values a [tools.<name>] table holds, the parser answers with a team or a
        TeamFileError."""
        document = tomllib.loads(VALID)
        document["tools"] = {"web_search": table}
        outcome = _parse_or_error(document)
        assert not isinstance(outcome, TeamFileError) or outcome.file == FILE
