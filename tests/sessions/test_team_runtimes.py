"""Each session's runtime, made the daemon's way: a team that cannot run is found as the
daemon is made and kept with why; a runtime is a conversation unless it runs a background
teammate's wake; a session taken up numbers its ids past the process that ran it before."""

from __future__ import annotations

import httpx
import pytest

from orchestrator.base import RunError
from orchestrator.core import Fact, RunResumed, TeamState
from orchestrator.runtime import MemoryFactLog, ToolCallback
from orchestrator.sessions import TeamRuntimes
from orchestrator.spec import TeamSpec, load_team, parse_team
from tests.support.journal import AT, A, started
from tests.support.paths import PROJECT_ROOT
from tests.support.teams import ECHO

HOSTED = load_team(PROJECT_ROOT / "teams" / "openai-delivery.toml")
"""A team of hosted models: it cannot run without its API key."""


def runtimes(teams: dict[str, TeamSpec], environ: dict[str, str]) -> TeamRuntimes:
    return TeamRuntimes(
        teams,
        journal=MemoryFactLog(),
        http=httpx.AsyncClient(),
        environ=environ,
        callback=ToolCallback(),
    )


class TestTeams:
    def test_a_team_that_cannot_run_is_kept_with_why(self) -> None:
        echo = parse_team(ECHO, file="echo.toml")
        made = runtimes({"echo": echo, "hosted": HOSTED}, environ={})
        assert list(made.unavailable) == ["hosted"]
        assert "OPENAI_API_KEY" in made.unavailable["hosted"]

    def test_its_key_set_it_can(self) -> None:
        made = runtimes({"hosted": HOSTED}, environ={"OPENAI_API_KEY": "sk-test"})
        assert made.unavailable == {}


class TestRuntime:
    def test_a_session_is_a_conversation_numbered_from_the_first_process(self) -> None:
        made = runtimes({"echo": parse_team(ECHO, file="echo.toml")}, environ={})
        runtime = made.runtime("echo", parse_team(ECHO, file="echo.toml"))
        assert runtime.conversation
        assert runtime.background is None
        assert runtime.ids.numbered("task") == "task-1"
        assert made.tool_server_status() == {}, "a team without MCP servers starts none"

    def test_a_background_teammate_s_wake_is_one_turn(self) -> None:
        made = runtimes({"echo": parse_team(ECHO, file="echo.toml")}, environ={})
        runtime = made.runtime("echo", parse_team(ECHO, file="echo.toml"), background="tick")
        assert not runtime.conversation
        assert runtime.background == "tick"

    @pytest.mark.parametrize("restarts", [0, 2])
    def test_a_session_taken_up_numbers_its_ids_past_the_earlier_processes(
        self, restarts: int
    ) -> None:
        resumed = [
            Fact(
                sequence=1 + restart,
                session=A,
                channel=A,
                at=AT,
                action=RunResumed(run="run-1", restart=restart, policy="resume", interrupted=()),
            )
            for restart in range(1, restarts + 1)
        ]
        state = TeamState.fold(A, [started(A), *resumed])
        made = runtimes({"echo": parse_team(ECHO, file="echo.toml")}, environ={})
        runtime = made.runtime("echo", parse_team(ECHO, file="echo.toml"), state=state)
        assert runtime.session == A
        assert runtime.ids.numbered("task") == f"task-r{restarts + 1}-1"

    def test_a_team_unavailable_when_made_runs_the_file_a_taken_up_session_recorded(
        self,
    ) -> None:
        """A session taken up runs the team file it recorded, whose backends are made then:
        a team that cannot run is refused (here, its key still unset)."""
        made = runtimes({"hosted": HOSTED}, environ={})
        state = TeamState.fold(A, [started(A)])
        with pytest.raises(RunError, match="OPENAI_API_KEY"):
            made.runtime("hosted", HOSTED, state=state)
