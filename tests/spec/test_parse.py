"""The team-file parser's errors: each names the file, the key path and what is wrong (with a
did-you-mean where a near key exists), and the ``[[background]]`` tables it reads.
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
    BackgroundSpec,
    CatchUp,
    Cron,
    Every,
    Overlap,
    check_team,
    lint_team,
    load_team,
)
from tests.support.examples import examples
from tests.support.team_files import (
    _SCALARS,
    FILE,
    VALID,
    _parse_or_error,
    parse,
    parse_error,
    replaced,
    with_lead_steps,
)
from tests.support.teams import remote


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

    def test_artifacts_name_tools_whose_results_are_artifacts(self) -> None:
        text = replaced(
            'needs_approval = ["publish"]', 'needs_approval = ["publish"]\nartifacts = ["publish"]'
        )
        agent = parse(text).agent("researcher")
        assert agent.artifacts == ("publish",)
        assert agent.records_artifact("publish")
        assert not agent.records_artifact("web_search")

    def test_artifacts_not_in_tools(self) -> None:
        """artifacts, as needs_approval, may only name tools the agent has."""
        error = parse_error(
            replaced(
                'needs_approval = ["publish"]',
                'needs_approval = ["publish"]\nartifacts = ["deploy"]',
            )
        )
        assert error.key_path == "agents.researcher.artifacts[0]"
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

    @settings(max_examples=examples(300))
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


class TestRemoteTeammates:
    """``[agents.NAME] a2a = "http://..."``: a remote teammate, and what its table may hold."""

    URL = "http://127.0.0.1:8765/"

    def team(self, extra: str = "", *, url: str = URL) -> str:
        return remote({"far": url}).replace('a2a = "' + url + '"', 'a2a = "' + url + '"' + extra, 1)

    def test_a_remote_teammate_is_an_a2a_agent_that_may_ask(self) -> None:
        agent = parse(self.team()).agent("far")
        assert agent.backend == "a2a"
        assert agent.a2a is not None
        assert agent.a2a.url == self.URL
        assert agent.a2a.headers == {"X-Team": "remote"}
        assert agent.a2a.env_headers == {"Authorization": "REMOTE_TOKEN"}
        assert agent.tools == ("ask",)
        assert agent.interactivity == "read-only"

    @pytest.mark.parametrize(
        "key", ["tools = []", 'instructions = "be nice"', "turns = []", 'model = "m"']
    )
    def test_a_key_of_a_local_agent_is_refused_at_its_path(self, key: str) -> None:
        error = parse_error(self.team("\n" + key))
        name = key.split(" ")[0]
        assert error.key_path == f"agents.far.{name}"
        assert "this one is a remote teammate (a2a)" in error.message

    def test_credentials_in_the_url_are_refused(self) -> None:
        error = parse_error(self.team(url="http://user:pw@127.0.0.1:8765/"))
        assert error.key_path == "agents.far.a2a"
        assert "put credentials in headers" in error.message

    def test_a_url_that_is_not_http_is_refused(self) -> None:
        error = parse_error(self.team(url="ftp://127.0.0.1/"))
        assert error.key_path == "agents.far.a2a"
        assert "expected an http:// or https:// URL" in error.message

    def test_a_header_value_from_the_environment_names_a_variable(self) -> None:
        error = parse_error(self.team().replace("env:REMOTE_TOKEN", "env:1TOKEN"))
        assert error.key_path == "agents.far.headers.Authorization"

    def test_headers_without_a2a_are_refused(self) -> None:
        error = parse_error(
            replaced('role = "researcher"', 'role = "researcher"\nheaders = { X = "y" }')
        )
        assert error.key_path == "agents.researcher.headers"
        assert "headers are sent to a remote teammate" in error.message

    def test_backend_a2a_names_the_key_to_use(self) -> None:
        error = parse_error(replaced('role = "researcher"', 'role = "researcher"\nbackend = "a2a"'))
        assert error.key_path == "agents.researcher.backend"
        assert 'a2a = "http://host:port/"' in error.message

    def test_the_coordinator_cannot_be_remote(self) -> None:
        text = self.team().replace('coordinator = "lead"', 'coordinator = "far"', 1)
        error = parse_error(text)
        assert "agents.far.a2a" in [p.key_path for p in error.problems] or (
            error.key_path == "agents.far.a2a"
        )
        assert "cannot be the coordinator" in str(error)
