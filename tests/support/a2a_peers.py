"""Real A2A agents on loopback, written with ``a2a-sdk``'s own server, for the remote teammate
tests: an echo agent, one that asks for input once, one that asks for authentication once,
one that asks for approval once, one that streams three artifact chunks, one that fails, one
that cancels its own task, and one that works until it is cancelled.

Each agent is the SDK's ``DefaultRequestHandler`` over an ``AgentExecutor`` of ours, served as
a Starlette app (the SDK's agent-card and JSON-RPC routes) by uvicorn on a loopback port. The
SDK's server is asyncio: it runs on its own event loop in a thread, as a peer elsewhere would,
while the test and the orchestrator run on trio.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, cast

import uvicorn
from a2a.helpers import new_text_artifact_update_event, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "AUTH_SECRET",
    "BROKEN",
    "PEERS",
    "A2APeers",
    "a2a_app",
    "broken_app",
    "serve_a2a_app_in_thread",
    "serve_peers",
]


def _updater(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    assert context.task_id is not None
    assert context.context_id is not None
    return TaskUpdater(queue, context.task_id, context.context_id)


async def _begin(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    """Enqueue the task (a follow-up message already has one), then say it works."""
    if context.current_task is None:
        assert context.task_id is not None
        assert context.context_id is not None
        await queue.enqueue_event(
            Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            )
        )
    updater = _updater(context, queue)
    await updater.start_work()
    return updater


def _say(updater: TaskUpdater, text: str) -> Message:
    return new_text_message(text, context_id=updater.context_id, task_id=updater.task_id)


class EchoAgent(AgentExecutor):
    """Answers ``echo: <text>`` and completes, with one artifact holding the same text."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _begin(context, event_queue)
        text = context.get_user_input()
        await updater.add_artifact(
            [new_text_part(f"echo: {text}")],
            name="echo.txt",
        )
        await updater.complete(_say(updater, f"echo: {text}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


class AskOnceAgent(AgentExecutor):
    """Asks which colour once (``input_required``), then completes with the answer."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        asked = context.current_task is not None
        updater = await _begin(context, event_queue)
        if not asked:
            await updater.requires_input(_say(updater, "Which colour?"))
            return
        await updater.complete(_say(updater, f"painted it {context.get_user_input()}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


class ConfirmAgent(AgentExecutor):
    """Asks for approval once (``input_required``: "May I <task>? (yes or no)"), then
    completes on ``yes`` and rejects the task on any other answer. ``answers``: each task id
    and the answer it got (what a test checks reached the right task)."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, str]] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        asked = context.current_task is not None
        updater = await _begin(context, event_queue)
        text = context.get_user_input()
        if not asked:
            await updater.requires_input(_say(updater, f"May I {text}? (yes or no)"))
            return
        self.answers.append((updater.task_id, text))
        if text.strip().lower() == "yes":
            await updater.complete(_say(updater, "done, as approved"))
        else:
            await updater.reject(_say(updater, f"not approved ({text})"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


#: The credential :class:`AuthOnceAgent` wants, in its request's ``Authorization`` header.
AUTH_SECRET = "Bearer s3cret-for-the-auth-peer"


class AuthOnceAgent(AgentExecutor):
    """Asks for authentication once (``auth_required``); the task's next message must come with
    :data:`AUTH_SECRET` in its ``Authorization`` header, and it completes; without, it fails.
    ``authorized``: the header each message of its came with (what the test checks)."""

    def __init__(self) -> None:
        self.authorized: list[str | None] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        asked = context.current_task is not None
        call = context.call_context
        headers = call.state.get("headers", {}) if call is not None else {}
        self.authorized.append(headers.get("authorization"))
        updater = await _begin(context, event_queue)
        if not asked:
            await updater.requires_auth(_say(updater, "Sign in to the paint shop"))
            return
        if headers.get("authorization") != AUTH_SECRET:
            await updater.failed(_say(updater, "not signed in"))
            return
        await updater.complete(_say(updater, "signed in: painted"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


class ChunksAgent(AgentExecutor):
    """Streams one artifact in three chunks (append, the last marked), then completes."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _begin(context, event_queue)
        for index, chunk in enumerate(("alpha ", "beta ", "gamma")):
            await event_queue.enqueue_event(
                new_text_artifact_update_event(
                    updater.task_id,
                    updater.context_id,
                    name="report.md",
                    text=chunk,
                    append=index > 0,
                    last_chunk=index == 2,
                    artifact_id="report-1",
                )
            )
        await updater.complete(_say(updater, "report written"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


class FailingAgent(AgentExecutor):
    """Starts work, then fails with a message."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _begin(context, event_queue)
        await updater.failed(_say(updater, "the disk is full"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


class QuittingAgent(AgentExecutor):
    """Starts work, then cancels its own task (the peer's decision, not the caller's)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _begin(context, event_queue)
        await updater.cancel(_say(updater, "the shop closed"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _updater(context, event_queue).cancel()


class HangingAgent(AgentExecutor):
    """Works until it is cancelled; records each cancel it received in ``cancelled``."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.started: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _begin(context, event_queue)
        self.started.append(updater.task_id)
        await asyncio.Event().wait()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        self.cancelled.append(context.task_id)
        await _updater(context, event_queue).cancel()


class SlowAgent(AgentExecutor):
    """Works for a second, then completes; records each task it started and each cancel."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.started: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _begin(context, event_queue)
        self.started.append(updater.task_id)
        await asyncio.sleep(1.0)
        await updater.add_artifact([new_text_part("slow work")], name="slow.txt")
        await updater.complete(_say(updater, "slow done"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        self.cancelled.append(context.task_id)
        await _updater(context, event_queue).cancel()


class LateSubscriptions(DefaultRequestHandler):
    """The SDK's handler, but a subscribe waits until its task has ended before the SDK
    answers it: the race of a task that ends between a client's ``tasks/get`` (working) and
    its resubscribe, which the SDK refuses for a task in a terminal state."""

    async def on_subscribe_to_task(  # type: ignore[override]
        self, params: Any, context: Any
    ) -> AsyncIterator[Any]:
        for _ in range(1_000):  # 10 s at most
            store = cast(InMemoryTaskStore, self.task_store)  # a2a_app gives it this one
            task = await store.get(params.id, context)
            if task is not None and task.status.state in LATE_ENDS:
                break
            await asyncio.sleep(0.01)
        async for event in super().on_subscribe_to_task(params, context):
            yield event


LATE_ENDS: Final = frozenset(
    {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}
)

#: name -> (executor factory, description, streams)
PEERS = {
    "echo": (EchoAgent, "Repeats what it is told.", True),
    "echo_polled": (EchoAgent, "Repeats what it is told (no streaming).", False),
    "ask": (AskOnceAgent, "Paints, once told which colour.", True),
    "auth": (AuthOnceAgent, "Paints, once signed in.", True),
    "deployer": (ConfirmAgent, "Deploys, once approved.", True),
    "mailer": (ConfirmAgent, "Mails, once approved (no streaming).", False),
    "chunks": (ChunksAgent, "Writes a report in three chunks.", True),
    "failing": (FailingAgent, "Fails every task.", True),
    "quitter": (QuittingAgent, "Cancels every task itself.", True),
    "hanging": (HangingAgent, "Works until cancelled.", True),
    "slow": (SlowAgent, "Works for a second.", True),
    "slow_polled": (SlowAgent, "Works for a second (no streaming).", False),
    # Streams, but a resubscribe comes back only once the task has ended (LateSubscriptions).
    "slow_late": (SlowAgent, "Works for a second (late resubscribes).", True),
}


class A2APeers:
    """The running peers: ``url[name]`` is each one's base URL; ``executor[name]`` its agent."""

    def __init__(self) -> None:
        self.url: dict[str, str] = {}
        self.executor: dict[str, AgentExecutor] = {}


@contextmanager
def serve_peers(*names: str) -> Iterator[A2APeers]:
    """Serve the named peers (all by default), each on its own loopback port."""
    peers = A2APeers()
    with _serving(list(names or PEERS), peers):
        yield peers


@contextmanager
def _serving(names: list[str], peers: A2APeers) -> Iterator[None]:
    if not names:
        yield
        return
    name, rest = names[0], names[1:]
    factory, description, streams = PEERS[name]
    executor = factory()
    handler = LateSubscriptions if name == "slow_late" else DefaultRequestHandler
    app = a2a_app(
        executor,
        name=name,
        description=description,
        streaming=streams,
        skills=[name],
        handler=handler,
    )
    with serve_a2a_app_in_thread(app) as url:
        peers.url[name] = url
        peers.executor[name] = executor
        with _serving(rest, peers):
            yield


def a2a_app(
    executor: AgentExecutor,
    *,
    name: str,
    description: str,
    streaming: bool,
    skills: Sequence[str],
    url: str = "http://127.0.0.1/",
    handler: type[DefaultRequestHandler] = DefaultRequestHandler,
) -> Starlette:
    """The SDK's agent-card and JSON-RPC routes over ``executor``, as one Starlette app."""
    card = AgentCard(
        name=name,
        description=description,
        version="1.2.3",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id=skill, name=skill, description=f"{name}: {skill}", tags=[skill])
            for skill in skills
        ],
    )
    served = handler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(served, rpc_url="/")]
    app = Starlette(routes=routes)
    app.state.card = card
    return app


@contextmanager
def serve_a2a_app_in_thread(app: Starlette) -> Iterator[str]:
    """Serve ``app`` on a loopback port from a thread's asyncio loop; yield its base URL.

    The card's interface URL is set to the bound port before the first request."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    card: AgentCard = app.state.card
    card.supported_interfaces[0].url = url
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), name=f"a2a-peer-{port}"
    )
    thread.start()
    try:
        while not server.started:  # the thread binds nothing: the socket is bound already
            if not thread.is_alive():
                raise RuntimeError("the A2A peer did not start")
            threading.Event().wait(0.01)
        yield url
    finally:
        server.should_exit = True
        server.force_exit = True
        thread.join(timeout=10)
        sock.close()


#: How a broken peer answers its JSON-RPC requests (its card is sound).
BROKEN = ("http_error", "malformed", "stream_stops")


def broken_app(mode: str) -> Starlette:
    """A peer with a sound Agent Card that answers ``message/stream`` wrongly: an HTTP 503
    (``http_error``), an event that is not JSON (``malformed``), or one ``working`` update
    and then the end of the stream (``stream_stops``)."""
    assert mode in BROKEN
    card_app = a2a_app(
        EchoAgent(), name=f"broken-{mode}", description="Broken.", streaming=True, skills=["echo"]
    )

    async def rpc(request: Request) -> Response:
        body = await request.json()
        if mode == "http_error":
            return Response("down for maintenance", status_code=503)

        async def events() -> AsyncIterator[str]:
            if mode == "malformed":
                yield "data: {this is not json\n\n"
                return
            update = {
                "statusUpdate": {
                    "taskId": "t-1",
                    "contextId": "c-1",
                    "status": {"state": "TASK_STATE_WORKING"},
                }
            }
            answer = {"jsonrpc": "2.0", "id": body.get("id"), "result": update}
            yield f"data: {json.dumps(answer)}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    routes = [r for r in card_app.routes if getattr(r, "path", "") != "/"]
    app = Starlette(routes=[*routes, Route("/", rpc, methods=["POST"])])
    app.state.card = card_app.state.card
    return app
