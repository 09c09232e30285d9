"""Each team served as an A2A agent: ``/a2a/TEAM/`` (JSON-RPC) and its Agent Card.

An A2A context is a daemon session (its ``contextId`` is the session's id, as an AG-UI
thread's is), and an A2A task is one prompt's run in it: its coordinator's turn. The routes
are the SDK's own (``create_jsonrpc_routes``: the JSON-RPC binding, server-sent events by
sse-starlette, which run on trio as the daemon's other routes do); what answers them is
:class:`SessionRequestHandler`, written here on the daemon's sessions, because the SDK's
``DefaultRequestHandler`` is asyncio. The SDK's types are used as they are.

A task's updates are read from the session's facts:

- the coordinator's answer text streams as chunks of one artifact, ``answer``;
- a question put to the user is ``input_required`` (the stream ends there); a message that
  names the task answers it, and its updates stream on;
- the end of the coordinator's turn is ``completed`` (its text as the status message),
  ``failed`` or ``canceled``.

A ``traceparent`` header on a request that starts a task makes its run (or the session's
next turn) continue the caller's trace, as on ``/agui``.

Auth: the card is read with the ``read`` permission, the JSON-RPC binding needs
``operate`` (a viewer cannot send); the card declares the bearer scheme.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

import attrs
import trio
from a2a.helpers import get_message_text, new_text_message
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.routes import create_jsonrpc_routes
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from google.protobuf import json_format
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputRequestedAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import MarkdownResponsePart
from orchestrator.base import RunError, SessionExistsError
from orchestrator.core import USER, ApprovalRequested
from orchestrator.runtime import prompted_from
from orchestrator.sessions import LiveSession
from orchestrator.spec import TeamSpec

__all__: list[str] = []

#: A context id becomes a session id: the characters that are safe in a URI path.
CONTEXT_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_ANSWER: Final = "answer"
#: The answers to an approval that approve it (any other denies it).
_YES: Final = frozenset({"yes", "y", "approve", "approved", "ok"})


@attrs.define
class _Task:
    """What the daemon knows of one A2A task: its session and where it stands."""

    task_id: str
    context_id: str
    state: Any = TaskState.TASK_STATE_SUBMITTED
    message: str = ""
    answer: str = ""
    question: str | None = None  # the tool call id of the question it waits on
    approval: str | None = None  # the approval it waits on
    chunks: int = 0


class SessionRequestHandler(RequestHandler):
    """The A2A methods of one team, answered by the daemon's sessions.

    Args:
        daemon: The daemon (``find`` and ``open_session``).
        team: The team's name in the catalog.
        principal: Who a request comes from (the name the session is opened for).
    """

    def __init__(self, daemon: Any, team: str, principal: Callable[[ServerCallContext], str]):
        self._daemon = daemon
        self._team = team
        self._principal = principal
        self._tasks: dict[str, _Task] = {}

    # ── sending ──────────────────────────────────────────────────────────────

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        message = params.message
        text = get_message_text(message)
        if not text.strip():
            raise InvalidParamsError("message: it has no text part")
        if message.task_id:
            task = self._tasks.get(message.task_id)
            if task is None:
                raise TaskNotFoundError(f"no task {message.task_id!r}")
            if task.question is None and task.approval is None:
                raise InvalidParamsError(f"task {task.task_id!r} is not waiting for input")
            live = await self._live(task.context_id, context, opening=False)
            subscription, _ = live.subscribe(f"a2a {task.task_id}")
            try:
                if task.approval is not None:
                    approval, task.approval = task.approval, None
                    approved = text.strip().lower() in _YES
                    await live.decide(
                        approval, approved=approved, principal=self._principal(context)
                    )
                else:
                    question, task.question = task.question, None
                    assert question is not None
                    await live.answer(question, text)
            except BaseException:
                live.unsubscribe(subscription)
                raise
            task.state = TaskState.TASK_STATE_WORKING
            yield self._status(task)
            async for event in self._follow(live, task, subscription, turn=True):
                yield event
            return
        context_id = message.context_id or uuid.uuid4().hex
        if not CONTEXT_ID.fullmatch(context_id):
            raise InvalidParamsError(
                "contextId: use letters, digits and . _ : - (at most 128), starting with one"
            )
        live = await self._live(context_id, context, opening=True)
        task = _Task(task_id=uuid.uuid4().hex, context_id=context_id)
        self._tasks[task.task_id] = task
        subscription, _ = live.subscribe(f"a2a {task.task_id}")
        try:
            # A caller in a traced app: the task's run (or turn) continues its trace.
            with prompted_from(_traceparent(context)):
                await live.prompt(text, task_id=task.task_id)
        except BaseException:
            live.unsubscribe(subscription)
            raise
        # Submitted until the coordinator's turn starts (then working, and cancellable).
        yield Task(id=task.task_id, context_id=context_id, status=TaskStatus(state=task.state))
        async for event in self._follow(live, task, subscription, turn=False):
            yield event

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        task_id = ""
        async for event in self.on_message_send_stream(params, context):
            if isinstance(event, Task):
                task_id = event.id
            elif not task_id:
                task_id = event.task_id
        return self._snapshot(self._tasks[task_id])

    async def _follow(
        self, live: LiveSession, task: _Task, subscription: Any, *, turn: bool
    ) -> AsyncGenerator[Any, None]:
        """The task's updates, from the session's facts, until it ends or waits for input.

        ``turn``: the coordinator's turn that answers it has started already (an answer to
        its question goes on with the same turn)."""
        chat = live.state.coordinator_chat()
        started = turn
        try:
            while True:
                try:
                    batch = await subscription.receive_batch()
                except trio.EndOfChannel:
                    task.state, task.message = TaskState.TASK_STATE_FAILED, "the session ended"
                    yield self._status(task, final=True)
                    return
                for fact in batch:
                    chat = chat or live.state.coordinator_chat()
                    action = fact.action
                    if isinstance(action, ApprovalRequested) and action.routed_to == USER:
                        # An approval the user decides: input the next message gives.
                        task.approval = action.approval
                        task.state = TaskState.TASK_STATE_INPUT_REQUIRED
                        task.message = (
                            f"{action.requested_by} asks to run {action.tool_name}: "
                            f"{action.summary}. Approve? (yes or no)"
                        )
                        yield self._status(task, final=True)
                        return
                    if isinstance(action, ChatInputRequestedAction):
                        task.question = _tool_call_of(action.request.id)
                        task.state = TaskState.TASK_STATE_INPUT_REQUIRED
                        task.message = str(action.request.message or "")
                        yield self._status(task, final=True)
                        return
                    if fact.channel != chat:
                        continue
                    if isinstance(action, ChatTurnStartedAction):
                        if not started:
                            started = True
                            task.state = TaskState.TASK_STATE_WORKING
                            yield self._status(task)
                    elif not started:
                        continue
                    elif isinstance(action, ChatResponsePartAction) and isinstance(
                        action.part, MarkdownResponsePart
                    ):
                        yield self._chunk(task, action.part.content)
                    elif isinstance(action, ChatDeltaAction):
                        yield self._chunk(task, action.content)
                    elif isinstance(action, ChatTurnCompleteAction):
                        task.state, task.message = TaskState.TASK_STATE_COMPLETED, task.answer
                        yield self._status(task, final=True)
                        return
                    elif isinstance(action, ChatErrorAction):
                        task.state = TaskState.TASK_STATE_FAILED
                        task.message = action.error.message
                        yield self._status(task, final=True)
                        return
                    elif isinstance(action, ChatTurnCancelledAction):
                        task.state, task.message = TaskState.TASK_STATE_CANCELED, "cancelled"
                        yield self._status(task, final=True)
                        return
        finally:
            live.unsubscribe(subscription)

    # ── reading and cancelling ───────────────────────────────────────────────

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        task = self._tasks.get(params.id)
        if task is None:
            raise TaskNotFoundError(f"no task {params.id!r}")
        return self._snapshot(task)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        task = self._tasks.get(params.id)
        if task is None:
            raise TaskNotFoundError(f"no task {params.id!r}")
        live = await self._live(task.context_id, context, opening=False)
        try:
            await live.abort(task.task_id)
        except RunError as exc:
            raise InvalidParamsError(str(exc)) from None
        task.state = TaskState.TASK_STATE_CANCELED
        return self._snapshot(task)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        if params.id:
            raise UnsupportedOperationError("tasks/resubscribe is not served yet")
        yield None

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> Any:
        raise UnsupportedOperationError("no extended agent card")

    async def on_list_tasks(self, params: Any, context: ServerCallContext) -> Any:
        raise UnsupportedOperationError("tasks/list is not served")

    async def on_create_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        raise UnsupportedOperationError("push notifications are not served")

    async def on_get_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        raise UnsupportedOperationError("push notifications are not served")

    async def on_list_task_push_notification_configs(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        raise UnsupportedOperationError("push notifications are not served")

    async def on_delete_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> None:
        raise UnsupportedOperationError("push notifications are not served")

    # ── helpers ──────────────────────────────────────────────────────────────

    async def _live(self, context_id: str, context: ServerCallContext, *, opening: bool) -> Any:
        try:
            live = await self._daemon.find(context_id)
            if live is None:
                if not opening:
                    raise TaskNotFoundError(f"context {context_id!r} is not running")
                live = await self._daemon.open_session(
                    self._team, session=context_id, principal=self._principal(context)
                )
        except SessionExistsError as exc:
            raise InvalidParamsError(f"contextId: {context_id!r}: {exc}") from None
        except RunError as exc:
            raise InvalidParamsError(f"contextId: {context_id!r}: {exc}") from None
        if live.team_name != self._team:
            raise InvalidParamsError(
                f"contextId: {context_id!r} runs team {live.team_name!r}, not {self._team!r}"
            )
        return live

    def _status(self, task: _Task, *, final: bool = False) -> TaskStatusUpdateEvent:
        status = TaskStatus(state=task.state)
        if final and task.message:
            status.message.CopyFrom(
                new_text_message(task.message, context_id=task.context_id, task_id=task.task_id)
            )
        return TaskStatusUpdateEvent(
            task_id=task.task_id, context_id=task.context_id, status=status
        )

    def _chunk(self, task: _Task, text: str) -> TaskArtifactUpdateEvent:
        task.answer += text
        task.chunks += 1
        return TaskArtifactUpdateEvent(
            task_id=task.task_id,
            context_id=task.context_id,
            artifact=Artifact(
                artifact_id=_ANSWER,
                name="answer.md",
                parts=[Part(text=text, media_type="text/markdown")],
            ),
            append=task.chunks > 1,
        )

    def _snapshot(self, task: _Task) -> Task:
        status = TaskStatus(state=task.state)
        if task.message:
            status.message.CopyFrom(
                new_text_message(task.message, context_id=task.context_id, task_id=task.task_id)
            )
        artifacts = (
            [
                Artifact(
                    artifact_id=_ANSWER,
                    name="answer.md",
                    parts=[Part(text=task.answer, media_type="text/markdown")],
                )
            ]
            if task.answer
            else []
        )
        return Task(id=task.task_id, context_id=task.context_id, status=status, artifacts=artifacts)


def _traceparent(context: ServerCallContext) -> str | None:
    """The request's ``traceparent`` header (the SDK's context keeps the headers)."""
    headers = context.state.get("headers")
    value = headers.get("traceparent") if isinstance(headers, dict) else None
    return value if isinstance(value, str) else None


def _tool_call_of(request_id: str) -> str:
    """The ``ask`` call whose question ``request_id`` is (see core's ``input_request_id``)."""
    return request_id.removeprefix("input-")


def agent_card(team: TeamSpec, url: str) -> AgentCard:
    """The Agent Card of ``team`` served at ``url``: its name, description and skills (the
    coordinator's, and each agent it delegates to), streaming, and the bearer scheme."""
    coordinator = team.agent(team.coordinator)
    skills = [
        AgentSkill(
            id=agent.name,
            name=agent.name,
            description=agent.role,
            tags=[team.name],
        )
        for agent in (coordinator, *(team.agent(n) for n in coordinator.delegates_to))
    ]
    return AgentCard(
        name=team.name,
        description=team.description or f"The {team.name} team of a team-orchestrator daemon.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/markdown"],
        skills=skills,
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"bearer": _empty_list()})],
    )


def _empty_list() -> Any:
    from a2a.types import StringList

    return StringList()


def a2a_routes(
    daemon: Any,
    *,
    read: Callable[[Request], str],
    operate: Callable[[Request], str],
    checked: Callable[[Request], Awaitable[None]],
    guarded: Callable[[Any], Any],
) -> list[Route]:
    """The A2A routes of every team of the daemon's catalog.

    Args:
        daemon: The daemon (its catalog, ``find`` and ``open_session``).
        read: Checks a request may read; the principal's name.
        operate: Checks a request may operate (send, cancel); the principal's name.
        checked: Reads the body within the daemon's limits, through the input gate.
        guarded: The daemon's wrapper that answers refusals as JSON errors.
    """
    routes: list[Route] = []
    for name in sorted(daemon.catalog.teams):
        team_name, team = daemon.catalog.team(name)
        base = f"/a2a/{team_name}/"

        async def card(request: Request, team: TeamSpec = team, base: str = base) -> Response:
            read(request)
            url = str(request.base_url).rstrip("/") + base
            return JSONResponse(json_format.MessageToDict(agent_card(team, url)))

        def principal_of(context: ServerCallContext) -> str:
            return str(context.state.get("auth") or "a2a")

        handler = SessionRequestHandler(daemon, team_name, principal_of)
        for route in create_jsonrpc_routes(handler, rpc_url=base):
            endpoint = route.endpoint

            async def rpc(request: Request, endpoint: Any = endpoint) -> Response:
                # The SDK's context builder hands request.auth on as context.state["auth"].
                request.scope["auth"] = operate(request)
                await checked(request)
                response: Response = await endpoint(request)
                return response

            routes.append(Route(route.path, guarded(rpc), methods=["POST"]))
        routes.append(Route(base + ".well-known/agent-card.json", guarded(card)))
    return routes
