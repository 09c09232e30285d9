"""Each team of ``orchestrator serve`` as an A2A agent, checked with a2a-sdk's own client: the
card fetched, a message streamed to completion, an input_required answered, a task
cancelled, and a viewer refused."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from google.protobuf import json_format

from orchestrator.runtime import TracingSettings, traced
from orchestrator.server import Role as TokenRole
from orchestrator.server import ServeConfig, Token
from orchestrator.sessions import Limits
from tests.support import mcp_servers, teams
from tests.support.daemon import running_daemon
from tests.support.examples import examples
from tests.support.fuzz import Fuzzer
from tests.support.otlp import draw, otlp_receiver
from tests.support.teams import ASK, ECHO, approvals, slow_answer

pytestmark = pytest.mark.daemon

OPERATOR, VIEWER = "operator-token-0123456789", "viewer-token-0123456789"
SEED = 3838
TOKENS = ServeConfig(
    tokens=(
        Token(name="alice", role=TokenRole.OPERATOR, secret=OPERATOR),
        Token(name="victor", role=TokenRole.VIEWER, secret=VIEWER),
    ),
    limits=Limits(shutdown_grace=0.5),
)
TEAMS = {
    "echo": ECHO,
    "asking": ASK,
    "slow": slow_answer(seconds=30, answer="late"),
    "approvals": approvals(),
}


@asynccontextmanager
async def agent(
    tmp_path: Path, team: str, token: str = OPERATOR, headers: dict[str, str] | None = None
) -> AsyncIterator[Any]:
    """The SDK's client of ``team`` on a daemon on loopback; yields (client, card, call)."""
    async with (
        running_daemon(tmp_path, teams=TEAMS, config=TOKENS) as daemon,
        httpx.AsyncClient(headers={"Authorization": f"Bearer {token}", **(headers or {})}) as http,
    ):
        resolver = A2ACardResolver(http, f"{daemon.url}/a2a/{team}/")
        card = await resolver.get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        yield client, card


def message(text: str, **ids: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)], **ids
        )
    )


async def stream(client: Any, request: SendMessageRequest) -> list[Any]:
    return [event async for event in client.send_message(request)]


def states(events: list[Any]) -> list[str]:
    out = []
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            out.append(TaskState.Name(event.task.status.state))
        elif kind == "status_update":
            out.append(TaskState.Name(event.status_update.status.state))
        elif kind == "artifact_update":
            out.append("artifact")
    return out


async def test_the_card_names_the_team_its_skills_and_the_bearer_scheme(tmp_path: Path) -> None:
    async with agent(tmp_path, "echo") as (_, card):
        assert card.name == "echo"
        assert card.capabilities.streaming
        assert [s.id for s in card.skills] == ["lead"]
        assert "bearer" in card.security_schemes
        assert card.supported_interfaces[0].url.endswith("/a2a/echo/")


async def test_a_message_streams_to_completion(tmp_path: Path) -> None:
    async with agent(tmp_path, "echo") as (client, _):
        with trio.fail_after(30):
            events = await stream(client, message("hello"))
        assert states(events)[:2] == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
        assert states(events)[-1] == "TASK_STATE_COMPLETED"
        assert "artifact" in states(events)
        chunks = "".join(
            p.text
            for e in events
            if e.WhichOneof("payload") == "artifact_update"
            for p in e.artifact_update.artifact.parts
        )
        assert chunks == "first answer"
        final = events[-1].status_update.status.message.parts[0].text
        assert final == "first answer"
        task_id = events[0].task.id
        task = await client.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "first answer"
        # The same context is the same session: its next prompt is the coordinator's next turn.
        context_id = events[0].task.context_id
        with trio.fail_after(30):
            again = await stream(client, message("more", context_id=context_id))
        assert again[-1].status_update.status.message.parts[0].text == "second answer"


async def test_input_required_is_answered_by_the_next_message(tmp_path: Path) -> None:
    async with agent(tmp_path, "asking") as (client, _):
        with trio.fail_after(30):
            events = await stream(client, message("release it"))
        assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"
        assert events[-1].status_update.status.message.parts[0].text == "Which version?"
        task_id, context_id = events[0].task.id, events[0].task.context_id
        with trio.fail_after(30):
            answered = await stream(client, message("2.0", task_id=task_id, context_id=context_id))
        assert states(answered)[-1] == "TASK_STATE_COMPLETED"
        assert answered[-1].status_update.status.message.parts[0].text == "Releasing 2.0"


async def test_an_approval_routed_to_the_user_is_input_required(tmp_path: Path) -> None:
    """A worker's call that waits for the user's approval: the task asks, and "yes" in the
    task's next message approves it."""
    async with agent(tmp_path, "approvals") as (client, _):
        with trio.fail_after(30):
            events = await stream(client, message("ship"))
        assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"
        asked = events[-1].status_update.status.message.parts[0].text
        assert asked.startswith("worker asks to run publish: ")
        assert asked.endswith("Approve? (yes or no)")
        task_id, context_id = events[0].task.id, events[0].task.context_id
        with trio.fail_after(30):
            answered = await stream(client, message("yes", task_id=task_id, context_id=context_id))
        assert states(answered)[-1] == "TASK_STATE_COMPLETED"
        final = answered[-1].status_update.status.message.parts[0].text
        assert "after: published" in final


async def test_a_task_is_cancelled(tmp_path: Path) -> None:
    """tasks/cancel cancels the coordinator's turn; the task's stream ends canceled."""
    seen: list[Any] = []
    working = trio.Event()
    async with agent(tmp_path, "slow") as (client, _):
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    async for event in client.send_message(message("go")):
                        seen.append(event)
                        if states(seen)[-1] == "TASK_STATE_WORKING":
                            working.set()

                nursery.start_soon(read)
                await working.wait()
                task = await client.cancel_task(CancelTaskRequest(id=seen[0].task.id))
                assert task.status.state == TaskState.TASK_STATE_CANCELED
    assert states(seen)[-1] == "TASK_STATE_CANCELED"


async def test_a_viewer_reads_the_card_and_cannot_send(tmp_path: Path) -> None:
    async with agent(tmp_path, "echo", token=VIEWER) as (client, card):
        assert card.name == "echo"
        with pytest.raises(Exception, match="403"):
            await stream(client, message("hello"))


async def test_no_token_is_refused(tmp_path: Path) -> None:
    async with (
        running_daemon(tmp_path, teams=TEAMS, config=TOKENS) as daemon,
        httpx.AsyncClient() as http,
    ):
        answer = await http.get(f"{daemon.url}/a2a/echo/.well-known/agent-card.json")
        assert answer.status_code == 401


# Kept: ClientCallContext is how a caller would pass per-call headers instead.
_ = ClientCallContext


CALLER_TRACE, CALLER_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


async def test_a_task_continues_the_callers_trace(tmp_path: Path) -> None:
    """A caller in a traced app (a ``traceparent`` header on its requests): the served
    task's run is a child of the caller's span, in its trace, as a real OTLP receiver
    decodes the daemon's spans; the context's next message continues the trace too."""
    caller = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
    with otlp_receiver() as receiver:
        settings = TracingSettings(enabled=True, endpoint=receiver.endpoint, batch=False)
        with traced(settings):
            async with agent(tmp_path, "echo", headers=caller) as (client, _):
                with trio.fail_after(30):
                    events = await stream(client, message("hello"))
                    context_id = events[0].task.context_id
                    again = await stream(client, message("more", context_id=context_id))
        assert states(events)[-1] == states(again)[-1] == "TASK_STATE_COMPLETED"
        # Per prompt: its run, the lead's turn, the turn's model round.
        spans = receiver.wait_for(6)
    assert {span.trace_id for span in spans} == {CALLER_TRACE}, draw(spans)
    roots = [s for s in spans if s.name == "invoke_workflow echo"]
    assert len(roots) == 2
    assert {root.parent_id for root in roots} == {CALLER_SPAN}
    assert {root.attributes["gen_ai.conversation.id"] for root in roots} == {
        f"ahp-session:/{context_id}"
    }
    turns = [s for s in spans if s.name == "invoke_agent lead"]
    assert sorted(t.parent_id for t in turns) == sorted(r.span_id for r in roots)


async def test_without_a_traceparent_a_task_is_its_own_trace(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        settings = TracingSettings(enabled=True, endpoint=receiver.endpoint, batch=False)
        with traced(settings):
            async with agent(tmp_path, "echo") as (client, _):
                with trio.fail_after(30):
                    await stream(client, message("hello"))
        spans = receiver.wait_for(3)
    (root,) = [s for s in spans if s.name == "invoke_workflow echo"]
    assert root.parent_id == ""
    assert root.trace_id != CALLER_TRACE
    assert {span.trace_id for span in spans} == {root.trace_id}


# ── served tasks outlive the daemon ─────────────────────────────────────────


async def test_tasks_get_answers_from_the_journal_after_a_restart(tmp_path: Path) -> None:
    async with agent(tmp_path, "echo") as (client, _):
        with trio.fail_after(30):
            first = await stream(client, message("hello"))
            context_id = first[0].task.context_id
            second = await stream(client, message("more", context_id=context_id))
    first_id, second_id = first[0].task.id, second[0].task.id
    assert first_id == f"{context_id}~start"
    assert second_id.startswith(f"{context_id}~a2a-")
    # A second daemon on the same journal: the first one has stopped.
    async with agent(tmp_path, "echo") as (client, _):
        task = await client.get_task(GetTaskRequest(id=first_id))
        assert (task.id, task.context_id) == (first_id, context_id)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.status.message.parts[0].text == "first answer"
        assert [p.text for p in task.artifacts[0].parts] == ["first answer"]
        later = await client.get_task(GetTaskRequest(id=second_id))
        assert later.status.state == TaskState.TASK_STATE_COMPLETED
        assert later.artifacts[0].parts[0].text == "second answer"
        for unknown in (f"{context_id}~a2a-nothing", "no-such-context~start", "no tilde"):
            with pytest.raises(Exception, match=f"no task {re.escape(repr(unknown))}"):
                await client.get_task(GetTaskRequest(id=unknown))


async def test_a_question_outlives_a_restart_and_is_answered_after(tmp_path: Path) -> None:
    """input_required before the restart; after it, resubscribing shows the task waiting,
    and the answer (a message naming the task) goes to the same turn."""
    async with agent(tmp_path, "asking") as (client, _):
        with trio.fail_after(30):
            events = await stream(client, message("release it"))
    assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"
    task_id, context_id = events[0].task.id, events[0].task.context_id
    async with agent(tmp_path, "asking") as (client, card):  # the daemon restarted
        with trio.fail_after(30):
            task = await client.get_task(GetTaskRequest(id=task_id))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert task.status.message.parts[0].text == "Which version?"
            async with aclosing(client.subscribe(SubscribeToTaskRequest(id=task_id))) as waiting:
                again = [e async for e in waiting]
            assert states(again) == ["TASK_STATE_INPUT_REQUIRED"]
            answered = await stream(client, message("2.0", task_id=task_id, context_id=context_id))
        assert states(answered)[0] == "TASK_STATE_WORKING"
        assert states(answered)[-1] == "TASK_STATE_COMPLETED"
        assert answered[-1].status_update.status.message.parts[0].text == "Releasing 2.0"
        done = await client.get_task(GetTaskRequest(id=task_id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        # An ended task has nothing more to stream: the spec's UnsupportedOperationError (on
        # the wire: the SDK's client leaves its own stream open when it raises it).
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {OPERATOR}"}) as http:
            refused = await http.post(
                card.supported_interfaces[0].url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SubscribeToTask",
                    "params": {"id": task_id},
                },
                headers={"A2A-Version": "1.0"},
            )
        error = refused.json()["error"]
        assert error["code"] == -32004  # UnsupportedOperationError
        assert error["message"] == f"task {task_id!r} is completed: nothing more comes"


async def test_resubscribing_streams_a_running_task_from_where_it_stands(tmp_path: Path) -> None:
    """A second client resubscribes to a running task: the task as it stands (working), then
    its end, here its cancellation."""
    seen: list[Any] = []
    working = trio.Event()
    async with agent(tmp_path, "slow") as (client, _):
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    async for event in client.send_message(message("go")):
                        seen.append(event)
                        if states(seen)[-1] == "TASK_STATE_WORKING":
                            working.set()

                nursery.start_soon(read)
                await working.wait()
                task_id = seen[0].task.id
                resubscribed: list[Any] = []
                subscribed = trio.Event()

                async def follow() -> None:
                    async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                        resubscribed.append(event)
                        subscribed.set()

                nursery.start_soon(follow)
                await subscribed.wait()
                await client.cancel_task(CancelTaskRequest(id=task_id))
    assert states(resubscribed) == ["TASK_STATE_WORKING", "TASK_STATE_CANCELED"]
    assert resubscribed[0].task.id == task_id


# ── tasks/list ──────────────────────────────────────────────────────────────


def listed(response: Any) -> list[str]:
    return [task.id for task in response.tasks]


async def every_page(client: Any, **params: Any) -> list[str]:
    """Every task ``tasks/list`` gives for ``params``, page after page."""
    ids: list[str] = []
    token = ""
    for _ in range(100):
        page = await client.list_tasks(ListTasksRequest(page_token=token, **params))
        ids += listed(page)
        token = page.next_page_token
        if not token:
            return ids
    raise AssertionError("tasks/list never ended")


class TestListTasks:
    """``tasks/list``: the team's tasks, newest first, read from the journal."""

    async def test_the_teams_tasks_newest_first_filtered_and_paged(self, tmp_path: Path) -> None:
        async with agent(tmp_path, "echo") as (client, _):
            with trio.fail_after(30):
                one = await stream(client, message("hello"))
                context_one = one[0].task.context_id
                two = await stream(client, message("more", context_id=context_one))
                three = await stream(client, message("hello again"))
        # Another team's task is not the echo team's.
        async with agent(tmp_path, "asking") as (asking, _):
            with trio.fail_after(30):
                asked = await stream(asking, message("release it"))
        ids = [one[0].task.id, two[0].task.id, three[0].task.id]
        # A restarted daemon lists them from the journal.
        async with agent(tmp_path, "echo") as (client, _):
            everything = await client.list_tasks(ListTasksRequest(include_artifacts=True))
            assert listed(everything) == ids[::-1]  # newest first
            assert (everything.total_size, everything.page_size) == (3, 50)
            assert everything.next_page_token == ""
            stamps = [t.status.timestamp.ToNanoseconds() for t in everything.tasks]
            assert stamps == sorted(stamps, reverse=True)
            assert all(stamp > 0 for stamp in stamps)
            assert [t.status.state for t in everything.tasks] == [
                TaskState.TASK_STATE_COMPLETED
            ] * 3
            assert [t.artifacts[0].parts[0].text for t in everything.tasks] == [
                "first answer",
                "second answer",
                "first answer",
            ]
            assert [t.context_id for t in everything.tasks] == [
                three[0].task.context_id,
                context_one,
                context_one,
            ]
            # Without includeArtifacts, no artifacts.
            bare = await client.list_tasks(ListTasksRequest())
            assert listed(bare) == ids[::-1]
            assert all(not t.artifacts for t in bare.tasks)
            # One context's tasks; a context of no session has none.
            assert listed(await client.list_tasks(ListTasksRequest(context_id=context_one))) == [
                ids[1],
                ids[0],
            ]
            assert listed(await client.list_tasks(ListTasksRequest(context_id="nobody"))) == []
            # By state.
            waiting = ListTasksRequest(status=TaskState.TASK_STATE_INPUT_REQUIRED)
            assert listed(await client.list_tasks(waiting)) == []
            # Changed at or after the second task's last change: it and the newer one.
            after = ListTasksRequest()
            after.status_timestamp_after.CopyFrom(everything.tasks[1].status.timestamp)
            assert listed(await client.list_tasks(after)) == ids[:0:-1]
            # Page by page, one at a time: the same tasks, in the same order, once each.
            assert await every_page(client, page_size=1) == ids[::-1]
            first = await client.list_tasks(ListTasksRequest(page_size=2))
            assert (listed(first), first.total_size, first.page_size) == (ids[:0:-1], 3, 2)
        async with agent(tmp_path, "asking") as (asking, _):
            waiting_list = await asking.list_tasks(waiting)
            assert listed(waiting_list) == [asked[0].task.id]
            assert waiting_list.tasks[0].status.message.parts[0].text == "Which version?"

    async def test_a_seeded_fuzz_of_its_parameters(self, tmp_path: Path) -> None:
        """Hostile parameters (the fuzzer's, seeded) get a JSON-RPC answer, a result or an
        error naming the field, never a 5xx; valid ones, drawn at random, list exactly the
        tasks that match, page after page."""
        fuzzer = Fuzzer(SEED)
        draw_ = random.Random(SEED)
        async with agent(tmp_path, "echo") as (client, card):
            with trio.fail_after(60):
                contexts = []
                for text in ("a", "b", "c"):
                    events = await stream(client, message(text))
                    contexts.append(events[0].task.context_id)
                await stream(client, message("more", context_id=contexts[0]))
            url = card.supported_interfaces[0].url
            everything = await client.list_tasks(ListTasksRequest())
            assert everything.total_size == 4
            template = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "ListTasks",
                "params": {
                    "contextId": contexts[0],
                    "status": "TASK_STATE_COMPLETED",
                    "pageSize": 2,
                    "pageToken": everything.next_page_token,
                    "historyLength": 3,
                    "statusTimestampAfter": "2020-01-01T00:00:00Z",
                    "includeArtifacts": True,
                },
            }
            refused = 0
            async with httpx.AsyncClient(
                headers={"Authorization": f"Bearer {OPERATOR}", "A2A-Version": "1.0"}
            ) as http:
                for _ in range(examples(150)):
                    body = fuzzer.frame(template)
                    content = body if isinstance(body, bytes) else body.encode()
                    answer = await http.post(url, content=content)
                    assert answer.status_code in (200, 400, 413), (body, answer.text)
                    data = answer.json()
                    if "error" in data:
                        refused += 1
                        # The daemon's input gate says why in a sentence; the JSON-RPC
                        # binding in an error object.
                        error = data["error"]
                        assert error if answer.status_code != 200 else error["message"], data
                    else:
                        assert set(data["result"]) <= {
                            "tasks",
                            "nextPageToken",
                            "pageSize",
                            "totalSize",
                        }, data
            assert refused > examples(150) // 4
            # Valid parameters at random: the pages hold exactly the tasks that match.
            every = await client.list_tasks(ListTasksRequest(include_artifacts=True))
            for _ in range(examples(20)):
                context = draw_.choice(["", *contexts, "nobody"])
                status = draw_.choice(
                    [0, TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_WORKING]
                )
                size = draw_.randint(1, 4)
                expected = [
                    t.id
                    for t in every.tasks
                    if (not context or t.context_id == context)
                    and (not status or t.status.state == status)
                ]
                got = await every_page(client, context_id=context, status=status, page_size=size)
                assert got == expected, (context, status, size)
            # The daemon still serves.
            with trio.fail_after(30):
                again = await stream(client, message("after the fuzz"))
            assert states(again)[-1] == "TASK_STATE_COMPLETED"

    @pytest.mark.parametrize(
        ("params", "said"),
        [
            ({"pageSize": 0}, "minimum page size is 1"),
            ({"pageSize": 101}, "maximum page size is 100"),
            ({"historyLength": -1}, "history length must be non-negative"),
            ({"pageToken": "not-a-token"}, "pageToken: not a page token this agent gave"),
            ({"contextId": "../etc"}, "contextId: use letters"),
            ({"status": 99}, "status: no task state 99"),
        ],
    )
    async def test_a_bad_parameter_is_refused_naming_it(
        self, tmp_path: Path, params: dict[str, Any], said: str
    ) -> None:
        async with (
            running_daemon(tmp_path, teams=TEAMS, config=TOKENS) as daemon,
            httpx.AsyncClient(
                headers={"Authorization": f"Bearer {OPERATOR}", "A2A-Version": "1.0"}
            ) as http,
        ):
            answer = await http.post(
                f"{daemon.url}/a2a/echo/",
                json={"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": params},
            )
        error = answer.json()["error"]
        assert error["code"] == -32602, error  # invalid params
        assert said in error["message"], error


# ── artifacts ───────────────────────────────────────────────────────────────


async def test_tool_artifacts_reach_the_client_as_artifacts(tmp_path: Path) -> None:
    """A worker's tools whose results are artifacts (command, Python, MCP, plain): each is an
    artifact update of the task as it runs, and each is in the task read back after a
    restart, beside the answer."""
    team = teams.artifact_tools(mcp_server=str(Path(mcp_servers.__file__).resolve()))
    async with (
        running_daemon(tmp_path, teams={**TEAMS, "artifacts": team}, config=TOKENS) as daemon,
        httpx.AsyncClient(headers={"Authorization": f"Bearer {OPERATOR}"}) as http,
    ):
        card = await A2ACardResolver(http, f"{daemon.url}/a2a/artifacts/").get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        with trio.fail_after(60):
            events = await stream(client, message("count"))
    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    updates = [
        e.artifact_update
        for e in events
        if e.WhichOneof("payload") == "artifact_update"
        and e.artifact_update.artifact.artifact_id != "answer"
    ]
    assert [u.artifact.name for u in updates] == [
        "count_rows",
        "shout",
        "mcp.calc/only_structured",
        "note",
    ]
    assert all(u.artifact.artifact_id.startswith("tool-") for u in updates)
    assert all(u.last_chunk and not u.append for u in updates)
    rows, shout, structured, note = (u.artifact.parts[0] for u in updates)
    assert json_format.MessageToDict(rows.data) == {"rows": 3, "table": "users"}
    assert rows.media_type == "application/json"
    assert (shout.text, shout.media_type) == ("DONE!DONE!", "text/plain")
    assert json_format.MessageToDict(structured.data) == {"n": 4, "double": 8}
    assert note.text == "a plain note"
    # The task read back from the journal by a restarted daemon: the answer, then each.
    task_id = events[0].task.id
    async with (
        running_daemon(tmp_path, teams={**TEAMS, "artifacts": team}, config=TOKENS) as daemon,
        httpx.AsyncClient(headers={"Authorization": f"Bearer {OPERATOR}"}) as http,
    ):
        card = await A2ACardResolver(http, f"{daemon.url}/a2a/artifacts/").get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        task = await client.get_task(GetTaskRequest(id=task_id))
    assert [a.artifact_id for a in task.artifacts] == [
        "answer",
        *(u.artifact.artifact_id for u in updates),
    ]
    assert json_format.MessageToDict(task.artifacts[1].parts[0].data) == {
        "rows": 3,
        "table": "users",
    }


# ── across a restart: cancel, auth ──────────────────────────────────────────


async def started_then_left(tmp_path: Path, team: str, text: str) -> tuple[str, str]:
    """Send ``text`` to ``team``, leave once the task works (the client goes away, the
    daemon stops); the task's and its context's ids."""
    seen: list[Any] = []
    async with agent(tmp_path, team) as (client, _):
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    async for event in client.send_message(message(text)):
                        seen.append(event)
                        if states(seen)[-1] == "TASK_STATE_WORKING":
                            nursery.cancel_scope.cancel()

                nursery.start_soon(read)
    return seen[0].task.id, seen[0].task.context_id


async def test_a_task_is_cancelled_after_a_restart(tmp_path: Path) -> None:
    """A task that was working when the daemon stopped: the restarted daemon takes its
    session up, and tasks/cancel (its id read back from the journal) cancels it; the journal
    then says canceled, to tasks/get and tasks/list."""
    task_id, context_id = await started_then_left(tmp_path, "slow", "go")
    async with agent(tmp_path, "slow") as (client, _):
        with trio.fail_after(30):
            before = await client.get_task(GetTaskRequest(id=task_id))
            assert before.status.state == TaskState.TASK_STATE_WORKING
            cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            while True:  # the cancellation's fact is down when the journal says so
                after = await client.get_task(GetTaskRequest(id=task_id))
                if after.status.state != TaskState.TASK_STATE_WORKING:
                    break
                await trio.sleep(0.05)
        assert after.status.state == TaskState.TASK_STATE_CANCELED
        (listed_task,) = (await client.list_tasks(ListTasksRequest(context_id=context_id))).tasks
        assert (listed_task.id, listed_task.status.state) == (
            task_id,
            TaskState.TASK_STATE_CANCELED,
        )
        # Cancelled once: a second cancel says there is nothing to cancel.
        with pytest.raises(Exception, match="is canceled: there is nothing to cancel"):
            await client.cancel_task(CancelTaskRequest(id=task_id))
    # And a third daemon reads it canceled from the journal.
    async with agent(tmp_path, "slow") as (client, _):
        again = await client.get_task(GetTaskRequest(id=task_id))
        assert again.status.state == TaskState.TASK_STATE_CANCELED
