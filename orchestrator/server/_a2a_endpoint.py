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

A task is a fold of those facts (``_Task.feed``), so it outlives the daemon: its id is
``CONTEXT~start`` (the session's first prompt) or ``CONTEXT~QUEUED`` (the queued message its
turn answers, chosen here and recorded as the turn's ``queuedMessageId``), and ``tasks/get``,
an answer to its question and ``tasks/resubscribe`` read it back from the journal when this
process does not follow it. ``tasks/list`` folds every session of the team the same way
(:func:`_session_tasks`), in the SDK's order and with its page tokens.

Auth: the card is read with the ``read`` permission, the JSON-RPC binding needs
``operate`` (a viewer cannot send); the card declares the bearer scheme.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
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
    ListTasksRequest,
    ListTasksResponse,
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
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import (
    ListTasksCursor,
    decode_list_tasks_cursor,
    encode_list_tasks_cursor,
    validate_history_length,
    validate_page_size,
)
from google.protobuf import json_format, struct_pb2
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import MarkdownResponsePart
from orchestrator.base import OrchestratorError, RunError, SessionExistsError, compact_dumps
from orchestrator.core import (
    INTERRUPTED,
    USER,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    RunFinished,
    TeamState,
    artifact_of,
)
from orchestrator.core import TaskStatus as RecordStatus
from orchestrator.runtime import prompted_from
from orchestrator.sessions import LiveSession, session_id, session_uri
from orchestrator.spec import TeamSpec

__all__: list[str] = []

#: A context id becomes a session id: the characters that are safe in a URI path.
CONTEXT_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_ANSWER: Final = "answer"
#: Between a task id's context id and its queued message (``~`` is not in a context id).
_SEP: Final = "~"
#: A task id's queued message when the task is the run's first prompt.
_START: Final = "start"
_TERMINAL: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
#: The answers to an approval that approve it (any other denies it).
_YES: Final = frozenset({"yes", "y", "approve", "approved", "ok"})


@attrs.define
class _Task:
    """What the daemon knows of one A2A task: its session and where it stands.

    It is a fold of the session's facts (:meth:`feed`), so the same code follows a running
    task and reads a past one back from the journal after a restart."""

    task_id: str
    context_id: str
    queued: str | None  # the queued message its turn answers (None: the run's first turn)
    chat: str | None = None  # the coordinator's chat
    turn: str | None = None  # the coordinator's turn that answers it, once started
    state: Any = TaskState.TASK_STATE_SUBMITTED
    message: str = ""
    answer: str = ""
    question: str | None = None  # the tool call id of the question it waits on
    approval: str | None = None  # the approval it waits on
    chunks: int = 0
    seen: int = 0  # the last fact's sequence it was fed
    # Its turn was interrupted by a stop of the daemon: the next turn answering the same
    # prompt (the resumed run's) is its turn now.
    interrupted: str = ""
    at: str = ""  # when its state last changed: the ``at`` of the fact that changed it
    # The artifacts its run recorded (a tool's result, a remote teammate's), by id, in order:
    # {"name", "mediaType", "parts"} (the parts of every chunk so far).
    artifacts: dict[str, dict[str, Any]] = attrs.Factory(dict)

    @property
    def terminal(self) -> bool:
        return self.state in _TERMINAL

    def feed(self, fact: Any, chat: str | None) -> list[tuple[str, Any]]:
        """Take ``fact`` in; what it changed: ``("status", "")``, ``("final", "")`` (the task
        ended or waits for input), ``("chunk", text)`` (of its answer) or ``("artifact",
        chunk)`` (an artifact's chunk, as :func:`~orchestrator.core.artifact_of` reads it)."""
        if fact.sequence <= self.seen:
            return []  # read from the journal already
        self.seen = fact.sequence
        changes = self._feed(fact, chat)
        if any(kind in ("status", "final") for kind, _ in changes):
            self.at = fact.at
        return changes

    def _feed(self, fact: Any, chat: str | None) -> list[tuple[str, Any]]:
        self.chat = self.chat or chat
        action = fact.action
        if self.terminal:
            return []
        if self.turn is None:
            if (
                fact.channel == self.chat
                and isinstance(action, ChatTurnStartedAction)
                and action.queued_message_id == self.queued
            ):
                self.turn = action.turn_id
                if self.interrupted:  # the resumed run's turn: it works on, as it did
                    self.interrupted = ""
                    return []
                self.state = TaskState.TASK_STATE_WORKING
                return [("status", "")]
            if self.interrupted and isinstance(action, RunFinished):
                # The run ended without answering the prompt again (not resumed).
                self.state, self.message = TaskState.TASK_STATE_FAILED, self.interrupted
                return [("final", "")]
            return []
        if isinstance(action, ApprovalRequested) and action.routed_to == USER:
            # An approval the user decides: input the next message gives.
            self.approval = action.approval
            self.state = TaskState.TASK_STATE_INPUT_REQUIRED
            self.message = (
                f"{action.requested_by} asks to run {action.tool_name}: "
                f"{action.summary}. Approve? (yes or no)"
            )
            return [("final", "")]
        if isinstance(action, ChatInputRequestedAction):
            self.question = _tool_call_of(action.request.id)
            self.state = TaskState.TASK_STATE_INPUT_REQUIRED
            self.message = str(action.request.message or "")
            return [("final", "")]
        if (isinstance(action, ApprovalResolved) and action.approval == self.approval) or (
            isinstance(action, ChatInputCompletedAction)
            and self.question is not None
            and _tool_call_of(action.request_id) == self.question
        ):
            self.approval = self.question = None
            if self.state == TaskState.TASK_STATE_WORKING:
                return []  # the answer's sender said so already
            self.state, self.message = TaskState.TASK_STATE_WORKING, ""
            return [("status", "")]
        if isinstance(action, ChatResponsePartAction):
            # An artifact of any chat of its run: a worker's tool, a remote teammate's.
            artifact = artifact_of(action.part)
            if artifact is not None:
                return self._artifact(artifact)
        if fact.channel != self.chat or getattr(action, "turn_id", None) != self.turn:
            return []
        if isinstance(action, ChatResponsePartAction) and isinstance(
            action.part, MarkdownResponsePart
        ):
            return self._chunk(action.part.content)
        if isinstance(action, ChatDeltaAction):
            return self._chunk(action.content)
        if isinstance(action, ChatTurnCompleteAction):
            self.state, self.message = TaskState.TASK_STATE_COMPLETED, self.answer
        elif isinstance(action, ChatErrorAction) and action.error.error_type == INTERRUPTED:
            # A stop of the daemon: a resumed run answers the prompt again, in a turn of its
            # own, which this task follows (its id and its question stay the same).
            self.turn, self.interrupted = None, action.error.message
            self.answer, self.chunks = "", 0
            return []
        elif isinstance(action, ChatErrorAction):
            self.state, self.message = TaskState.TASK_STATE_FAILED, action.error.message
        elif isinstance(action, ChatTurnCancelledAction):
            self.state, self.message = TaskState.TASK_STATE_CANCELED, "cancelled"
        else:
            return []
        return [("final", "")]

    def _artifact(self, chunk: Mapping[str, Any]) -> list[tuple[str, Any]]:
        artifact_id = str(chunk.get("artifactId") or "")
        parts = [p for p in chunk.get("parts") or () if isinstance(p, Mapping)]
        if not artifact_id or artifact_id == _ANSWER:
            return []
        kept = self.artifacts.get(artifact_id)
        if kept is None or not chunk.get("append"):
            kept = self.artifacts[artifact_id] = {"parts": []}
        kept["name"] = str(chunk.get("name") or kept.get("name") or "")
        kept["mediaType"] = str(chunk.get("mediaType") or kept.get("mediaType") or "")
        kept["parts"] = [*kept["parts"], *parts]
        return [("artifact", chunk)]

    def _chunk(self, text: str) -> list[tuple[str, Any]]:
        if not text:
            return []
        self.answer += text
        self.chunks += 1
        return [("chunk", text)]


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
            task = await self._task(message.task_id)
            if task.question is None and task.approval is None:
                raise InvalidParamsError(f"task {task.task_id!r} is not waiting for input")
            live = await self._live(task.context_id, context, opening=False)
            subscription, _ = live.subscribe(f"a2a {task.task_id}")
            try:
                if task.approval is not None:
                    approved = text.strip().lower() in _YES
                    await live.decide(
                        task.approval, approved=approved, principal=self._principal(context)
                    )
                else:
                    assert task.question is not None
                    await live.answer(task.question, text)
                task.approval = task.question = None
            except BaseException:
                live.unsubscribe(subscription)
                raise
            task.state, task.message = TaskState.TASK_STATE_WORKING, ""
            yield self._status(task)
            async for event in self._follow(live, task, subscription):
                yield event
            return
        context_id = message.context_id or uuid.uuid4().hex
        if not CONTEXT_ID.fullmatch(context_id):
            raise InvalidParamsError(
                "contextId: use letters, digits and . _ : - (at most 128), starting with one"
            )
        live = await self._live(context_id, context, opening=True)
        # The task's id names its session and the queued message its turn answers (or the
        # run's start), so tasks/get finds it in the journal after a restart.
        queued = None if not live.started else f"a2a-{uuid.uuid4().hex}"
        task = _Task(
            task_id=f"{context_id}{_SEP}{queued or _START}", context_id=context_id, queued=queued
        )
        self._tasks[task.task_id] = task
        subscription, _ = live.subscribe(f"a2a {task.task_id}")
        try:
            # A caller in a traced app: the task's run (or turn) continues its trace.
            with prompted_from(_traceparent(context)):
                await live.prompt(text, task_id=task.task_id, message_id=queued)
        except BaseException:
            live.unsubscribe(subscription)
            raise
        # Submitted until the coordinator's turn starts (then working, and cancellable).
        yield Task(id=task.task_id, context_id=context_id, status=TaskStatus(state=task.state))
        async for event in self._follow(live, task, subscription):
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
        self, live: LiveSession, task: _Task, subscription: Any
    ) -> AsyncGenerator[Any, None]:
        """The task's updates, from the session's facts, until it ends or waits for input."""
        try:
            while True:
                try:
                    batch = await subscription.receive_batch()
                except trio.EndOfChannel:
                    task.state, task.message = TaskState.TASK_STATE_FAILED, "the session ended"
                    yield self._status(task, final=True)
                    return
                for fact in batch:
                    for kind, text in task.feed(fact, live.state.coordinator_chat()):
                        if kind == "chunk":
                            yield self._chunk(task, text)
                        elif kind == "artifact":
                            yield _artifact_event(task, text)
                        elif kind == "status":
                            yield self._status(task)
                        else:
                            yield self._status(task, final=True)
                            return
        finally:
            live.unsubscribe(subscription)

    # ── reading and cancelling ───────────────────────────────────────────────

    async def _task(self, task_id: str) -> _Task:
        """The task ``task_id``: as this process follows it, or read back from the journal
        (a task served before a restart)."""
        task = self._tasks.get(task_id)
        if task is not None:
            return task
        context_id, sep, queued = task_id.rpartition(_SEP)
        if not sep or not CONTEXT_ID.fullmatch(context_id) or not queued:
            raise TaskNotFoundError(f"no task {task_id!r}")
        task = _Task(
            task_id=task_id, context_id=context_id, queued=None if queued == _START else queued
        )
        uri = session_uri(context_id)
        reader = self._daemon.reader
        try:
            state = await trio.to_thread.run_sync(reader.open, uri)
            facts = await trio.to_thread.run_sync(reader.facts, uri)
        except (OrchestratorError, OSError):
            raise TaskNotFoundError(f"no task {task_id!r}") from None
        if state.run is None or state.run.team != self._team:
            raise TaskNotFoundError(f"no task {task_id!r} in team {self._team!r}")
        chat = state.coordinator_chat()
        for fact in facts:
            task.feed(fact, chat)
        if task.turn is None and not _queued_in(state, chat, task.queued):
            raise TaskNotFoundError(f"no task {task_id!r}")
        self._tasks[task_id] = task
        return task

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        task = self._tasks.get(params.id)
        if task is None or not task.terminal:
            # Not followed here (served before a restart), or followed by no stream now:
            # the journal says where it stands.
            self._tasks.pop(params.id, None)
            try:
                task = await self._task(params.id)
            except TaskNotFoundError:
                if task is None:
                    raise
        return self._snapshot(task)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        self._tasks.pop(params.id, None)  # where it stands now: the journal says
        task = await self._task(params.id)
        if task.terminal:
            raise TaskNotCancelableError(
                f"task {task.task_id!r} is {_state_word(task.state)}: there is nothing to cancel"
            )
        live = await self._live(task.context_id, context, opening=False)
        try:
            try:
                await live.abort(task.task_id)
            except RunError:
                # A task served before a restart: the session knows its prompt's root task
                # (recorded), not the A2A id the last process gave it.
                root = _running_root(live.state, task)
                if root is None:
                    raise
                await live.abort(root)
        except RunError as exc:
            raise InvalidParamsError(str(exc)) from None
        # Its stream ends canceled when the cancellation's fact comes (the task's own state).
        return self._snapshot(attrs.evolve(task, state=TaskState.TASK_STATE_CANCELED))

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        """The task as it stands, then its updates until it ends or waits for input."""
        context_id = params.id.rpartition(_SEP)[0]
        if not CONTEXT_ID.fullmatch(context_id):
            raise TaskNotFoundError(f"no task {params.id!r}")
        live = await self._live(context_id, context, opening=False)
        # Subscribed first: a fact recorded while the journal is read comes in both, and
        # the task, which remembers the last it took, takes it once.
        subscription, _ = live.subscribe(f"a2a resubscribe {params.id}")
        try:
            self._tasks.pop(params.id, None)
            task = await self._task(params.id)
            if task.terminal:
                raise UnsupportedOperationError(
                    f"task {params.id!r} is {_state_word(task.state)}: nothing more comes"
                )
        except BaseException:
            live.unsubscribe(subscription)
            raise
        yield self._snapshot(task)
        if task.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            live.unsubscribe(subscription)
            return
        async for event in self._follow(live, task, subscription):
            yield event

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> Any:
        raise UnsupportedOperationError("no extended agent card")

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The team's tasks, newest first (the SDK's order and page tokens): every turn of
        every session of the team, or of one context (``contextId``), read from the journal.

        Filters: ``status`` (one state), ``statusTimestampAfter`` (changed at or after);
        ``includeArtifacts`` adds each task's ``answer``. ``historyLength`` is checked, and
        moot: a task keeps no message history."""
        validate_history_length(params)
        page_size = DEFAULT_LIST_TASKS_PAGE_SIZE
        if params.HasField("page_size"):
            validate_page_size(params.page_size)
            page_size = params.page_size
        if params.context_id and not CONTEXT_ID.fullmatch(params.context_id):
            raise InvalidParamsError(
                "contextId: use letters, digits and . _ : - (at most 128), starting with one"
            )
        if params.status and params.status not in TaskState.values():
            raise InvalidParamsError(f"status: no task state {params.status}")
        after: ListTasksCursor | None = None
        if params.page_token:
            after = decode_list_tasks_cursor(params.page_token)
            if after is None:
                raise InvalidParamsError("pageToken: not a page token this agent gave")
        since = (
            params.status_timestamp_after.ToNanoseconds()
            if params.HasField("status_timestamp_after")
            else None
        )
        tasks = await trio.to_thread.run_sync(self._read_tasks, params.context_id or None)
        if params.status:
            tasks = [t for t in tasks if t.state == params.status]
        if since is not None:
            tasks = [t for t in tasks if (ns := _nanoseconds(t.at)) is not None and ns >= since]
        tasks.sort(key=_list_key, reverse=True)
        total = len(tasks)
        if after is not None:
            key = after.sort_key()
            tasks = [t for t in tasks if _list_key(t) < key]
        page, more = tasks[:page_size], len(tasks) > page_size
        return ListTasksResponse(
            tasks=[self._snapshot(t, with_artifacts=params.include_artifacts) for t in page],
            next_page_token=encode_list_tasks_cursor(_cursor(page[-1])) if more else "",
            page_size=page_size,
            total_size=total,
        )

    def _read_tasks(self, context_id: str | None) -> list[_Task]:
        """Every task of the team's sessions (of ``context_id``'s only, if given), as the
        journal has them (in a worker thread: the reads block)."""
        reader = self._daemon.reader
        if context_id is not None:
            uris = [session_uri(context_id)]
        else:
            uris = [info.session for info in reader.sessions(team=self._team)]
        tasks: list[_Task] = []
        for uri in uris:
            try:
                state = reader.open(uri)
                facts = reader.facts(uri)
            except (OrchestratorError, OSError):
                continue  # not a session of this journal (a context never opened)
            if state.run is None or state.run.team != self._team:
                continue
            tasks.extend(_session_tasks(session_id(uri), state, facts))
        return tasks

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

    def _snapshot(self, task: _Task, *, with_artifacts: bool = True) -> Task:
        status = TaskStatus(state=task.state)
        if _nanoseconds(task.at) is not None:
            status.timestamp.FromJsonString(task.at)
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
            if task.answer and with_artifacts
            else []
        )
        if with_artifacts:
            artifacts += [
                _artifact(artifact_id, kept) for artifact_id, kept in task.artifacts.items()
            ]
        return Task(id=task.task_id, context_id=task.context_id, status=status, artifacts=artifacts)


def _session_tasks(context_id: str, state: TeamState, facts: list[Fact]) -> list[_Task]:
    """Every task of one session (``context_id``), as a fold of its facts: each turn of its
    coordinator (the prompt it answers names it), then each prompt still queued
    (``submitted``)."""
    chat = state.coordinator_chat()
    if chat is None:
        return []
    starts: dict[str, tuple[int, _Task]] = {}
    for index, fact in enumerate(facts):
        action = fact.action
        if fact.channel == chat and isinstance(action, ChatTurnStartedAction):
            queued = action.queued_message_id
            task_id = f"{context_id}{_SEP}{queued or _START}"
            if task_id not in starts:
                task = _Task(task_id=task_id, context_id=context_id, queued=queued)
                starts[task_id] = (index, task)
    tasks = []
    for index, task in starts.values():
        for fact in facts[index:]:
            task.feed(fact, chat)
        tasks.append(task)
    chat_state = state.chats.get(chat)
    for message in (chat_state.queued_messages or ()) if chat_state is not None else ():
        task_id = f"{context_id}{_SEP}{message.id}"
        if task_id not in starts:
            tasks.append(_Task(task_id=task_id, context_id=context_id, queued=message.id))
    return tasks


def _nanoseconds(at: str) -> int | None:
    """A fact's ``at`` (RFC 3339) in nanoseconds since the epoch; None if it is not one."""
    if not at:
        return None
    stamp = Timestamp()
    try:
        stamp.FromJsonString(at)
    except ValueError:
        return None
    return int(stamp.ToNanoseconds())


def _list_key(task: _Task) -> tuple[bool, int, str]:
    """A task's place in ``tasks/list``: the SDK's ``(has timestamp, timestamp, id)``."""
    ns = _nanoseconds(task.at)
    return (ns is not None, ns or 0, task.task_id)


def _cursor(task: _Task) -> ListTasksCursor:
    return ListTasksCursor(timestamp_ns=_nanoseconds(task.at), task_id=task.task_id)


def _artifact(artifact_id: str, chunk: Mapping[str, Any]) -> Artifact:
    """An artifact (or a chunk of one) as the facts keep it, as the SDK's type."""
    media_type = str(chunk.get("mediaType") or "")
    return Artifact(
        artifact_id=artifact_id,
        name=str(chunk.get("name") or ""),
        parts=[_part(p, media_type) for p in chunk.get("parts") or () if isinstance(p, Mapping)],
    )


def _part(part: Mapping[str, Any], media_type: str) -> Part:
    """``{"text": ...}``, ``{"data": ...}`` or ``{"url": ...}`` as the SDK's part."""
    if "data" in part:
        value = struct_pb2.Value()
        try:
            json_format.ParseDict(part["data"], value)
        except (json_format.ParseError, TypeError, ValueError):
            return Part(text=compact_dumps(part["data"]), media_type=media_type)
        return Part(data=value, media_type=media_type)
    if "url" in part:
        return Part(url=str(part["url"]), media_type=media_type)
    return Part(text=str(part.get("text", "")), media_type=media_type)


def _artifact_event(task: _Task, chunk: Mapping[str, Any]) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task.task_id,
        context_id=task.context_id,
        artifact=_artifact(str(chunk.get("artifactId")), chunk),
        append=bool(chunk.get("append", False)),
        last_chunk=bool(chunk.get("lastChunk", True)),
    )


def _traceparent(context: ServerCallContext) -> str | None:
    """The request's ``traceparent`` header (the SDK's context keeps the headers)."""
    headers = context.state.get("headers")
    value = headers.get("traceparent") if isinstance(headers, dict) else None
    return value if isinstance(value, str) else None


def _running_root(state: TeamState, task: _Task) -> str | None:
    """The recorded root task of ``task``'s turn, if that turn is the coordinator's running
    one (a prompt's root task: cancelling it cancels the turn)."""
    chat = state.coordinator_chat()
    chat_state = state.chats.get(chat) if chat is not None else None
    active = chat_state.active_turn if chat_state is not None else None
    if task.turn is None or active is None or active.id != task.turn:
        return None
    roots = [
        t.task
        for t in state.tasks.values()
        if t.requested_by is None and t.status is RecordStatus.RUNNING
    ]
    return roots[-1] if roots else None


def _queued_in(state: TeamState, chat: str | None, queued: str | None) -> bool:
    """Whether ``queued`` waits in ``chat``'s queue (a task not started yet)."""
    chat_state = state.chats.get(chat) if chat else None
    if chat_state is None or queued is None:
        return False
    return any(m.id == queued for m in chat_state.queued_messages or ())


def _state_word(state: Any) -> str:
    return str(TaskState.Name(state)).removeprefix("TASK_STATE_").lower()


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
