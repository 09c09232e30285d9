"""Team definition files as a whole: the shipped teams parse clean, the lint, every problem of
a file reported at once, and a parser that never crashes."""

from __future__ import annotations

import contextlib
import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import TeamFileError
from orchestrator.spec import (
    CatchUp,
    Cron,
    DelegateStep,
    HandoffStep,
    Overlap,
    SayStep,
    ToolStep,
    check_team,
    lint_team,
    load_team,
    parse_team,
    team_from_mapping,
)
from tests.support.examples import examples
from tests.support.paths import TEAMS
from tests.support.team_files import (
    _KEYS,
    _TOML_VALUES,
    FILE,
    VALID,
    _parse_or_error,
    parse,
    parse_error,
    replaced,
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


class TestLint:
    def test_unreachable_worker(self) -> None:
        """An agent no delegates_to chain reaches from the coordinator is reported."""
        team = parse(
            VALID
            + '\n[agents.orphan]\nrole = "x"\n[[agents.orphan.turns]]\nsteps = [{ say = "hi" }]\n'
        )
        assert lint_team(team) == [
            f"{FILE}: agents.orphan: not reachable from the coordinator 'lead' through "
            "delegates_to (or reviews), so nothing can start it"
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


class TestParserNeverCrashes:
    @given(st.dictionaries(_KEYS, _TOML_VALUES, max_size=4))
    def test_arbitrary_documents(self, document: dict[str, Any]) -> None:
        """Any TOML-like document either parses or raises TeamFileError, nothing else."""
        with contextlib.suppress(TeamFileError):
            team_from_mapping(document, file=FILE)

    @settings(max_examples=examples(300))
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


# ------------------------------------------------------------------------- command tools


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
