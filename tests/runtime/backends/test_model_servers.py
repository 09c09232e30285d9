"""Every ``[openai]`` table of docs/guides/models.md works against a fake of its server.

The page gives one table per server; each is read from the page as it is written, pointed at a
fake on loopback that answers as that server does where the servers differ
(tests/support/model_servers.py), and runs a coordinator that delegates one task to a worker.
The facts must be the same whatever the dialect: the task as the model wrote it, the worker's
answer, the final answer, the token counts where the server sends them, and the key in the
header that server reads, never in a fact.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from typing import Any

import pytest
import trio

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatResponsePartAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatUsageAction,
)
from orchestrator.ahp.state import ReasoningResponsePart
from orchestrator.base import TeamFileError
from orchestrator.core import RunStatus, TaskCreated, TaskFinished
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.spec import parse_team
from tests.support.fake_openai import fake_openai
from tests.support.model_servers import (
    DIALECTS,
    FINAL_ANSWER,
    PROSE_VERDICT,
    TASK,
    THOUGHT,
    VERDICT,
    WORKER_ANSWER,
    Dialect,
    dialect_answer,
    dialect_gate,
    structured_answer,
)
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness

# The fakes are servers on loopback (tests/support/daemon_marker.py).
pytestmark = [
    pytest.mark.daemon,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(httpx|httpcore|httpx_sse)\.[^']*' was garbage collected"
        ":ResourceWarning"
    ),
]

PAGE = PROJECT_ROOT / "docs" / "guides" / "models.md"
KEY = "sk-model-servers-test"

#: The dialects each section's tables are tested against, in the order the tables come.
SECTIONS: dict[str, list[str]] = {
    "OpenAI": ["OpenAI"],
    "Azure OpenAI": ["Azure OpenAI", "Azure OpenAI, per deployment"],
    "Ollama": ["Ollama"],
    "vLLM": ["vLLM"],
    "llama.cpp's server": ["llama.cpp's server"],
    "Anthropic": ["Anthropic"],
    "Google Gemini": ["Google Gemini"],
}

TEAM = """
[team]
name = "servers"
coordinator = "lead"

[agents.lead]
role = "coordinator"
backend = "openai"
tools = ["delegate"]
delegates_to = ["writer"]

[agents.writer]
role = "writes notes"
backend = "openai"
"""

#: One agent whose answer must be ``{"ship": <boolean>}``: without tools, its requests carry a
#: response_format.
VERDICT_TEAM = """
[team]
name = "verdict"
coordinator = "lead"

[agents.lead]
role = "coordinator"
backend = "openai"
[agents.lead.output_schema]
type = "object"
required = ["ship"]
properties = { ship = { type = "boolean" } }
"""


def page_tables() -> dict[str, dict[str, Any]]:
    """Each ``[openai]`` table of the page, by the dialect it is tested against."""
    tables: dict[str, dict[str, Any]] = {}
    sections = re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    for section in sections[1:]:
        title, _, body = section.partition("\n")
        blocks = re.findall(r"```toml\n(.*?)```", body, flags=re.DOTALL)
        if not blocks:
            continue
        names = SECTIONS[title.strip()]
        assert len(names) == len(blocks), f"{title}: {len(blocks)} tables, tested {names}"
        for name, block in zip(names, blocks, strict=True):
            tables[name] = tomllib.loads(block)["openai"]
    return tables


TABLES = page_tables()


def agent_of(request: Mapping[str, Any]) -> str:
    match = re.match(r"You are ([\w-]+),", request["messages"][0]["content"])
    assert match is not None
    return match.group(1)


def team_toml(table: Mapping[str, Any], url: str, *, team: str = TEAM) -> str:
    """``team`` with ``table`` as its [openai] table, its server moved to ``url``."""
    settings = dict(table, base_url=url)
    lines = ["[openai]"]
    for key, value in settings.items():
        if isinstance(value, dict):
            pairs = ", ".join(f'"{k}" = "{v}"' for k, v in value.items())
            lines.append(f"{key} = {{ {pairs} }}")
        elif isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        else:
            lines.append(f'{key} = "{value}"')
    return team + "\n" + "\n".join(lines) + "\n"


async def run_through(
    dialect: Dialect, table: Mapping[str, Any], *, structured: bool = False
) -> tuple[Harness, Any, Any]:
    """A run of the team (or of :data:`VERDICT_TEAM`) through a fake of ``dialect``
    configured by ``table``."""
    answer = structured_answer(dialect) if structured else dialect_answer(dialect, agent_of)
    async with (
        fake_openai(answer, prefix=dialect.prefix, gate=dialect_gate(dialect, KEY)) as server,
        http_client() as http,
    ):
        toml = team_toml(table, server.url, team=VERDICT_TEAM if structured else TEAM)
        team = parse_team(toml, file="servers.toml")
        settings = team.agents[0].openai
        assert settings is not None
        environ = {settings.api_key_env: KEY} if dialect.key_header else {}
        harness = Harness(team, backends=backend_factory(team, client=http, environ=environ))
        with trio.fail_after(60):
            outcome = await harness.runtime.run("Write the release note")
    return harness, server, outcome


@pytest.mark.parametrize("name", list(TABLES))
async def test_the_page_s_table_runs_a_delegation_through_its_server(name: str) -> None:
    dialect = DIALECTS[name]
    harness, server, outcome = await run_through(dialect, TABLES[name])

    assert outcome.status is RunStatus.COMPLETED, outcome.error
    assert outcome.result == FINAL_ANSWER
    # The task as the model wrote it, however its call streamed.
    [task] = harness.actions(TaskCreated)
    assert (task.agent, task.title) == ("writer", TASK["task"])
    [start] = harness.actions(ChatToolCallStartAction)
    [ready] = harness.actions(ChatToolCallReadyAction)
    assert start.tool_name == "delegate"
    assert isinstance(ready.tool_input, str)
    assert json.loads(ready.tool_input) == TASK
    [finished] = [f for f in harness.actions(TaskFinished) if f.task == task.task]
    assert finished.summary == WORKER_ANSWER
    usages = harness.actions(ChatUsageAction)
    assert [(u.usage.input_tokens, u.usage.output_tokens) for u in usages] == [(40, 9)] * 3
    parts = [action.part for action in harness.actions(ChatResponsePartAction)]
    thoughts = [part for part in parts if isinstance(part, ReasoningResponsePart)]
    if dialect.reasoning_field is None:
        assert thoughts == []
    else:
        assert thoughts, "the coordinator's thinking is a reasoning part"
        assert THOUGHT.startswith(thoughts[0].content)

    assert len(server.requests) == 3
    for request, headers, query in zip(
        server.requests, server.headers, server.queries, strict=True
    ):
        assert request["stream_options"] == {"include_usage": True}
        for name_, value in dialect.required_query.items():
            assert query[name_] == value
        if dialect.key_header == "api-key":
            assert headers["api-key"] == KEY
            assert "authorization" not in headers
        elif dialect.key_header == "authorization":
            assert headers["authorization"] == f"Bearer {KEY}"
    assert all(KEY not in repr(fact) for fact in harness.facts)


@pytest.mark.parametrize("name", list(TABLES))
async def test_the_page_s_table_gets_a_structured_answer_through_its_server(name: str) -> None:
    """A response_format asks for the schema; a server that ignores it (Anthropic) gets its
    answer checked all the same, and the one retry asks again."""
    dialect = DIALECTS[name]
    _, server, outcome = await run_through(dialect, TABLES[name], structured=True)

    assert outcome.status is RunStatus.COMPLETED, outcome.error
    assert outcome.result_value == VERDICT
    first = server.requests[0]
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"]["required"] == ["ship"]
    if dialect.response_format:
        assert len(server.requests) == 1
    else:
        [_, retry] = server.requests
        said = [m["content"] for m in retry["messages"] if m["role"] == "assistant"]
        assert said == [PROSE_VERDICT]  # the invalid answer, kept, and what was wrong with it
        assert "$" in retry["messages"][-1]["content"]


class TestAServerThatRefusesStreamOptions:
    """Azure's api-version 2024-06-01 refuses ``stream_options``: the page says to set
    ``stream_usage = false``, and the turn's error says so too."""

    TABLE = dict(TABLES["Azure OpenAI, per deployment"], query={"api-version": "2024-06-01"})

    async def test_the_error_names_the_setting(self) -> None:
        harness, _, outcome = await run_through(DIALECTS["Azure OpenAI, 2024-06-01"], self.TABLE)
        assert outcome.status is RunStatus.FAILED
        [error] = harness.actions(ChatErrorAction)
        assert "400" in error.error.message
        assert "set stream_usage = false" in error.error.message

    async def test_without_stream_usage_it_runs_and_records_no_counts(self) -> None:
        table = dict(self.TABLE, stream_usage=False)
        harness, server, outcome = await run_through(DIALECTS["Azure OpenAI, 2024-06-01"], table)
        assert outcome.status is RunStatus.COMPLETED, outcome.error
        assert outcome.result == FINAL_ANSWER
        assert harness.actions(ChatUsageAction) == []
        assert all("stream_options" not in request for request in server.requests)


def test_every_section_of_the_page_is_tested() -> None:
    """A server added to the page gets its dialect here (and the other way round)."""
    headings = re.findall(r"^## (.+)$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    with_tables = [h for h in headings if h in SECTIONS or "```toml" in h]
    assert set(SECTIONS) <= set(headings)
    assert set(TABLES) == {name for names in SECTIONS.values() for name in names}
    assert with_tables == list(SECTIONS)


HEAD = (
    '[team]\nname="t"\ncoordinator="a"\n[agents.a]\nrole="r"\nbackend="openai"\n'
    '[openai]\nmodel="m"\n'
)


class TestTheSettings:
    @pytest.mark.parametrize(
        ("lines", "message"),
        [
            (
                'api_key_header = "api key"',
                "openai.api_key_header: 'api key' is not an HTTP header",
            ),
            ("api_key_header = 3", "openai.api_key_header: expected a string, got integer 3"),
            ('query = "api-version=1"', "openai.query: expected a table of query parameters"),
            ('query = { "api-version" = 2024 }', "openai.query.api-version: expected a string"),
            ('stream_usage = "no"', 'openai.stream_usage: expected true or false, got string "no"'),
        ],
    )
    def test_a_bad_value_names_its_key(self, lines: str, message: str) -> None:
        with pytest.raises(TeamFileError, match=re.escape(message)):
            parse_team(HEAD + lines + "\n", file="t.toml")

    def test_an_agent_s_table_overrides_the_openai_table(self) -> None:
        team = parse_team(
            HEAD
            + 'api_key_header = "API-Key"\nquery = { "api-version" = "2024-10-21" }\n'
            + '[agents.b]\nrole="r"\nbackend="openai"\nstream_usage = false\nquery = {}\n',
            file="t.toml",
        )
        a, b = (agent.openai for agent in team.agents)
        assert a is not None
        assert b is not None
        # Header names are case-insensitive: kept in lower case, as HTTP/2 sends them.
        assert (a.api_key_header, dict(a.query), a.stream_usage) == (
            "api-key",
            {"api-version": "2024-10-21"},
            True,
        )
        assert (b.api_key_header, dict(b.query), b.stream_usage) == ("api-key", {}, False)

    def test_the_defaults_are_the_hosted_api_s_ways(self) -> None:
        [agent] = parse_team(HEAD, file="t.toml").agents
        assert agent.openai is not None
        assert (agent.openai.api_key_header, dict(agent.openai.query)) == ("authorization", {})
        assert agent.openai.stream_usage is True
