"""Each team of ``orchestrator serve`` as an A2A agent, checked with a2a-sdk's own client: the
card fetched, a message streamed to completion, an input_required answered, a task
cancelled, and a viewer refused."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

from orchestrator.runtime import TracingSettings, traced
from orchestrator.server import Role as TokenRole
from orchestrator.server import ServeConfig, Token
from orchestrator.sessions import Limits
from tests.support.daemon import running_daemon
from tests.support.otlp import draw, otlp_receiver
from tests.support.teams import ASK, ECHO, approvals, slow_answer

pytestmark = pytest.mark.daemon

OPERATOR, VIEWER = "operator-token-0123456789", "viewer-token-0123456789"
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
