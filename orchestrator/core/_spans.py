"""The trace of a session: its facts folded into OpenTelemetry spans.

Theory of operation
-------------------
Traces are one more projection of the one log of facts, so a live run, the daemon and a run
resumed after a crash all make them in one place, from the facts as they are recorded (the
runtime's bus), with the facts' own timestamps and ids. :class:`SpanFold` is pure: a fact goes
in, the spans it ended come out as :class:`SpanRecord` values; the runtime's tracing shell
(:mod:`orchestrator.runtime._tracing`) hands them to the OpenTelemetry SDK.

Span and trace ids are derived from the facts' ids (:func:`span_id_of`, :func:`trace_id_of`),
not drawn at random. So:

* a span's parent is known before the parent ends (a worker's ``invoke_agent`` is a child of
  its coordinator's ``delegate`` tool call, whose span ends after the worker's);
* the runtime names the span it is in (for ``traceparent`` headers and log lines) without
  asking the fold;
* a run resumed by another process continues the same trace under the same parents. The one
  thing recorded is what cannot be derived: a ``traceparent`` a prompt came with (an app's
  trace the run continues), on ``team/runStarted`` or the prompt's root ``team/taskCreated``.

The spans follow the OpenTelemetry GenAI semantic conventions as
``opentelemetry-semantic-conventions`` 0.66b2 (schema 1.44.0) names them:

* ``invoke_workflow {team}``: one per prompt's run (its root task), a trace root; a
  conversation's later prompts link to the one before;
* ``invoke_agent {agent}``: one per turn of a chat; a worker's (or a specialist's after a
  handoff) is a child of the ``delegate`` (``handoff``) call's span;
* ``chat {model}``: one per model round (its ``chat/usage`` fact);
* ``execute_tool {tool}``: one per tool call; an approval's wait is its ``await_approval``
  child.

Prompts, answers and tool inputs and outputs go on spans only with ``capture_content`` (the
conventions' opt-in), and then through the log redactor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatToolCallCompleteAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    ChatUsageAction,
)
from orchestrator.ahp.state import (
    ToolCallPendingConfirmationState,
    ToolCallResponsePart,
    ToolCallRunningState,
    ToolCallStreamingState,
)
from orchestrator.base import redact_text
from orchestrator.spec import TEAM_TOOLS, mcp_tool_ref

from ._facts import Fact
from ._team_actions import (
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunStarted,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
)
from ._team_state import TeamState

__all__ = [
    "CANCELLED",
    "CHAT_SPAN_TEAM_TYPES",
    "SEMCONV_VERSION",
    "ChatSpans",
    "SpanEvent",
    "SpanFold",
    "SpanIds",
    "SpanLink",
    "SpanRecord",
    "TraceParent",
    "chat_spans",
    "parse_traceparent",
    "span_id_of",
    "trace_id_of",
]

#: The ``opentelemetry-semantic-conventions`` release whose GenAI names the spans use.
SEMCONV_VERSION: Final = "0.66b2"

#: The status message (and ``error.type``) of a span whose work was cancelled.
CANCELLED: Final = "cancelled"

AttributeValue = str | int | float | bool | tuple[str, ...]

# The attribute names (tests check them against the opentelemetry-semantic-conventions package).
OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
WORKFLOW_NAME: Final = "gen_ai.workflow.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"


@attrs.frozen(kw_only=True)
class TraceParent:
    """A W3C ``traceparent``: the span a prompt came from, in another process's trace."""

    trace_id: int
    span_id: int
    sampled: bool

    @property
    def header(self) -> str:
        """The header's version-00 form (what is recorded: a later version's extra fields
        are not ours to keep)."""
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{'01' if self.sampled else '00'}"


def parse_traceparent(text: str | None) -> TraceParent | None:
    """The ``traceparent`` header's value, or None if it is absent or not one (W3C trace
    context: a malformed header is ignored, never an error)."""
    if not text:
        return None
    parts = text.strip().split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or parts[0] == "ff":
        return None
    version, trace, span, flags = parts[:4]
    if (len(trace), len(span), len(flags)) != (32, 16, 2):
        return None
    if version == "00" and len(parts) != 4:
        return None
    try:
        trace_id, span_id, flag_bits = int(trace, 16), int(span, 16), int(flags, 16)
    except ValueError:
        return None
    if trace_id == 0 or span_id == 0 or trace != trace.lower() or span != span.lower():
        return None
    return TraceParent(trace_id=trace_id, span_id=span_id, sampled=bool(flag_bits & 1))


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode()).digest()


def span_id_of(*parts: str) -> int:
    """The span id of the span that ``parts`` name (``("turn", chat, turn_id)``...): 64
    bits of their hash, never 0."""
    return int.from_bytes(_digest("span", *parts)[:8], "big") or 1


def trace_id_of(session: str, root_task: str, parent: TraceParent | None = None) -> int:
    """The trace of the prompt whose root task is ``root_task``: the trace its
    ``traceparent`` named, else 128 bits of the ids' hash, never 0."""
    if parent is not None:
        return parent.trace_id
    return int.from_bytes(_digest("trace", session, root_task)[:16], "big") or 1


@attrs.frozen(kw_only=True)
class SpanEvent:
    """A moment in a span (a round's first token)."""

    name: str
    at: str
    attributes: Mapping[str, AttributeValue] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class SpanLink:
    """Another span this one follows from (a conversation's prompt before)."""

    trace_id: int
    span_id: int


@attrs.frozen(kw_only=True)
class SpanRecord:
    """A finished span, as the facts tell it. Times are fact timestamps (ISO 8601, UTC)."""

    name: str
    trace_id: int
    span_id: int
    # Invariant: (parent_id is None) <= (not remote_parent)
    parent_id: int | None
    remote_parent: bool = False  # the parent is a traceparent's span, in another process
    kind: str = "internal"  # "internal" or "client" (a model round: a request to a server)
    start: str
    end: str
    attributes: Mapping[str, AttributeValue]
    events: tuple[SpanEvent, ...] = ()
    links: tuple[SpanLink, ...] = ()
    error: str | None = None  # the status message: the facts' own; None: the span is fine


@attrs.define
class _Open:
    """A span that started and has not ended."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start: str
    attributes: dict[str, AttributeValue]
    remote_parent: bool = False
    links: tuple[SpanLink, ...] = ()

    def end(
        self, at: str, *, error: str | None = None, events: tuple[SpanEvent, ...] = ()
    ) -> SpanRecord:
        attributes = dict(self.attributes)
        if error is not None:
            attributes.setdefault(ERROR_TYPE, CANCELLED if error == CANCELLED else "error")
        return SpanRecord(
            name=self.name,
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_id=self.parent_id,
            remote_parent=self.remote_parent,
            start=self.start,
            end=at,
            attributes=attributes,
            events=events,
            links=self.links,
            error=error,
        )


class SpanFold:
    """Folds a session's facts, in order, into the spans they end (see the module docstring).

    Args:
        session: The session's URI.
        tool_kinds: Each tool's kind (``command``, ``python``), by name; a tool not named is
            ``mcp`` (``mcp.<server>/<tool>``), ``team`` (delegate, handoff, ask) or
            ``function``.
        capture_content: Put prompts and tool inputs and outputs on spans (redacted).
    """

    def __init__(
        self,
        session: str,
        *,
        tool_kinds: Mapping[str, str] | None = None,
        capture_content: bool = False,
    ) -> None:
        self.session = session
        self.tool_kinds = dict(tool_kinds or {})
        self.capture_content = capture_content
        self.team = ""
        self.coordinator_chat: str | None = None
        self._roots: dict[str, _Open] = {}  # by root task: the prompts' spans
        self._last_root: SpanLink | None = None
        self._root_of_task: dict[str, str] = {}
        self._root_of_chat: dict[str, str] = {}
        self._task_of_chat: dict[str, str] = {}
        self._agent_of_chat: dict[str, str] = {}
        self._requests: dict[str, tuple[str, str]] = {}  # task -> (delegating chat, call id)
        self._parent_of_chat: dict[str, int] = {}  # the tool call span a chat's turns are under
        self._turns: dict[tuple[str, str], _Open] = {}
        self._tools: dict[tuple[str, str], _Open] = {}  # by (chat, tool call id)
        self._turn_calls: dict[tuple[str, str], list[str]] = {}  # (chat, turn) -> its calls
        self._approvals: dict[str, _Open] = {}
        self._traces: dict[str, int] = {}  # root task -> trace id
        self._parents: dict[str, TraceParent] = {}  # root task -> the traceparent it came with

    # ── what the runtime asks ─────────────────────────────────────────────

    def trace_of_chat(self, chat: str) -> int | None:
        """The trace a chat's current work is in; None before the fold knows the chat."""
        root = self._root_of_chat.get(chat)
        return None if root is None else self._traces.get(root)

    def sampled_parent(self, chat: str) -> TraceParent | None:
        """The traceparent the chat's prompt came with, if it came with one."""
        root = self._root_of_chat.get(chat)
        return None if root is None else self._parents.get(root)

    def open_spans(self) -> int:
        """How many spans have started and not ended (for tests and statistics)."""
        return len(self._roots) + len(self._turns) + len(self._tools) + len(self._approvals)

    def take_up(self, state: TeamState) -> None:
        """Know what an unfinished run's facts said, from its folded ``state``: a run
        resumed in a new process continues its trace (the prompt's span and the open turns
        end under the ids they started with; spans that ended before the stop are not sent
        again)."""
        run = state.run
        if run is None:
            return
        self.team = run.team
        self.coordinator_chat = run.coordinator_chat
        parent = parse_traceparent(run.trace_parent)
        root_task = state.tasks.get(run.task)
        if run.status is None:
            start = root_task.created_at if root_task is not None else run.started_at
            self._start_root(run.task, start, run.trace_parent, run.prompt)
            self._last_root = None
        if parent is not None:
            self._parents[run.task] = parent
        for task in state.tasks.values():
            if task.requested_by is not None and task.tool_call_id is not None:
                self._requests[task.task] = (task.requested_by, task.tool_call_id)
            self._root_of_task[task.task] = _root(state, task.task)
        for member in state.members.values():
            self._member_joined_as(member.chat, member.agent, member.task)
        for task in state.tasks.values():
            request = self._requests.get(task.task)
            if task.chat is not None and request is not None:
                self._parent_of_chat[task.chat] = span_id_of("tool", *request)
        # When each delegation's call was made, as near as the state says (its task's
        # creation); any other open call is dated from its turn's start.
        made = {
            request: t.created_at
            for t in state.tasks.values()
            if (request := self._requests.get(t.task))
        }
        for chat, chat_state in state.chats.items():
            turn = chat_state.active_turn
            if turn is None or chat not in self._root_of_chat:
                continue
            self._open_turn(chat, turn.id, turn.started_at, None)
            for part in turn.response_parts:
                if not isinstance(part, ToolCallResponsePart):
                    continue
                call = part.tool_call
                if isinstance(call, _OPEN_CALLS):
                    at = made.get((chat, call.tool_call_id), turn.started_at)
                    self._open_tool(chat, turn.id, call.tool_call_id, call.tool_name, at)
        for approval in state.approvals.values():
            if approval.decision is None:
                self._approval_requested_at(
                    approval.request, _turn_start_of(state, approval.request)
                )

    # ── the fold ──────────────────────────────────────────────────────────

    def apply(self, fact: Fact) -> list[SpanRecord]:
        """Fold one fact; return the spans it ended, in the order they ended."""
        action = fact.action
        handler = _HANDLERS.get(type(action))
        if handler is None:
            return []
        ended: list[SpanRecord] = handler(self, fact, action)
        return ended

    def _start_root(self, task: str, at: str, traceparent: str | None, title: str) -> None:
        parent = parse_traceparent(traceparent)
        trace_id = trace_id_of(self.session, task, parent)
        self._traces[task] = trace_id
        if parent is not None:
            self._parents[task] = parent
        self._root_of_task[task] = task
        span = _Open(
            name=f"invoke_workflow {self.team}",
            trace_id=trace_id,
            span_id=span_id_of("run", self.session, task),
            parent_id=None if parent is None else parent.span_id,
            remote_parent=parent is not None,
            start=at,
            attributes={
                OPERATION: "invoke_workflow",
                WORKFLOW_NAME: self.team,
                CONVERSATION_ID: self.session,
                "orchestrator.task": task,
            },
            links=() if self._last_root is None else (self._last_root,),
        )
        if self.capture_content:
            span.attributes[INPUT_MESSAGES] = _messages("user", title)
        self._roots[task] = span
        self._last_root = SpanLink(trace_id=trace_id, span_id=span.span_id)
        if self.coordinator_chat is not None:
            self._root_of_chat[self.coordinator_chat] = task

    def _run_started(self, fact: Fact, action: RunStarted) -> list[SpanRecord]:
        self.team = action.team
        self._start_root(action.task, fact.at, action.trace_parent, action.prompt)
        return []

    def _member_joined(self, fact: Fact, action: MemberJoined) -> list[SpanRecord]:
        self._member_joined_as(action.chat, action.agent, action.task)
        if action.starts:
            return self._task_started(fact, action.started())
        return []

    def _member_joined_as(self, chat: str, agent: str, task: str) -> None:
        self._task_of_chat[chat] = task
        self._agent_of_chat[chat] = agent
        root = self._root_of_task.get(task)
        if root is not None:
            self._root_of_chat[chat] = root
        if task in self._roots and self.coordinator_chat is None:
            self.coordinator_chat = chat

    def _task_created(self, fact: Fact, action: TaskCreated) -> list[SpanRecord]:
        if action.requested_by is None or action.tool_call_id is None:
            self._start_root(action.task, fact.at, action.trace_parent, action.title)
            return []
        self._requests[action.task] = (action.requested_by, action.tool_call_id)
        root = self._root_of_chat.get(action.requested_by)
        if root is not None:
            self._root_of_task[action.task] = root
        return []

    def _task_started(self, fact: Fact, action: TaskStarted) -> list[SpanRecord]:
        request = self._requests.get(action.task)
        if request is not None:
            self._parent_of_chat[action.chat] = span_id_of("tool", *request)
        root = self._root_of_task.get(action.task)
        if root is not None:
            self._root_of_chat[action.chat] = root
        self._task_of_chat.setdefault(action.chat, action.task)
        return []

    def _handoff(self, fact: Fact, action: HandoffRecorded) -> list[SpanRecord]:
        self._parent_of_chat[action.to_chat] = span_id_of(
            "tool", action.from_chat, action.tool_call_id
        )
        root = self._root_of_chat.get(action.from_chat)
        if root is not None:
            self._root_of_chat[action.to_chat] = root
        self._agent_of_chat.setdefault(action.to_chat, action.to_agent)
        return []

    def _task_finished(self, fact: Fact, action: TaskFinished) -> list[SpanRecord]:
        root = self._roots.pop(action.task, None)
        if root is None:
            return []
        return [root.end(fact.at, error=_task_error(action.status, action.summary))]

    def _run_finished(self, fact: Fact, action: RunFinished) -> list[SpanRecord]:
        error = action.error or None
        if error is None and action.status.value == "cancelled":
            error = CANCELLED
        ended = [
            *(a.end(fact.at, error=CANCELLED) for a in self._approvals.values()),
            *(t.end(fact.at, error=CANCELLED) for t in self._tools.values()),
            *(t.end(fact.at, error=CANCELLED) for t in self._turns.values()),
            *(r.end(fact.at, error=error) for r in self._roots.values()),
        ]
        self._approvals.clear()
        self._tools.clear()
        self._turn_calls.clear()
        self._turns.clear()
        self._roots.clear()
        return ended

    def _turn_started(self, fact: Fact, action: ChatTurnStartedAction) -> list[SpanRecord]:
        chat = fact.channel
        text = action.message.text if self.capture_content else None
        self._open_turn(chat, action.turn_id, action.started_at or fact.at, text)
        return []

    def _open_turn(self, chat: str, turn_id: str, at: str, text: str | None) -> _Open:
        agent = self._agent_of_chat.get(chat, "agent")
        root = self._root_of_chat.get(chat)
        trace_id = self._traces.get(root, 0) if root is not None else 0
        parent = self._parent_of_chat.get(chat)
        if parent is None and root is not None:
            parent = span_id_of("run", self.session, root)
        span = _Open(
            name=f"invoke_agent {agent}",
            trace_id=trace_id,
            span_id=span_id_of("turn", chat, turn_id),
            parent_id=parent,
            start=at,
            attributes={
                OPERATION: "invoke_agent",
                AGENT_NAME: agent,
                AGENT_ID: chat,
                CONVERSATION_ID: self.session,
                "orchestrator.team": self.team,
                "orchestrator.task": self._task_of_chat.get(chat, ""),
                "orchestrator.turn": turn_id,
            },
        )
        if text is not None:
            span.attributes[INPUT_MESSAGES] = _messages("user", text)
        self._turns[(chat, turn_id)] = span
        return span

    def _turn_ended(
        self, fact: Fact, action: ChatTurnCompleteAction | ChatTurnCancelledAction | ChatErrorAction
    ) -> list[SpanRecord]:
        chat = fact.channel
        key = (chat, action.turn_id)
        span = self._turns.pop(key, None)
        if isinstance(action, ChatErrorAction):
            error: str | None = action.error.message
        elif isinstance(action, ChatTurnCancelledAction):
            error = CANCELLED
        else:
            error = None
        ended: list[SpanRecord] = []
        # The turn's calls still open (an index, not a scan: a coordinator's turn may hold
        # thousands of delegate calls while its workers' turns end).
        for call_id in self._turn_calls.pop(key, ()):
            tool = self._tools.pop((chat, call_id), None)
            if tool is None:
                continue
            ended.extend(self._end_approvals(tool.span_id, fact.at, CANCELLED))
            ended.append(tool.end(fact.at, error=error or CANCELLED))
        if span is not None and span.trace_id:
            ended.append(span.end(fact.at, error=error))
        return ended

    def _usage(self, fact: Fact, action: ChatUsageAction) -> list[SpanRecord]:
        chat = fact.channel
        turn = self._turns.get((chat, action.turn_id))
        if turn is None or not turn.trace_id:
            return []
        usage = action.usage
        meta: Mapping[str, Any] = usage.meta or {}
        model = usage.model or "unknown"
        round_index = meta.get("round")
        round_key = str(round_index) if isinstance(round_index, int) else fact.at
        attributes: dict[str, AttributeValue] = {
            OPERATION: "chat",
            REQUEST_MODEL: model,
            PROVIDER: str(meta.get("provider") or "unknown"),
            AGENT_NAME: self._agent_of_chat.get(chat, "agent"),
        }
        if isinstance(meta.get("responseModel"), str):
            attributes[RESPONSE_MODEL] = meta["responseModel"]
        reasons = meta.get("finishReasons")
        if isinstance(reasons, list) and all(isinstance(r, str) for r in reasons):
            attributes[FINISH_REASONS] = tuple(reasons)
        if usage.input_tokens is not None:
            attributes[INPUT_TOKENS] = usage.input_tokens
        if usage.output_tokens is not None:
            attributes[OUTPUT_TOKENS] = usage.output_tokens
        if isinstance(meta.get("serverAddress"), str):
            attributes[SERVER_ADDRESS] = meta["serverAddress"]
        if isinstance(meta.get("serverPort"), int):
            attributes[SERVER_PORT] = meta["serverPort"]
        start = meta.get("startedAt")
        events: tuple[SpanEvent, ...] = ()
        first = meta.get("firstTokenAt")
        if isinstance(first, str):
            events = (SpanEvent(name="gen_ai.first_token", at=first),)
        return [
            SpanRecord(
                name=f"chat {model}",
                trace_id=turn.trace_id,
                span_id=span_id_of("round", chat, action.turn_id, round_key),
                parent_id=turn.span_id,
                kind="client",
                start=start if isinstance(start, str) else turn.start,
                end=fact.at,
                attributes=attributes,
                events=events,
            )
        ]

    def _tool_opened(
        self, fact: Fact, action: ChatToolCallStartAction | ChatToolCallReadyAction
    ) -> list[SpanRecord]:
        chat = fact.channel
        key = (chat, action.tool_call_id)
        span = self._tools.get(key)
        if span is None and isinstance(action, ChatToolCallStartAction):
            name = action.tool_name
        elif span is None:
            return []  # the runtime records every call's start first (see ToolCalls)
        else:
            if isinstance(action, ChatToolCallReadyAction) and self.capture_content:
                _put_arguments(span, action)
            return []
        self._open_tool(chat, action.turn_id, action.tool_call_id, name, fact.at)
        return []

    def _open_tool(self, chat: str, turn_id: str, tool_call_id: str, name: str, at: str) -> None:
        turn = self._turns.get((chat, turn_id))
        kind = self.tool_kinds.get(name) or _kind_of(name)
        self._turn_calls.setdefault((chat, turn_id), []).append(tool_call_id)
        self._tools[(chat, tool_call_id)] = _Open(
            name=f"execute_tool {name}",
            trace_id=0 if turn is None else turn.trace_id,
            span_id=span_id_of("tool", chat, tool_call_id),
            parent_id=None if turn is None else turn.span_id,
            start=at,
            attributes={
                OPERATION: "execute_tool",
                TOOL_NAME: name,
                TOOL_CALL_ID: tool_call_id,
                TOOL_TYPE: "extension" if kind == "mcp" else "function",
                "orchestrator.tool.kind": kind,
                "orchestrator.turn": turn_id,
            },
        )

    def _tool_completed(self, fact: Fact, action: ChatToolCallCompleteAction) -> list[SpanRecord]:
        span = self._tools.pop((fact.channel, action.tool_call_id), None)
        if span is None or not span.trace_id:
            return []
        result = action.result
        error = None
        if not result.success:
            error = result.error.message if result.error is not None else "the tool failed"
        if self.capture_content:
            span.attributes[TOOL_RESULT] = redact_text(_result_text(action))
        return [*self._end_approvals(span.span_id, fact.at, None), span.end(fact.at, error=error)]

    def _approval_requested(self, fact: Fact, action: ApprovalRequested) -> list[SpanRecord]:
        self._approval_requested_at(action, fact.at)
        return []

    def _approval_requested_at(self, action: ApprovalRequested, at: str) -> None:
        tool = self._tools.get((action.chat, action.tool_call_id))
        if tool is None or not tool.trace_id:
            return
        self._approvals[action.approval] = _Open(
            name="await_approval",
            trace_id=tool.trace_id,
            span_id=span_id_of("approval", action.approval),
            parent_id=tool.span_id,
            start=at,
            attributes={
                TOOL_NAME: action.tool_name,
                TOOL_CALL_ID: action.tool_call_id,
                "orchestrator.approval": action.approval,
                "orchestrator.approval.requested_by": action.requested_by,
                "orchestrator.approval.routed_to": action.routed_to,
                "orchestrator.approval.policy_scope": action.policy_scope,
            },
        )

    def _approval_resolved(self, fact: Fact, action: ApprovalResolved) -> list[SpanRecord]:
        span = self._approvals.pop(action.approval, None)
        if span is None:
            return []
        span.attributes["orchestrator.approval.decision"] = action.decision.value
        span.attributes["orchestrator.approval.resolved_by"] = action.resolved_by
        if action.principal is not None:
            span.attributes["orchestrator.approval.principal"] = action.principal
        return [span.end(fact.at)]

    def _end_approvals(self, tool_span: int, at: str, error: str | None) -> list[SpanRecord]:
        ended = [a for a in self._approvals.values() if a.parent_id == tool_span]
        for approval in ended:
            del self._approvals[str(approval.attributes["orchestrator.approval"])]
        return [a.end(at, error=error) for a in ended]


def _root(state: TeamState, task: str) -> str:
    """The root task (the prompt's) that ``task`` was delegated under."""
    seen = {task}
    record = state.tasks.get(task)
    while record is not None and record.parent_task is not None and record.parent_task not in seen:
        seen.add(record.parent_task)
        task = record.parent_task
        record = state.tasks.get(task)
    return task


#: The states of a tool call that has not ended: a resumed run's fold opens their spans.
_OPEN_CALLS: Final = (
    ToolCallStreamingState,
    ToolCallPendingConfirmationState,
    ToolCallRunningState,
)


def _turn_start_of(state: TeamState, request: ApprovalRequested) -> str:
    """When the turn an approval's call belongs to started (an approval's best known
    start, after a restart)."""
    chat = state.chats.get(request.chat)
    turn = None if chat is None else chat.active_turn
    return turn.started_at if turn is not None else ""


def _kind_of(tool: str) -> str:
    if mcp_tool_ref(tool) is not None:
        return "mcp"
    return "team" if tool in TEAM_TOOLS else "function"


def _task_error(status: TaskStatus, summary: str) -> str | None:
    if status is TaskStatus.COMPLETED:
        return None
    if status is TaskStatus.KILLED:
        return CANCELLED
    return summary or str(status)


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": redact_text(text)}]}])


def _put_arguments(span: _Open, action: ChatToolCallReadyAction) -> None:
    if isinstance(action.tool_input, str):
        span.attributes[TOOL_ARGUMENTS] = redact_text(action.tool_input)


def _result_text(action: ChatToolCallCompleteAction) -> str:
    texts = [
        text
        for part in action.result.content or ()
        if isinstance(text := getattr(part, "text", None), str)
    ]
    return "\n".join(texts)


@attrs.frozen(kw_only=True)
class SpanIds:
    """A span's ids, as exported (and as a trace UI's URL names them: lowercase hex)."""

    trace_id: int
    span_id: int

    @property
    def trace_hex(self) -> str:
        return f"{self.trace_id:032x}"

    @property
    def span_hex(self) -> str:
        return f"{self.span_id:016x}"


@attrs.frozen(kw_only=True)
class ChatSpans:
    """The spans of one chat's work: its turns' ``invoke_agent`` spans by turn id, its tool
    calls' ``execute_tool`` spans by call id (what the web view links to a trace UI)."""

    turns: Mapping[str, SpanIds]
    tool_calls: Mapping[str, SpanIds]


def chat_spans(session: str, facts: Iterable[Fact], chat: str) -> ChatSpans:
    """The ids of ``chat``'s spans in ``session``, its ``facts`` folded as the runtime folds
    them (so they are the exported ones, traced or not). A turn or call the fold cannot
    place in a trace (a chat outside any prompt's run) has none."""
    fold = SpanFold(session)
    turns: dict[str, SpanIds] = {}
    calls: dict[str, SpanIds] = {}
    for fact in facts:
        fold.apply(fact)
        if fact.channel != chat:
            continue
        action = fact.action
        if isinstance(action, ChatTurnStartedAction):
            span = fold._turns.get((chat, action.turn_id))
            if span is not None and span.trace_id:
                turns[action.turn_id] = SpanIds(trace_id=span.trace_id, span_id=span.span_id)
        elif isinstance(action, ChatToolCallStartAction | ChatToolCallReadyAction):
            span = fold._tools.get((chat, action.tool_call_id))
            if span is not None and span.trace_id and action.tool_call_id not in calls:
                calls[action.tool_call_id] = SpanIds(trace_id=span.trace_id, span_id=span.span_id)
    return ChatSpans(turns=turns, tool_calls=calls)


#: The session-wide facts :func:`chat_spans` needs besides the chat's own: those that place
#: a chat in a run's trace (runs, members, tasks, handoffs). Given only these and the facts
#: on the chat's channel it answers as it does given every fact of the session, so a reader
#: need not decode the other chats' facts (a 1,000-worker session's 18,000) for one chat.
CHAT_SPAN_TEAM_TYPES: Final[frozenset[str]] = frozenset(
    {
        "team/runStarted",
        "team/memberJoined",
        "team/taskCreated",
        "team/taskStarted",
        "team/handoff",
        "team/taskFinished",
        "team/runFinished",
    }
)

_HANDLERS: Final[dict[type, Any]] = {
    RunStarted: SpanFold._run_started,
    MemberJoined: SpanFold._member_joined,
    TaskCreated: SpanFold._task_created,
    TaskStarted: SpanFold._task_started,
    HandoffRecorded: SpanFold._handoff,
    TaskFinished: SpanFold._task_finished,
    RunFinished: SpanFold._run_finished,
    ChatTurnStartedAction: SpanFold._turn_started,
    ChatTurnCompleteAction: SpanFold._turn_ended,
    ChatTurnCancelledAction: SpanFold._turn_ended,
    ChatErrorAction: SpanFold._turn_ended,
    ChatUsageAction: SpanFold._usage,
    ChatToolCallStartAction: SpanFold._tool_opened,
    ChatToolCallReadyAction: SpanFold._tool_opened,
    ChatToolCallCompleteAction: SpanFold._tool_completed,
    ApprovalRequested: SpanFold._approval_requested,
    ApprovalResolved: SpanFold._approval_resolved,
}
