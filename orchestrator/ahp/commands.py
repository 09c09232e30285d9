"""AHP commands: JSON-RPC 2.0 messages and the params and results of the host's commands.

Plain frozen data named after the ``$defs`` of ``commands.schema.json`` and
``errors.schema.json``; the wire format lives in :mod:`orchestrator.ahp._wire` (the one AHP
converter), the framing and the method table in :mod:`orchestrator.protocols._ahp_rpc`.

* **JSON-RPC**: :data:`JsonRpcMessage` is a request (``id`` + ``method``), a notification
  (``method``, no ``id``), a success (``id`` + ``result``) or an error response (``id`` +
  ``error``), told apart by which keys are present.
* **Connection**: ``initialize`` (:class:`InitializeParams` / :class:`InitializeResult`,
  :class:`Snapshot` of the root, a session or a chat), ``ping``, ``reconnect``
  (:class:`ReconnectParams`, :data:`ReconnectResult`), ``subscribe`` / ``unsubscribe``,
  ``dispatchAction``.
* **Root channel**: ``createSession`` / ``disposeSession`` / ``listSessions``, and the
  notifications its subscribers get as sessions come, go and change their summary:
  ``root/sessionAdded`` (:class:`SessionAddedParams`), ``root/sessionRemoved``
  (:class:`SessionRemovedParams`) and ``root/sessionSummaryChanged``
  (:class:`SessionSummaryChangedParams`, whose :class:`PartialSessionSummary` carries only the
  fields that changed). Its state, :class:`~orchestrator.ahp.state.RootState`, is with the
  other channels' states.
* **Chats**: ``createChat`` (with its :data:`ChatSource`) / ``disposeChat``.
* :class:`ErrorCode`: the JSON-RPC codes and AHP's application codes.

Two extensions of this host are marked where they are declared: :attr:`ReconnectParams.cursors`
(a ``serverSeq`` cursor per channel) and :attr:`ReconnectReplayResult.snapshots` (the channels
a per-channel reconnect could not replay). A peer that does not know them never sees them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, TypeAlias

import attrs

from ._unknown import UnknownVariant, WireObject
from .actions import ActionEnvelope, StateAction
from .state import (
    AgentSelection,
    AnnotationsSummary,
    ChangesSummary,
    ChatState,
    Message,
    ModelSelection,
    ProjectInfo,
    RootState,
    SessionState,
    SessionStatus,
    SessionSummary,
    SideChatSelection,
)

__all__ = [
    "ROOT",
    "SESSION_ADDED",
    "SESSION_REMOVED",
    "SESSION_SUMMARY_CHANGED",
    "ChatSource",
    "ClientCapabilities",
    "CreateChatParams",
    "CreateSessionParams",
    "DispatchActionParams",
    "DisposeChatParams",
    "DisposeSessionParams",
    "ErrorCode",
    "ForkChatSource",
    "Implementation",
    "InitializeParams",
    "InitializeResult",
    "JsonRpcError",
    "JsonRpcErrorResponse",
    "JsonRpcMessage",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "JsonRpcSuccess",
    "ListSessionsParams",
    "ListSessionsResult",
    "PartialSessionSummary",
    "PingParams",
    "ReconnectParams",
    "ReconnectReplayResult",
    "ReconnectResult",
    "ReconnectSnapshotResult",
    "RequestId",
    "RootNotificationParams",
    "SessionAddedParams",
    "SessionForkSource",
    "SessionRemovedParams",
    "SessionSummaryChangedParams",
    "SideChatSource",
    "Snapshot",
    "SnapshotState",
    "SubscribeParams",
    "SubscribeResult",
    "UnknownChatSource",
    "UnsubscribeParams",
]

#: The root channel: connection-level commands name it as their ``channel``.
ROOT = "ahp-root://"


class ErrorCode(enum.IntEnum):
    """JSON-RPC 2.0 error codes, then AHP's application codes (``errors.schema.json``)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    #: Implementation-defined server error (JSON-RPC's -32000 range): too many messages.
    RATE_LIMITED = -32000
    SESSION_NOT_FOUND = -32001
    PROVIDER_NOT_FOUND = -32002
    SESSION_ALREADY_EXISTS = -32003
    TURN_IN_PROGRESS = -32004
    UNSUPPORTED_PROTOCOL_VERSION = -32005
    CONTENT_NOT_FOUND = -32006
    AUTH_REQUIRED = -32007
    NOT_FOUND = -32008
    PERMISSION_DENIED = -32009
    ALREADY_EXISTS = -32010
    #: Implementation-defined server error, clear of AHP's own -32001…-32010: a session
    #: refused by a limit of the host (``data.limit`` names it: ``max_sessions``,
    #: ``max_unprompted_per_token``).
    LIMIT_REACHED = -32090


# ─── JSON-RPC ────────────────────────────────────────────────────────────────

RequestId: TypeAlias = str | int
"""A request's ``id``: a string or an integer (JSON-RPC allows fractions; AHP does not use them)."""


@attrs.frozen(kw_only=True)
class JsonRpcRequest(WireObject):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    method: str
    params: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class JsonRpcNotification(WireObject):
    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class JsonRpcSuccess(WireObject):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    result: Any  # ``null`` is a result: it is always encoded


@attrs.frozen(kw_only=True)
class JsonRpcError(WireObject):
    code: int
    message: str
    data: Any = None


@attrs.frozen(kw_only=True)
class JsonRpcErrorResponse(WireObject):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None  # ``null`` when the request's id could not be read: always encoded
    error: JsonRpcError


JsonRpcMessage: TypeAlias = (
    JsonRpcRequest | JsonRpcNotification | JsonRpcSuccess | JsonRpcErrorResponse
)
"""One message per text frame, told apart by the keys present."""


# ─── initialize, ping, reconnect ─────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class Implementation(WireObject):
    """Who is at one end of the connection (informational: never used to detect features)."""

    name: str
    version: str | None = None
    title: str | None = None


@attrs.frozen(kw_only=True)
class ClientCapabilities(WireObject):
    mcp_apps: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class InitializeParams(WireObject):
    channel: str
    meta: Mapping[str, Any] | None = None
    protocol_versions: tuple[str, ...]
    client_id: str
    client_info: Implementation | None = None
    initial_subscriptions: tuple[str, ...] | None = None
    locale: str | None = None
    capabilities: ClientCapabilities | None = None


SnapshotState: TypeAlias = RootState | SessionState | ChatState | Mapping[str, Any]
"""A snapshot's state, by its resource's scheme; another channel's state stays a JSON object."""


@attrs.frozen(kw_only=True)
class Snapshot(WireObject):
    """A channel's state as of ``from_seq``: its actions after it have ``serverSeq > from_seq``."""

    resource: str
    state: SnapshotState
    from_seq: int


@attrs.frozen(kw_only=True)
class InitializeResult(WireObject):
    protocol_version: str
    server_seq: int
    server_info: Implementation | None = None
    meta: Mapping[str, Any] | None = None
    snapshots: tuple[Snapshot, ...]
    default_directory: str | None = None
    completion_trigger_characters: tuple[str, ...] | None = None
    terminal_command_prefix: str | None = None


@attrs.frozen(kw_only=True)
class PingParams(WireObject):
    channel: str
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ReconnectParams(WireObject):
    channel: str
    meta: Mapping[str, Any] | None = None
    client_id: str
    last_seen_server_seq: int
    subscriptions: tuple[str, ...]
    #: Extension: the last ``serverSeq`` seen on each channel (channels left out use
    #: ``last_seen_server_seq``). This host numbers actions per session, so one number
    #: cannot stand for several sessions.
    cursors: Mapping[str, int] | None = None


@attrs.frozen(kw_only=True)
class ReconnectReplayResult(WireObject):
    type: Literal["replay"] = "replay"
    actions: tuple[ActionEnvelope, ...]
    missing: tuple[str, ...]
    #: Extension, only when the request gave ``cursors``: fresh snapshots of the channels
    #: whose gap could not be replayed.
    snapshots: tuple[Snapshot, ...] | None = None


@attrs.frozen(kw_only=True)
class ReconnectSnapshotResult(WireObject):
    type: Literal["snapshot"] = "snapshot"
    snapshots: tuple[Snapshot, ...]


ReconnectResult: TypeAlias = ReconnectReplayResult | ReconnectSnapshotResult


# ─── subscriptions and actions ───────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class SubscribeParams(WireObject):
    channel: str
    meta: Mapping[str, Any] | None = None
    delivery: Mapping[str, Any] | None = None  # advisory; this host delivers at once
    view: Mapping[str, Any] | None = None  # advisory; this host sends every turn


@attrs.frozen(kw_only=True)
class SubscribeResult(WireObject):
    snapshot: Snapshot | None = None


@attrs.frozen(kw_only=True)
class UnsubscribeParams(WireObject):
    channel: str


@attrs.frozen(kw_only=True)
class DispatchActionParams(WireObject):
    channel: str
    client_seq: int
    action: StateAction


# ─── sessions ────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class SessionForkSource(WireObject):
    session: str
    turn_id: str


@attrs.frozen(kw_only=True)
class CreateSessionParams(WireObject):
    channel: str  # the session URI, chosen by the client
    meta: Mapping[str, Any] | None = None
    provider: str | None = None
    working_directories: tuple[str, ...] | None = None
    fork: SessionForkSource | None = None
    config: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class DisposeSessionParams(WireObject):
    channel: str
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ListSessionsParams(WireObject):
    channel: str
    meta: Mapping[str, Any] | None = None
    limit: int | None = None
    cursor: str | None = None


@attrs.frozen(kw_only=True)
class ListSessionsResult(WireObject):
    next_cursor: str | None = None
    items: tuple[SessionSummary, ...]


# ─── chats ───────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class ForkChatSource(WireObject):
    kind: Literal["fork"] = "fork"
    chat: str
    turn_id: str


@attrs.frozen(kw_only=True)
class SideChatSource(WireObject):
    kind: Literal["sideChat"] = "sideChat"
    chat: str
    turn_id: str
    selection: SideChatSelection | None = None


@attrs.frozen(kw_only=True)
class UnknownChatSource(UnknownVariant):
    """A chat source of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


ChatSource: TypeAlias = ForkChatSource | SideChatSource | UnknownChatSource
"""Where a new chat comes from, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class CreateChatParams(WireObject):
    channel: str  # the session
    meta: Mapping[str, Any] | None = None
    chat: str  # the new chat's URI, chosen by the client
    initial_message: Message | None = None
    model: ModelSelection | None = None
    agent: AgentSelection | None = None
    source: ChatSource | None = None
    working_directories: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class DisposeChatParams(WireObject):
    channel: str  # the chat
    meta: Mapping[str, Any] | None = None


# ─── root-channel notifications ──────────────────────────────────────────────

#: The JSON-RPC methods of the root channel's notifications (``notifications.schema.json``).
SESSION_ADDED: Final = "root/sessionAdded"
SESSION_REMOVED: Final = "root/sessionRemoved"
SESSION_SUMMARY_CHANGED: Final = "root/sessionSummaryChanged"


@attrs.frozen(kw_only=True)
class SessionAddedParams(WireObject):
    """``root/sessionAdded``: a session was created (``channel`` is the root channel)."""

    channel: str
    summary: SessionSummary


@attrs.frozen(kw_only=True)
class SessionRemovedParams(WireObject):
    """``root/sessionRemoved``: the session ``session`` was disposed (or is no longer active)."""

    channel: str
    session: str


@attrs.frozen(kw_only=True)
class PartialSessionSummary(WireObject):
    """The changed fields of a :class:`SessionSummary`; ``None`` means unchanged."""

    # Invariant: self.resource is None and self.provider is None and self.created_at is None
    #   when sent (identity never changes; receivers ignore them)
    provider: str | None = None
    title: str | None = None
    status: SessionStatus | None = None
    activity: str | None = None
    project: ProjectInfo | None = None
    working_directories: tuple[str, ...] | None = None
    annotations: AnnotationsSummary | None = None
    resource: str | None = None
    created_at: str | None = None
    modified_at: str | None = None
    changes: ChangesSummary | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class SessionSummaryChangedParams(WireObject):
    """``root/sessionSummaryChanged``: some summary fields of a known session changed."""

    channel: str
    session: str
    changes: PartialSessionSummary


RootNotificationParams: TypeAlias = (
    SessionAddedParams | SessionRemovedParams | SessionSummaryChangedParams
)
"""The params of a root-channel notification (the method names which)."""
