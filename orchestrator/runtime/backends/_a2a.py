"""The remote teammate backend: an agent elsewhere, reached over the Agent2Agent protocol.

Theory of operation
-------------------
A remote teammate (``[agents.NAME] a2a = "http://..."``) is a worker whose model rounds are
A2A exchanges (DESIGN.md, decision 6). The runtime delegates to it, hands off to it, cancels it
and reports it as any worker; only its rounds differ:

- the first round of a turn sends the turn's message (the delegated task) as an A2A message.
  When the agent's card says it streams, the answer is read as a stream of task updates
  (``message/stream``); otherwise the task is polled (``tasks/get``) until it stops;
- each change of the remote task's state, and each artifact chunk, is a :class:`Notice`: a
  system-notification part of the worker's turn that keeps the remote truth (the task id, the
  raw state, the card's name, version and skills; see :mod:`orchestrator.core._remote_tasks`);
- ``input_required`` ends the round with an ``ask`` tool call, so the question is routed by the
  team's rules; the next round sends the answer as the next message of the same task;
- ``completed`` ends the turn: the agent's last message and its artifacts are the turn's text,
  which is the delegation's outcome;
- ``auth_required`` ends the round with an ``ask`` tool call too, routed the same way: the
  operator answers ``env:A2A_NAME`` (or ``HEADER=env:A2A_NAME``), naming a variable of the
  orchestrator's environment that holds the credential (only ``A2A_`` ones: no other secret
  of the process can be named to an agent). Only that name is an answer, so only
  it is a fact; the credential is read then, kept in this process's memory only, and sent in
  that header (``Authorization`` by default) with the task's next message and every later
  request to the agent. The next message says so, without the credential;
- ``failed``, ``rejected``, ``canceled`` (by the peer), and every failure
  to reach or understand the agent raise :class:`RemoteAgentError` naming the agent and what
  happened. The turn fails, and so does the delegation: the team goes on;
- a turn that is cancelled or fails asks the peer to cancel the task (``tasks/cancel``,
  :meth:`A2ABackend.stop_chat`). A stop of the process does not: after a restart, a remote
  task the facts recorded as open is taken up by its id (``tasks/get``, then
  ``tasks/resubscribe`` or polling), not sent again; a question it had put is answered to
  it as before.

The SDK's client is httpx under the hood, so it runs on trio as it is, on the run's shared
``httpx.AsyncClient``. Its types (protobuf messages) are used as they are; nothing here
encodes or decodes A2A by hand.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any, Final, cast

import attrs
import httpx
import trio
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    Client,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
)
from a2a.types import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError, UnsupportedOperationError
from google.protobuf import json_format

from orchestrator.base import (
    PeerProtocolError,
    RemoteAgentError,
    RunError,
    clean_text,
    parse_json,
)
from orchestrator.core import (
    ARTIFACT_META,
    REMOTE_TASK_META,
    TERMINAL_REMOTE_STATES,
    ModelEvent,
    Notice,
    RoundContext,
    TextDelta,
    ToolCallRequest,
    artifact_of,
    remote_state,
    remote_task_of,
)
from orchestrator.spec import A2ASettings, AgentSpec

__all__ = ["A2ABackend"]

#: How often a task of an agent that does not stream is polled (``tasks/get``).
POLL_INTERVAL: Final = 0.25
#: How long one request to the agent may take (a stream: between two of its events).
REQUEST_TIMEOUT: Final = 300.0
#: States after which the round ends: the task stops, or waits for us.
_ROUND_ENDS: Final = TERMINAL_REMOTE_STATES | {"input_required", "auth_required"}
_NONE: Final = ("", "", "")
#: States whose round ends with a question, answered by the next round.
_WAITS_FOR_US: Final = frozenset({"input_required", "auth_required"})
#: The variables an answer to ``auth_required`` may name begin with it.
_CREDENTIAL_PREFIX: Final = "A2A_"
#: An answer to ``auth_required``: ``env:NAME`` or ``HEADER=env:NAME``.
_CREDENTIAL: Final = re.compile(r"(?:([A-Za-z][A-Za-z0-9-]{0,63})=)?env:([A-Za-z_][A-Za-z0-9_]*)")


@attrs.define
class _RemoteTask:
    """What this process knows of the remote task a chat's turn started."""

    task_id: str = ""
    context_id: str = ""
    state: str = ""
    raw_state: str = ""
    message: str = ""
    asked: int = 0  # questions put so far (each ask call's id counts them)
    # artifact id -> (name, media type, text so far); in the order they came
    artifacts: dict[str, tuple[str, str, str]] = attrs.field(factory=dict)


class A2ABackend:
    """The rounds of one remote teammate (one ``[agents.NAME]`` with ``a2a``).

    Args:
        agent: The agent as the team file declares it (its ``a2a`` settings are set).
        client: The run's HTTP client; the agent's headers go with each request.
        environ: Where ``env:NAME`` values are read: the team file's headers once, now; the
            credential an answer to ``auth_required`` names, when it comes.
        poll_interval: Seconds between two ``tasks/get`` of an agent that does not stream.
    """

    def __init__(
        self,
        agent: AgentSpec,
        *,
        client: httpx.AsyncClient,
        environ: Mapping[str, str],
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        assert agent.a2a is not None
        self.agent = agent
        self.settings: A2ASettings = agent.a2a
        self._http = client
        self._poll_interval = poll_interval
        self._environ = environ
        self._headers = dict(self.settings.headers)
        for header, variable in self.settings.env_headers.items():
            value = environ.get(variable)
            if value is None:
                raise RunError(
                    f"agent {agent.name}: header {header} is read from the environment "
                    f"variable {variable}, which is not set"
                )
            self._headers[header] = value
        self._card: AgentCard | None = None
        self._client: Client | None = None
        self._tasks: dict[str, _RemoteTask] = {}  # chat -> its turn's remote task

    # ── the contract ─────────────────────────────────────────────────────────

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        """One exchange with the agent: send a message, relay its task's updates."""
        task = self._tasks.get(context.chat)
        if task is None:
            # This process has not seen the chat: after a restart, its facts may hold a
            # remote task still open, which is taken up by its id, not sent again.
            recovered = _recovered(context)
            if recovered is not None:
                self._tasks[context.chat] = recovered
                if context.round_index == 0 or recovered.state not in _WAITS_FOR_US:
                    async for event in self._follow(recovered):
                        yield event
                    return
                task = recovered  # its question was answered: the answer goes to it
        if context.round_index == 0 or task is None:
            # A new turn is a new task, in the same A2A context as the chat's last one.
            context_id = task.context_id if task is not None else ""
            task = self._tasks[context.chat] = _RemoteTask(context_id=context_id)
            message = self._message(task, context.task)
        elif task.state == "auth_required":
            message = self._message(task, self._authenticate(task, self._answer(task, context)))
        else:
            message = self._message(task, self._answer(task, context))
        client, card = await self._connect()
        if task.asked == 0 and context.round_index == 0:
            yield Notice(
                text=f"Sent the task to {card.name or self.agent.name} ({self.settings.url})",
                meta={REMOTE_TASK_META: self._task_meta(task, card, state="sending")},
            )
        request = SendMessageRequest(message=message)
        relay = (
            self._relay_stream(client, card, task, request)
            if card.capabilities.streaming
            else self._relay_polled(client, card, task, request)
        )
        try:
            async for event in relay:
                yield self._gated(event)
        except (A2AError, httpx.HTTPError, json_format.Error, ValueError, TypeError) as exc:
            # The SDK's own errors, the transport's, and what protobuf refuses of an answer
            # (a text that is not UTF-8, a NaN in a data part, a field of the wrong type).
            raise self._error(_what(exc)) from exc
        async for event in self._round_end(task):
            yield self._gated(event)

    async def _follow(self, task: _RemoteTask) -> AsyncGenerator[ModelEvent, None]:
        """Take up a remote task by its id: its state now, then its updates to its end."""
        client, card = await self._connect()
        try:
            polled = await client.get_task(GetTaskRequest(id=task.task_id), context=self._call())
            snapshot = StreamResponse()
            snapshot.task.CopyFrom(polled)
            for event in self._events(card, task, snapshot):
                yield self._gated(event)
            if task.state not in _ROUND_ENDS:
                relay = (
                    self._resubscribed(client, card, task)
                    if card.capabilities.streaming
                    else self._polled(client, card, task)
                )
                async for event in relay:
                    yield self._gated(event)
        except (A2AError, httpx.HTTPError, json_format.Error, ValueError, TypeError) as exc:
            raise self._error(f"task {task.task_id} could not be taken up: {_what(exc)}") from exc
        async for event in self._round_end(task):
            yield self._gated(event)

    async def _resubscribed(
        self, client: Client, card: AgentCard, task: _RemoteTask
    ) -> AsyncIterator[ModelEvent]:
        stream = cast(
            "AsyncGenerator[StreamResponse, None]",
            client.subscribe(SubscribeToTaskRequest(id=task.task_id), context=self._call()),
        )
        try:
            async with aclosing(stream) as updates:
                async for response in updates:
                    for event in self._events(card, task, response):
                        yield event
        except UnsupportedOperationError:
            # The task ended between tasks/get and the subscribe (a peer refuses to stream a
            # task in a terminal state), or the peer takes no resubscribe: read it instead.
            async for event in self._polled(client, card, task):
                yield event
        if task.state not in _ROUND_ENDS:
            raise self._error(
                f"the stream of task {task.task_id} stopped before the task ended "
                f"(last state: {task.state or 'none'})"
            )

    async def stop_chat(self, chat: str) -> None:
        """Cancel the remote task of ``chat``'s turn (``tasks/cancel``) if it still runs."""
        task = self._tasks.get(chat)
        if task is None or not task.task_id or task.state in TERMINAL_REMOTE_STATES:
            return
        client, _ = await self._connect()
        await client.cancel_task(CancelTaskRequest(id=task.task_id), context=self._call())
        task.state = "canceled"

    # ── one exchange ─────────────────────────────────────────────────────────

    async def _relay_stream(
        self, client: Client, card: AgentCard, task: _RemoteTask, request: SendMessageRequest
    ) -> AsyncIterator[ModelEvent]:
        # Read to its end (the peer ends it once the task stops or waits), and closed however
        # the round ends. The SDK's client does not close its inner stream when its own is
        # closed early (a cancel); trio then closes it, with a ResourceWarning.
        async with aclosing(self._send(client, request)) as stream:
            async for response in stream:
                for event in self._events(card, task, response):
                    yield event
        if task.state not in _ROUND_ENDS:
            raise self._error(
                f"the stream of task {task.task_id or '(none yet)'} stopped before the task "
                f"ended (last state: {task.state or 'none'})"
            )

    async def _relay_polled(
        self, client: Client, card: AgentCard, task: _RemoteTask, request: SendMessageRequest
    ) -> AsyncIterator[ModelEvent]:
        request.configuration.return_immediately = True
        async with aclosing(self._send(client, request)) as answers:
            async for response in answers:
                for event in self._events(card, task, response):
                    yield event
        async for event in self._polled(client, card, task):
            yield event

    async def _polled(
        self, client: Client, card: AgentCard, task: _RemoteTask
    ) -> AsyncIterator[ModelEvent]:
        """``tasks/get`` until the task stops or waits for us."""
        while task.state not in _ROUND_ENDS:
            if not task.task_id:
                raise self._error("it answered neither a task nor a message")
            await trio.sleep(self._poll_interval)
            polled = await client.get_task(GetTaskRequest(id=task.task_id), context=self._call())
            response = StreamResponse()
            response.task.CopyFrom(polled)
            for event in self._events(card, task, response):
                yield event

    def _events(
        self, card: AgentCard, task: _RemoteTask, response: StreamResponse
    ) -> list[ModelEvent]:
        """The notices one answer of the agent makes: its task's state, its artifacts."""
        kind = response.WhichOneof("payload")
        if kind == "task":
            snapshot: Task = response.task
            self._check_task(task, snapshot.id)
            task.task_id, task.context_id = snapshot.id, snapshot.context_id
            events = [
                self._artifact(task, artifact, append=False, last_chunk=True)
                for artifact in snapshot.artifacts
                if _artifact_text(artifact)
                != task.artifacts.get(artifact.artifact_id, ("",) * 3)[2]
            ]
            status = snapshot.status
            return [
                *events,
                *self._state(card, task, status.state, _text(status.message.parts)),
            ]
        if kind == "status_update":
            update = response.status_update
            self._check_task(task, update.task_id)
            task.task_id = task.task_id or update.task_id
            task.context_id = task.context_id or update.context_id
            status = update.status
            return self._state(card, task, status.state, _text(status.message.parts))
        if kind == "artifact_update":
            chunk = response.artifact_update
            self._check_task(task, chunk.task_id)
            return [
                self._artifact(
                    task, chunk.artifact, append=chunk.append, last_chunk=chunk.last_chunk
                )
            ]
        if kind == "message":
            # A message instead of a task: the agent answered at once, and that is all.
            reply: Message = response.message
            task.context_id = reply.context_id or task.context_id
            task.message = _text(reply.parts)
            task.state, task.raw_state = "completed", "message"
            return []
        raise self._error(f"it answered something that is not an A2A update ({kind!r})")

    def _state(
        self, card: AgentCard, task: _RemoteTask, state: int, message: str
    ) -> list[ModelEvent]:
        raw = TaskState.Name(state) if state in TaskState.values() else str(state)
        if message:
            task.message = message
        if raw == task.raw_state:
            return []
        task.raw_state, task.state = raw, remote_state(raw)
        words = task.state.replace("_", " ")
        text = f"{card.name or self.agent.name}: task {task.task_id} {words}"
        if message:
            text += f": {message}"
        return [Notice(text=text, meta={REMOTE_TASK_META: self._task_meta(task, card)})]

    def _artifact(
        self, task: _RemoteTask, artifact: Artifact, *, append: bool, last_chunk: bool
    ) -> ModelEvent:
        media_type = next((p.media_type for p in artifact.parts if p.media_type), "text/plain")
        name, _, before = task.artifacts.get(artifact.artifact_id, ("", "", ""))
        text = _artifact_text(artifact)
        task.artifacts[artifact.artifact_id] = (
            artifact.name or name,
            media_type,
            before + text if append else text,
        )
        meta = {
            "remoteTaskId": task.task_id,
            "artifactId": artifact.artifact_id,
            "name": artifact.name or name,
            "mediaType": media_type,
            "append": append,
            "lastChunk": last_chunk,
            "parts": [_part(part) for part in artifact.parts],
        }
        title = artifact.name or name or artifact.artifact_id
        return Notice(text=f"artifact {title}: {text}", meta={ARTIFACT_META: meta})

    async def _round_end(self, task: _RemoteTask) -> AsyncIterator[ModelEvent]:
        """How the round ends, by the task's state."""
        if task.state == "input_required":
            task.asked += 1
            yield ToolCallRequest(
                tool_call_id=f"{task.task_id}-input-{task.asked}",
                tool_name="ask",
                arguments={"question": task.message or f"{self.agent.name} needs input"},
            )
            return
        if task.state == "completed":
            text = "\n\n".join(
                [
                    *([task.message] if task.message else []),
                    *(f"[artifact {name}]\n{body}" for name, _, body in task.artifacts.values()),
                ]
            )
            yield TextDelta(text=text or f"{self.agent.name} completed the task")
            return
        if task.state == "auth_required":
            task.asked += 1
            why = f" ({task.message})" if task.message else ""
            yield ToolCallRequest(
                tool_call_id=f"{task.task_id}-auth-{task.asked}",
                tool_name="ask",
                arguments={
                    "question": (
                        f"{self.agent.name} needs authentication for task {task.task_id}{why}. "
                        "Answer env:A2A_NAME (or HEADER=env:A2A_NAME; the header is "
                        "Authorization by default), naming an environment variable of the "
                        "orchestrator that holds the credential. Never answer the credential "
                        "itself: an answer is recorded."
                    )
                },
            )
            return
        why = f": {task.message}" if task.message else ""
        raise self._error(f"task {task.task_id} {task.state} ({task.raw_state}){why}")

    # ── helpers ──────────────────────────────────────────────────────────────

    async def _connect(self) -> tuple[Client, AgentCard]:
        """The agent's card (fetched once) and a client for the interface it names."""
        if self._client is not None and self._card is not None:
            return self._client, self._card
        resolver = A2ACardResolver(self._http, self.settings.url)
        try:
            card = await resolver.get_agent_card(
                http_kwargs={"headers": self._headers, "timeout": REQUEST_TIMEOUT}
            )
        except (A2AError, httpx.HTTPError, ValueError) as exc:
            raise self._error(f"its agent card could not be read: {_what(exc)}") from exc
        config = ClientConfig(
            httpx_client=self._http,
            streaming=card.capabilities.streaming,
            polling=not card.capabilities.streaming,
        )
        try:
            self._client = ClientFactory(config).create(card)
        except (A2AClientError, ValueError) as exc:
            raise self._error(f"its agent card offers no interface we speak: {exc}") from exc
        self._card = card
        return self._client, card

    def _send(
        self, client: Client, request: SendMessageRequest
    ) -> AsyncGenerator[StreamResponse, None]:
        # The SDK declares an AsyncIterator; it is an async generator, which aclosing needs.
        return cast(
            "AsyncGenerator[StreamResponse, None]",
            client.send_message(request, context=self._call()),
        )

    def _call(self) -> ClientCallContext:
        return ClientCallContext(service_parameters=dict(self._headers), timeout=REQUEST_TIMEOUT)

    def _message(self, task: _RemoteTask, text: str) -> Message:
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)]
        )
        if task.context_id:
            message.context_id = task.context_id
        if task.task_id and task.state not in TERMINAL_REMOTE_STATES:
            message.task_id = task.task_id
        return message

    def _answer(self, task: _RemoteTask, context: RoundContext) -> str:
        """The answer to the question the last round put, to send back."""
        outcome = next((o for o in context.outcomes if o.tool_name == "ask"), None)
        if outcome is None or not outcome.success:
            why = outcome.output if outcome is not None else "no answer came"
            raise self._error(f"task {task.task_id} asked for input, and got none ({why})")
        return outcome.output

    def _authenticate(self, task: _RemoteTask, answer: str) -> str:
        """Take the credential an answer to ``auth_required`` names (``env:NAME``) into this
        process's memory, as a header of every later request to the agent; the next message's
        text. The answer itself is never repeated (an operator may have pasted a secret)."""
        named = _CREDENTIAL.fullmatch(answer.strip())
        if named is None:
            raise self._error(
                f"task {task.task_id} needs authentication, and the answer does not name a "
                "variable of the orchestrator's environment (env:NAME or HEADER=env:NAME)"
            )
        header, variable = named.group(1) or "Authorization", named.group(2)
        if not variable.startswith(_CREDENTIAL_PREFIX):
            # Else a remote agent could have another secret of ours (a model's API key) named
            # to it, by a coordinator it talked into it, say.
            raise self._error(
                f"task {task.task_id} needs authentication, and only a variable named "
                f"{_CREDENTIAL_PREFIX}... may hold a remote agent's credential, not {variable}"
            )
        value = self._environ.get(variable)
        if not value:
            raise self._error(
                f"task {task.task_id} needs authentication, and the environment variable "
                f"{variable} is not set"
            )
        self._headers[header] = value
        return f"The credential is in this request's {header} header."

    def _check_task(self, task: _RemoteTask, task_id: str) -> None:
        if task.task_id and task_id and task_id != task.task_id:
            raise self._error(f"an update of task {task_id} came for task {task.task_id}")

    def _task_meta(self, task: _RemoteTask, card: AgentCard, *, state: str = "") -> dict[str, Any]:
        return {
            "agent": self.agent.name,
            "url": self.settings.url,
            "remoteTaskId": task.task_id,
            "contextId": task.context_id,
            "state": state or task.state,
            "rawState": task.raw_state,
            "card": {
                "name": card.name,
                "version": card.version,
                "skills": [skill.id or skill.name for skill in card.skills],
            },
            "message": task.message,
        }

    def _gated(self, event: ModelEvent) -> ModelEvent:
        """``event`` as facts may keep it: its values through the one input gate.

        What protobuf let through (it refuses lone surrogates and NaN already) is checked
        again as JSON, with the gate's limits (depth, integer size); a text's lone surrogates
        are replaced, as a model's are."""
        match event:
            case Notice(text=text, meta=meta):
                try:
                    gated = parse_json(
                        json.dumps(meta, ensure_ascii=False), protocol="A2A", bad_text="replace"
                    )
                except (PeerProtocolError, ValueError) as exc:
                    raise self._error(f"an update the orchestrator cannot keep: {exc}") from exc
                return Notice(text=clean_text(text)[0], meta=gated)
            case TextDelta(text=text):
                return TextDelta(text=clean_text(text)[0])
            case ToolCallRequest(arguments=arguments):
                question = clean_text(str(arguments.get("question", "")))[0]
                return attrs.evolve(event, arguments={**arguments, "question": question})
            case _:
                return event

    def _error(self, what: str) -> RemoteAgentError:
        return RemoteAgentError(f"remote agent {self.agent.name} ({self.settings.url}): {what}")


def _text(parts: Any) -> str:
    return "\n".join(part.text for part in parts if part.WhichOneof("content") == "text")


def _artifact_text(artifact: Artifact) -> str:
    return _text(artifact.parts)


def _part(part: Part) -> dict[str, Any]:
    """A part as JSON values (the A2A JSON form: text, data or url, with its media type)."""
    value: dict[str, Any] = json_format.MessageToDict(part)
    value.pop("raw", None)  # bytes stay with the peer: the part says only what it was
    return value


def _what(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _recovered(context: RoundContext) -> _RemoteTask | None:
    """The remote task the chat's facts recorded as still open (after a restart), or None.

    The parts of the chat's active turn are read (a turn parked on a question goes on), else
    those of its last turn (a turn the restart cut off runs again). The last record of a
    remote task says where it stood; one that had ended, or had no id yet, is not taken up.
    """
    chat = context.chat_state
    if chat is None:
        return None
    parts: Any
    if chat.active_turn is not None and len(chat.active_turn.response_parts):
        parts = chat.active_turn.response_parts
    elif chat.turns:
        parts = chat.turns[-1].response_parts
    else:
        return None
    last = None
    task = _RemoteTask()
    for part in parts:
        remote = remote_task_of(part)
        if remote is not None:
            last = remote
        artifact = artifact_of(part)
        if artifact is not None and artifact.get("artifactId"):
            name, media, before = task.artifacts.get(str(artifact["artifactId"]), _NONE)
            text = "".join(str(p.get("text", "")) for p in artifact.get("parts") or ())
            task.artifacts[str(artifact["artifactId"])] = (
                str(artifact.get("name") or name),
                str(artifact.get("mediaType") or media),
                before + text if artifact.get("append") else text,
            )
    if last is None or not last.get("remoteTaskId"):
        return None
    if last.get("state") in TERMINAL_REMOTE_STATES:
        return None
    task.task_id = str(last["remoteTaskId"])
    task.context_id = str(last.get("contextId") or "")
    task.state = str(last.get("state") or "")
    task.raw_state = str(last.get("rawState") or "")
    task.message = str(last.get("message") or "")
    return task
