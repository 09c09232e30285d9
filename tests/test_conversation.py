"""A daemon session is a conversation (DESIGN.md, Decisions 1): each prompt is its own root
task, the coordinator is idle between prompts in every projection, and a client or the
daemon's idle expiry ends it, ``completed`` and prunable. A CLI run keeps its shape."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import trio

from orchestrator.core import RunFinished, RunStatus, TaskCreated, TaskFinished, build_graph
from orchestrator.journal import JournalReader, prune

from .daemon import ECHO, Client, RunningDaemon, connect, running_daemon


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
                lambda e: is_team(e, "agent.changed", status="idle")
                and e["event"]["taskId"] == "task-2"
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
