"""Background teammates through the daemon's front door: ``WS /teammates`` and the
``orchestrator teammates`` CLI against a real daemon on loopback (the CLI's side alone:
tests/cli/test_teammates_client.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import zoneinfo
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import WebSocketConnection

from orchestrator.journal import JournalReader
from orchestrator.server import Role, ServeConfig, Token
from orchestrator.sessions import Limits
from tests.support.daemon import TEAMS, RunningDaemon, running_daemon, websocket
from tests.support.teammates import slow_team

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

OPERATOR, VIEWER = "operator-token-0123456789", "viewer-token-0123456789"
TOKENS = ServeConfig(
    tokens=(
        Token(name="alice", role=Role.OPERATOR, secret=OPERATOR),
        Token(name="victor", role=Role.VIEWER, secret=VIEWER),
    ),
    limits=Limits(shutdown_grace=0.5),
)
QUICK = slow_team(minutes=0, background='every = "1d"')


@asynccontextmanager
async def teammates_socket(
    daemon: RunningDaemon, token: str | None = None
) -> AsyncIterator[WebSocketConnection]:
    async with websocket(f"{daemon.ws_url}/teammates", token=token) as ws:
        yield ws


async def ask(ws: WebSocketConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send_message(json.dumps(message))
    with trio.fail_after(10):
        answer: dict[str, Any] = json.loads(await ws.get_message())
    return answer


async def cli(daemon: RunningDaemon, *args: str, token: str | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_TOKEN"}
    if token is not None:
        env["ORCHESTRATOR_TOKEN"] = token
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "teammates", *args, "--url", daemon.url],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=env,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_the_shipped_nightly_teammate_is_known_to_a_fresh_daemon(tmp_path: Path) -> None:
    teams = {p.stem: p.read_text(encoding="utf-8") for p in TEAMS.glob("*.toml")}
    async with running_daemon(tmp_path, teams=teams) as daemon:
        code, out, err = await cli(daemon, "list", "--json")
        assert (code, err) == (0, "")
        (nightly,) = json.loads(out)
        assert (nightly["name"], nightly["team"], nightly["state"]) == (
            "dependency-audit",
            "nightly",
            "scheduled",
        )
        assert nightly["lastRun"] is None
        # The next 03:00 in Berlin.
        wake = dt.datetime.fromisoformat(nightly["nextWake"].replace("Z", "+00:00"))
        local = wake.astimezone(zoneinfo.ZoneInfo("Europe/Berlin"))
        assert (local.hour, local.minute) == (3, 0)
        assert dt.timedelta(0) < wake - dt.datetime.now(dt.UTC) <= dt.timedelta(days=1)

        code, out, _ = await cli(daemon, "list")
        assert code == 0
        assert out.splitlines()[0].split() == [
            "TEAMMATE",
            "STATE",
            "SCHEDULE",
            "NEXT",
            "WAKE",
            "LAST",
            "RUN",
        ]
        assert "nightly/dependency-audit  scheduled  0 3 * * * Europe/Berlin" in out


async def test_operators_trigger_pause_and_read_history_from_the_cli(tmp_path: Path) -> None:
    async with running_daemon(tmp_path, teams={"slow": QUICK}, config=TOKENS) as daemon:
        code, out, _ = await cli(daemon, "trigger", "poller", token=OPERATOR)
        assert (code, out) == (0, "slow/poller: a run started\n")
        with trio.fail_after(20):
            while True:
                code, out, _ = await cli(daemon, "history", "poller", "--json", token=VIEWER)
                runs = json.loads(out)
                if runs and runs[-1]["outcome"] is not None:
                    break
                await trio.sleep(0.1)
        (run,) = runs
        assert {k: run[k] for k in ("outcome", "reason", "by")} == {
            "outcome": "completed",
            "reason": "trigger",
            "by": "alice",
        }
        assert run["start"] <= run["end"]
        info = JournalReader(daemon.db).session(run["session"])
        assert (info.team, info.status) == ("slow", "completed")
        async with daemon.http(VIEWER) as http:
            metrics = (await http.get("/metrics")).text
        assert (
            'orchestrator_teammate_runs_total{outcome="completed",teammate="slow/poller"} 1.0'
            in metrics
        )
        assert 'orchestrator_teammate_state{state="sleeping",teammate="slow/poller"} 1.0' in metrics

        code, out, err = await cli(daemon, "pause", "slow/poller", token=VIEWER)
        assert code == 2
        assert "victor may watch teammates, not pause them" in err
        assert (await cli(daemon, "pause", "slow/poller", token=OPERATOR))[
            1
        ] == "slow/poller: paused\n"
        assert (await cli(daemon, "pause", "poller", token=OPERATOR))[1] == (
            "slow/poller: was paused already\n"
        )
        code, out, _ = await cli(daemon, "list", "--json", token=VIEWER)
        (poller,) = json.loads(out)
        assert (poller["state"], poller["nextWake"], poller["pausedBy"]) == (
            "paused",
            None,
            "alice",
        )
        assert poller["lastRun"]["session"] == run["session"]

        code, _, err = await cli(daemon, "trigger", "nobody", token=OPERATOR)
        assert code == 2
        assert "no background teammate 'nobody'" in err
        code, _, err = await cli(daemon, "list")
        assert code == 2
        assert "refused the connection: HTTP 401" in err


async def test_subscribers_see_automation_job_envelopes_as_teammates_change(
    tmp_path: Path,
) -> None:
    async with (
        running_daemon(tmp_path, teams={"slow": QUICK}) as daemon,
        teammates_socket(daemon) as watcher,
        teammates_socket(daemon) as operator,
    ):
        subscribed = await ask(watcher, {"type": "subscribe", "id": "s"})
        assert subscribed == {
            "channel": "teammates",
            "type": "subscribed",
            "teammates": 1,
            "id": "s",
        }
        first = [json.loads(await watcher.get_message()) for _ in range(2)]
        assert [m["envelope"]["type"] for m in first] == ["task.changed", "agent.changed"]
        assert first[0]["envelope"]["payload"]["runtimeStatus"] == "scheduled"

        done = await ask(operator, {"type": "trigger", "name": "poller", "id": 7})
        assert (done["type"], done["id"], done["decision"]) == ("done", 7, "start")

        statuses: list[str] = []
        with trio.fail_after(20):
            while statuses[-1:] != ["sleeping"]:
                message = json.loads(await watcher.get_message())
                envelope = message["envelope"]
                assert message["teammate"] == "slow/poller"
                assert envelope["payload"]["runtimeEntity"] == "automation_job"
                assert envelope["topology"] == "background_teammate"
                assert envelope["taskId"] == "teammate:slow/poller"
                if envelope["type"] == "task.changed":
                    statuses.append(envelope["payload"]["runtimeStatus"])
        # A watcher that subscribed before the teammate recorded its first sleep also sees
        # that (still scheduled, now with its next wake) before the run.
        assert statuses in (["running", "sleeping"], ["scheduled", "running", "sleeping"])
        assert envelope["payload"]["wakeReason"] == "trigger"
        assert envelope["payload"]["lastRun"]["outcome"] == "completed"

        bad = await ask(operator, {"type": "pause"})
        assert bad["code"] == "bad_request"
        assert bad["message"].startswith("$.name: pause needs the teammate's name")
        bad = await ask(operator, {"type": "history", "name": "poller", "limit": 0})
        assert bad["message"].startswith("$.limit:")
        assert (await ask(operator, {"type": "list"}))["type"] == "teammates"


async def test_a_teammate_of_a_journal_that_named_teams_by_file_keeps_its_stream(
    tmp_path: Path,
) -> None:
    """A journal written when teams were named by their file's stem (``jobs.toml`` as
    ``jobs``, its ``[team] name`` now ``slow``): the teammate is ``slow/poller`` and goes on
    with the stream it had (still paused), and ``jobs/poller`` still names it."""
    db = tmp_path / "journal.db"
    as_before = QUICK.replace('name = "slow"', 'name = "jobs"', 1)
    async with running_daemon(tmp_path / "before", teams={"jobs": as_before}, db=db) as daemon:
        assert (await cli(daemon, "pause", "jobs/poller"))[1] == "jobs/poller: paused\n"
    async with running_daemon(tmp_path / "after", teams={"jobs": QUICK}, db=db) as daemon:
        code, out, _ = await cli(daemon, "list", "--json")
        assert code == 0
        (poller,) = json.loads(out)
        assert (poller["team"], poller["name"], poller["state"]) == ("slow", "poller", "paused")
        assert (await cli(daemon, "resume", "jobs/poller"))[1] == "slow/poller: resumed\n"
