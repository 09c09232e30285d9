"""The daemon's teams (``sessions/_teams``): named by their ``[team] name``, their files
shown beside them, a file that cannot be used named, on a daemon on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.agent_channel import refused, run_delivery
from tests.support.ahp_client import ROOT, connect_ahp
from tests.support.daemon import connect, running_daemon
from tests.support.paths import PROJECT_ROOT
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestTeamNames:
    async def test_a_team_is_named_by_its_team_name_and_its_file_is_shown_beside_it(
        self, tmp_path: Path
    ) -> None:
        """``handoff.toml`` holding ``[team] name = "support"``: /healthz, the session's
        init, the sessions list and AHP's root agents all say ``support``; /healthz shows
        the file beside it; a client asking by file stem (as before) gets the same team."""
        support = ECHO.replace('name = "echo"', 'name = "support"')
        async with running_daemon(tmp_path, teams={"handoff": support}) as daemon:
            async with daemon.http() as http:
                health = (await http.get("/healthz")).json()
            assert health["teams"] == ["support"]
            assert health["team_files"] == {"support": "handoff.toml"}
            for asked in ("support", "handoff"):
                async with connect(daemon, f"team={asked}") as client:
                    init = await client.until_type("init")
                    await client.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    await client.until_type("done")
                assert init["team"] == "support"
            async with daemon.http() as http:
                listed = (await http.get("/api/sessions")).json()["sessions"]
                assert [s["team"] for s in listed] == ["support", "support"]
                agui = await http.post(
                    "/agui?team=handoff",
                    json={"threadId": init["sessionId"], "runId": "r", "messages": []},
                )
                assert "runs team" not in agui.text  # the stem names the session's team
            async with connect_ahp(daemon) as ahp:
                result = await ahp.initialize(subscriptions=(ROOT,))
                (root,) = result["snapshots"]
                assert [a["provider"] for a in root["state"]["agents"]] == ["support"]
                status, body = await refused(daemon, "team=nope", None)
            assert status == 404
            assert "(teams: support (handoff.toml))" in json.loads(body)["error"]

    async def test_two_files_of_one_team_name_keep_the_first(self, tmp_path: Path) -> None:
        """The second file is not served, and /healthz says why."""
        async with (
            running_daemon(tmp_path, teams={"a": ECHO, "b": ECHO}) as daemon,
            daemon.http() as http,
        ):
            health = (await http.get("/healthz")).json()
        assert health["teams"] == ["echo"]
        assert health["team_files"] == {"echo": "a.toml"}
        assert list(health["invalid_teams"]) == ["b"]
        assert "[team] name 'echo' is already that of a.toml" in health["invalid_teams"]["b"]

    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_a_team_file_that_cannot_be_used_does_not_stop_the_others(
        self, tmp_path: Path
    ) -> None:
        """The daemon serves the good teams, names the bad file in /healthz, and a client
        asking for that team is told why, not 'no such team'."""
        teams = {
            "delivery": (PROJECT_ROOT / "teams" / "delivery.toml").read_text(encoding="utf-8"),
            "broken": '[team]\nname = "broken"\ncoordinator = "lead"\nparalel_budget = 2\n',
        }
        async with running_daemon(tmp_path, teams=teams) as daemon:
            async with daemon.http() as http:
                health = (await http.get("/healthz")).json()
            assert health["status"] == "ok"
            assert health["teams"] == ["delivery"]
            assert list(health["invalid_teams"]) == ["broken"]
            assert "paralel_budget" in health["invalid_teams"]["broken"]
            status, body = await refused(daemon, "team=broken", None)
            assert status == 404
            message = json.loads(body)["error"]
            assert message.startswith("team 'broken' cannot be used: its file has problems")
            assert "paralel_budget" in message
            async with connect(daemon, "team=delivery") as client:
                _, result = await run_delivery(client)
            assert result["type"] == "result"
