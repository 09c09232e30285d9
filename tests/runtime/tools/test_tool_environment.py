"""The environment a tool's program gets: the base variables that are set, the ones its table
passes on, the orchestrator's interpreter first on ``PATH``, then the table's own values;
nothing else of the orchestrator's environment."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.runtime.tools import BASE_VARIABLES, INTERPRETER_BIN, tool_environment
from tests.support.examples import examples

DAEMON = {
    "PATH": "/usr/local/bin:/usr/bin",
    "HOME": "/home/o",
    "LANG": "C.UTF-8",
    "OPENAI_API_KEY": "sk-secret",
    "ORCHESTRATOR_TOKEN": "t0ken",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "GIT_AUTHOR_NAME": "o",
}


def test_only_the_base_variables_that_are_set_pass() -> None:
    env = tool_environment(DAEMON, {}, first_on_path=None)
    assert env == {"PATH": "/usr/local/bin:/usr/bin", "HOME": "/home/o", "LANG": "C.UTF-8"}


def test_passed_on_variables_join_them_when_set() -> None:
    env = tool_environment(DAEMON, {}, ("GIT_AUTHOR_NAME", "NOT_SET"), first_on_path=None)
    assert env["GIT_AUTHOR_NAME"] == "o"
    assert "NOT_SET" not in env
    assert "OPENAI_API_KEY" not in env


def test_the_table_s_values_win() -> None:
    env = tool_environment(
        DAEMON,
        {"HOME": "/tmp/h", "MODE": "fast", "PATH": "/opt/bin"},
        ("HOME",),
        first_on_path="/x",
    )
    assert (env["HOME"], env["MODE"]) == ("/tmp/h", "fast")
    assert env["PATH"] == "/opt/bin", "a table's own PATH is taken as it is"


def test_the_interpreter_s_directory_comes_first_on_path() -> None:
    env = tool_environment(DAEMON, {})
    assert env["PATH"].split(os.pathsep) == [INTERPRETER_BIN, "/usr/local/bin", "/usr/bin"]


def test_it_is_not_put_first_twice() -> None:
    base = {"PATH": os.pathsep.join([INTERPRETER_BIN, "/usr/bin"])}
    assert tool_environment(base, {})["PATH"] == base["PATH"]


def test_without_a_path_the_system_default_follows_the_interpreter() -> None:
    env = tool_environment({}, {}, first_on_path="/venv/bin")
    assert env["PATH"].split(os.pathsep) == [
        "/venv/bin",
        *filter(None, os.defpath.split(os.pathsep)),
    ]


def test_empty_entries_of_path_are_dropped() -> None:
    """An empty entry means the working directory: a tool must not run what lies there."""
    env = tool_environment({"PATH": ":/usr/bin::"}, {}, first_on_path="/venv/bin")
    assert env["PATH"] == os.pathsep.join(["/venv/bin", "/usr/bin"])


names = st.sampled_from([*BASE_VARIABLES, "SECRET", "ORCHESTRATOR_TOKEN", "X1", "X2"])


@settings(max_examples=examples(50))
@given(
    base=st.dictionaries(names, st.text("ab/:", max_size=6)),
    table=st.dictionaries(names, st.text("cd", max_size=3)),
    passthrough=st.lists(names, max_size=3),
    first=st.none() | st.just("/venv/bin"),
)
def test_nothing_outside_the_allow_list_gets_through(
    base: dict[str, str],
    table: dict[str, str],
    passthrough: list[str],
    first: str | None,
) -> None:
    env = tool_environment(base, table, passthrough, first_on_path=first)
    for name, value in env.items():
        if name in table:
            assert value == table[name]
        elif name == "PATH" and first is not None:
            assert value.split(os.pathsep)[0] == first
        else:
            assert name in (*BASE_VARIABLES, *passthrough)
            assert value == base[name]
    assert set(env) >= set(table)
