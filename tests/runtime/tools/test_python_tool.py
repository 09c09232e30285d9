"""Python tools: ``[tools.NAME] python = "package.module:function"`` calls the function for
a call of the tool.

The functions live in :mod:`tests.support.python_tools`; the team files name them there. What is
checked: the team-file table (pure parser), resolving a reference when a team starts (every
problem names ``tools.NAME.python``), the schema derived from the signature, a call (async in
trio, sync in a worker thread; input checked first; the return value and exception rules;
timeout and cancellation), and whole runs: scripted, through ``teams check`` and ``run``, and
through the OpenAI-compatible backend against the fake model server.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import keyword
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import structlog.testing
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import Agent, Team, tool
from orchestrator.ahp.actions import (
    ChatToolCallCompleteAction,
    ChatToolCallReadyAction,
    ChatTurnCancelledAction,
)
from orchestrator.ahp.state import ToolResultTextContent
from orchestrator.base import TeamFileError
from orchestrator.core import RunFinished, RunStatus
from orchestrator.runtime import (
    CommandResult,
    ResolvedPythonTool,
    python_tool_problems,
    resolve_python_tool,
    resolve_python_tools,
    run_python_tool,
)
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.runtime.tools._python_tool import _keywords
from orchestrator.spec import (
    TeamSpec,
    check_tool_input,
    lint_team,
    parse_team,
    schema_problem,
    tool_definitions,
)
from tests.support import code_first, python_tools
from tests.support.daemon import running_daemon
from tests.support.examples import examples
from tests.support.fake_openai import Answer, Stream, fake_openai, text, tool_calls
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness

pytestmark = pytest.mark.filterwarnings(
    # As in test_backend_openai: httpx's nested stream generators closed by trio's finalizer.
    r"ignore:Async generator '(httpx|httpcore|httpx_sse)\.[^']*' was garbage collected"
    ":ResourceWarning"
)


@pytest.fixture(autouse=True)
def _fresh_signals() -> Iterator[None]:
    python_tools.reset()
    yield
    python_tools.SIGNALS.release.set()  # a thread a test left blocked ends


def team_with(table: str, *, steps: str = '{ say = "x" }', name: str = "probe") -> TeamSpec:
    """A one-agent team whose scripted coordinator plays ``steps``; ``table`` is the body of
    ``[tools.<name>]``."""
    return parse_team(
        f"""
[team]
name = "py-team"
coordinator = "lead"

[tools.{name}]
{table}

[agents.lead]
role = "coordinator"
tools = ["{name}"]

[[agents.lead.turns]]
steps = [ {steps} ]
""",
        file="<test>",
    )


def python_table(function: str, extra: str = "") -> str:
    return f'python = "tests.support.python_tools:{function}"\n{extra}'


def resolved(function: str, extra: str = "") -> ResolvedPythonTool:
    team = team_with(python_table(function, extra))
    return resolve_python_tool(team, team.python_tools[0])


async def call(
    function: str, arguments: dict[str, Any], extra: str = "", guard: float = 60, **kwargs: Any
) -> CommandResult:
    """One call of ``function`` as the tool ``probe`` (``extra``: more of its table);
    ``guard``: the seconds after which the test fails (virtual ones on the autojump clock)."""
    with trio.fail_after(guard):
        return await run_python_tool(resolved(function, extra), arguments, **kwargs)


def result_text(action: ChatToolCallCompleteAction) -> str:
    assert action.result.content is not None
    (content,) = action.result.content
    assert isinstance(content, ToolResultTextContent)
    return content.text


# ─── the team file ──────────────────────────────────────────────────────────────────────


class TestTeamFile:
    def test_a_python_table_is_a_python_tool(self) -> None:
        team = team_with(python_table("add", 'description = "Sum"\ntimeout = "30s"'))
        assert team.command_tools == ()
        (tool,) = team.python_tools
        assert (tool.name, tool.target, tool.module, tool.qualname) == (
            "probe",
            "tests.support.python_tools:add",
            "tests.support.python_tools",
            "add",
        )
        assert tool.description == "Sum"
        assert tool.timeout.total_seconds() == 30
        assert tool.parameters is None, "derived from the signature when the team starts"
        assert team.python_tool("probe") is tool
        assert team.command_tool("probe") is None

    def test_parameters_are_kept_when_given(self) -> None:
        team = team_with(python_table("echo", 'parameters = { type = "object" }'))
        assert team.python_tools[0].parameters == {"type": "object"}

    @pytest.mark.parametrize(
        ("table", "key", "says"),
        [
            (
                python_table("add", 'command = ["x"]'),
                "tools.probe.python",
                "set either command (a program to run) or python (a function to call), not both",
            ),
            ('description = "no target"', "tools.probe.command", "or set python ="),
            ('python = "add"', "tools.probe.python", 'expected "package.module:function"'),
            ('python = "a b:c"', "tools.probe.python", "got 'a b:c'"),
            ('python = "mod:"', "tools.probe.python", 'expected "package.module:function"'),
            ("python = 3", "tools.probe.python", "expected a string"),
            (python_table("add", 'cwd = "/tmp"'), "tools.probe.cwd", "own process"),
            (python_table("add", "env = { A = 'b' }"), "tools.probe.env", "has no env"),
            (
                python_table("add", 'env_passthrough = ["HOME"]'),
                "tools.probe.env_passthrough",
                "has no env_passthrough of its own",
            ),
            (python_table("add", "pyhton = 1"), "tools.probe.pyhton", "unknown key 'pyhton'"),
            (python_table("add", "timeout = 5"), "tools.probe.timeout", 'such as "90s"'),
            (
                python_table("add", 'parameters = { type = "string" }'),
                "tools.probe.parameters",
                'must be "object"',
            ),
        ],
    )
    def test_a_bad_table_is_named_by_its_key_path(self, table: str, key: str, says: str) -> None:
        with pytest.raises(TeamFileError) as caught:
            team_with(table)
        assert caught.value.key_path == key
        assert says in caught.value.message

    def test_a_misspelt_python_key_of_a_command_table_is_suggested(self) -> None:
        with pytest.raises(TeamFileError) as caught:
            team_with('pythn = "tests.support.python_tools:add"')
        assert "did you mean 'python'?" in caught.value.message

    def test_a_scripted_result_for_a_python_tool_is_refused(self) -> None:
        with pytest.raises(TeamFileError) as caught:
            parse_team(
                '[team]\nname = "t"\ncoordinator = "lead"\n'
                '[tools.add]\npython = "tests.support.python_tools:add"\n'
                '[agents.lead]\nrole = "r"\ntools = ["add"]\n'
                '[agents.lead.tool_results]\nadd = "3"\n',
                file="<t>",
            )
        assert caught.value.key_path == "agents.lead.tool_results.add"
        assert caught.value.message.startswith(
            "'add' calls a Python function ([tools.add]): its result is what the function "
            "returns, not a text from tool_results"
        )

    def test_one_no_agent_lists_is_linted(self) -> None:
        unlisted = parse_team(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[tools.adder]\npython = "tests.support.python_tools:add"\n'
            '[agents.lead]\nrole = "r"\n[[agents.lead.turns]]\nsteps = [{ say = "x" }]\n',
            file="<test>",
        )
        assert lint_team(unlisted) == [
            "<test>: tools.adder: no agent lists 'adder' in its tools, so nothing can call it"
        ]

    def test_without_the_runtime_the_table_s_description_and_parameters_are_offered(
        self,
    ) -> None:
        """The spec imports no user code: without a resolved definition the model is offered
        what the table says, or any object."""
        team = team_with(python_table("add", 'parameters = { type = "object" }'))
        (definition,) = tool_definitions(team, team.coordinator_agent)
        assert definition.parameters == {"type": "object"}
        assert definition.description == "The probe tool of team py-team."


# ─── resolving a reference, deriving the schema ─────────────────────────────────────────


class TestResolve:
    def test_the_schema_comes_from_the_signature(self) -> None:
        tool = resolved("add")
        assert tool.definition.parameters == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
            "required": ["a"],
            "additionalProperties": False,
        }
        assert not tool.is_async

    def test_the_docstring_s_first_paragraph_describes_it(self) -> None:
        assert resolved("add").definition.description == "Add two integers."

    def test_the_table_s_description_wins(self) -> None:
        assert resolved("add", 'description = "Sum"').definition.description == "Sum"

    def test_without_a_docstring_a_default_description(self) -> None:
        assert resolved("fails").definition.description == "The probe tool of team py-team."

    def test_literal_list_typed_dict_dataclass_enum_and_annotated(self) -> None:
        schema = resolved("describe").definition.parameters
        assert schema_problem(schema) is None
        properties = schema["properties"]
        assert properties["colour"] == {"type": "string", "enum": ["red", "green"]}
        assert properties["sizes"] == {"type": "array", "items": {"type": "integer"}}
        assert properties["point"] == {"$ref": "#/$defs/Point"}
        assert schema["$defs"]["Point"]["required"] == ["x", "y"]
        assert schema["$defs"]["Box"]["required"] == ["width"]
        assert schema["$defs"]["Colour"]["enum"] == ["red", "blue"]
        assert properties["note"]["description"] == "Anything to add."
        assert schema["required"] == ["colour", "sizes", "point"]

    def test_parameters_in_the_table_win_over_the_signature(self) -> None:
        schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
        table = 'parameters = { type = "object", properties = { q = { type = "string" } }, '
        tool = resolved("echo", table + 'required = ["q"] }')
        assert tool.definition.parameters == schema
        assert tool.arguments is None

    def test_an_async_function_is_known_as_one(self) -> None:
        assert resolved("shout").is_async

    @pytest.mark.parametrize(
        ("target", "says"),
        [
            (
                "tests.no_such_module:f",
                "cannot import 'tests.no_such_module' for tests.no_such_module:f: "
                "ModuleNotFoundError: No module named 'tests.no_such_module'",
            ),
            (
                "tests.support.python_tools_exiting:f",
                "cannot import 'tests.support.python_tools_exiting' for "
                "tests.support.python_tools_exiting:f: "
                "SystemExit: 3",
            ),
            (
                "tests.support.python_tools:absent",
                "module 'tests.support.python_tools' has no 'absent'",
            ),
            (
                "tests.support.python_tools:Box.nope",
                "module 'tests.support.python_tools' has no 'Box.nope'",
            ),
            (
                "tests.support.python_tools:NOT_CALLABLE",
                "tests.support.python_tools:NOT_CALLABLE is int",
            ),
            ("tests.support.python_tools:star_args", "takes *values: a tool's input is an object"),
            ("tests.support.python_tools:echo", "takes **values"),
            ("tests.support.python_tools:positional", "takes a (positional-only)"),
            (
                "tests.support.python_tools:takes_opaque",
                "parameter 'thing' of tests.support.python_tools:takes_opaque: its type Opaque "
                "has no "
                "JSON Schema (PydanticSchemaGenerationError: Unable to generate pydantic-core "
                "schema for <class 'tests.support.python_tools.Opaque'>.",
            ),
            ("tests.support.python_tools:numbers", "is a generator function"),
        ],
    )
    def test_a_bad_reference_names_its_key_path(self, target: str, says: str) -> None:
        team = team_with(f'python = "{target}"')
        with pytest.raises(TeamFileError) as caught:
            resolve_python_tools(team)
        assert caught.value.key_path == "tools.probe.python"
        assert caught.value.file == "<test>"
        assert says in caught.value.message

    def test_every_bad_reference_of_a_team_is_reported(self) -> None:
        team = parse_team(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[tools.a]\npython = "tests.support.python_tools:absent"\n'
            '[tools.b]\npython = "tests.support.python_tools:add"\n'
            '[tools.c]\npython = "tests.support.python_tools:NOT_CALLABLE"\n'
            '[agents.lead]\nrole = "r"\ntools = ["a", "b", "c"]\n',
            file="team.toml",
        )
        assert [line.split(": ")[1] for line in python_tool_problems(team)] == [
            "tools.a.python",
            "tools.c.python",
        ]

    def test_the_team_runtime_refuses_a_bad_reference_before_recording(self) -> None:
        team = team_with(python_table("absent"))
        with pytest.raises(TeamFileError) as caught:
            Harness(team)
        assert caught.value.key_path == "tools.probe.python"


# ─── a call ─────────────────────────────────────────────────────────────────────────────


class TestCall:
    async def test_a_sync_function_s_return_value_is_the_result(self) -> None:
        assert await call("add", {"a": 2, "b": 40}) == CommandResult(success=True, output="42")
        assert python_tools.CALLS == [("add", {"a": 2, "b": 40})]

    async def test_the_function_s_own_defaults_apply(self) -> None:
        assert (await call("add", {"a": 2})).output == "3"

    async def test_an_async_function_runs_in_trio(self) -> None:
        result = await call("shout", {"text": "hi", "times": 2})
        assert result == CommandResult(success=True, output="HI!HI!")

    async def test_a_sync_function_runs_off_the_trio_thread(self) -> None:
        result = await call("where", {})
        ran = json.loads(result.output)
        assert ran["thread"] != threading.get_ident()
        assert ran["in_trio"] is False

    async def test_arguments_arrive_as_their_python_types(self) -> None:
        arguments = {
            "colour": "green",
            "sizes": [1, 2],
            "point": {"x": 1, "y": 2},
            "box": {"width": 3},
            "shade": "blue",
        }
        result = await call("describe", arguments)
        assert json.loads(result.output) == {
            "colour": "green",
            "sizes": [1, 2],
            "point": {"x": 1, "y": 2},
            "box": ["Box", 3.0, 1.0],
            "shade": ["Colour", "blue"],
            "note": "",
        }

    @pytest.mark.parametrize(
        ("arguments", "says"),
        [
            ({"a": "two"}, "invalid input for probe: $.a: 'two' is not of type 'integer'"),
            ({}, "invalid input for probe: the input: 'a' is a required property"),
            ({"a": 1, "c": 2}, "Additional properties are not allowed ('c' was unexpected)"),
        ],
    )
    async def test_input_that_does_not_fit_fails_and_the_function_is_not_called(
        self, arguments: dict[str, Any], says: str
    ) -> None:
        result = await call("add", arguments)
        assert not result.success
        assert says in result.output
        assert python_tools.CALLS == []

    async def test_input_the_table_s_schema_refuses_is_refused_too(self) -> None:
        schema = 'parameters = { type = "object", required = ["q"] }'
        result = await call("echo", {"r": 1}, schema)
        assert result.output == "invalid input for probe: the input: 'q' is a required property"
        assert python_tools.CALLS == []
        result = await call("echo", {"q": 1, "r": [2]}, schema)
        assert json.loads(result.output) == {"q": 1, "r": [2]}, "passed on as JSON decoded it"

    @pytest.mark.parametrize(
        ("kind", "success", "output"),
        [
            ("text", True, "plain text"),
            ("dict", True, '{"a":[1,2.5,null,true],"é":"ü"}'),
            ("none", True, "null"),
            ("list", True, '["x",1]'),
            ("surrogate", True, "a\ufffdb"),
            ("set", False, "probe returned set, which is neither a str nor JSON-serialisable"),
            ("nan", False, "probe returned float, which is neither a str nor JSON-serialisable"),
            ("object", False, "probe returned object, which is neither"),
            ("coroutine", False, "probe returned a coroutine: declare the function async def"),
        ],
    )
    async def test_the_return_value_rules(self, kind: str, success: bool, output: str) -> None:
        result = await call("give", {"kind": kind})
        assert result.success is success
        assert result.output.startswith(output)

    async def test_a_long_result_is_cut_with_a_note(self) -> None:
        # 40 "é" are 80 bytes; cut at 11, the half character at the cut is left out.
        result = await call("give", {"kind": "big"}, output_limit=11)
        assert result.output == "é" * 5 + "\n[output truncated: 69 more bytes not shown]"

    async def test_an_exception_fails_the_call_with_its_type_and_message(self) -> None:
        with structlog.testing.capture_logs() as logs:
            result = await call("fails", {"message": "no such file: x"})
        assert result == CommandResult(success=False, output="ValueError: no such file: x")
        (raised,) = [e for e in logs if e["event"] == "python tool raised"]
        assert raised["tool"] == "probe"
        assert isinstance(raised["exc_info"], ValueError), "the traceback goes to the log"

    @pytest.mark.parametrize("function", ["exits", "exits_async"])
    async def test_sys_exit_fails_the_call_not_the_process(self, function: str) -> None:
        """A tool that calls sys.exit() fails its call, as an exception does: the run (or
        the daemon) it runs in goes on."""
        result = await call(function, {"status": 3})
        assert result == CommandResult(success=False, output="SystemExit: 3")

    async def test_an_exception_without_a_message_is_named_by_its_type(self) -> None:
        result = await call("fails", {"message": ""})
        assert result == CommandResult(success=False, output="ValueError")

    async def test_an_async_function_times_out(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        start = trio.current_time()
        result = await call("slow", {"seconds": 3600}, 'timeout = "90s"', guard=600)
        assert result == CommandResult(success=False, output="probe timed out after 1m30s")
        assert trio.current_time() - start == 90

    async def test_a_sync_function_times_out_and_its_thread_is_left(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The call fails at its timeout; the thread cannot be stopped and runs on until
        its function returns (here: when the test releases it)."""
        start = trio.current_time()
        result = await call("blocking", {}, 'timeout = "5s"', guard=600)
        assert result.output == (
            "probe timed out after 5s (its thread cannot be stopped: it runs on)"
        )
        assert trio.current_time() - start == 5
        # The clock jumps as soon as the call waits for its thread: it may not run yet.
        await trio.to_thread.run_sync(python_tools.SIGNALS.thread_started.wait)
        assert python_tools.CALLS == [], "still blocked"
        python_tools.SIGNALS.release.set()

    async def test_cancelling_an_async_call_cancels_the_function(self) -> None:
        python_tools.SIGNALS.started = trio.Event()
        tool = resolved("forever")
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_python_tool, tool, {})
                await python_tools.SIGNALS.started.wait()
                nursery.cancel_scope.cancel()
        assert python_tools.SIGNALS.ended == ["cancelled"]


# ─── the property: any signature of JSON-ish hints gives a schema its values fit ───────

#: A hint, and a strategy of JSON values of that type.
HINTS: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "str": (str, st.text()),
    "int": (int, st.integers()),
    "float": (float, st.floats(allow_nan=False, allow_infinity=False)),
    "bool": (bool, st.booleans()),
    "list[int]": (list[int], st.lists(st.integers(), max_size=3)),
    "dict[str, str]": (dict[str, str], st.dictionaries(st.text(), st.text(), max_size=3)),
    "Literal": (Literal["a", "b"], st.sampled_from(["a", "b"])),
    "int | None": (int | None, st.none() | st.integers()),
    "enum": (python_tools.Colour, st.sampled_from(["red", "blue"])),
    "TypedDict": (
        python_tools.Point,
        st.fixed_dictionaries({"x": st.integers(), "y": st.integers()}),
    ),
    "dataclass": (
        python_tools.Box,
        st.fixed_dictionaries(
            {"width": st.floats(allow_nan=False, allow_infinity=False)},
            optional={"height": st.integers(-5, 5)},
        ),
    ),
}

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)


@st.composite
def signatures(draw: st.DrawFn) -> tuple[inspect.Signature, dict[str, Any]]:
    """A keyword signature of 0-5 parameters of :data:`HINTS`' types (some with defaults),
    and arguments for it: every required one, some of the others."""
    names = draw(st.lists(NAMES, max_size=5, unique=True))
    parameters: list[inspect.Parameter] = []
    arguments: dict[str, Any] = {}
    for name in names:
        hint, values = HINTS[draw(st.sampled_from(sorted(HINTS)))]
        optional = draw(st.booleans())
        default = draw(values) if optional else inspect.Parameter.empty
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=default
            )
        )
        if not optional or draw(st.booleans()):
            arguments[name] = draw(values)
    return inspect.Signature(parameters), arguments


@settings(max_examples=examples(60), deadline=None)
@given(signatures())
def test_a_derived_schema_is_valid_and_fits_the_arguments_of_its_types(
    drawn: tuple[inspect.Signature, dict[str, Any]],
) -> None:
    signature, arguments = drawn
    python_tools.generated.__signature__ = signature  # type: ignore[attr-defined]
    try:
        tool = resolved("generated")
    finally:
        del python_tools.generated.__signature__  # type: ignore[attr-defined]
    schema = tool.definition.parameters
    assert schema_problem(schema) is None
    assert check_tool_input((tool.definition,), "probe", arguments) is None
    keywords, problem = _keywords(tool, arguments)
    assert problem is None
    assert set(keywords) == set(arguments), "only the keys given, by their own names"
    signature.bind(**keywords)  # the function takes them


@pytest.mark.parametrize("hint", sorted(HINTS))
def test_each_hint_the_property_draws_is_a_required_property(hint: str) -> None:
    """Whatever the property happens to draw, each of its types gets a schema."""
    parameter = inspect.Parameter(
        "value", inspect.Parameter.KEYWORD_ONLY, annotation=HINTS[hint][0]
    )
    signature = inspect.Signature([parameter])
    python_tools.generated.__signature__ = signature  # type: ignore[attr-defined]
    try:
        assert resolved("generated").definition.parameters["required"] == ["value"]
    finally:
        del python_tools.generated.__signature__  # type: ignore[attr-defined]


# ─── in a run ───────────────────────────────────────────────────────────────────────────

ADD_TEAM = """
[team]
name = "adders"
coordinator = "lead"

[tools.add]
python = "tests.support.python_tools:add"

[tools.wait]
python = "tests.support.python_tools:forever"

[tools.block]
python = "tests.support.python_tools:blocking"

[agents.lead]
role = "coordinator"
tools = ["add", "wait", "block"]

[[agents.lead.turns]]
steps = [ {steps} ]
"""


def add_team(steps: str) -> TeamSpec:
    return parse_team(ADD_TEAM.replace("{steps}", steps), file="adders.toml")


class TestInARun:
    async def test_the_call_s_input_and_result_are_recorded(self) -> None:
        h = Harness(
            add_team('{ tool = "add", input = { a = 2, b = 3 } }, { say = "sum: {outcomes}" }')
        )
        with trio.fail_after(60):
            outcome = await h.runtime.run("add them")
        assert outcome.status is RunStatus.COMPLETED
        (ready,) = h.actions(ChatToolCallReadyAction)
        assert isinstance(ready.tool_input, str)
        assert json.loads(ready.tool_input) == {"a": 2, "b": 3}
        (complete,) = h.actions(ChatToolCallCompleteAction)
        assert complete.result.success
        assert result_text(complete) == "5"
        assert outcome.result == "sum: 5"
        assert python_tools.CALLS == [("add", {"a": 2, "b": 3})]
        h.finished()

    async def test_input_that_does_not_fit_fails_the_call_and_the_turn_goes_on(self) -> None:
        h = Harness(add_team('{ tool = "add", input = { a = "2" } }, { say = "{outcomes}" }'))
        with trio.fail_after(60):
            outcome = await h.runtime.run("add")
        (complete,) = h.actions(ChatToolCallCompleteAction)
        assert not complete.result.success
        assert outcome.result == "invalid input for add: $.a: '2' is not of type 'integer'"
        assert python_tools.CALLS == []
        h.finished()

    async def test_cancelling_the_turn_cancels_an_async_tool(self) -> None:
        python_tools.SIGNALS.started = trio.Event()
        h = Harness(add_team('{ tool = "wait" }'))
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(h.runtime.run, "wait")
                await python_tools.SIGNALS.started.wait()
                h.runtime.cancel()
        assert python_tools.SIGNALS.ended == ["cancelled"]
        assert h.actions(ChatToolCallCompleteAction) == [], "a cancelled call has no result"
        assert h.actions(ChatTurnCancelledAction)
        (finished,) = h.actions(RunFinished)
        assert finished.status is RunStatus.CANCELLED
        h.finished()

    async def test_a_cancelled_turn_does_not_wait_for_a_sync_tool_s_thread(self) -> None:
        h = Harness(add_team('{ tool = "block" }'))
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(h.runtime.run, "block")
                await trio.to_thread.run_sync(python_tools.SIGNALS.thread_started.wait)
                h.runtime.cancel()
        (finished,) = h.actions(RunFinished)
        assert finished.status is RunStatus.CANCELLED
        assert python_tools.CALLS == [], "the thread is still blocked: the run did not wait"
        python_tools.SIGNALS.release.set()


# ─── teams check and run ───────────────────────────────────────────────────────────────


ORCHESTRATOR = (sys.executable, "-m", "orchestrator")


def teams_check(path: Path) -> tuple[int, str]:
    from orchestrator.cli._teams_command import check

    out = io.StringIO()
    status = check(argparse.Namespace(paths=[path], json=False), out)
    return status, out.getvalue()


class TestCommandLine:
    def test_teams_check_resolves_python_tools(self, tmp_path: Path) -> None:
        good = tmp_path / "good.toml"
        good.write_text(ADD_TEAM.replace("{steps}", '{ say = "x" }'))
        assert teams_check(good) == (0, f"ok: {good}\n")
        bad = tmp_path / "bad.toml"
        bad.write_text(ADD_TEAM.replace("{steps}", '{ say = "x" }').replace(":add", ":absent"))
        status, out = teams_check(bad)
        assert status != 0
        assert out == (
            f"{bad}: tools.add.python: module 'tests.support.python_tools' has no 'absent'\n"
        )

    @pytest.mark.daemon
    def test_run_with_a_bad_reference_exits_2_naming_the_key_path(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text(ADD_TEAM.replace("{steps}", '{ say = "x" }').replace(":add", ":absent"))
        done = subprocess.run(
            [*ORCHESTRATOR, "run", str(bad), "go", "--plain", "--db", str(tmp_path / "j.db")],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=PROJECT_ROOT,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert f"{bad}: tools.add.python: module 'tests.support.python_tools' has no 'absent'" in (
            done.stderr
        )


BESIDE_TEAM = """
[team]
name = "beside"
coordinator = "lead"

[tools.add]
python = "{module}.maths:add"

[agents.lead]
role = "coordinator"
tools = ["add"]

[[agents.lead.turns]]
steps = [ { tool = "add", input = { a = 2, b = 3 } }, { say = "sum: {outcomes}" } ]
"""


class TestBesideTheTeamFile:
    """A tool module in the team file's directory imports without ``PYTHONPATH``."""

    @pytest.mark.daemon
    def test_run_imports_a_module_beside_the_team_file(self, tmp_path: Path) -> None:
        """``orchestrator run teams/x.toml`` from elsewhere, ``mytools/maths.py`` beside it
        (no PYTHONPATH): the tool resolves and runs."""
        teams = tmp_path / "teams"
        (teams / "beside_tools").mkdir(parents=True)
        (teams / "beside_tools" / "__init__.py").write_text("")
        (teams / "beside_tools" / "maths.py").write_text(
            "def add(a: int, b: int) -> int:\n    return a + b\n"
        )
        (teams / "beside.toml").write_text(BESIDE_TEAM.replace("{module}", "beside_tools"))
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run(
            [*ORCHESTRATOR, "run", "teams/beside.toml", "go", "--plain", "--db", "j.db"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=environ,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "sum: 5\n"

    def test_a_module_found_nowhere_says_where_it_was_looked_for(self, tmp_path: Path) -> None:
        team_file = tmp_path / "beside.toml"
        team_file.write_text(BESIDE_TEAM.replace("{module}", "nowhere_beside"))
        status, out = teams_check(team_file)
        assert status != 0
        assert out == (
            f"{team_file}: tools.add.python: cannot import 'nowhere_beside.maths' for "
            "nowhere_beside.maths:add: ModuleNotFoundError: No module named 'nowhere_beside' "
            f"(put it beside the team file (in {tmp_path}), install it, or name its directory "
            "in PYTHONPATH)\n"
        )


# ─── through the OpenAI-compatible backend ─────────────────────────────────────────────

MODEL_TEAM = """
[team]
name = "model-team"
coordinator = "lead"

[openai]
model = "fake-model"
base_url = "{url}"
api_key_env = "FAKE_KEY"
max_retries = 0
read_timeout = 5

[tools.add]
python = "tests.support.python_tools:add"

[agents.lead]
role = "coordinator"
backend = "openai"
tools = ["add"]
"""


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.daemon
async def test_a_model_reads_why_its_input_was_refused_and_calls_again() -> None:
    """The model is offered the derived schema; its first call does not fit it and fails
    (the function is not called), the model reads why and calls again, then answers."""

    def answer(request: dict[str, Any]) -> Answer:
        results = tool_results(request)
        if not results:
            return Stream(tool_calls(("call_1", "add", {"a": "two"})))
        if len(results) == 1:
            return Stream(tool_calls(("call_2", "add", {"a": 2, "b": 5})))
        return Stream(text("the sum is ", results[-1]))

    async with fake_openai(answer) as server, http_client() as http:
        team = parse_team(MODEL_TEAM.replace("{url}", server.url), file="model-team.toml")
        h = Harness(team, backends=backend_factory(team, client=http, environ={"FAKE_KEY": "k"}))
        with trio.fail_after(60):
            outcome = await h.runtime.run("add two and five")
    assert outcome.status is RunStatus.COMPLETED
    assert outcome.result == "the sum is 7"
    (offered,) = server.requests[0]["tools"]
    assert offered["function"]["name"] == "add"
    assert offered["function"]["description"] == "Add two integers."
    assert offered["function"]["parameters"]["required"] == ["a"]
    refused = tool_results(server.requests[1])[0]
    assert refused == "invalid input for add: $.a: 'two' is not of type 'integer'"
    assert python_tools.CALLS == [("add", {"a": 2, "b": 5})], "called once: with good input"
    completes = {a.tool_call_id: a.result.success for a in h.actions(ChatToolCallCompleteAction)}
    assert completes == {"call_1": False, "call_2": True}
    h.finished()


@pytest.mark.daemon
async def test_a_daemon_serves_its_other_teams_and_names_a_bad_reference(
    tmp_path: Path,
) -> None:
    """A team whose Python tool does not resolve is known at start: /healthz names it
    unavailable with the key path; the daemon serves the others."""
    good = ADD_TEAM.replace("{steps}", '{ say = "x" }')
    broken = good.replace(":add", ":absent").replace('name = "adders"', 'name = "broken"')
    teams = {"adders": good, "broken": broken}
    async with running_daemon(tmp_path, teams=teams) as daemon, daemon.http() as http:
        health = (await http.get("/healthz")).json()
    assert health["teams"] == ["adders"]
    assert health["unavailable_teams"] == {
        "broken": f"{tmp_path / 'teams' / 'broken.toml'}: tools.add.python: module "
        "'tests.support.python_tools' has no 'absent'"
    }


class TestDefinedInPython:
    """A team defined in Python (orchestrator.Team) hands the runtime its functions: they are
    called as they are, with no import (a closure has no import path at all)."""

    def team_with(self, function: Any) -> TeamSpec:
        return Team("py", coordinator=Agent("lead", role="r", tools=[function])).spec

    async def test_a_closure_is_called_as_it_is(self) -> None:
        seen: list[str] = []

        @tool
        def remember(text: str) -> str:
            """Remember a text."""
            seen.append(text)
            return f"remembered {text}"

        team = self.team_with(remember)
        resolved = resolve_python_tool(team, team.python_tools[0])
        assert resolved.function is remember.function
        assert resolved.definition.description == "Remember a text."
        assert resolved.definition.parameters == remember.parameters
        result = await run_python_tool(resolved, {"text": "this"})
        assert (result.success, result.output) == (True, "remembered this")
        assert seen == ["this"]

    async def test_an_async_function_runs_in_trio(self) -> None:
        @tool
        async def where() -> bool:
            await trio.lowlevel.checkpoint()
            return trio.lowlevel.current_task() is not None

        team = self.team_with(where)
        resolved = resolve_python_tool(team, team.python_tools[0])
        assert resolved.is_async
        assert (await run_python_tool(resolved, {})).output == "true"

    def test_a_decorated_function_imported_by_a_file_is_the_function_it_wraps(self) -> None:
        team = parse_team(code_first.WORDS_TOML, file="t.toml")
        resolved = resolve_python_tools(team)
        assert resolved["publish"].function is code_first.publish_text.function
        assert resolved["publish"].is_async  # the wrapper's __call__ is not async: unwrapped
        assert resolved["count_words"].function is code_first.count_words.function
