"""Team definition files: what parses, what each mistake is reported as."""

from __future__ import annotations

import contextlib
import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import RunError, TeamFileError
from orchestrator.spec import (
    DEFAULT_COMMAND_TIMEOUT,
    AskStep,
    BackgroundSpec,
    CatchUp,
    CommandTool,
    Cron,
    DelegateStep,
    Delegation,
    Every,
    HandoffStep,
    Overlap,
    SayStep,
    ScriptedTurn,
    TeamSpec,
    ToolStep,
    check_team,
    lint_team,
    load_team,
    parse_team,
    team_from_mapping,
)
from tests.support.paths import TEAMS

FILE = "teams/example.toml"

#: A small valid team the error tests start from (each test changes one thing).
VALID = """\
[team]
name = "example"
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate", "ask"]
delegates_to = ["researcher"]

[[agents.lead.turns]]
steps = [
  { say = "On it." },
  { delegate = [{ agent = "researcher", task = "Look it up" }] },
  { say = "{outcomes}" },
]

[agents.researcher]
role = "researcher"
tools = ["web_search", "publish"]
needs_approval = ["publish"]

[[agents.researcher.turns]]
steps = [{ tool = "web_search", input = { query = "{task}" } }, { say = "Found it." }]
"""


def parse(text: str) -> TeamSpec:
    return parse_team(text, file=FILE)


def parse_error(text: str) -> TeamFileError:
    with pytest.raises(TeamFileError) as info:
        parse(text)
    error = info.value
    assert error.file == FILE
    assert str(error).startswith(FILE)
    return error


def replaced(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new, 1)


def with_lead_steps(steps: str) -> str:
    return replaced(
        """steps = [
  { say = "On it." },
  { delegate = [{ agent = "researcher", task = "Look it up" }] },
  { say = "{outcomes}" },
]""",
        f"steps = [{steps}]",
    )


class TestShippedTeams:
    def test_delivery_parses_and_is_clean(self) -> None:
        """teams/delivery.toml: lead delegates three researcher tasks in one round."""
        team = load_team(TEAMS / "delivery.toml")
        assert team.name == "delivery"
        assert team.topology == "coordinator_team"
        assert team.parallel_budget == 3
        assert team.coordinator_agent.name == "lead"
        assert [w.name for w in team.workers] == ["researcher"]
        researcher = team.agent("researcher")
        assert researcher.needs_approval_for("publish")
        assert not researcher.needs_approval_for("web_search")
        assert researcher.approved_by == "user"
        assert researcher.tool_result("web_search").startswith("3 results")
        first_round = team.coordinator_agent.turns[0].rounds_for("release 2.0")[0]
        delegate = first_round[-1]
        assert isinstance(delegate, DelegateStep)
        assert len(delegate.delegations) == 3
        assert check_team(TEAMS / "delivery.toml") == []

    def test_only_the_publishing_researcher_calls_publish(self) -> None:
        """The researcher's publish steps run only when its task mentions publishing."""
        turn = load_team(TEAMS / "delivery.toml").agent("researcher").turns[0]

        def tools(task: str) -> list[str]:
            return [s.tool for r in turn.rounds_for(task) for s in r if isinstance(s, ToolStep)]

        assert tools("Publish the release notes") == ["web_search", "publish"]
        assert tools("Summarise the changelog") == ["web_search"]

    def test_handoff_parses_and_is_clean(self) -> None:
        """teams/handoff.toml: triage hands off to billing, resuming at triage."""
        team = load_team(TEAMS / "handoff.toml")
        assert team.topology == "specialist_handoff"
        assert team.coordinator == "triage"
        handoffs = [s for s in team.agent("triage").turns[0].steps if isinstance(s, HandoffStep)]
        assert len(handoffs) == 1
        assert handoffs[0].agent == "billing"
        assert handoffs[0].resume == "triage"
        assert handoffs[0].reason
        assert check_team(TEAMS / "handoff.toml") == []

    def test_nightly_has_a_background_teammate(self) -> None:
        """teams/nightly.toml: a 03:00 Berlin audit run by the coordinator, which delegates."""
        team = load_team(TEAMS / "nightly.toml")
        assert team.topology == "background_teammate"
        (audit,) = team.background
        assert audit.name == "dependency-audit"
        assert audit.schedule == Cron(expression="0 3 * * *", timezone="Europe/Berlin")
        assert audit.agent == team.coordinator == "lead"
        assert (audit.overlap, audit.catch_up) == (Overlap.SKIP, CatchUp.LATEST)
        assert audit.max_runtime == dt.timedelta(hours=2)
        assert team.coordinator_agent.delegates_to == ("auditor",)
        assert check_team(TEAMS / "nightly.toml") == []

    def test_every_shipped_team_is_clean(self) -> None:
        """What `orchestrator teams check teams/*.toml` checks."""
        for path in sorted(TEAMS.glob("*.toml")):
            assert check_team(path) == [], path


class TestModel:
    def test_defaults(self) -> None:
        """Omitted keys take the documented defaults."""
        team = parse(VALID)
        assert team.topology == "coordinator_team"
        assert team.parallel_budget == 4
        assert team.description == ""
        assert team.file == FILE
        lead, researcher = team.agents
        assert lead.interactivity == "full"
        assert researcher.interactivity == "read-only"
        assert lead.backend == "scripted"
        assert researcher.approved_by == "user"
        assert researcher.timeout is None
        assert researcher.tool_result("web_search") == "ok"
        assert researcher.plain_tools == ("web_search", "publish")

    def test_steps_are_typed(self) -> None:
        """Steps become step objects; the lead's turn splits after its delegate step."""
        lead = parse(VALID).agent("lead")
        assert lead.turns == (
            ScriptedTurn(
                steps=(
                    SayStep(text="On it."),
                    DelegateStep(delegations=(Delegation(agent="researcher", task="Look it up"),)),
                    SayStep(text="{outcomes}"),
                )
            ),
        )
        rounds = lead.turns[0].rounds_for("anything")
        assert [len(r) for r in rounds] == [2, 1]

    def test_round_ending_last_step_adds_an_empty_round(self) -> None:
        """A turn ending with a tool step still has a last round, empty, after the tools."""
        lead = parse(with_lead_steps('{ ask = "Which one?" }')).agent("lead")
        assert lead.turns[0].rounds_for("x") == ((AskStep(question="Which one?"),), ())

    def test_handoff_resume_defaults_to_the_agent_handing_off(self) -> None:
        """Without resume, the task comes back to the agent that handed it off."""
        text = replaced('tools = ["delegate", "ask"]', 'tools = ["handoff"]')
        text = text.replace(
            '{ delegate = [{ agent = "researcher", task = "Look it up" }] }',
            '{ handoff = "researcher", reason = "needs research" }',
        )
        step = parse(text).agent("lead").turns[0].steps[1]
        assert step == HandoffStep(agent="researcher", reason="needs research", resume="lead")

    def test_select_question_keeps_its_options(self) -> None:
        """A single-select ask carries its options in order."""
        team = parse(
            with_lead_steps('{ ask = "Which?", kind = "single-select", options = ["a", "b"] }')
        )
        assert team.agent("lead").turns[0].steps[0] == AskStep(
            question="Which?", kind="single-select", options=("a", "b")
        )

    def test_unknown_agent_lookup_is_a_run_error(self) -> None:
        """TeamSpec.agent names the team and suggests a close name instead of a KeyError."""
        with pytest.raises(RunError, match=r"no agent 'reseacher' \(did you mean 'researcher'"):
            parse(VALID).agent("reseacher")


class TestErrors:
    def test_unknown_key_suggests_the_close_one(self) -> None:
        """An unknown key is named with its path and the closest allowed key."""
        error = parse_error(replaced('role = "researcher"', 'role = "researcher"\ntimout = 5'))
        assert error.key_path == "agents.researcher.timout"
        assert "unknown key 'timout'" in error.message
        assert "did you mean 'timeout'?" in error.message

    def test_every_agent_reports_its_own_problem(self) -> None:
        """One check names the first problem of each agent, not only the first of the file."""
        text = replaced('role = "coordinator"', 'role = "coordinator"\ntimeout = -1')
        text = text.replace('role = "researcher"', 'role = "researcher"\ninteractivity = "loud"')
        error = parse_error(text)
        assert [p.key_path for p in error.problems] == [
            "agents.lead.timeout",
            "agents.researcher.interactivity",
        ]
        assert str(error).splitlines() == [str(p) for p in error.problems]

    def test_approves_belongs_on_the_coordinator(self) -> None:
        error = parse_error(
            replaced('role = "researcher"', 'role = "researcher"\napproves = ["publish"]')
        )
        assert error.key_path == "agents.researcher.approves"
        assert "only the coordinator decides" in error.message

    def test_unknown_top_level_key(self) -> None:
        """A misspelt top-level table is caught too."""
        error = parse_error(VALID + '\n[agent.x]\nrole = "x"\n')
        assert error.key_path == "agent"
        assert "did you mean 'agents'?" in error.message

    def test_wrong_type(self) -> None:
        """A value of the wrong TOML type says what was expected and what was found."""
        error = parse_error(
            replaced('role = "researcher"', 'role = "researcher"\ntimeout = "fast"')
        )
        assert error.key_path == "agents.researcher.timeout"
        assert 'expected a number (int or float), got string "fast"' in error.message

    @pytest.mark.parametrize("value", ["0", "-1", "true", "2.5"])
    def test_parallel_budget_is_a_positive_integer(self, value: str) -> None:
        """parallel_budget must be an integer >= 1 (not a boolean, not a float)."""
        error = parse_error(
            replaced('name = "example"', f'name = "example"\nparallel_budget = {value}')
        )
        assert error.key_path == "team.parallel_budget"

    def test_missing_required_key(self) -> None:
        """A missing required key is named by its full path."""
        error = parse_error(replaced('name = "example"\n', ""))
        assert error.key_path == "team.name"
        assert "missing required key 'name'" in error.message

    def test_coordinator_not_declared(self) -> None:
        """The coordinator must be one of the declared agents."""
        error = parse_error(replaced('coordinator = "lead"', 'coordinator = "leed"'))
        assert error.key_path == "team.coordinator"
        assert "'leed' is not declared (did you mean 'lead'?)" in error.message
        assert "lead, researcher" in error.message

    def test_unknown_delegate_target(self) -> None:
        """delegates_to may only name declared agents."""
        error = parse_error(
            replaced('delegates_to = ["researcher"]', 'delegates_to = ["reseacher"]')
        )
        assert error.key_path == "agents.lead.delegates_to[0]"
        assert "unknown agent 'reseacher' (did you mean 'researcher'?)" in error.message

    def test_delegating_outside_delegates_to(self) -> None:
        """A delegate step may only target agents listed in delegates_to."""
        text = replaced('delegates_to = ["researcher"]', "delegates_to = []")
        error = parse_error(text)
        assert error.key_path == "agents.lead.turns[0].steps[1].delegate[0].agent"
        assert "not in agents.lead.delegates_to" in error.message

    def test_delegation_cycles_are_allowed(self) -> None:
        """A worker may delegate back to the coordinator: targets need only exist."""
        text = replaced(
            'tools = ["web_search", "publish"]',
            'tools = ["web_search", "publish", "delegate"]\ndelegates_to = ["lead"]',
        )
        assert parse(text).agent("researcher").delegates_to == ("lead",)

    def test_needs_approval_not_in_tools(self) -> None:
        """needs_approval may only name tools the agent has."""
        error = parse_error(replaced('needs_approval = ["publish"]', 'needs_approval = ["deploy"]'))
        assert error.key_path == "agents.researcher.needs_approval[0]"
        assert "tool 'deploy' is not in this agent's tools" in error.message

    def test_bad_enum_lists_allowed_values(self) -> None:
        """An unknown enum value lists every allowed value."""
        error = parse_error(replaced('name = "example"', 'name = "example"\ntopology = "star"'))
        assert error.key_path == "team.topology"
        assert "allowed: solo_run, coordinator_team, parallel_workers" in error.message

    def test_unknown_backends_are_refused(self) -> None:
        error = parse_error(
            replaced('role = "researcher"', 'role = "researcher"\nbackend = "openia"')
        )
        assert error.key_path == "agents.researcher.backend"
        assert error.message == (
            "unknown backend 'openia' (did you mean 'openai'?); allowed: scripted, openai, "
            "a plugin's entry-point name, or module:factory"
        )

    def test_coordinator_cannot_approve_itself(self) -> None:
        """approved_by = "coordinator" on the coordinator would have nobody to ask."""
        error = parse_error(
            replaced('role = "coordinator"', 'role = "coordinator"\napproved_by = "coordinator"')
        )
        assert error.key_path == "agents.lead.approved_by"

    def test_unknown_step_key(self) -> None:
        """An unknown step key is named with the step's path and the closest step key."""
        error = parse_error(with_lead_steps('{ say = "a" }, { sya = "b" }'))
        assert error.key_path == "agents.lead.turns[0].steps[1].sya"
        assert "unknown step key 'sya' (did you mean 'say'?)" in error.message

    def test_step_with_two_actions(self) -> None:
        """A step does exactly one thing."""
        error = parse_error(with_lead_steps('{ say = "a", think = "b" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0]"
        assert "several actions (say, think)" in error.message

    def test_step_key_of_another_kind(self) -> None:
        """A key that belongs to another step kind says which."""
        error = parse_error(with_lead_steps('{ say = "a", reason = "b" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0].reason"
        assert "belongs to a handoff step" in error.message

    def test_tool_step_needs_the_tool(self) -> None:
        """A script may only call tools listed in the agent's tools."""
        error = parse_error(with_lead_steps('{ tool = "web_search" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0].tool"
        assert "'web_search' but it is not in its tools" in error.message

    def test_select_question_needs_options(self) -> None:
        """single-select and multi-select questions must list options."""
        error = parse_error(with_lead_steps('{ ask = "Which?", kind = "multi-select" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0].options"

    def test_tool_input_must_be_json(self) -> None:
        """Tool inputs travel as JSON: TOML dates are refused where they appear."""
        text = VALID.replace('input = { query = "{task}" }', "input = { when = 2024-01-01 }")
        error = parse_error(text)
        assert error.key_path == "agents.researcher.turns[0].steps[0].input.when"
        assert "not valid JSON" in error.message

    def test_toml_syntax_error_names_the_line(self) -> None:
        """A TOML syntax error keeps its line and column."""
        error = parse_error('[team]\nname = "x"\ncoordinator = \n')
        assert error.key_path == ""
        assert "invalid TOML at line 3, column 15" in error.message

    def test_unreadable_file(self, tmp_path: Path) -> None:
        """A file that cannot be read is a TeamFileError naming it."""
        missing = tmp_path / "nope.toml"
        with pytest.raises(TeamFileError, match="cannot read the file") as info:
            load_team(missing)
        assert info.value.file == str(missing)
        assert check_team(missing) == [str(info.value)]


MORE_ERRORS = [
    pytest.param(
        replaced('tools = ["web_search", "publish"]', 'tools = ["web_search", "web_search"]'),
        "agents.researcher.tools[1]",
        "'web_search' is listed twice",
        id="duplicate-tool",
    ),
    pytest.param(
        replaced('role = "researcher"', 'role = "researcher"\ntimeout = 0'),
        "agents.researcher.timeout",
        "must be > 0",
        id="zero-timeout",
    ),
    pytest.param(
        replaced('role = "researcher"', 'role = "researcher"\ntimeout = inf'),
        "agents.researcher.timeout",
        "must be a finite number",
        id="infinite-timeout",
    ),
    pytest.param(
        replaced('role = "researcher"', 'role = "researcher"\ninteractivity = "readonly"'),
        "agents.researcher.interactivity",
        "(did you mean 'read-only'?); allowed: full, read-only, hidden",
        id="bad-interactivity",
    ),
    pytest.param(
        replaced("[agents.researcher]", '[agents."re searcher"]'),
        'agents."re searcher"',
        "must be 1-64 letters, digits, '_' or '-'",
        id="bad-agent-name",
    ),
    pytest.param(
        with_lead_steps("{ sleep = -1 }"),
        "agents.lead.turns[0].steps[0].sleep",
        "must be >= 0",
        id="negative-sleep",
    ),
    pytest.param(
        with_lead_steps("{ usage = [1] }"),
        "agents.lead.turns[0].steps[0].usage",
        "expected [input_tokens, output_tokens], got 1 items",
        id="usage-arity",
    ),
    pytest.param(
        with_lead_steps("{ chunks = 2 }"),
        "agents.lead.turns[0].steps[0]",
        "the step has no action",
        id="step-without-action",
    ),
    pytest.param(
        with_lead_steps('"say hello"'),
        "agents.lead.turns[0].steps[0]",
        'expected a step table such as { say = "..." }, got string',
        id="step-not-a-table",
    ),
    pytest.param(
        with_lead_steps(""),
        "agents.lead.turns[0].steps",
        "a turn needs at least one step",
        id="empty-turn",
    ),
    pytest.param(
        with_lead_steps("{ delegate = [] }"),
        "agents.lead.turns[0].steps[0].delegate",
        "delegate at least one task",
        id="empty-delegate",
    ),
    pytest.param(
        with_lead_steps('{ delegate = [{ agent = "researcher" }] }'),
        "agents.lead.turns[0].steps[0].delegate[0].task",
        "missing required key 'task'",
        id="delegation-without-task",
    ),
    pytest.param(
        with_lead_steps('{ tool = "delegate" }'),
        "agents.lead.turns[0].steps[0].tool",
        "'delegate' is a team tool",
        id="team-tool-as-plain-tool",
    ),
    pytest.param(
        with_lead_steps('{ ask = "Why?", options = ["a"] }'),
        "agents.lead.turns[0].steps[0].options",
        "options only apply to single-select and multi-select, not text",
        id="options-on-text-question",
    ),
    pytest.param(
        with_lead_steps('{ ask = "Which?", kind = "single-select", options = ["a", "a"] }'),
        "agents.lead.turns[0].steps[0].options[1]",
        "'a' is listed twice",
        id="duplicate-option",
    ),
    pytest.param(
        with_lead_steps('{ ask = "Which?", kind = "dropdown" }'),
        "agents.lead.turns[0].steps[0].kind",
        "allowed: text, number, integer, boolean, single-select, multi-select",
        id="bad-question-kind",
    ),
    pytest.param(
        with_lead_steps('{ say = "x", when_task_contains = "" }'),
        "agents.lead.turns[0].steps[0].when_task_contains",
        "must not be empty",
        id="empty-when",
    ),
    pytest.param(
        VALID.replace('input = { query = "{task}" }', "input = { n = nan }"),
        "agents.researcher.turns[0].steps[0].input.n",
        "nan is not valid JSON",
        id="nan-input",
    ),
    pytest.param(
        VALID + '\n[agents.researcher.tool_results]\nweb_serch = "x"\n',
        "agents.researcher.tool_results.web_serch",
        "did you mean 'web_search'?",
        id="result-for-unknown-tool",
    ),
    pytest.param(
        '[team]\nname = "x"\ncoordinator = "a"\n[agents]\n',
        "agents",
        "declare at least one agent",
        id="no-agents",
    ),
    pytest.param(
        'team = "x"\nagents = {}\n',
        "team",
        "expected a [team] table, got string",
        id="team-not-a-table",
    ),
]


class TestMoreErrors:
    @pytest.mark.parametrize(("text", "key_path", "fragment"), MORE_ERRORS)
    def test_error_names_path_and_problem(self, text: str, key_path: str, fragment: str) -> None:
        """Each mistake is reported at its key path with a message saying what is wrong."""
        error = parse_error(text)
        assert (error.key_path, fragment in error.message) == (key_path, True), error.message

    def test_file_that_is_not_utf8(self, tmp_path: Path) -> None:
        """TOML files are UTF-8; other bytes are reported, not decoded wrongly."""
        path = tmp_path / "latin1.toml"
        path.write_bytes(b'[team]\nname = "caf\xe9"\n')
        with pytest.raises(TeamFileError, match="not UTF-8"):
            load_team(path)


class TestLint:
    def test_unreachable_worker(self) -> None:
        """An agent no delegates_to chain reaches from the coordinator is reported."""
        team = parse(
            VALID
            + '\n[agents.orphan]\nrole = "x"\n[[agents.orphan.turns]]\nsteps = [{ say = "hi" }]\n'
        )
        assert lint_team(team) == [
            f"{FILE}: agents.orphan: not reachable from the coordinator 'lead' through "
            "delegates_to, so nothing can start it"
        ]

    def test_agent_without_turns(self) -> None:
        """A scripted agent without turns only answers a default text."""
        team = parse(VALID.split("[[agents.researcher.turns]]")[0])
        (problem,) = lint_team(team)
        assert "agents.researcher.turns" in problem

    def test_routing_tool_without_delegates_to(self) -> None:
        """A delegate tool with an empty delegates_to cannot reach anyone."""
        team = parse(
            replaced(
                'tools = ["web_search", "publish"]', 'tools = ["web_search", "publish", "handoff"]'
            )
        )
        (problem,) = lint_team(team)
        assert "agents.researcher.tools: has 'handoff' but delegates_to is empty" in problem

    def test_background_teammates_need_not_be_reachable(self) -> None:
        """A background team's agents may be started by a schedule, not the coordinator."""
        team = parse(
            replaced('name = "example"', 'name = "example"\ntopology = "background_teammate"')
            + '\n[agents.orphan]\nrole = "x"\n[[agents.orphan.turns]]\nsteps = [{ say = "hi" }]\n'
        )
        assert lint_team(team) == []

    def test_delegates_to_without_a_routing_tool(self) -> None:
        """delegates_to is useless without the delegate or handoff tool."""
        team = parse(
            replaced('tools = ["delegate", "ask"]', 'tools = ["ask"]').replace(
                '  { delegate = [{ agent = "researcher", task = "Look it up" }] },\n', ""
            )
        )
        (problem,) = lint_team(team)
        assert "agents.lead.delegates_to" in problem


# ------------------------------------------------------------------------- properties

_KEYS = st.sampled_from(
    [
        "team",
        "agents",
        "name",
        "coordinator",
        "topology",
        "parallel_budget",
        "role",
        "tools",
        "delegates_to",
        "needs_approval",
        "approved_by",
        "timeout",
        "turns",
        "steps",
        "say",
        "delegate",
        "agent",
        "task",
        "ask",
        "kind",
        "options",
        "usage",
        "tool",
        "input",
        "tool_results",
        "lead",
        "researcher",
        "handoff",
        "resume",
        "sleep",
    ]
) | st.text(max_size=8)

_SCALARS = (
    st.text(max_size=10)
    | st.sampled_from(["lead", "researcher", "web_search", "delegate", "publish", "full", "user"])
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.datetimes()
    | st.dates()
    | st.times()
)

_TOML_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=25,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (dict keys and list indices) inside a decoded TOML document."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _parse_or_error(document: dict[str, Any]) -> TeamSpec | TeamFileError:
    try:
        return team_from_mapping(document, file=FILE)
    except TeamFileError as exc:
        return exc


class TestParserNeverCrashes:
    @given(st.dictionaries(_KEYS, _TOML_VALUES, max_size=4))
    def test_arbitrary_documents(self, document: dict[str, Any]) -> None:
        """Any TOML-like document either parses or raises TeamFileError, nothing else."""
        with contextlib.suppress(TeamFileError):
            team_from_mapping(document, file=FILE)

    @settings(max_examples=300)
    @given(st.data())
    def test_one_value_changed_in_a_shipped_team(self, data: st.DataObject) -> None:
        """Replacing or deleting any one value of delivery.toml never escapes TeamFileError."""
        document = tomllib.loads((TEAMS / "delivery.toml").read_text("utf-8"))
        path = data.draw(st.sampled_from(_paths(document)[1:]))
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(_TOML_VALUES)
        outcome = _parse_or_error(document)
        assert not isinstance(outcome, TeamFileError) or outcome.file == FILE

    @given(st.text(max_size=200))
    def test_arbitrary_text(self, text: str) -> None:
        """Arbitrary text either parses or raises TeamFileError."""
        with contextlib.suppress(TeamFileError):
            parse_team(text, file=FILE)


# ------------------------------------------------------------------------- background

AUDIT = """
[[background]]
name = "dependency-audit"
schedule = "0 3 * * *"
prompt = "Audit the lock file and report new advisories"
"""


def with_background(*entries: str) -> str:
    return VALID + "".join(entries)


def audit_with(line: str) -> str:
    """VALID with the AUDIT entry plus ``line`` (which may replace one of its lines)."""
    key = line.split("=")[0].strip()
    kept = [kept for kept in AUDIT.splitlines() if kept.split("=")[0].strip() != key]
    return with_background("\n".join([*kept, line]) + "\n")


class TestBackground:
    def test_every_key(self) -> None:
        """Each key of a [[background]] entry lands in its BackgroundSpec."""
        team = parse(
            with_background(
                """
[[background]]
name = "dependency-audit"
schedule = "0 3 * * *"        # cron, or every = "15m"
timezone = "Europe/Berlin"
prompt = "Audit the lock file and report new advisories"
agent = "researcher"
overlap = "queue"
max_runtime = "2h"
catch_up = "all"
catch_up_limit = 5
"""
            )
        )
        assert team.background == (
            BackgroundSpec(
                name="dependency-audit",
                schedule=Cron(expression="0 3 * * *", timezone="Europe/Berlin"),
                prompt="Audit the lock file and report new advisories",
                agent="researcher",
                overlap=Overlap.QUEUE,
                max_runtime=dt.timedelta(hours=2),
                catch_up=CatchUp.ALL,
                catch_up_limit=5,
            ),
        )

    def test_defaults(self) -> None:
        """The coordinator runs it, in UTC; overlap skip, catch-up latest, no max runtime."""
        (audit,) = parse(with_background(AUDIT)).background
        assert audit == BackgroundSpec(
            name="dependency-audit",
            schedule=Cron(expression="0 3 * * *", timezone="UTC"),
            prompt="Audit the lock file and report new advisories",
            agent="lead",
            overlap=Overlap.SKIP,
            max_runtime=None,
            catch_up=CatchUp.LATEST,
            catch_up_limit=10,
        )

    def test_interval(self) -> None:
        (ping,) = parse(
            audit_with('every = "15m"').replace('schedule = "0 3 * * *"\n', "")
        ).background
        assert ping.schedule == Every(interval=dt.timedelta(minutes=15))

    def test_entries_keep_file_order(self) -> None:
        second = AUDIT.replace("dependency-audit", "second")
        team = parse(with_background(AUDIT, second))
        assert [b.name for b in team.background] == ["dependency-audit", "second"]

    def test_a_team_without_background_has_none(self) -> None:
        assert parse(VALID).background == ()

    def test_an_agent_only_a_schedule_starts_is_reachable(self) -> None:
        """lint_team counts a [[background]] agent as started, like the coordinator."""
        orphan = (
            '\n[agents.auditor]\nrole = "x"\n[[agents.auditor.turns]]\nsteps = [{ say = "hi" }]\n'
        )
        assert lint_team(parse(VALID + orphan)) != []
        assert lint_team(parse(VALID + orphan + AUDIT + 'agent = "auditor"\n')) == []

    def test_problems_of_agents_and_entries_are_all_reported(self) -> None:
        """One check names the first problem of each agent and of each entry."""
        text = replaced('role = "researcher"', 'role = "researcher"\ntimeout = -1')
        text += AUDIT.replace("0 3 * * *", "0 3 * *") + AUDIT.replace(
            '"dependency-audit"', '"b"'
        ).replace("schedule", "every")
        error = parse_error(text)
        assert [p.key_path for p in error.problems] == [
            "agents.researcher.timeout",
            "background[0].schedule",
            "background[1].every",
        ]

    def test_teams_check_lists_them(self, tmp_path: Path) -> None:
        path = tmp_path / "team.toml"
        path.write_text(audit_with('overlap = "skp"'), encoding="utf-8")
        (line,) = check_team(path)
        assert line == (
            f"{path}: background[0].overlap: unknown overlap policy 'skp' (did you mean 'skip'?); "
            "allowed: skip, queue, replace"
        )


BACKGROUND_ERRORS = [
    pytest.param(
        VALID + '\n[background]\nname = "x"\n',
        "background",
        "got a table: write each entry under [[background]], with double brackets",
        id="table-not-array",
    ),
    pytest.param(
        'background = "nightly"\n' + VALID,
        "background",
        'expected [[background]] tables, got string "nightly"',
        id="not-an-array",
    ),
    pytest.param(
        'background = ["nightly"]\n' + VALID,
        "background[0]",
        "expected a [[background]] table, got string",
        id="entry-not-a-table",
    ),
    pytest.param(
        audit_with('schedul = "0 3 * * *"'),
        "background[0].schedul",
        "unknown key 'schedul' (did you mean 'schedule'?)",
        id="unknown-key",
    ),
    pytest.param(
        with_background('\n[[background]]\nschedule = "0 3 * * *"\nprompt = "x"\n'),
        "background[0].name",
        "missing required key 'name'",
        id="no-name",
    ),
    pytest.param(
        audit_with('name = "nightly audit"'),
        "background[0].name",
        "background teammate name 'nightly audit' must be 1-64 letters, digits, '_' or '-'",
        id="bad-name",
    ),
    pytest.param(
        with_background(AUDIT, AUDIT),
        "background[1].name",
        "'dependency-audit' is already the name of background[0]; names must be unique",
        id="duplicate-name",
    ),
    pytest.param(
        audit_with('schedule = "0 3 * * *"').replace('schedule = "0 3 * * *"\n', ""),
        "background[0]",
        'missing a schedule: set schedule = "0 3 * * *" (a cron expression) or every = "15m"',
        id="no-schedule",
    ),
    pytest.param(
        audit_with('every = "15m"'),
        "background[0].every",
        "set either schedule (a cron expression) or every (an interval), not both",
        id="schedule-and-every",
    ),
    pytest.param(
        audit_with('schedule = "61 3 * * *"'),
        "background[0].schedule",
        "invalid cron expression '61 3 * * *': [61 3 * * *] is not acceptable, out of range; "
        "expected 5 fields (minute hour day-of-month month day-of-week)",
        id="cron-out-of-range",
    ),
    pytest.param(
        audit_with('schedule = "0 3 * *"'),
        "background[0].schedule",
        "invalid cron expression '0 3 * *': 4 fields; expected 5 fields",
        id="cron-four-fields",
    ),
    pytest.param(
        audit_with('schedule = "0 0 31 2 *"'),
        "background[0].schedule",
        "it never matches a date",
        id="cron-never",
    ),
    pytest.param(
        audit_with('schedule = "H 3 * * *"'),
        "background[0].schedule",
        "hashed (H) or random (R) value",
        id="cron-hashed",
    ),
    pytest.param(
        audit_with("schedule = 3"),
        "background[0].schedule",
        "expected a string, got integer 3",
        id="cron-not-a-string",
    ),
    pytest.param(
        audit_with('timezone = "Europe/Berln"'),
        "background[0].timezone",
        "unknown time zone 'Europe/Berln' (did you mean 'Europe/Berlin'?); expected an IANA "
        'time zone name such as "Europe/Berlin"',
        id="unknown-zone",
    ),
    pytest.param(
        audit_with("timezone = 1"),
        "background[0].timezone",
        "expected a string, got integer 1",
        id="zone-not-a-string",
    ),
    pytest.param(
        audit_with('every = "15m"').replace('schedule = "0 3 * * *"\n', "")
        + 'timezone = "Europe/Berlin"\n',
        "background[0].timezone",
        "an every interval counts elapsed time, so a time zone changes nothing",
        id="zone-with-every",
    ),
    pytest.param(
        audit_with('every = "15 minutes"').replace('schedule = "0 3 * * *"\n', ""),
        "background[0].every",
        'invalid duration \'15 minutes\': expected a whole number and a unit: "90s", "15m", '
        '"2h" or "1d"',
        id="bad-interval",
    ),
    pytest.param(
        audit_with('every = "0m"').replace('schedule = "0 3 * * *"\n', ""),
        "background[0].every",
        "invalid duration '0m': it must be longer than zero",
        id="zero-interval",
    ),
    pytest.param(
        audit_with('every = "-5m"').replace('schedule = "0 3 * * *"\n', ""),
        "background[0].every",
        "invalid duration '-5m'",
        id="negative-interval",
    ),
    pytest.param(
        audit_with('max_runtime = "2 hours"'),
        "background[0].max_runtime",
        "invalid duration '2 hours'",
        id="bad-max-runtime",
    ),
    pytest.param(
        audit_with("max_runtime = 7200"),
        "background[0].max_runtime",
        "expected a string, got integer 7200",
        id="max-runtime-not-a-string",
    ),
    pytest.param(
        audit_with('max_runtime = "400d"'),
        "background[0].max_runtime",
        "it must be at most 366d",
        id="max-runtime-too-long",
    ),
    pytest.param(
        audit_with('prompt = ""'),
        "background[0].prompt",
        "must not be empty",
        id="empty-prompt",
    ),
    pytest.param(
        with_background('\n[[background]]\nname = "x"\nevery = "1h"\n'),
        "background[0].prompt",
        "missing required key 'prompt' (what the teammate does)",
        id="no-prompt",
    ),
    pytest.param(
        audit_with('agent = "reseacher"'),
        "background[0].agent",
        "unknown agent 'reseacher' (did you mean 'researcher'?); declared agents: lead, researcher",
        id="unknown-agent",
    ),
    pytest.param(
        audit_with('overlap = "parallel"'),
        "background[0].overlap",
        "unknown overlap policy 'parallel'; allowed: skip, queue, replace",
        id="bad-overlap",
    ),
    pytest.param(
        audit_with('catch_up = "every"'),
        "background[0].catch_up",
        "unknown catch-up policy 'every'; allowed: none, latest, all",
        id="bad-catch-up",
    ),
    pytest.param(
        audit_with("catch_up_limit = 5"),
        "background[0].catch_up_limit",
        "catch_up_limit bounds catch_up = \"all\"; this entry's catch_up is 'latest'",
        id="limit-without-all",
    ),
    pytest.param(
        audit_with('catch_up = "all"\ncatch_up_limit = 0'),
        "background[0].catch_up_limit",
        "must be >= 1, got 0",
        id="zero-limit",
    ),
    pytest.param(
        audit_with('catch_up = "all"\ncatch_up_limit = "10"'),
        "background[0].catch_up_limit",
        'expected an integer, got string "10"',
        id="limit-not-an-integer",
    ),
]


class TestBackgroundErrors:
    @pytest.mark.parametrize(("text", "key_path", "fragment"), BACKGROUND_ERRORS)
    def test_error_names_path_and_problem(self, text: str, key_path: str, fragment: str) -> None:
        """Each bad [[background]] value is reported at its key path, saying what is expected."""
        error = parse_error(text)
        assert (error.key_path, fragment in error.message) == (key_path, True), error.message

    @settings(max_examples=300)
    @given(
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "schedule",
                    "every",
                    "timezone",
                    "prompt",
                    "agent",
                    "overlap",
                    "max_runtime",
                    "catch_up",
                    "catch_up_limit",
                ]
            ),
            _SCALARS
            | st.sampled_from(
                ["0 3 * * *", "*/15 * * * *", "15m", "2h", "Europe/Berlin", "skip", "all", "lead"]
            ),
        )
    )
    def test_any_entry_parses_or_is_a_team_file_error(self, entry: dict[str, Any]) -> None:
        """Whatever values an entry holds, the parser answers with a team or TeamFileError."""
        document = tomllib.loads(VALID)
        document["background"] = [entry]
        outcome = _parse_or_error(document)
        assert not isinstance(outcome, TeamFileError) or outcome.file == FILE


# ------------------------------------------------------------------------- command tools


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

    @settings(max_examples=300)
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


class TestEveryProblemAtOnce:
    """One table's problems are reported together: a person fixes a file in one pass."""

    def test_an_agent_table_s_problems_come_together(self) -> None:
        text = """
[team]
name = "t"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate", "publish"]
delegates_to = ["helper"]
needs_approval = ["pubilsh"]
timeout = -3
colour = "blue"
[[agents.lead.turns]]
steps = [{ say = 3 }]
[[agents.lead.turns]]
steps = [{ dance = "now" }]
[agents.helper]
role = "worker"
"""
        with pytest.raises(TeamFileError) as caught:
            parse(text)
        paths = [problem.key_path for problem in caught.value.problems]
        assert paths == [
            "agents.lead.colour",
            "agents.lead.needs_approval[0]",
            "agents.lead.timeout",
            "agents.lead.turns[0].steps[0].say",
            "agents.lead.turns[1].steps[0].dance",
        ]

    def test_a_key_that_cannot_be_read_raises_nothing_more_about_it(self) -> None:
        """A broken tools list is one problem: the checks against the tools are skipped,
        not failed for want of them."""
        text = """
[team]
name = "t"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["publish", "publish"]
needs_approval = ["publish"]
tool_results = { publish = "done" }
"""
        with pytest.raises(TeamFileError) as caught:
            parse(text)
        assert [problem.key_path for problem in caught.value.problems] == ["agents.lead.tools[1]"]

    def test_teams_check_prints_them_all(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[agents.lead]\nrole = "coordinator"\ntimeout = 0\ninteractivity = "loud"\n'
        )
        problems = check_team(bad)
        assert [p.split(": ")[1] for p in problems] == [
            "agents.lead.interactivity",
            "agents.lead.timeout",
        ]

    def test_the_team_table_s_problems_come_with_the_agents(self) -> None:
        """A typo in [team] no longer hides the agents' problems (it stopped the check)."""
        text = """
[team]
name = "t"
coordinator = "lead"
paralel_budget = 2
on_restart = "sometimes"
[agents.lead]
role = "coordinator"
timeout = 0
"""
        with pytest.raises(TeamFileError) as caught:
            parse(text)
        assert [problem.key_path for problem in caught.value.problems] == [
            "team.paralel_budget",
            "team.on_restart",
            "agents.lead.timeout",
        ]


#: An output_schema for the researcher of VALID (whose answer is "Found it.").
_SCORE = 'output_schema = { type = "object", required = ["score"] }'


class TestOutputSchema:
    """``output_schema``: an inline JSON Schema table, checked when the file is parsed."""

    def test_an_inline_table_is_the_agents_schema(self) -> None:
        team = parse(replaced('role = "researcher"', f'role = "researcher"\n{_SCORE}'))
        assert team.agent("researcher").output_schema == {
            "type": "object",
            "required": ["score"],
        }
        assert team.agent("lead").output_schema is None

    def test_a_turns_retry_is_what_the_script_answers_again(self) -> None:
        text = replaced('role = "researcher"', f'role = "researcher"\n{_SCORE}').replace(
            '{ say = "Found it." }]', '{ say = "Found it." }]\nretry = [{ say = "{}" }]'
        )
        [turn] = parse(text).agent("researcher").turns
        assert turn.retry == (SayStep(text="{}"),)

    @pytest.mark.parametrize(
        ("line", "where", "fragment"),
        [
            ("output_schema = 3", "", "expected a JSON Schema as an inline table"),
            (
                'output_schema = { type = "objekt" }',
                "",
                "not a valid JSON Schema: at .type: 'objekt' is not valid under any",
            ),
            (
                'output_schema = { type = "object", required = "score" }',
                "",
                "not a valid JSON Schema: at .required: 'score' is not of type 'array'",
            ),
            (
                "output_schema = { const = 1979-05-27 }",
                ".const",
                "a date is not valid JSON; write it as a string",
            ),
        ],
    )
    def test_a_bad_schema_is_named_by_its_key(self, line: str, where: str, fragment: str) -> None:
        error = parse_error(replaced('role = "researcher"', f'role = "researcher"\n{line}'))
        key_path = f"agents.researcher.output_schema{where}"
        assert (error.key_path, fragment in error.message) == (key_path, True), error.message
        # The turns are not checked against a schema that could not be read.
        assert len(error.problems) == 1

    def test_retry_needs_an_output_schema(self) -> None:
        error = parse_error(
            replaced('{ say = "Found it." }]', '{ say = "Found it." }]\nretry = [{ say = "{}" }]')
        )
        assert error.key_path == "agents.researcher.turns[0].retry"
        assert "[agents.researcher] has none" in error.message

    def test_a_retry_answers_in_text(self) -> None:
        text = replaced('role = "researcher"', f'role = "researcher"\n{_SCORE}').replace(
            '{ say = "Found it." }]',
            '{ say = "Found it." }]\nretry = [{ tool = "web_search" }]',
        )
        error = parse_error(text)
        assert error.key_path == "agents.researcher.turns[0].retry[0]"
        assert "a retry answers again in text" in error.message
