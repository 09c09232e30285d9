"""A daemon session is a conversation (DESIGN.md, Decisions 1): each prompt is its own root
task, the coordinator is idle between prompts in every projection, and a client or the
daemon's idle expiry ends it, ``completed`` and prunable. A CLI run keeps its shape."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import trio

from orchestrator.core import RunFinished, TaskFinished
from orchestrator.journal import JournalReader, prune
from orchestrator.server import Limits, ServeConfig

from .ahp_client import connect_ahp
from .daemon import ECHO, Client, RunningDaemon, connect, running_daemon

#: A coordinator whose turn takes a minute (ended while it runs).
SLOW = """
[team]
name = "slow"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { sleep = 60 }, { say = "late" } ]
"""


def team_events(client: Client) -> list[dict[str, Any]]:
    return [e["event"] for e in client.received if e.get("channel") == "team"]


def is_team(event: dict[str, Any], kind: str, **payload: Any) -> bool:
    if event.get("channel") != "team" or event["event"]["type"] != kind:
        return False
    return all(event["event"]["payload"].get(k) == v for k, v in payload.items())


async def prompt(client: Client, text: str, task: str) -> None:
    await client.send({"channel": "agent", "type": "prompt", "prompt": text, "taskId": task})
    await client.until_type("done")


def session_facts(daemon: RunningDaemon, session_id: str) -> list[Any]:
    return JournalReader(daemon.db).facts("ahp-session:/" + session_id)


class TestTwoPrompts:
    async def test_the_coordinator_is_idle_between_prompts_in_the_agent_ui_envelopes(
        self, tmp_path: Path
    ) -> None:
        """Each prompt is a root task of its own (task.changed running, then completed) and
        the coordinator goes running → idle (waiting for a message) after each answer."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as client,
        ):
            await client.until_type("init")
            await client.send({"channel": "team", "type": "subscribe"})
            await prompt(client, "one", "t1")
            await client.until(lambda e: is_team(e, "agent.changed", status="idle"))
            await prompt(client, "two", "t2")
            await client.until(
                lambda e: (
                    is_team(e, "agent.changed", status="idle") and e["event"]["taskId"] == "task-2"
                )
            )
        shown = [
            (e["type"], e.get("taskId"), e["payload"].get("status"))
            for e in team_events(client)
            if e["type"] in ("run.started", "agent.spawned", "agent.changed", "task.changed")
        ]
        assert shown == [
            ("run.started", "task-1", None),
            ("agent.spawned", "task-1", "spawning"),
            ("agent.changed", "task-1", "running"),
            ("task.changed", "task-1", "completed"),
            ("agent.changed", "task-1", "idle"),
            ("task.changed", "task-2", "running"),  # team/taskCreated
            ("task.changed", "task-2", "running"),  # team/taskStarted: the coordinator's
            ("agent.changed", "task-2", "running"),
            ("task.changed", "task-2", "completed"),
            ("agent.changed", "task-2", "idle"),
        ]
        idle = [e for e in team_events(client) if e["payload"].get("status") == "idle"]
        assert {e["payload"]["waitingFor"] for e in idle} == {"message"}
        sequences = [e["sequence"] for e in team_events(client)]
        assert sequences == list(range(1, len(sequences) + 1)), "in order, no gap"
        assert not any(e["type"].startswith("run.f") for e in team_events(client))


def run_end(daemon: RunningDaemon, session_id: str) -> tuple[str, str]:
    """How the journal says the session's run ended: (team/runFinished status, its result)."""
    ends = [
        f.action for f in session_facts(daemon, session_id) if isinstance(f.action, RunFinished)
    ]
    assert len(ends) == 1, ends
    return str(ends[0].status), ends[0].result


class TestEnding:
    async def test_end_on_ws_completes_an_idle_conversation_which_prune_then_removes(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with connect(daemon) as client:
                init = await client.until_type("init")
                await prompt(client, "one", "t1")
                await prompt(client, "two", "t2")
                await client.send({"channel": "agent", "type": "end"})
                ended = await client.until_type("session_ended")
            async with daemon.http() as http:
                listed = (await http.get("/api/sessions")).json()
        assert ended["status"] == "completed"
        assert run_end(daemon, init["sessionId"]) == ("completed", "second answer")
        uri = "ahp-session:/" + init["sessionId"]
        (info,) = JournalReader(daemon.db).sessions()
        assert (info.session, info.status) == (uri, "completed")
        assert [(s["uri"], s["status"]) for s in listed["sessions"]] == [(uri, "completed")]
        # Ended, it is what prune removes (an open conversation never was).
        report = prune(
            daemon.db,
            older_than=dt.timedelta(0),
            now=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1),
            dry_run=False,
        )
        assert report.sessions == (uri,)
        assert JournalReader(daemon.db).sessions() == []

    async def test_end_while_a_turn_runs_cancels_it_and_the_conversation(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"slow": SLOW}) as daemon,
            connect(daemon) as client,
        ):
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await client.until_type("prompt")  # the turn runs (it sleeps a minute)
            await client.send({"channel": "agent", "type": "end"})
            ended = await client.until_type("session_ended")
        assert ended["status"] == "cancelled"
        assert run_end(daemon, init["sessionId"])[0] == "cancelled"
        (finished,) = [
            f.action
            for f in session_facts(daemon, init["sessionId"])
            if isinstance(f.action, TaskFinished)
        ]
        assert (finished.task, finished.status) == ("task-1", "killed")

    async def test_ahp_dispose_completes_an_idle_conversation(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as client,
        ):
            init = await client.until_type("init")
            await prompt(client, "one", "t1")
            async with connect_ahp(daemon) as ahp:
                await ahp.initialize()
                uri = "ahp-session:/" + init["sessionId"]
                assert await ahp.request("disposeSession", {"channel": uri}) is None
            ended = await client.until_type("session_ended")
        assert ended["status"] == "completed"
        assert run_end(daemon, init["sessionId"]) == ("completed", "first answer")

    async def test_orchestrator_end_ends_a_conversation_of_the_running_daemon(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with connect(daemon) as client:
                init = await client.until_type("init")
                await prompt(client, "one", "t1")
            command = [sys.executable, "-m", "orchestrator", "end", init["sessionId"]]
            command += ["--url", daemon.url]
            ended = await trio.run_process(command, capture_stdout=True, capture_stderr=True)
            assert ended.stdout.decode() == f"session {init['sessionId']} ended: completed\n"
            again = await trio.run_process(
                command, capture_stdout=True, capture_stderr=True, check=False
            )
            assert again.returncode != 0, "an ended conversation cannot be ended again"
            assert b"has ended already (completed)" in again.stderr
        assert run_end(daemon, init["sessionId"]) == ("completed", "first answer")

    async def test_the_idle_expiry_ends_a_conversation_put_away_or_live(
        self, tmp_path: Path
    ) -> None:
        """``idle_conversation`` seconds after its last answer a conversation is ended
        ``completed``: one in memory, and one put away (``idle_session``), which is taken up
        to be ended."""
        config = ServeConfig(
            limits=Limits(idle_session=0.2, idle_conversation=1.0, shutdown_grace=0.5)
        )
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon:
            async with connect(daemon) as watched:
                first = await watched.until_type("init")
                await prompt(watched, "one", "t1")
                async with connect(daemon) as other:
                    second = await other.until_type("init")
                    await prompt(other, "one", "t1")
                # The other's client left: put away after 0.2 s, ended from the journal.
                ended = await watched.until_type("session_ended")
            with trio.fail_after(10):
                while len(JournalReader(daemon.db).sessions(status="completed")) < 2:  # noqa: ASYNC110 (the journal: no event to wait on)
                    await trio.sleep(0.1)
        assert ended["status"] == "completed"
        assert run_end(daemon, first["sessionId"]) == ("completed", "first answer")
        assert run_end(daemon, second["sessionId"]) == ("completed", "first answer")
