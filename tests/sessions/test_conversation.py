"""A daemon session is a conversation (DESIGN.md, Decisions 1): each prompt is its own root
task, the coordinator is idle between prompts in every projection, and a client or the
daemon's idle expiry ends it, ``completed`` and prunable. A CLI run keeps its shape."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing

from orchestrator.base import RunError
from orchestrator.cli._end_command import session_named
from orchestrator.core import (
    Fact,
    MemberStatus,
    RunFinished,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TeamState,
    build_graph,
)
from orchestrator.journal import JournalReader, prune
from orchestrator.protocols import project_facts
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.server import ServeConfig
from orchestrator.sessions import Limits
from orchestrator.spec import parse_team
from tests.support.agui import check_run, validate_event
from tests.support.ahp_client import connect_ahp
from tests.support.daemon import Client, RunningDaemon, connect, running_daemon
from tests.support.teams import ECHO, slow_answer

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


def team_events(client: Client) -> list[dict[str, Any]]:
    return [e["event"] for e in client.received if e.get("channel") == "team"]


def is_team(event: dict[str, Any], kind: str, **payload: Any) -> bool:
    if event.get("channel") != "team" or event["event"]["type"] != kind:
        return False
    return all(event["event"]["payload"].get(k) == v for k, v in payload.items())


async def seen(client: Client, predicate: Callable[[dict[str, Any]], bool]) -> None:
    """Return once ``client`` has received an event ``predicate`` holds for (or had)."""
    if not any(predicate(e) for e in client.received):
        await client.until(predicate)


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
            await seen(client, lambda e: is_team(e, "agent.changed", status="idle"))
            await prompt(client, "two", "t2")
            await seen(
                client,
                lambda e: (
                    is_team(e, "agent.changed", status="idle") and e["event"]["taskId"] == "task-2"
                ),
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
            ("task.changed", "task-2", "running"),  # team/taskCreated: the next prompt's
            ("agent.changed", "task-2", "running"),
            ("task.changed", "task-2", "running"),  # team/taskStarted: the coordinator's
            ("task.changed", "task-2", "completed"),
            ("agent.changed", "task-2", "idle"),
        ]
        phases = [
            e["payload"]["teamPhase"] for e in team_events(client) if e["type"] == "team.changed"
        ]
        assert phases == ["forming", "waiting", "forming", "waiting"], "waiting for a message"
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
            running_daemon(
                tmp_path, teams={"slow": slow_answer(seconds=60, answer="late")}
            ) as daemon,
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
            # The id's first characters name the one running session that has them.
            end = [sys.executable, "-m", "orchestrator", "end"]
            command = [*end, init["sessionId"][:8], "--url", daemon.url]
            ended = await trio.run_process(command, capture_stdout=True, capture_stderr=True)
            assert ended.stdout.decode() == f"session {init['sessionId']} ended: completed\n"
            command = [*end, init["sessionId"], "--url", daemon.url]
            again = await trio.run_process(
                command, capture_stdout=True, capture_stderr=True, check=False
            )
            assert again.returncode != 0, "an ended conversation cannot be ended again"
            assert b"has ended already (completed)" in again.stderr
        assert run_end(daemon, init["sessionId"]) == ("completed", "first answer")

    def test_orchestrator_end_names_a_session_by_its_id_or_a_start_only_one_has(self) -> None:
        running = ["4f1c09aa-1", "4f1c77b0-2", "9d00e1c3-3"]
        assert session_named(running, "4f1c77b0-2") == "4f1c77b0-2"
        assert session_named(running, "9d00") == "9d00e1c3-3"
        assert session_named(running, "4f1c7") == "4f1c77b0-2"
        # Three characters name nothing (the daemon then answers for the id itself).
        assert session_named(running, "9d0") == "9d0"
        assert session_named(running, "ended-one") == "ended-one"
        with pytest.raises(RunError, match=r"2 running sessions start with '4f1c' \(4f1c09aa-1, "):
            session_named(running, "4f1c")

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


class TestRestart:
    async def test_a_daemon_restarted_between_prompts_goes_on_with_the_conversation(
        self, tmp_path: Path
    ) -> None:
        """The coordinator is idle in the replay a client gets after the restart, the next
        prompt is a root task of its own, and ending it still completes it."""
        db = tmp_path / "journal.db"
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, db=db) as daemon,
            connect(daemon) as client,
        ):
            init = await client.until_type("init")
            await prompt(client, "one", "t1")
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, db=db) as daemon,
            connect(daemon, f"session={init['sessionId']}") as client,
        ):
            await client.until_type("history")
            await client.send({"channel": "team", "type": "subscribe"})
            await seen(client, lambda e: is_team(e, "agent.changed", status="idle"))
            await client.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            result = await client.until_type("result")
            await seen(
                client,
                lambda e: (
                    is_team(e, "agent.changed", status="idle") and e["event"]["taskId"] != "task-1"
                ),
            )
            await client.send({"channel": "agent", "type": "end"})
            ended = await client.until_type("session_ended")
        assert result["summary"] == "second answer"
        assert ended["status"] == "completed"
        coordinator = [
            (e["taskId"], e["payload"]["status"])
            for e in team_events(client)
            if e["type"] in ("agent.changed", "agent.spawned")
        ]
        assert coordinator == [
            ("task-1", "spawning"),
            ("task-1", "running"),
            ("task-1", "idle"),
            ("task-r1-1", "running"),  # the restarted process's ids
            ("task-r1-1", "idle"),
            ("task-r1-1", "completed"),
        ]
        facts = session_facts(daemon, init["sessionId"])
        assert build_graph(facts).check() == []
        roots = [f.action.task for f in facts if isinstance(f.action, TaskFinished)]
        assert roots == ["task-1", "task-r1-1"]


async def converse(team: str, *prompts: str, log: MemoryFactLog | None = None) -> TeamRuntime:
    """A conversation runtime (as the daemon runs one) given ``prompts``, then ended."""
    runtime = TeamRuntime(
        parse_team(team, file="t.toml"),
        backends=ScriptedBackend,
        factlog=log or MemoryFactLog(),
        ids=Ids(deterministic=True),
        conversation=True,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run, prompts[0])
        coordinator = runtime.state.coordinator_chat()
        assert coordinator is not None
        for text in prompts[1:]:
            await trio.testing.wait_all_tasks_blocked()
            await runtime.queue(coordinator, text)
        await trio.testing.wait_all_tasks_blocked()
        runtime.end_conversation()
    return runtime


def coordinator_statuses(session: str, facts: list[Fact]) -> list[str]:
    """The coordinator's roster status after each fact, repeats dropped."""
    state = TeamState(session)
    shown: list[str] = []
    for fact in facts:
        state.apply(fact)
        chat = state.coordinator_chat()
        if chat is not None and chat in state.members:
            status = state.member_status(chat).value
            if not shown or shown[-1] != status:
                shown.append(status)
    return shown


class TestFold:
    async def test_each_prompt_is_a_root_task_and_the_coordinator_idles_between(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        log = MemoryFactLog()
        runtime = await converse(ECHO, "one", "two", log=log)
        assert coordinator_statuses(runtime.session, log.facts) == [
            "spawning",
            "running",
            "idle",
            "running",
            "idle",
            "completed",
        ]
        roots = [
            (f.action.task, f.action.title)
            for f in log.facts
            if isinstance(f.action, TaskCreated) and f.action.requested_by is None
        ]
        assert roots == [("task-2", "two")], "the first prompt's is team/runStarted's"
        state = runtime.state
        assert state.run is not None
        assert state.run.task == "task-2"
        assert (state.run.status, state.run.result) == ("completed", "second answer")
        assert [(t.task, t.status, t.summary) for t in state.tasks.values()] == [
            ("task-1", "completed", "first answer"),
            ("task-2", "completed", "second answer"),
        ]
        graph = build_graph(log.facts)
        assert graph.check() == []
        # The delegation graph (the web view's, `orchestrator graph`'s) says it too.
        coordinator = state.coordinator_chat()
        before_end = [f for f in log.facts if not isinstance(f.action, RunFinished)]
        assert build_graph(before_end).graph.nodes[coordinator]["status"] == "idle"
        assert graph.graph.nodes[coordinator]["status"] == "completed"
        tasks = {n: graph.graph.nodes[n]["status"] for n in ("task-1", "task-2")}
        assert tasks == {"task-1": "completed", "task-2": "completed"}

    async def test_a_cli_run_keeps_its_shape(self, autojump_clock: trio.testing.MockClock) -> None:
        """One prompt, the coordinator running until team/runFinished: no idle, and the root
        task ends with the run."""
        log = MemoryFactLog()
        runtime = TeamRuntime(
            parse_team(ECHO, file="t.toml"), backends=ScriptedBackend, factlog=log
        )
        await runtime.run("one")
        assert coordinator_statuses(runtime.session, log.facts) == [
            "spawning",
            "running",
            "completed",
        ]
        assert not any(isinstance(f.action, (TaskCreated, TaskFinished)) for f in log.facts)
        envelopes = project_facts(runtime.session, log.facts)
        assert envelopes[-1].type == "run.finished"

    async def test_an_old_journal_means_what_it_meant_and_is_idle_once_taken_up(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A conversation recorded before each prompt was a root task (no team/task* of the
        root) folds as it did: its coordinator running after its answer. Taken up, the
        answered prompt's end is recorded, and the coordinator is idle."""
        log = MemoryFactLog()
        runtime = await converse(ECHO, "one", "two", log=log)
        old = [
            f
            for f in log.facts
            if not isinstance(f.action, (TaskCreated, TaskStarted, TaskFinished, RunFinished))
        ]
        old = [attrs.evolve(f, sequence=n) for n, f in enumerate(old, start=1)]
        session = runtime.session
        assert coordinator_statuses(session, old) == ["spawning", "running"]
        state = TeamState.fold(session, old)
        again = MemoryFactLog()
        resumed = TeamRuntime(
            parse_team(ECHO, file="t.toml"),
            backends=ScriptedBackend,
            factlog=again,
            state=state,
            ids=Ids(restart=1),
            conversation=True,
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(resumed.resume)
            await trio.testing.wait_all_tasks_blocked()
            coordinator = state.coordinator_chat()
            assert coordinator is not None
            assert state.member_status(coordinator) is MemberStatus.IDLE
            resumed.end_conversation()
        (ended,) = [f.action for f in again.facts if isinstance(f.action, TaskFinished)]
        assert (ended.task, ended.status, ended.summary) == ("task-1", "completed", "second answer")
        assert state.run is not None
        assert state.run.status == "completed"


async def post_run(daemon: RunningDaemon, run_id: str, messages: list[Any]) -> list[Any]:
    """POST one RunAgentInput of the thread to the echo team; its SSE events, checked."""
    body = {
        "threadId": "thread-1",
        "runId": run_id,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    events: list[Any] = []
    async with (
        httpx.AsyncClient(base_url=daemon.url, timeout=30) as http,
        http.stream("POST", "/agui?team=echo", json=body) as response,
    ):
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
                validate_event(events[-1])
    check_run(events)
    return events


def final_state(events: list[dict[str, Any]]) -> Any:
    """The AG-UI state a client holds at the end of a run's ``events``."""
    import jsonpatch

    state: Any = None
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            state = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, event["delta"])
    return state


class TestAgui:
    async def test_the_coordinator_is_idle_in_the_state_each_run_leaves(
        self, tmp_path: Path
    ) -> None:
        """An AG-UI run is one prompt of the thread's conversation: the state its client
        holds at RUN_FINISHED shows the coordinator idle and the prompt's task completed."""
        messages: list[dict[str, Any]] = []
        states = []
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            for n, text in enumerate(("one", "two"), start=1):
                messages.append({"id": f"u{n}", "role": "user", "content": text})
                events = await post_run(daemon, f"run-{n}", messages)
                assert events[-1]["type"] == "RUN_FINISHED"
                states.append(final_state(events))
                answer = events[-1]["result"]
                messages.append({"id": f"a{n}", "role": "assistant", "content": answer})
        for state, task in zip(states, ("task-1", "task-2"), strict=True):
            assert [m["status"] for m in state["members"]] == ["idle"]
            assert {t["id"]: t["status"] for t in state["tasks"]}[task] == "completed"
