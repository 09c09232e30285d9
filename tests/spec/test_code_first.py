"""Teams defined in Python: the same TeamSpec a team file gives, the same checks and messages
placed at the Python call, decorated tools' schemas, and the team file ``to_toml`` writes."""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import inspect
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import Agent, Command, Item, Mcp, Team, TeamFileError, TeamSpec, Tool, tool
from orchestrator.spec import PythonTool, parse_team, team_from_mapping
from tests.support.code_first import WORDS, WORDS_TOML, count_words, publish_text
from tests.support.examples import examples
from tests.support.paths import TEAMS

SHIPPED = sorted(TEAMS.glob("*.toml"))


# ── module-level tools (to_toml writes their import paths) ─────────────────


@tool
def lookup(query: str, limit: int = 3) -> list[str]:
    """Look a query up.

    Args:
        query: What to look for.
        limit: How many results at most,
            counted from the best.
    """
    return [query] * limit


@tool(name="fetch", description="Fetch a page.", timeout=dt.timedelta(seconds=90))
async def fetch_page(url: str, headers: dict[str, str] | None = None) -> str:
    return url


@tool(needs_approval=True)
def deploy(target: Literal["staging", "production"]) -> str:
    """Deploy the release."""
    return target


class Opaque:
    """A type pydantic has no JSON Schema for."""


FUNCTIONS: tuple[Tool[..., Any], ...] = (lookup, fetch_page, deploy)


# ── deriving the Python calls from a team file's document ──────────────────


def calls(document: dict[str, Any]) -> Team:
    """The :class:`Team` whose calls say what ``document`` (a decoded team file) says: each
    ``[agents.<name>]`` table an :class:`Agent` of the same keywords, each tool table a
    :class:`Command` or a decorated function, each ``[mcp.<name>]`` an :class:`Mcp`."""
    team = dict(document["team"])
    tools: list[Tool[..., Any] | Command] = []
    for name, table in document.get("tools", {}).items():
        table = dict(table)
        if "python" in table:
            module, _, qualname = table.pop("python").partition(":")
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
            function = found.function if isinstance(found, Tool) else found
            tools.append(tool(name=name, **table)(function))
        else:
            tools.append(Command(name, **table))
    return Team(
        team.pop("name"),
        coordinator=team.pop("coordinator"),
        **team,
        agents=[Agent(name, **table) for name, table in document["agents"].items()],
        tools=tools,
        mcp=[Mcp(name, **table) for name, table in document.get("mcp", {}).items()],
        openai=document.get("openai"),
        background=document.get("background", ()),
        board=(
            None
            if "board" not in document
            else [Item(**item) for item in document["board"].get("items", [])]
        ),
    )


def as_file(spec: TeamSpec, file: str) -> TeamSpec:
    """``spec`` as if read from ``file`` (the one field that says where a team was defined)."""
    return attrs.evolve(spec, file=file)


class TestSameSpecAsTheFile:
    @pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
    def test_every_shipped_team_written_as_calls_gives_the_file_s_spec(self, path: Path) -> None:
        """Each teams/*.toml as Agent/Team calls builds a spec equal to the file's (the
        file's relative directories are given from the project root, as Python would)."""
        document = tomllib.loads(path.read_text(encoding="utf-8"))
        for server in document.get("mcp", {}).values():
            if "cwd" in server:
                server["cwd"] = str(path.parent / server["cwd"])
        team = calls(document)
        assert team.spec == as_file(parse_team(path.read_text(), file=str(path)), team.spec.file)

    @pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
    def test_to_toml_of_every_shipped_team_parses_to_its_spec(self, path: Path) -> None:
        team = calls(tomllib.loads(path.read_text(encoding="utf-8")))
        assert parse_team(team.to_toml(), file=team.spec.file) == team.spec

    def test_a_team_with_decorated_tools_equals_its_file(self) -> None:
        """The words team (tests/support/code_first.py) and its hand-written twin."""
        assert WORDS.spec == parse_team(WORDS_TOML, file=WORDS.spec.file)
        (counted, published) = WORDS.spec.python_tools
        assert counted == PythonTool(name="count_words", target=count_words.target)
        assert counted.function is count_words.function
        assert published.description == "Publish a text."
        assert published.function is publish_text.function

    def test_to_toml_writes_each_function_as_its_import_path(self) -> None:
        text = WORDS.to_toml()
        assert 'python = "tests.support.code_first:count_words"' in text
        assert 'python = "tests.support.code_first:publish_text"' in text
        assert parse_team(text, file=WORDS.spec.file) == WORDS.spec

    def test_the_spec_keeps_the_file_a_session_records(self) -> None:
        """A run's session records the team's TOML so it can be resumed; a team whose
        functions have no import path records none (resume then names the team again)."""
        assert WORDS.spec.source == WORDS.to_toml()
        closure = tool(name="shout")(lambda text: text)
        assert Team("t", coordinator=Agent("lead", role="r", tools=[closure])).spec.source == ""

    def test_the_decorator_s_needs_approval_flag_makes_every_listing_agent_wait(self) -> None:
        team = Team(
            "t",
            coordinator=Agent("lead", role="lead", tools=[lookup, deploy], needs_approval=[lookup]),
        )
        assert team.spec.agent("lead").needs_approval == ("lookup", "deploy")
        assert 'needs_approval = ["lookup", "deploy"]' in team.to_toml()

    def test_the_decorator_s_artifact_flag_makes_its_results_artifacts(self) -> None:
        report = tool(name="report", artifact=True)(lookup)
        team = Team(
            "t",
            coordinator=Agent("lead", role="lead", tools=[lookup, report], artifacts=[lookup]),
        )
        assert team.spec.agent("lead").artifacts == ("lookup", "report")
        assert 'artifacts = ["lookup", "report"]' in team.to_toml()
        plain = Team("t", coordinator=Agent("lead", role="lead", tools=[lookup]))
        assert plain.spec.agent("lead").artifacts == ()

    def test_a_coordinator_given_as_an_agent_comes_first(self) -> None:
        worker = Agent("worker", role="works")
        lead = Agent("lead", role="leads", tools=["delegate"], delegates_to=[worker])
        team = Team("t", coordinator=lead, agents=[worker])
        assert team.spec.agent_names == ("lead", "worker")
        assert team.spec.coordinator == "lead"

    def test_durations_and_timeouts_may_be_timedeltas(self) -> None:
        team = Team(
            "t",
            coordinator=Agent("lead", role="lead", tools=["c"], timeout=dt.timedelta(minutes=2)),
            tools=[Command("c", command=["true"], timeout=dt.timedelta(hours=1, seconds=5))],
        )
        assert team.spec.agent("lead").timeout == 120.0
        command = team.spec.command_tool("c")
        assert command is not None
        assert command.timeout == dt.timedelta(hours=1, seconds=5)
        assert 'timeout = "1h5s"' in team.to_toml()

    def test_an_mcp_server_names_its_tools(self) -> None:
        notes = Mcp("notes", url="http://127.0.0.1:9/mcp")
        team = Team("t", coordinator=Agent("lead", role="r", tools=[notes.tool("*")]), mcp=[notes])
        assert team.spec.agent("lead").tools == ("mcp.notes/*",)
        assert team.spec.mcp_servers[0].url == "http://127.0.0.1:9/mcp"


# ── the property over generated teams ───────────────────────────────────────

_NAMES = st.from_regex(r"[a-z][a-z0-9_-]{0,11}", fullmatch=True).filter(
    lambda n: n not in {"delegate", "handoff", "ask", *(f.name for f in FUNCTIONS)}
)
_TEXT = st.text(max_size=30)
_WORDS = st.text(min_size=1, max_size=30).filter(str.strip)


def _subset(values: list[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.sampled_from(values), unique=True) if values else st.just([])


_ARGUMENT = st.text(max_size=12).filter(lambda t: "\0" not in t)
_ENV_NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: not n.startswith("ORCHESTRATOR_")
)


@st.composite
def commands(draw: st.DrawFn, names: list[str]) -> list[Command]:
    """Command tools called ``names``."""
    return [
        Command(
            name,
            command=[draw(_ARGUMENT.filter(str.strip)), *draw(st.lists(_ARGUMENT, max_size=2))],
            description=draw(st.none() | _WORDS),
            timeout=draw(st.none() | st.integers(1, 10**6).map(lambda s: dt.timedelta(seconds=s))),
            env=draw(st.none() | st.dictionaries(_ENV_NAMES, _ARGUMENT, max_size=2)),
        )
        for name in names
    ]


@st.composite
def teams(draw: st.DrawFn) -> Team:
    """Valid teams: agents with tools (plain names, decorated functions, commands, an MCP
    server's), delegations, approvals, timeouts, scripted results and turns or a model;
    background teammates."""
    names = draw(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
    others = draw(st.lists(_NAMES.filter(lambda n: n not in names), max_size=5, unique=True))
    split = draw(st.integers(0, len(others)))
    plain, command_names = others[:split], others[split:]
    team_commands = draw(commands(command_names))
    server = draw(
        st.none()
        | st.builds(
            lambda value: Mcp("srv", url="http://127.0.0.1:9/mcp", headers={"X-Key": value}),
            st.text(max_size=10).filter(
                lambda t: not ({"\r", "\n"} & set(t) or t.startswith("env:"))
            ),
        )
    )
    agents = []
    for name in names:
        delegates = draw(_subset([n for n in names if n != name]))
        functions: list[Tool[..., Any]] = draw(_subset(list(FUNCTIONS)))
        own_plain = draw(_subset(plain))
        own_commands: list[Command] = draw(_subset(team_commands))
        served = ["mcp.srv/*"] if server is not None and draw(st.booleans()) else []
        tools: list[str | Tool[..., Any] | Command] = [
            *(["delegate"] if delegates else []),
            *own_plain,
            *functions,
            *own_commands,
            *served,
        ]
        results = draw(st.dictionaries(st.sampled_from(own_plain), _TEXT)) if own_plain else {}
        say = st.fixed_dictionaries({"say": _WORDS})
        model: dict[str, Any] = {}
        if draw(st.booleans()):
            model = {
                "backend": "openai",
                "model": draw(_WORDS),
                "temperature": draw(st.none() | st.floats(0, 2)),
                "max_retries": draw(st.none() | st.integers(0, 9)),
            }
        else:
            steps = st.lists(
                st.fixed_dictionaries({"steps": st.lists(say, min_size=1, max_size=2)}), max_size=2
            )
            model = {"turns": draw(st.none() | steps)}
        agents.append(
            Agent(
                name,
                role=draw(_WORDS),
                instructions=draw(st.none() | _TEXT),
                interactivity=draw(st.none() | st.sampled_from(["full", "read-only", "hidden"])),
                tools=tools,
                delegates_to=delegates,
                needs_approval=draw(_subset([*own_plain, *functions, *own_commands])),
                timeout=draw(st.none() | st.floats(min_value=0.001, max_value=1e9)),
                tool_results=results or None,
                **model,
            )
        )
    background = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "every": st.integers(1, 10**6).map(lambda s: dt.timedelta(seconds=s)),
                    "prompt": _WORDS,
                    "agent": st.sampled_from(names),
                }
            ),
            max_size=2,
        )
    )
    return Team(
        draw(_NAMES),
        coordinator=agents[0],
        agents=agents[1:],
        topology=draw(st.none() | st.sampled_from(["coordinator_team", "parallel_workers"])),
        parallel_budget=draw(st.none() | st.integers(min_value=1, max_value=64)),
        description=draw(st.none() | _TEXT),
        on_restart=draw(st.none() | st.sampled_from(["resume", "fail"])),
        tools=team_commands,
        mcp=[server] if server is not None else [],
        background=[{"name": f"b{i}", **entry} for i, entry in enumerate(background)],
    )


class TestToToml:
    @settings(max_examples=examples(100), deadline=None)
    @given(teams())
    def test_the_file_written_parses_to_the_same_spec(self, team: Team) -> None:
        assert parse_team(team.to_toml(), file=team.spec.file) == team.spec

    def test_a_lambda_has_no_import_path_and_the_error_names_the_tool(self) -> None:
        shout = tool(name="shout")(lambda text: text.upper())
        team = Team("t", coordinator=Agent("lead", role="r", tools=[shout]))
        assert team.spec.python_tools[0].function is shout.function  # it runs as it is
        with pytest.raises(TeamFileError) as caught:
            team.to_toml()
        assert str(caught.value).startswith(
            'Team("t").to_toml(): tool("shout"): tests.spec.test_code_first:'
            "TestToToml.test_a_lambda_has_no_import_path_and_the_error_names_the_tool.<locals>."
            "<lambda> cannot be written in a team file: it has no import path"
        )

    def test_a_closure_has_no_import_path(self) -> None:
        def make() -> Tool[..., Any]:
            @tool
            def inner(text: str) -> str:
                return text

            return inner

        team = Team("t", coordinator=Agent("lead", role="r", tools=[make()]))
        with pytest.raises(TeamFileError, match=r'tool\("inner"\): .*<locals>.inner cannot be'):
            team.to_toml()

    def test_a_function_of_a_script_run_as_main_has_none(self) -> None:
        def main_function(text: str) -> str:
            return text

        main_function.__module__ = "__main__"
        main_function.__qualname__ = "main_function"
        team = Team("t", coordinator=Agent("lead", role="r", tools=[tool(main_function)]))
        with pytest.raises(TeamFileError, match=r"belongs to the script being run \(__main__\)"):
            team.to_toml()

    def test_a_plugin_setting_toml_cannot_hold_is_named(self) -> None:
        team = Team("t", coordinator=Agent("lead", role="r", backend="acme", settings={"k": {1}}))
        with pytest.raises(TeamFileError, match="set cannot be written in a team file"):
            team.to_toml()


# ── decorated tools' schemas ────────────────────────────────────────────────


class TestToolDecorator:
    def test_a_plain_function_s_schema_defaults_and_docstring(self) -> None:
        assert lookup.name == "lookup"
        assert lookup.summary == "Look a query up."
        assert lookup.parameters == {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {
                    "type": "integer",
                    "default": 3,
                    "description": "How many results at most, counted from the best.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        assert lookup("x", limit=2) == ["x", "x"]  # still the function

    async def test_an_async_function_with_an_optional_parameter(self) -> None:
        assert fetch_page.name == "fetch"
        assert fetch_page.summary == "Fetch a page."
        assert fetch_page.parameters["required"] == ["url"]
        assert fetch_page.parameters["properties"]["headers"] == {
            "anyOf": [
                {"type": "object", "additionalProperties": {"type": "string"}},
                {"type": "null"},
            ],
            "default": None,
        }
        assert await fetch_page("http://x") == "http://x"

    def test_literal_gives_an_enum(self) -> None:
        assert deploy.parameters["properties"]["target"] == {
            "type": "string",
            "enum": ["staging", "production"],
        }
        assert deploy.needs_approval

    def test_an_unsupported_annotation_is_an_error_naming_the_parameter(self) -> None:
        def probe(name: str, thing: Opaque) -> None: ...

        with pytest.raises(TeamFileError) as caught:
            tool(probe)
        message = str(caught.value)
        assert message.startswith(
            "@tool: parameter 'thing' of tests.spec.test_code_first:"
            "TestToolDecorator.test_an_unsupported_annotation_is_an_error_naming_the_parameter."
            "<locals>.probe: its type Opaque has no JSON Schema"
        )
        assert message.endswith("or give the input's schema as @tool(parameters=...)")

    def test_star_arguments_are_refused(self) -> None:
        def probe(*names: str) -> None: ...

        with pytest.raises(TeamFileError, match=r"takes \*names: a tool's input is an object"):
            tool(probe)

    def test_a_generator_is_refused(self) -> None:
        def probe() -> Any:
            yield 1

        with pytest.raises(TeamFileError, match="is a generator function: a tool returns one"):
            tool(probe)

    def test_given_parameters_replace_the_signature_s(self) -> None:
        schema = {"type": "object", "properties": {"q": {"type": "string"}}}
        probe = tool(name="probe", parameters=schema)(lambda **values: values)
        assert probe.parameters == schema
        team = Team("t", coordinator=Agent("lead", role="r", tools=[probe]))
        assert team.spec.python_tools[0].parameters == schema

    def test_a_tool_made_again_wraps_the_same_function(self) -> None:
        again = tool(name="search", needs_approval=True)(lookup)
        assert again.function is lookup.function
        assert again.target == "tests.spec.test_code_first:lookup"
        assert again.parameters == lookup.parameters
        assert inspect.signature(again) == inspect.signature(lookup.function)

    def test_a_plain_function_in_tools_is_made_a_tool(self) -> None:
        def shout(text: str) -> str:
            """Say it louder."""
            return text.upper()

        team = Team("t", coordinator=Agent("lead", role="r", tools=[shout]))
        (made,) = team.spec.python_tools
        assert (made.name, made.function) == ("shout", shout)

    def test_two_functions_under_one_name_are_refused(self) -> None:
        other = tool(name="lookup")(lambda query: query)
        with pytest.raises(TeamFileError) as caught:
            Team(
                "t",
                coordinator=Agent("lead", role="r", tools=[lookup, "delegate"], delegates_to=["w"]),
                agents=[Agent("w", role="w", tools=[other])],
            )
        assert str(caught.value).startswith(
            'Team("t"): tool("lookup"): two different tools are called \'lookup\' (the function '
            "tests.spec.test_code_first:lookup and the function "
        )


# ── every team-file error, from Python ──────────────────────────────────────

BASE: dict[str, Any] = {
    "team": {"name": "t", "coordinator": "lead"},
    "tools": {
        "count": {"command": ["wc", "-w"]},
        "lookup": {"python": "tests.spec.test_code_first:lookup"},
    },
    "mcp": {"notes": {"command": ["python", "notes.py"]}},
    "agents": {
        "lead": {
            "role": "coordinator",
            "tools": ["delegate", "count"],
            "delegates_to": ["worker"],
            "turns": [{"steps": [{"delegate": [{"agent": "worker", "task": "go"}]}]}],
        },
        "worker": {
            "role": "worker",
            "tools": ["search", "publish", "lookup", "mcp.notes/*"],
            "needs_approval": ["publish"],
            "turns": [{"steps": [{"tool": "search"}, {"say": "done"}]}],
        },
    },
    "background": [{"name": "nightly", "every": "1h", "prompt": "tidy up"}],
}
Edit = Callable[[dict[str, Any]], object]


def _set(path: str, value: object) -> Edit:
    """An edit setting the key at dotted ``path`` (``agents.worker.role``) to ``value``."""

    def edit(document: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        table: Any = document
        for part in parents:
            table = table[int(part)] if isinstance(table, list) else table[part]
        table[key] = value

    return edit


def _drop(path: str) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        table: Any = document
        for part in parents:
            table = table[part]
        del table[key]

    return edit


def _openai_worker(key: str, value: object) -> Edit:
    """The worker on the openai backend (a model, no script) with ``key`` set to ``value``."""

    def edit(document: dict[str, Any]) -> None:
        worker = document["agents"]["worker"]
        del worker["turns"]
        worker.update({"backend": "openai", "model": "m", key: value})

    return edit


#: (edit of BASE, where the Python calls place the problem). Each check of the parser that a
#: Python call can reach; a key the calls do not take is Python's TypeError instead.
ERRORS = [
    pytest.param(_set("team.name", " "), "name", id="empty-team-name"),
    pytest.param(_set("team.coordinator", "leed"), "coordinator", id="unknown-coordinator"),
    pytest.param(_set("team.topology", "star"), "topology", id="bad-topology"),
    pytest.param(_set("team.parallel_budget", 0), "parallel_budget", id="zero-budget"),
    pytest.param(_set("team.parallel_budget", True), "parallel_budget", id="bool-budget"),
    pytest.param(_set("team.on_restart", "again"), "on_restart", id="bad-restart-policy"),
    pytest.param(_set("team.description", 3), "description", id="description-type"),
    pytest.param(_set("openai", {"modle": "m"}), "openai.modle", id="openai-unknown-key"),
    pytest.param(_set("agents", {}), "agents", id="no-agents"),
    pytest.param(
        _set("agents", {"lead": {"role": "r"}, "re searcher": {"role": "r"}}),
        'Agent("re searcher")',
        id="bad-agent-name",
    ),
    pytest.param(_drop("agents.worker.role"), 'Agent("worker").role', id="missing-role"),
    pytest.param(_set("agents.worker.role", ""), 'Agent("worker").role', id="empty-role"),
    pytest.param(_set("agents.worker.role", 3), 'Agent("worker").role', id="role-type"),
    pytest.param(
        _set("agents.worker.tools", ["search", "search"]),
        'Agent("worker").tools[1]',
        id="duplicate-tool",
    ),
    pytest.param(
        _set("agents.worker.tools", ["a b"]), 'Agent("worker").tools[0]', id="bad-tool-name"
    ),
    pytest.param(
        _set("agents.worker.tools", ["mcp.nots/x"]),
        'Agent("worker").tools[0]',
        id="undeclared-mcp-server",
    ),
    pytest.param(
        _set("agents.worker.tools", ["mcp.notes"]),
        'Agent("worker").tools[0]',
        id="bad-mcp-reference",
    ),
    pytest.param(
        _set("agents.lead.delegates_to", ["wroker"]),
        'Agent("lead").delegates_to[0]',
        id="unknown-delegate",
    ),
    pytest.param(
        _set("agents.lead.delegates_to", ["worker", "worker"]),
        'Agent("lead").delegates_to[1]',
        id="duplicate-delegate",
    ),
    pytest.param(
        _set("agents.worker.needs_approval", ["deploy"]),
        'Agent("worker").needs_approval[0]',
        id="approval-not-in-tools",
    ),
    pytest.param(
        _set("agents.lead.approved_by", "coordinator"),
        'Agent("lead").approved_by',
        id="coordinator-approves-itself",
    ),
    pytest.param(
        _set("agents.worker.approved_by", "boss"), 'Agent("worker").approved_by', id="bad-approver"
    ),
    pytest.param(
        _set("agents.worker.approved_by", "coordinator"),
        'Agent("worker").approved_by',
        id="routed-without-approves",
    ),
    pytest.param(
        _set("agents.worker.approves", ["publish"]),
        'Agent("worker").approves',
        id="approves-on-a-worker",
    ),
    pytest.param(_set("agents.worker.timeout", 0), 'Agent("worker").timeout', id="zero-timeout"),
    pytest.param(
        _set("agents.worker.timeout", float("inf")), 'Agent("worker").timeout', id="inf-timeout"
    ),
    pytest.param(
        _set("agents.worker.interactivity", "readonly"),
        'Agent("worker").interactivity',
        id="bad-interactivity",
    ),
    pytest.param(
        _set("agents.worker.tool_results", {"serach": "x"}),
        'Agent("worker").tool_results.serach',
        id="result-of-an-unknown-tool",
    ),
    pytest.param(
        _set("agents.lead.tool_results", {"count": "x"}),
        'Agent("lead").tool_results.count',
        id="result-of-a-command",
    ),
    pytest.param(
        _set("agents.worker.tool_results", {"lookup": "x"}),
        'Agent("worker").tool_results.lookup',
        id="result-of-a-function",
    ),
    pytest.param(
        _set("agents.worker.tool_results", {"mcp.notes/*": "x"}),
        'Agent("worker").tool_results."mcp.notes/*"',
        id="result-of-an-mcp-tool",
    ),
    pytest.param(
        _set("agents.worker.backend", "scriptd"), 'Agent("worker").backend', id="backend-typo"
    ),
    pytest.param(
        _set("agents.worker.model", "gpt"), 'Agent("worker").model', id="model-without-openai"
    ),
    pytest.param(
        _set("agents.worker.settings", {"k": 1}),
        'Agent("worker").settings',
        id="settings-on-a-builtin-backend",
    ),
    pytest.param(
        lambda d: d["agents"]["worker"].update(backend="openai"),
        'Agent("worker").model',
        id="openai-without-model",
    ),
    pytest.param(
        lambda d: d["agents"]["worker"].update(backend="openai", model="m", base_url="ftp://x"),
        'Agent("worker").base_url',
        id="bad-base-url",
    ),
    pytest.param(
        lambda d: d["agents"]["worker"].update(backend="openai", model="m", api_key_env="sk-1"),
        'Agent("worker").api_key_env',
        id="key-instead-of-variable",
    ),
    pytest.param(
        lambda d: d["agents"]["lead"].update(backend="acme"),
        'Agent("lead").turns',
        id="turns-on-a-plugin-backend",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": []}]),
        'Agent("worker").turns[0].steps',
        id="empty-turn",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"tool": "deploy"}]}]),
        'Agent("worker").turns[0].steps[0].tool',
        id="step-calls-a-tool-not-listed",
    ),
    pytest.param(
        _set("agents.lead.turns", [{"steps": [{"delegate": [{"agent": "lead", "task": "x"}]}]}]),
        'Agent("lead").turns[0].steps[0].delegate[0].agent',
        id="step-delegates-outside-delegates-to",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"say": "x", "think": "y"}]}]),
        'Agent("worker").turns[0].steps[0]',
        id="step-with-two-actions",
    ),
    pytest.param(_set("tools.count.command", []), 'Command("count").command', id="empty-argv"),
    pytest.param(
        _set("tools.count.command", "wc -w"), 'Command("count").command', id="argv-as-a-string"
    ),
    pytest.param(_set("tools.count.timeout", 30), 'Command("count").timeout', id="bare-timeout"),
    pytest.param(
        _set("tools.count.env", {"ORCHESTRATOR_X": "1"}),
        'Command("count").env.ORCHESTRATOR_X',
        id="reserved-variable",
    ),
    pytest.param(
        _set("tools.count.parameters", {"type": "string"}),
        'Command("count").parameters',
        id="schema-not-an-object",
    ),
    pytest.param(
        _set("tools.lookup.parameters", {"type": "object", "properties": 3}),
        'tool("lookup").parameters',
        id="function-schema-invalid",
    ),
    pytest.param(
        _set("tools.lookup.timeout", "soon"), 'tool("lookup").timeout', id="function-timeout"
    ),
    pytest.param(
        _set("mcp.notes.url", "http://x/mcp"), 'Mcp("notes").url', id="mcp-command-and-url"
    ),
    pytest.param(
        _set("mcp.notes", {"url": "http://u:p@x/mcp"}), 'Mcp("notes").url', id="mcp-credentials"
    ),
    pytest.param(
        _set("mcp.notes.headers", {"A": "b"}), 'Mcp("notes").headers', id="mcp-headers-on-stdio"
    ),
    pytest.param(_set("mcp.notes", {}), 'Mcp("notes")', id="mcp-no-transport"),
    pytest.param(
        _set("background.0.every", "soon"), "background[0].every", id="background-duration"
    ),
    pytest.param(_set("background.0.agent", "ghost"), "background[0].agent", id="background-agent"),
    pytest.param(
        _set("background.0.timezone", "UTC"), "background[0].timezone", id="background-zone"
    ),
    pytest.param(
        lambda d: d["background"].append(dict(d["background"][0])),
        "background[1].name",
        id="background-duplicate",
    ),
    pytest.param(
        _set("agents.lead.turns", [{"steps": [{"handoff": {"agent": "worker", "reason": "x"}}]}]),
        'Agent("lead").turns[0].steps[0].handoff',
        id="handoff-step-without-the-tool",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"ask": "why?"}]}]),
        'Agent("worker").turns[0].steps[0].ask',
        id="ask-step-without-the-tool",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"usage": {"input": 1}}]}]),
        'Agent("worker").turns[0].steps[0].usage',
        id="usage-step-not-an-array",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"sleep": -1}]}]),
        'Agent("worker").turns[0].steps[0].sleep',
        id="sleep-step-negative",
    ),
    pytest.param(
        _set("tools.count.env_passthrough", ["1BAD"]),
        'Command("count").env_passthrough[0]',
        id="passthrough-not-a-variable",
    ),
    pytest.param(
        _set("agents.worker.output_schema", {"type": "objekt"}),
        'Agent("worker").output_schema',
        id="output-schema-invalid",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"say": "x"}], "retry": [{"say": "y"}]}]),
        'Agent("worker").turns[0].retry',
        id="retry-without-output-schema",
    ),
    pytest.param(
        _set("agents.checker", {"role": "reviewer", "reviews": ["ghost"]}),
        'Agent("checker").reviews[0]',
        id="reviews-an-unknown-agent",
    ),
    pytest.param(
        _set("agents.checker", {"role": "reviewer", "reviews": ["lead"]}),
        'Agent("checker").reviews[0]',
        id="reviews-the-coordinator",
    ),
    pytest.param(
        _set("agents.worker.reviews", ["worker"]),
        'Agent("worker").reviews[0]',
        id="reviews-itself",
    ),
    pytest.param(
        _set("agents.worker.max_review_rounds", 2),
        'Agent("worker").max_review_rounds',
        id="max-rounds-without-reviews",
    ),
    pytest.param(
        _set("agents.checker", {"role": "reviewer", "reviews": ["worker"], "max_review_rounds": 0}),
        'Agent("checker").max_review_rounds',
        id="max-rounds-zero",
    ),
    pytest.param(_set("agents.lead.review", "sometimes"), 'Agent("lead").review', id="review-mode"),
    pytest.param(
        _set("agents.lead.review", "always"), 'Agent("lead").review', id="review-without-reviewer"
    ),
    pytest.param(
        _set("agents.checker", {"role": "reviewer", "reviews": ["worker"], "output_schema": {}}),
        'Agent("checker").output_schema',
        id="reviewer-with-its-own-schema",
    ),
    pytest.param(
        _set("agents.worker.turns", [{"steps": [{"verdict": "passed"}]}]),
        'Agent("worker").turns[0].steps[0].verdict',
        id="verdict-step-of-a-non-reviewer",
    ),
    *(
        pytest.param(_openai_worker(key, value), f'Agent("worker").{key}', id=f"openai-{key}")
        for key, value in (
            ("api_key_header", "a b"),
            ("stream_usage", "no"),
            ("query", "v=1"),
            ("structured_output", "json"),
            ("read_timeout", 0),
            ("base_url", "localhost:11434"),
        )
    ),
]


class TestSameChecks:
    def test_the_base_document_is_a_valid_team(self) -> None:
        assert calls(copy.deepcopy(BASE)).spec == as_file(
            team_from_mapping(copy.deepcopy(BASE), file="t.toml"), 'Team("t")'
        )

    @pytest.mark.parametrize(("edit", "where"), ERRORS)
    def test_each_error_has_the_file_s_message_at_the_python_call(
        self, edit: Edit, where: str
    ) -> None:
        """The same edit made to a team file and to the Python calls: the same messages, the
        calls' placed at the call (``Agent("worker").role``) after ``Team("t")``."""
        document = copy.deepcopy(BASE)
        edit(document)
        with pytest.raises(TeamFileError) as in_file:
            team_from_mapping(copy.deepcopy(document), file="t.toml")
        with pytest.raises(TeamFileError) as in_python:
            calls(document)
        file_problems, python_problems = in_file.value.problems, in_python.value.problems
        assert [p.message for p in python_problems] == [p.message for p in file_problems]
        assert python_problems[0].key_path == where
        label = f"Team({json.dumps(document['team']['name'])})"
        assert str(python_problems[0]) == f"{label}: {where}: {file_problems[0].message}"

    def test_something_other_than_an_agent_is_a_type_error_naming_it(self) -> None:
        with pytest.raises(TypeError, match=r'Team\("t"\): agents\[0\] is str, not Agent'):
            Team("t", coordinator="lead", agents=["lead"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"tools\[0\] is str, not Tool or Command"):
            Team("t", coordinator="lead", tools=["len"])

    def test_a_keyword_the_calls_do_not_take_is_python_s_type_error(self) -> None:
        with pytest.raises(TypeError, match="rol"):
            Agent("lead", rol="coordinator")  # type: ignore[call-arg]


class TestOutputSchema:
    """``Agent(output_schema=...)``: a JSON Schema, or a pydantic model class standing for
    its ``model_json_schema()``; the same spec as the file's ``output_schema`` table."""

    SCHEMA: dict[str, Any] = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 0}},
        "required": ["score"],
    }

    def test_a_schema_gives_the_file_s_spec(self) -> None:
        team = Team("t", coordinator=Agent("lead", role="coordinator", output_schema=self.SCHEMA))
        file = parse_team(
            '[team]\nname = "t"\ncoordinator = "lead"\n[agents.lead]\nrole = "coordinator"\n'
            'output_schema = { type = "object", properties = { score = { type = "integer", '
            'minimum = 0 } }, required = ["score"] }\n',
            file="t.toml",
        )
        assert as_file(team.spec, "t.toml") == file
        assert parse_team(team.to_toml(), file="t.toml") == file

    def test_a_pydantic_model_is_its_json_schema_and_its_value_comes_back(self) -> None:
        pydantic = pytest.importorskip("pydantic")

        class Verdict(pydantic.BaseModel):  # type: ignore[name-defined,misc]
            ship: bool
            reason: str | None = None  # its schema holds "default": null, which code can say

        lead = Agent(
            "lead",
            role="coordinator",
            output_schema=Verdict,
            turns=[{"steps": [{"say": '{"ship": true}'}]}],
        )
        team = Team("t", coordinator=lead)
        assert team.spec.agent("lead").output_schema == Verdict.model_json_schema()
        import orchestrator

        outcome = orchestrator.run_team_sync(team, "ship it?")
        assert outcome.result_value == {"ship": True}
        assert Verdict.model_validate(outcome.result_value) == Verdict(ship=True)
        # A file cannot hold null: the team runs, but has no file to write.
        with pytest.raises(TeamFileError, match="cannot be written in a team file"):
            team.to_toml()

    def test_something_else_is_an_error_naming_the_agent(self) -> None:
        with pytest.raises(ValueError, match=r'^Agent\("lead"\)\.output_schema: '):
            Team("t", coordinator=Agent("lead", role="coordinator", output_schema=int))

    def test_an_invalid_schema_is_the_file_s_error_at_the_call(self) -> None:
        with pytest.raises(TeamFileError, match=r'Agent\("lead"\)\.output_schema'):
            Team("t", coordinator=Agent("lead", role="coordinator", output_schema={"type": 3}))
