"""One client on ``/ws`` of a daemon on loopback: the agent channel, reattaching, requests."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected

from orchestrator.ahp.actions import (
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import PendingMessageKind, SystemNotificationResponsePart
from orchestrator.core import ApprovalResolved, RunFinished, build_graph
from orchestrator.journal import open_reader
from tests.support import teams
from tests.support.agent_channel import TASK, of_type, refused, run_delivery
from tests.support.ahp_client import connect_ahp
from tests.support.daemon import connect, running_daemon
from tests.support.fake_openai import Stream, fake_openai, text
from tests.support.paths import PROJECT_ROOT
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestAgentChannel:
    async def test_a_team_run_with_a_delegated_approval(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        """On each database (``serve --db PATH`` or ``postgresql://...``)."""
        async with (
            running_daemon(tmp_path, db=journal_db) as daemon,
            connect(daemon, "team=delivery") as client,
        ):
            init, result = await run_delivery(client)
        assert init["team"] == "delivery"
        events = client.received
        kinds = [e["type"] for e in events]
        assert kinds[:3] == ["init", "prompt", "thinking"]
        assert events[1] == {
            "channel": "agent",
            "type": "prompt",
            "prompt": "Ship 2.0",
            "taskId": TASK,
        }
        # Three delegations, each invoked then answered, before the final answer.
        invocations = of_type(events, "tool_invocation")
        assert [i["toolName"] for i in invocations] == ["delegate"] * 3
        results = of_type(events, "tool_result")
        assert {r["toolCallId"] for r in results} == {i["toolCallId"] for i in invocations}
        assert kinds.index("permission_request") < kinds.index("result")
        request = of_type(events, "permission_request")[0]
        assert request["agentName"] == "researcher"
        assert request["toolName"] == "publish"
        assert request["summary"] == "target=release page"
        assert request["agentId"].startswith("ahp-chat:/")
        resolved = of_type(events, "permission_resolved")[0]
        assert resolved == {
            "channel": "agent",
            "type": "permission_resolved",
            "requestId": request["requestId"],
            "decision": "approved",
            "by": "local",
        }
        assert "The release notes are ready." in result["summary"]
        text = "".join(e["content"] for e in of_type(events, "text"))
        assert text.startswith("I'll split this into three tasks")
        # The journal has the run, the approval with who decided, and a consistent graph.
        facts = open_reader(daemon.db).facts("ahp-session:/" + init["sessionId"])
        decisions = [f.action for f in facts if isinstance(f.action, ApprovalResolved)]
        assert [(d.resolved_by, d.principal) for d in decisions] == [("user", "local")]
        assert not any(isinstance(f.action, RunFinished) for f in facts), "still a conversation"
        assert build_graph(facts).check() == []

    async def test_a_second_prompt_is_the_next_turn_of_the_same_session(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as client,
        ):
            init = await client.until_type("init")
            assert init["team"] == "echo", "the only team is the default"
            for n, prompt in enumerate(("one", "two")):
                await client.send(
                    {"channel": "agent", "type": "prompt", "prompt": prompt, "taskId": f"t{n}"}
                )
                await client.until_type("done")
        results = of_type(client.received, "result")
        assert [(r["summary"], r["taskId"]) for r in results] == [
            ("first answer", "t0"),
            ("second answer", "t1"),
        ]

    async def test_reconnecting_replays_the_history_then_live_events(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        async with running_daemon(tmp_path, db=journal_db) as daemon:
            async with connect(daemon, "team=delivery") as first:
                init, _ = await run_delivery(first)
            async with connect(daemon, f"session={init['sessionId']}") as second:
                again = await second.until_type("init")
                history = await second.receive()
        assert again == init
        assert history["type"] == "history"
        live = [
            {k: v for k, v in e.items() if k != "taskId"}
            for e in first.received
            if e["type"]
            in (
                "prompt",
                "text",
                "thinking",
                "tool_invocation",
                "tool_result",
                "result",
                "done",
                "question",
            )
        ]
        replayed = history["messages"]
        # The history joins streamed text into one event per part, and puts each tool
        # call's result right after it (live, results come as the calls finish).
        assert of_type(replayed, "prompt", "result", "done") == of_type(
            live, "prompt", "result", "done"
        )
        for kind in ("tool_invocation", "tool_result"):
            assert sorted(of_type(replayed, kind), key=str) == sorted(of_type(live, kind), key=str)
        assert "".join(e["content"] for e in of_type(replayed, "text")) == "".join(
            e["content"] for e in of_type(live, "text")
        )

    async def test_reattaching_mid_turn_shows_what_waits_and_can_answer_it(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path) as daemon:
            async with connect(daemon, "team=delivery") as first:
                init = await first.until_type("init")
                await first.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"})
                request = await first.until_type("permission_request")
            async with connect(daemon, f"session={init['sessionId']}") as second:
                await second.until_type("init")
                history = await second.until_type("history")
                assert history["messages"] == [], "no turn has finished yet"
                waiting = await second.until_type("permission_request")
                assert waiting == request
                await second.send(
                    {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
                )
                result = await second.until_type("result")
        assert "The release notes are ready." in result["summary"]
        replayed = second.received[2 : second.received.index(waiting)]
        assert replayed[0] == {"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"}
        assert of_type(replayed, "tool_invocation"), "the running turn so far is replayed"

    async def test_attaching_to_an_ended_session_shows_its_history_and_views(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with connect(daemon) as first:
                init = await first.until_type("init")
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")
                async with daemon.http() as http:
                    posted = await http.post(
                        "/callback",
                        json={
                            "type": "view_update",
                            "group_id": init["sessionId"],
                            "view_type": "diff",
                            "content": {"patch": "+x"},
                        },
                    )
                    assert posted.status_code == 200
                uri = "ahp-session:/" + init["sessionId"]
                async with connect_ahp(daemon) as ahp:
                    await ahp.initialize()
                    await ahp.request("disposeSession", {"channel": uri})
                ended = await first.until_type("session_ended")
            async with connect(daemon, f"session={init['sessionId']}") as late:
                events = [await late.receive() for _ in range(4)]
                with pytest.raises(ConnectionClosed) as closed:
                    await late.receive()
        assert ended["sessionId"] == init["sessionId"]
        assert events[0] == init
        assert events[1]["type"] == "history"
        assert of_type(events[1]["messages"], "result") == [
            {"channel": "agent", "type": "result", "summary": "first answer"}
        ]
        assert events[2] == {
            "channel": "views",
            "type": "view_update",
            "view_type": "diff",
            "content": {"patch": "+x"},
        }
        assert events[3] == {
            "channel": "agent",
            "type": "session_ended",
            "sessionId": init["sessionId"],
            "status": "completed",  # disposed while it waited for its next message
        }
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1001

    # trio-websocket leaves a refused handshake's socket to the garbage collector: collect
    # it here, where its ResourceWarning is expected, not in whichever test runs next.
    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_an_unknown_session_or_team_is_refused_at_the_handshake(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path) as daemon:
            for query in ("session=nope", "team=nope"):
                with pytest.raises(ConnectionRejected) as refused:
                    async with connect(daemon, query):
                        pass
                assert refused.value.status_code == 404
                assert b"nope" in (refused.value.body or b"")
                del refused
                gc.collect()

    async def test_an_error_answers_on_the_channel_of_the_frame_that_caused_it(
        self, tmp_path: Path
    ) -> None:
        """A bad team-channel frame is answered on the team channel; an agent-channel one,
        and a frame that names no channel, on the agent channel."""
        async with running_daemon(tmp_path) as daemon, connect(daemon, "team=delivery") as client:
            await client.until_type("init")
            await client.send({"channel": "team", "type": "subscribe", "fromSequence": -1})
            error = await client.until(lambda e: e.get("type") == "error")
            assert error["channel"] == "team"
            assert error["code"] == "bad_request"
            assert error["message"].startswith("$.fromSequence: ")
            await client.send({"channel": "team", "type": "dance"})
            error = await client.until(lambda e: e.get("type") == "error")
            assert (error["channel"], error["code"]) == ("team", "bad_request")
            await client.send({"channel": "agent", "type": "prompt", "prompt": 3})
            error = await client.until(lambda e: e.get("type") == "error")
            assert (error["channel"], error["code"]) == ("agent", "bad_request")
            await client.send("{")
            error = await client.until(lambda e: e.get("type") == "error")
            assert (error["channel"], error["code"]) == ("agent", "bad_request")


async def test_the_example_client_runs_a_team_through_the_daemon(tmp_path: Path) -> None:
    async with running_daemon(tmp_path) as daemon:
        done = await trio.run_process(
            [
                sys.executable,
                str(PROJECT_ROOT / "examples" / "agent_client.py"),
                "Ship 2.0",
                "--url",
                daemon.ws_url,
                "--approve",
            ],
            capture_stdout=True,
            capture_stderr=True,
        )
    out = done.stdout.decode()
    assert (
        "researcher #3 (task: Publish the release notes to the release page) wants to run "
        "publish(target=release page)"
    ) in out
    # The workers show (from the team channel), each started and done.
    assert out.count("+ researcher@delivery#") == 3
    assert out.count("✔ researcher@delivery#") == 3
    # The answer once: streamed, then only "done".
    assert out.count("The release notes are ready.") == 1
    assert "== done" in out


async def test_the_example_client_says_in_one_line_that_a_session_is_unknown(
    tmp_path: Path,
) -> None:
    """A 404 (no such session) is one line naming the refusal and a failing exit, not a
    traceback."""
    async with running_daemon(tmp_path) as daemon:
        done = await trio.run_process(
            [
                sys.executable,
                str(PROJECT_ROOT / "examples" / "agent_client.py"),
                "--session",
                "0000-no-such-session",
                "--url",
                daemon.ws_url,
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err.count("\n") == 1, err
    assert err.startswith(f"agent_client: the daemon at {daemon.ws_url} refused: HTTP 404: ")
    assert "0000-no-such-session" in err


class TestRequests:
    async def test_a_question_is_answered_with_tool_response(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams={"asks": teams.ASK_THEN_SLOW_WORKER}) as daemon,
            connect(daemon) as client,
        ):
            await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "set up"})
            question = await client.until_type("question")
            assert question["questions"] == ["Which database?"]
            assert question["agentName"] == "lead"
            await client.send(
                {"channel": "agent", "type": "tool_response", "toolCallId": "nope", "result": "x"}
            )
            refused = await client.until_type("error")
            assert refused["code"] == "refused"
            assert "no open question for tool call 'nope'" in refused["message"]
            await client.send(
                {
                    "channel": "agent",
                    "type": "tool_response",
                    "toolCallId": question["toolCallId"],
                    "result": "PostgreSQL",
                }
            )
            result = await client.until_type("result")
        assert result["summary"] == "Using PostgreSQL."

    async def test_abort_of_a_recorded_task_cancels_its_worker_or_the_prompts_turn(
        self, tmp_path: Path
    ) -> None:
        """``abort`` names a task the session recorded (the envelopes' ``taskId``): a
        delegated one cancels that worker only (killed; its sibling finishes), the prompt's
        root task the coordinator's turn; a finished one is refused, saying so."""
        async with (
            running_daemon(
                tmp_path,
                teams={
                    "slow": teams.slow_delegation(),
                    "late": teams.slow_answer(seconds=30, answer="too late").replace(
                        'name = "slow"', 'name = "late"'
                    ),
                },
            ) as daemon,
            connect(daemon, "team=slow") as client,
        ):
            init = await client.until_type("init")
            uri = "ahp-session:/" + init["sessionId"]
            await client.send({"channel": "agent", "type": "prompt", "prompt": "go"})
            reader = open_reader(daemon.db)
            with trio.fail_after(20):
                while True:
                    tasks = reader.open(uri).tasks if reader.has_session(uri) else {}
                    workers = [t for t in tasks.values() if t.requested_by and t.chat]
                    if len(workers) == 2:
                        break
                    await trio.sleep(0.05)
            one = next(t for t in workers if t.title == "one")
            await client.send({"channel": "agent", "type": "abort", "taskId": one.task})
            await client.until_type("done")
            state = reader.open(uri)
            statuses = {t.title: t.status.value for t in state.tasks.values() if t.requested_by}
            assert statuses == {"one": "killed", "two": "completed"}
            root = next(t for t in state.tasks.values() if t.requested_by is None)
            await client.send({"channel": "agent", "type": "abort", "taskId": one.task})
            refused = await client.until_type("error")
            assert refused["message"] == f"task {one.task!r} is killed: there is nothing to cancel"
            await client.send({"channel": "agent", "type": "abort", "taskId": root.task})
            refused = await client.until_type("error")
            assert (
                refused["message"] == f"task {root.task!r} is completed: there is nothing to cancel"
            )
            async with connect(daemon, "team=late") as late:
                # A prompt's root task, running: its abort cancels the coordinator's turn.
                init = await late.until_type("init")
                uri = "ahp-session:/" + init["sessionId"]
                await late.send({"channel": "agent", "type": "prompt", "prompt": "take your time"})
                with trio.fail_after(20):
                    while True:
                        tasks = reader.open(uri).tasks if reader.has_session(uri) else {}
                        if tasks and next(iter(tasks.values())).status.value == "running":
                            break
                        await trio.sleep(0.05)
                (task,) = tasks
                await late.send({"channel": "agent", "type": "abort", "taskId": task})
                cancelled = await late.until_type("error")
                assert cancelled["message"] == "cancelled"
                await late.until_type("done")
            assert reader.open(uri).tasks[task].status.value == "killed"

    async def test_abort_cancels_the_task_s_turn_and_its_workers_and_the_session_goes_on(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"asks": teams.ASK_THEN_SLOW_WORKER}) as daemon,
            connect(daemon) as client,
        ):
            await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "a", "taskId": "q"})
            question = await client.until_type("question")
            await client.send(
                {
                    "channel": "agent",
                    "type": "tool_response",
                    "toolCallId": question["toolCallId"],
                    "result": "SQLite",
                }
            )
            await client.until_type("done")
            await client.send({"channel": "agent", "type": "abort", "taskId": "slow"})
            unknown = await client.until_type("error")
            assert "no task 'slow'" in unknown["message"]
            await client.send(
                {"channel": "agent", "type": "prompt", "prompt": "b", "taskId": "slow"}
            )
            await client.until_type("tool_invocation")
            await client.send({"channel": "agent", "type": "abort", "taskId": "slow"})
            error = await client.until_type("error")
            done = await client.receive()
            async with daemon.http() as http:
                metrics = (await http.get("/metrics")).text
        assert error == {
            "channel": "agent",
            "type": "error",
            "message": "cancelled",
            "taskId": "slow",
        }
        assert done == {"channel": "agent", "type": "done", "taskId": "slow"}
        # `orchestrator sessions` says running too: one vocabulary; idle is the activity.
        assert 'orchestrator_sessions{activity="idle",status="running"} 1.0' in metrics
        assert 'orchestrator_chats{status="killed"} 1.0' in metrics, "the aborted worker"

    async def test_a_steering_message_reaches_the_running_turn(self, tmp_path: Path) -> None:
        """``prompt`` with ``kind: "steering"`` joins the coordinator's running turn: it is
        recorded as the chat's steering message, taken into that same turn at its next model
        round (before the turn ends), and starts no turn of its own. With no turn running it
        is refused, saying to send it queued."""
        async with (
            running_daemon(tmp_path, teams={"slow": teams.slow_delegation()}) as daemon,
            connect(daemon, "team=slow") as client,
        ):
            init = await client.until_type("init")
            uri = "ahp-session:/" + init["sessionId"]
            steer = {"channel": "agent", "type": "prompt", "kind": "steering"}
            await client.send({**steer, "prompt": "too early"})
            early = await client.until_type("error")
            assert early["code"] == "refused"
            assert "no turn running to steer" in early["message"]
            await client.send({"channel": "agent", "type": "prompt", "prompt": "go"})
            await client.until_type("tool_invocation")  # the delegation: workers run 2 s
            await client.send({**steer, "prompt": "only the security findings"})
            await client.until_type("done")
            await client.send({**steer, "prompt": "too late"})
            late = await client.until_type("error")
            assert "no turn running to steer" in late["message"]
        reader = open_reader(daemon.db)
        state = reader.open(uri)
        chat = state.coordinator_chat()
        assert chat is not None
        mine = [f for f in reader.facts(uri) if f.channel == chat]
        sequences = {type(f.action): f.sequence for f in mine}  # the last of each kind
        (pending,) = [f.action for f in mine if isinstance(f.action, ChatPendingMessageSetAction)]
        assert pending.kind is PendingMessageKind.STEERING
        assert pending.message.text == "only the security findings"
        (removed,) = [
            f.action for f in mine if isinstance(f.action, ChatPendingMessageRemovedAction)
        ]
        assert removed.id == pending.id
        started = [f for f in mine if isinstance(f.action, ChatTurnStartedAction)]
        assert len(started) == 1, "a steering message starts no turn"
        assert (
            started[0].sequence
            < sequences[ChatPendingMessageSetAction]
            < sequences[ChatPendingMessageRemovedAction]
            < sequences[ChatTurnCompleteAction]
        )
        (turn,) = state.chats[chat].turns
        notes = [p for p in turn.response_parts if isinstance(p, SystemNotificationResponsePart)]
        steered = [p for p in notes if (p.meta or {}).get("steering") == pending.id]
        assert [p.content for p in steered] == ["only the security findings"]


MODEL_TEAMS = """
[team]
name = "model"
coordinator = "lead"
[openai]
model = "team-model"
base_url = "{url}"
api_key_env = "STUDIO_MODEL_KEY"
max_retries = 0
[agents.lead]
role = "coordinator"
backend = "openai"
"""


class TestModelChoice:
    # httpx reads a model's stream through nested async generators that trio's finalizer
    # closes once the backend stops reading ([DONE]); see tests/runtime/backends/test_openai.
    @pytest.mark.filterwarnings(
        r"ignore:Async generator '(httpx|httpcore|httpx_sse)\.[^']*' was garbage collected"
        ":ResourceWarning"
    )
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_a_session_opened_with_a_model_asks_it_and_the_next_one_the_team_s(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``/ws?team=T&model=M`` is ``orchestrator run --model M`` for that session: its
        OpenAI-compatible agents ask M; a session opened without it asks the team file's."""
        monkeypatch.setenv("STUDIO_MODEL_KEY", "sk-test")
        asked: list[str] = []

        def answer(request: dict[str, Any]) -> Stream:
            asked.append(request["model"])
            return Stream(text("Hello."))

        async with fake_openai(answer) as server:
            team = MODEL_TEAMS.format(url=server.url)
            async with running_daemon(tmp_path, teams={"model": team}) as daemon:
                async with connect(daemon, "team=model&model=chosen%2Fmodel:7b") as client:
                    await client.until_type("init")
                    await client.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    assert (await client.until_type("result"))["summary"] == "Hello."
                async with connect(daemon, "team=model") as client:
                    await client.until_type("init")
                    await client.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    await client.until_type("result")
        assert asked == ["chosen/model:7b", "team-model"]

    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_a_model_that_cannot_be_is_refused_at_the_handshake_saying_why(
        self, tmp_path: Path
    ) -> None:
        """No name, spaces, a reattach, or a team with no OpenAI-compatible agent: refused
        before any session exists, the answer naming ``?model``."""
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            cases = {
                "team=echo&model=": (400, b"?model: expected a model name"),
                "team=echo&model=two%20words": (400, b"?model: expected a model name"),
                "team=echo&model=" + "m" * 201: (400, b"?model: expected a model name"),
                "session=x&model=m": (400, b"?model: a session's model is chosen when it opens"),
                "team=echo&model=m": (404, b"no agent of echo uses the OpenAI-compatible"),
            }
            for query, (status, says) in cases.items():
                got_status, body = await refused(daemon, query, None)
                assert got_status == status, query
                assert says in body, (query, body)
