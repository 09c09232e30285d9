"""The agent channel's wire: client messages in, live events out (``/ws``).

A client sends JSON objects ``{"channel": ..., "type": ..., ...}`` (one per WebSocket text
frame); :func:`parse_client_message` reads one into a typed message or raises
:class:`~orchestrator.base._errors.PeerProtocolError` naming what is wrong and where
(``$.taskId: expected a string``). Channels: ``agent`` (the spec's prompt, settings, abort,
tool_response, approve, reject; and ``end``, which ends the session's conversation), ``team``
(subscribe to Agent UI envelopes from a sequence).

:class:`AgentChannelProjector` turns a session's facts, as they are recorded, into events:

- for the coordinator chat, the events the spec lists: ``prompt``, ``text``, ``thinking``,
  ``tool_invocation``, ``tool_result``, ``result``/``error`` then ``done`` per turn;
- for every chat of the team, ``question`` (with the ``toolCallId`` a ``tool_response``
  answers);
- for every chat of the team, ``permission_request`` / ``permission_resolved`` for approvals
  routed to the user;
- for every chat of the team, ``remote_task`` (a remote teammate's task changed state) and
  ``artifact`` (an artifact was recorded), each with a ``text`` that says it in words.

A finished turn's live events equal the history rows the journal keeps for it
(:func:`~orchestrator.protocols._agent_messages.turn_messages`). So a replay looks like the live
run.

Pure: facts and state in, JSON-ready dicts out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from orchestrator.ahp import json_type
from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputRequestedAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import (
    ChatInputRequest,
    ChatState,
    MarkdownResponsePart,
    ReasoningResponsePart,
    ToolCallResponsePart,
    ToolCallStreamingState,
    Turn,
    TurnState,
    known_questions,
)
from orchestrator.base import JSON_LIMITS, JsonLimits, PeerProtocolError
from orchestrator.core import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    MemberJoined,
    MemberName,
    TeamState,
    ViewUpdated,
    member_name,
    open_questions,
)

from ._agent_messages import notice_event, turn_messages
from ._json_frames import decode_object, shown

__all__ = [
    "Abort",
    "AgentChannelProjector",
    "Approve",
    "ClientMessage",
    "ClientMessageError",
    "End",
    "Prompt",
    "Reject",
    "Settings",
    "TeamSubscribe",
    "ToolResponse",
    "agent_event",
    "channel_of",
    "model_choice",
    "parse_client_message",
    "replay",
    "view_update",
]

PROTOCOL: Final = "agent-channel"
#: The prefix of the id of the input request an ``ask`` tool call puts (see
#: :func:`orchestrator.core.input_request_id`).
_INPUT_PREFIX: Final = "input-"


# ─── Client messages ─────────────────────────────────────────────────────────


#: How a ``prompt`` reaches the coordinator: ``queued`` (the default) starts its next turn,
#: ``steering`` joins the running turn at its next model round (AHP's pending message kinds).
PROMPT_KINDS: Final = ("queued", "steering")


@attrs.frozen(kw_only=True)
class Prompt:
    """Start a turn of the session's coordinator (queued behind a running one), or, with
    ``kind="steering"``, steer the turn that runs."""

    prompt: str
    task_id: str | None = None
    kind: str = "queued"  # Invariant: kind in PROMPT_KINDS


@attrs.frozen(kw_only=True)
class Settings:
    provider: str | None = None
    model: str | None = None


@attrs.frozen(kw_only=True)
class Abort:
    task_id: str


@attrs.frozen(kw_only=True)
class End:
    """End the session's conversation: one waiting for its next message ends
    ``completed``, one at work is cancelled (the daemon's ``end``; AHP's
    ``disposeSession``)."""


@attrs.frozen(kw_only=True)
class ToolResponse:
    tool_call_id: str
    result: str


@attrs.frozen(kw_only=True)
class Approve:
    request_id: str


@attrs.frozen(kw_only=True)
class Reject:
    request_id: str


@attrs.frozen(kw_only=True)
class TeamSubscribe:
    """Send the session's Agent UI envelopes after ``from_sequence``, then live ones."""

    from_sequence: int = 0


ClientMessage = Prompt | Settings | Abort | End | ToolResponse | Approve | Reject | TeamSubscribe

# Per (channel, type): the message class and its fields as (wire name, attribute, type,
# required). One table, so the parser and its error messages cannot drift apart.
_Field = tuple[str, str, type, bool]
_MESSAGES: Final[Mapping[tuple[str, str], tuple[type[ClientMessage], tuple[_Field, ...]]]] = {
    ("agent", "prompt"): (
        Prompt,
        (
            ("prompt", "prompt", str, True),
            ("taskId", "task_id", str, False),
            ("kind", "kind", str, False),
        ),
    ),
    ("agent", "settings"): (
        Settings,
        (("provider", "provider", str, False), ("model", "model", str, False)),
    ),
    ("agent", "abort"): (Abort, (("taskId", "task_id", str, True),)),
    ("agent", "end"): (End, ()),
    ("agent", "tool_response"): (
        ToolResponse,
        (("toolCallId", "tool_call_id", str, True), ("result", "result", str, True)),
    ),
    ("agent", "approve"): (Approve, (("requestId", "request_id", str, True),)),
    ("agent", "reject"): (Reject, (("requestId", "request_id", str, True),)),
    ("team", "subscribe"): (
        TeamSubscribe,
        (("fromSequence", "from_sequence", int, False),),
    ),
}
_CHANNELS: Final = sorted({channel for channel, _ in _MESSAGES})
_TYPE_NAMES: Final = {str: "a string", int: "an integer"}
#: Longest text field a client may send (a prompt of a few pages is fine; a book is not).
MAX_TEXT: Final = 100_000


_CHANNEL_OF: Final[Mapping[type[ClientMessage], str]] = {
    cls: channel for (channel, _), (cls, _) in _MESSAGES.items()
}


class ClientMessageError(PeerProtocolError):
    """A client frame that breaks the wire. ``channel`` is the channel the frame was sent
    on, so the error is answered on it; ``agent`` when the frame names no channel we know."""

    def __init__(self, message: str, *, path: str = "$", channel: str = "agent") -> None:
        super().__init__(message, path=path, protocol=PROTOCOL)
        self.channel = channel


def channel_of(message: ClientMessage) -> str:
    """The channel ``message`` came on (``agent``, ``team``)."""
    return _CHANNEL_OF[type(message)]


def _error(message: str, path: str = "$", channel: str = "agent") -> ClientMessageError:
    return ClientMessageError(message, path=path, channel=channel)


def parse_client_message(
    frame: str | bytes, *, max_bytes: int, limits: JsonLimits = JSON_LIMITS
) -> ClientMessage:
    """Read one client frame; :class:`ClientMessageError` says what is wrong, where, and on
    which channel."""
    try:
        data = decode_object(frame, max_bytes=max_bytes, protocol=PROTOCOL, limits=limits)
    except PeerProtocolError as exc:
        raise _error(exc.message, exc.path) from exc
    channel = data.get("channel")
    if not isinstance(channel, str) or channel not in _CHANNELS:
        raise _error(f"expected one of {', '.join(_CHANNELS)}, got {shown(channel)}", "$.channel")
    kind = data.get("type")
    known = sorted(t for c, t in _MESSAGES if c == channel)
    if not isinstance(kind, str) or (channel, kind) not in _MESSAGES:
        raise _error(
            f"the {channel} channel takes {', '.join(known)}; got {shown(kind)}", "$.type", channel
        )
    cls, fields = _MESSAGES[(channel, kind)]
    values: dict[str, Any] = {}
    for wire, attribute, expected, required in fields:
        value = data.get(wire)
        path = f"$.{wire}"
        if value is None:
            if required:
                raise _error(f"{kind} needs {wire} ({_TYPE_NAMES[expected]})", path, channel)
            continue
        # bool is an int to Python, never to a client.
        if not isinstance(value, expected) or isinstance(value, bool):
            raise _error(f"expected {_TYPE_NAMES[expected]}, got {json_type(value)}", path, channel)
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise _error(f"{len(value)} characters; the limit is {MAX_TEXT}", path, channel)
        if isinstance(value, int) and value < 0:
            raise _error("expected a sequence number of 0 or more", path, channel)
        values[attribute] = value
    if isinstance(values.get("prompt"), str) and not values["prompt"].strip():
        raise _error("the prompt is empty", "$.prompt", channel)
    if cls is Prompt:
        prompt_kind = values.get("kind", "queued")
        if prompt_kind not in PROMPT_KINDS:
            raise _error(
                f"expected one of {', '.join(PROMPT_KINDS)}, got {shown(prompt_kind)}",
                "$.kind",
                channel,
            )
        if prompt_kind == "steering" and "task_id" in values:
            raise _error(
                "a steering message joins the running turn: it starts no task to name",
                "$.taskId",
                channel,
            )
    return cls(**values)


#: A model name a client may choose (``gpt-4o-mini``, ``qwen2.5:7b``, ``org/model``): no
#: spaces or control characters, 200 characters at most.
_MODEL_NAME: Final = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")


def model_choice(value: str, *, path: str = "$.model") -> str:
    """``value`` as the model a client chose for a new session (``/ws?team=T&model=M``);
    :class:`ClientMessageError` at ``path`` when it is no model name."""
    if not _MODEL_NAME.fullmatch(value):
        raise _error(
            f"expected a model name (1 to 200 characters, no spaces or control characters), "
            f"got {shown(value[:60])}",
            path,
        )
    return value


# ─── Server events ───────────────────────────────────────────────────────────


def agent_event(kind: str, **fields: Any) -> dict[str, Any]:
    """An event on the agent channel: ``{"channel": "agent", "type": kind, ...fields}``."""
    return {"channel": "agent", "type": kind, **fields}


def tool_call_of_request(request_id: str) -> str:
    """The ``ask`` tool call whose question ``request_id`` is (what ``tool_response`` names)."""
    return request_id.removeprefix(_INPUT_PREFIX)


TaskIds = Callable[[str | None], str | None]


class AgentChannelProjector:
    """Projects one session's facts to agent-channel events, fact by fact.

    ``task_of``: the client's ``taskId`` for a coordinator turn, given the turn's
    ``queuedMessageId`` (None for the run's first turn); None when no client named one.
    """

    def __init__(self, *, task_of: TaskIds = lambda _: None) -> None:
        self._task_of = task_of
        self._coordinator: str | None = None
        self._task: str | None = None  # the taskId of the coordinator's running turn

    def prime(self, state: TeamState, *, running_task: str | None = None) -> None:
        """Start after ``state`` (a client reattaching): learn its coordinator, and the
        ``taskId`` of the coordinator's running turn (its result and done carry it)."""
        self._coordinator = state.coordinator_chat()
        self._task = running_task

    def feed(self, fact: Fact, state: TeamState) -> list[dict[str, Any]]:
        """The events ``fact`` makes; ``state`` is the session's state with it applied."""
        action = fact.action
        chat = fact.channel
        match action:
            case MemberJoined(chat=joined):
                if self._coordinator is None:
                    self._coordinator = joined
                return []
            case ApprovalRequested() if action.routed_to == USER:
                return [permission_request(action, member_name(state, action.chat))]
            case ApprovalResolved():
                record = state.approvals.get(action.approval)
                if record is None or record.request.routed_to != USER:
                    return []
                return [
                    agent_event(
                        "permission_resolved",
                        requestId=action.approval,
                        decision=str(action.decision),
                        **({"by": action.principal} if action.principal else {}),
                    )
                ]
            case ViewUpdated(view_type=view_type, content=content):
                return [view_update(view_type, content)]
            case ChatInputRequestedAction(request=request):
                return [question(chat, request, member_name(state, chat))]
            case ChatResponsePartAction(part=part) if chat != self._coordinator:
                # A worker's remote task state or artifact: said in words, naming the worker.
                notice = notice_event(part)
                if notice is None:
                    return []
                asker = member_name(state, chat)
                return [
                    {
                        **notice,
                        "agentId": chat,
                        "agentName": asker.agent if asker is not None else "",
                        **_asker_fields(asker),
                    }
                ]
        if chat != self._coordinator:
            return []
        return self._coordinator_event(fact, state)

    def _coordinator_event(self, fact: Fact, state: TeamState) -> list[dict[str, Any]]:
        action = fact.action
        chat_state = state.chats.get(fact.channel)
        match action:
            case ChatTurnStartedAction(message=message, queued_message_id=queued):
                self._task = self._task_of(queued)
                return [self._tagged(agent_event("prompt", prompt=message.text))]
            case ChatResponsePartAction(part=MarkdownResponsePart(content=content)) if content:
                return [agent_event("text", content=content)]
            case ChatResponsePartAction(part=ReasoningResponsePart(content=content)) if content:
                return [agent_event("thinking", content=content)]
            case ChatResponsePartAction(part=part):
                # An artifact of the coordinator's own tools, as its turn's history has it.
                notice = notice_event(part)
                return [] if notice is None else [notice]
            case ChatDeltaAction(content=content) if content:
                return [agent_event("text", content=content)]
            case ChatReasoningAction(content=content) if content:
                return [agent_event("thinking", content=content)]
            case ChatToolCallReadyAction(turn_id=turn_id, tool_call_id=call_id):
                return self._from_turn(chat_state, turn_id, call_id, "tool_invocation")
            case ChatToolCallCompleteAction(turn_id=turn_id, tool_call_id=call_id) | (
                ChatToolCallDeniedAction(turn_id=turn_id, tool_call_id=call_id)
            ):
                return self._from_turn(chat_state, turn_id, call_id, "tool_result")
            case (
                ChatTurnCompleteAction(turn_id=turn_id)
                | ChatErrorAction(turn_id=turn_id)
                | (ChatTurnCancelledAction(turn_id=turn_id))
            ):
                turn = _turn(chat_state, turn_id)
                events = turn_messages(turn)[-2:] if turn is not None else []
                tagged = [self._tagged(e) for e in events]
                self._task = None
                return tagged
        return []

    def _tagged(self, event: dict[str, Any]) -> dict[str, Any]:
        return event if self._task is None else {**event, "taskId": self._task}

    def _from_turn(
        self, chat: ChatState | None, turn_id: str, call_id: str, kind: str
    ) -> list[dict[str, Any]]:
        """The ``kind`` event a turn's history has for tool call ``call_id``, as it stands."""
        turn = _turn(chat, turn_id)
        if turn is None:
            return []
        only = attrs.evolve(
            turn,
            response_parts=tuple(
                p
                for p in turn.response_parts
                if isinstance(p, ToolCallResponsePart) and p.tool_call.tool_call_id == call_id
            ),
        )
        return [e for e in turn_messages(only) if e["type"] == kind]


def permission_request(request: ApprovalRequested, asker: MemberName | None) -> dict[str, Any]:
    """An approval routed to the user: who asked (the worker's chat and agent, its number
    among that agent's chats and its task's title), for what."""
    return agent_event(
        "permission_request",
        requestId=request.approval,
        agentId=request.chat,
        agentName=request.requested_by,
        **_asker_fields(asker),
        toolName=request.tool_name,
        summary=request.summary,
    )


def question(chat: str, request: ChatInputRequest, asker: MemberName | None) -> dict[str, Any]:
    """A question a chat put; ``tool_response`` answers it by ``toolCallId``."""
    asked = [q.message for q in known_questions(request.questions) if q.message]
    return agent_event(
        "question",
        questions=asked or [request.message or ""],
        toolCallId=tool_call_of_request(request.id),
        agentId=chat,
        agentName=asker.agent if asker is not None else "",
        **_asker_fields(asker),
    )


def _asker_fields(asker: MemberName | None) -> dict[str, Any]:
    """``agentNumber`` and ``taskTitle``: which of its agent's chats asks, and for what (the
    spec's events take added fields; a client that does not know them ignores them)."""
    if asker is None:
        return {}
    fields: dict[str, Any] = {"agentNumber": asker.number}
    if asker.task_title is not None:
        fields["taskTitle"] = asker.task_title
    return fields


def view_update(view_type: str, content: Any) -> dict[str, Any]:
    return {"channel": "views", "type": "view_update", "view_type": view_type, "content": content}


def replay(state: TeamState) -> list[dict[str, Any]]:
    """What a reattaching client needs beside the history of finished turns: the
    coordinator's running turn so far, the approvals and questions waiting for the user,
    and the session's active views."""
    events: list[dict[str, Any]] = []
    chat = state.coordinator_chat()
    chat_state = state.chats.get(chat) if chat is not None else None
    active = chat_state.active_turn if chat_state is not None else None
    turn = _turn(chat_state, active.id) if active is not None else None
    if turn is not None:
        # A call whose input still streams comes live with chat/toolCallReady, as it does
        # to a client that saw the turn start: replaying it too would show it twice.
        ready = tuple(
            p
            for p in turn.response_parts
            if not (
                isinstance(p, ToolCallResponsePart)
                and isinstance(p.tool_call, ToolCallStreamingState)
            )
        )
        events += turn_messages(attrs.evolve(turn, response_parts=ready))[:-2]  # no result yet
    events += [
        permission_request(record.request, member_name(state, record.request.chat))
        for record in state.pending_approvals()
        if record.request.routed_to == USER
    ]
    for asking, request in open_questions(state):
        events.append(question(asking, request, member_name(state, asking)))
    views = state.run.views if state.run is not None else {}
    events += [view_update(view_type, content) for view_type, content in views.items()]
    return events


def _turn(chat: ChatState | None, turn_id: str) -> Turn | None:
    """Turn ``turn_id`` of ``chat``, running (as a :class:`Turn` so far) or finished."""
    if chat is None:
        return None
    for turn in reversed(chat.turns):
        if turn.id == turn_id:
            return turn
    active = chat.active_turn
    if active is None or active.id != turn_id:
        return None
    return Turn(
        id=active.id,
        message=active.message,
        response_parts=tuple(active.response_parts),
        state=TurnState.COMPLETE,
    )
