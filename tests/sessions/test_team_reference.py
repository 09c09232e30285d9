"""Teams named by the command line and the daemon: a team file, or ``module:attr`` of a team
defined in Python, imported with the current directory on sys.path."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from orchestrator.base import ConfigError, TeamFileError
from orchestrator.sessions import is_team_reference, load_team_reference, load_teams
from orchestrator.spec import load_team
from tests.support.paths import TEAMS

TEAM_MODULE = """
from orchestrator import Agent, Team, parse_team, tool

@tool
def shout(text: str) -> str:
    return text.upper()

support = Team("support", coordinator=Agent("lead", role="r", tools=[shout]))
as_spec = support.spec
number = 3
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory, a fresh one; sys.path and sys.modules as they were after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    return tmp_path


def module(directory: Path, text: str = TEAM_MODULE) -> str:
    """A module of ``text`` in ``directory``, under a name no other test has imported."""
    name = f"teams_{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return name


class TestLoadTeamReference:
    def test_a_team_in_a_module_of_the_current_directory(self, here: Path) -> None:
        name = module(here)
        team = load_team_reference(f"{name}:support")
        assert team.name == "support"
        assert team.python_tools[0].function is not None
        assert team.python_tools[0].function("hi") == "HI"
        assert load_team_reference(f"{name}:as_spec") == team

    def test_a_path_is_a_team_file(self) -> None:
        path = TEAMS / "delivery.toml"
        assert not is_team_reference(path)
        assert load_team_reference(path) == load_team(path)

    def test_an_existing_file_wins_over_an_import_path(self, here: Path) -> None:
        (here / "a:b").write_text((TEAMS / "handoff.toml").read_text(), encoding="utf-8")
        assert not is_team_reference("a:b")
        assert load_team_reference("a:b").name == load_team(TEAMS / "handoff.toml").name

    def test_a_missing_module_says_where_it_was_looked_for(self, here: Path) -> None:
        with pytest.raises(TeamFileError) as caught:
            load_team_reference("nowhere_here:team")
        assert str(caught.value) == (
            f"nowhere_here:team: no module 'nowhere_here' here (in {here}) or on sys.path; "
            "run from the directory that has it, or name a team file"
        )

    def test_a_missing_attribute_is_named(self, here: Path) -> None:
        name = module(here)
        with pytest.raises(TeamFileError, match=f"module '{name}' has no attribute 'suport'"):
            load_team_reference(f"{name}:suport")

    def test_an_attribute_that_is_not_a_team_is_refused(self, here: Path) -> None:
        name = module(here)
        with pytest.raises(TeamFileError) as caught:
            load_team_reference(f"{name}:number")
        assert str(caught.value) == (
            f"{name}:number: number is int, not a team: name an orchestrator.Team (or a TeamSpec)"
        )

    def test_a_module_that_fails_to_import_is_named_with_its_error(self, here: Path) -> None:
        name = module(here, "import not_installed_anywhere\n")
        with pytest.raises(TeamFileError) as caught:
            load_team_reference(f"{name}:team")
        assert str(caught.value) == (
            f"{name}:team: cannot import '{name}': ModuleNotFoundError: "
            "No module named 'not_installed_anywhere'"
        )

    def test_a_team_with_errors_is_its_team_file_error(self, here: Path) -> None:
        name = module(
            here, 'from orchestrator import Agent, Team\nbad = Team("t", coordinator="x")\n'
        )
        with pytest.raises(TeamFileError, match='Team\\("t"\\): agents: declare at least one'):
            load_team_reference(f"{name}:bad")


class TestLoadTeams:
    def test_named_teams_come_first_and_the_directory_s_after(self, here: Path) -> None:
        name = module(here)
        found = load_teams(TEAMS, named=[f"{name}:support"])
        assert next(iter(found.teams)) == "support"
        assert found.files["support"] == f"{name}:support"
        assert "delivery" in found.teams

    def test_with_named_teams_the_directory_may_be_missing(self, here: Path) -> None:
        name = module(here)
        found = load_teams(here / "teams", named=[f"{name}:support"])
        assert list(found.teams) == ["support"]
        with pytest.raises(ConfigError, match="not a directory of team files"):
            load_teams(here / "teams")

    def test_a_named_team_that_cannot_load_stops_the_start(self, here: Path) -> None:
        with pytest.raises(TeamFileError, match="no module 'gone'"):
            load_teams(TEAMS, named=["gone:team"])

    def test_two_named_teams_of_one_name_are_refused(self, here: Path) -> None:
        name = module(here)
        with pytest.raises(TeamFileError, match="'support' is already that of"):
            load_teams(TEAMS, named=[f"{name}:support", f"{name}:as_spec"])
