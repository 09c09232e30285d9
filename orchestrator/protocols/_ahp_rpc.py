"""The AHP transport, pure: JSON-RPC framing, the method table, version negotiation, and what
an AHP client sees of a session (its channels' snapshots and actions).

No IO and no trio: :mod:`orchestrator.server._ahp_socket` feeds frames in and sends frames out.

Framing
-------
One JSON-RPC 2.0 message per text frame. :func:`parse_call` turns a frame into a
:class:`Call` (a request, or a notification when ``id`` is None) with typed params, or raises
:class:`~orchestrator.base.RpcError` with the code the peer gets back:

=========================================  =================================================
the frame                                  error
=========================================  =================================================
binary, or over the size limit             -32600 InvalidRequest
not JSON (or nested too deeply)            -32700 ParseError
not an object (a batch, a string...)       -32600 InvalidRequest
``jsonrpc`` not "2.0", ``id`` not a        -32600 InvalidRequest
string or an integer, no string ``method``
a response (this host sends no requests)   -32600 InvalidRequest
a method this host does not have           -32601 MethodNotFound
params not an object, or not its type      -32602 InvalidParams (with the wire path)
a request sent without an ``id``           -32600 InvalidRequest
=========================================  =================================================

A frame whose ``id`` could not be read is answered with ``"id": null``. A well-formed
*notification* this host cannot carry out is answered the same way (``id: null``): JSON-RPC
leaves notifications unanswered, but a client whose ``dispatchAction`` vanished silently
could not tell why.

What a client sees of a session
-------------------------------
A fact is an AHP action on a channel. Its session-wide ``sequence`` is the action's
``serverSeq``. So a cursor is a ``serverSeq`` per channel (within one session: each session
numbers its own facts). :func:`channel_envelopes` says which envelopes a channel gets for a
fact:

- team facts (``team/*``) are not AHP actions and are left out;
- except the run's start, which gives the session its title: it reaches the session channel as
  ``session/titleChanged``;
- catalog actions of hidden chats are left out.

A fact's envelopes are on its own channel (``fact.channel``), with one exception: the session
channel's catalog updates. A chat's catalog entry (``ChatSummary``) follows its chat's state,
and the fold derives the change each chat fact makes (issue 35: it is not recorded). The
session channel gets that ``session/chatUpdated`` (``session/chatAdded`` when a field is
cleared) with the ``serverSeq`` of the chat fact that made it and no ``origin``. No session
fact has that sequence, and a fact changes at most its own chat's entry, so the session
channel's ``serverSeq`` stays strictly increasing. Its ``modifiedAt`` is the fact's ``at``.
A server finds the subscriptions a fact concerns by its channel, and by its session when the
fact derived a catalog update. A recorded ``session/chatUpdated`` (journals before issue 35)
is not sent: the chat facts before it derived what it says.

Snapshots leave hidden chats out of the catalog the same way (:func:`session_snapshot_state`).

Actions are the only way a channel's state changes. Invariant, for every channel and every
``n``: take a snapshot at ``n``. Fold onto it, with the AHP reducers, the envelopes
:func:`channel_envelopes` gives for the facts after it. That gives the snapshot at any later
point. ``tests/e2e/test_ahp_fold.py`` checks it on real runs, as an independent client. This
holds because the session channel's state is changed by nothing but ``session/*`` facts and
the run's start, and by the catalog updates derived from chat facts, which are sent. The
run's start makes one change, the title, and that is announced. A session
not yet prompted shows :func:`~orchestrator.core._team_reducer.new_session_state`, the state the
run starts from. Its status is idle, and stays what session actions make it. No session action
tells a session's activity, which its chats' catalog entries carry. The one field a client
cannot reproduce is a chat's ``modifiedAt``. The chat reducer stamps the folding side's own
clock on it, as the upstream reducer does. The catalog's copy arrives by the derived
``session/chatUpdated``.

An envelope carries the ``origin`` of its fact (:attr:`~orchestrator.core._facts.Fact.origin`):
the client whose dispatched action the fact carries out, the same for every subscriber and in
a replay from the journal; a fact the host made on its own has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from orchestrator.ahp import structure, unstructure
from orchestrator.ahp.actions import (
    ActionEnvelope,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    SessionTitleChangedAction,
)
from orchestrator.ahp.commands import (
    CreateChatParams,
    CreateSessionParams,
    DispatchActionParams,
    DisposeChatParams,
    DisposeSessionParams,
    ErrorCode,
    InitializeParams,
    JsonRpcError,
    JsonRpcErrorResponse,
    JsonRpcNotification,
    JsonRpcSuccess,
    ListSessionsParams,
    PingParams,
    ReconnectParams,
    RequestId,
    SubscribeParams,
    UnsubscribeParams,
)
from orchestrator.ahp.state import ChatInteractivity, SessionState
from orchestrator.base import (
    JSON_LIMITS,
    JsonLimits,
    PeerProtocolError,
    RpcError,
    evolve,
    parse_json,
)
from orchestrator.core import Fact, RunStarted, SummaryUpdate, new_session_state

__all__ = [
    "Call",
    "channel_envelopes",
    "error_frame",
    "negotiate",
    "notification_frame",
    "parse_call",
    "result_frame",
    "session_snapshot_state",
]

#: The protocol versions this host speaks, as SemVer caret ranges (``^0.7.0``: 0.7.x). The
#: schemas it implements are AHP 0.7.0 with the unreleased 0.8.0 entries.
SUPPORTED_VERSIONS: Final = ("^0.7.0", "^0.8.0")

METHODS: Final[Mapping[str, type]] = {
    "initialize": InitializeParams,
    "ping": PingParams,
    "reconnect": ReconnectParams,
    "subscribe": SubscribeParams,
    "unsubscribe": UnsubscribeParams,
    "dispatchAction": DispatchActionParams,
    "createSession": CreateSessionParams,
    "disposeSession": DisposeSessionParams,
    "listSessions": ListSessionsParams,
    "createChat": CreateChatParams,
    "disposeChat": DisposeChatParams,
}
"""Method → the type of its params."""

NOTIFICATIONS: Final = frozenset({"unsubscribe", "dispatchAction"})
"""Methods AHP defines as notifications; the others are requests and need an ``id``."""

_SEMVER: Final = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:[-+].*)?$")


@attrs.frozen(kw_only=True)
class Call:
    """A request (``id`` set) or a notification (``id`` None) with its typed params."""

    id: RequestId | None
    method: str
    params: Any

    @property
    def is_request(self) -> bool:
        return self.id is not None


def parse_call(frame: str | bytes, *, max_bytes: int, limits: JsonLimits = JSON_LIMITS) -> Call:
    """The call a frame carries; :class:`RpcError` (see the module docstring) if none."""
    if isinstance(frame, bytes):
        raise RpcError(ErrorCode.INVALID_REQUEST, "send JSON-RPC as text frames, not binary")
    if len(frame) > max_bytes or len(frame.encode("utf-8", "surrogatepass")) > max_bytes:
        raise RpcError(ErrorCode.INVALID_REQUEST, f"the frame is over {max_bytes} bytes")
    try:
        data = parse_json(frame, protocol="ahp", limits=limits)
    except PeerProtocolError as exc:
        # Not JSON, or JSON the gate refuses (text that cannot be encoded, too deep, a
        # number out of range): a parse error, naming where.
        where = "" if exc.path == "$" else f"{exc.path}: "
        raise RpcError(ErrorCode.PARSE_ERROR, f"{where}{exc.message}") from None
    if not isinstance(data, dict):
        kind = "a batch (an array)" if isinstance(data, list) else type(data).__name__
        raise RpcError(
            ErrorCode.INVALID_REQUEST, f"expected one JSON-RPC message (an object), got {kind}"
        )
    raw_id = data.get("id")
    has_id = "id" in data
    if has_id and not _is_id(raw_id):
        raise RpcError(ErrorCode.INVALID_REQUEST, "id: expected a string or an integer")
    request_id: RequestId | None = raw_id if has_id else None
    if data.get("jsonrpc") != "2.0":
        raise RpcError(ErrorCode.INVALID_REQUEST, 'jsonrpc: expected "2.0"', id=request_id)
    method = data.get("method")
    if "method" not in data and ("result" in data or "error" in data):
        raise RpcError(
            ErrorCode.INVALID_REQUEST,
            "a response, but this host sends no requests",
            id=request_id,
        )
    if not isinstance(method, str) or not method:
        raise RpcError(ErrorCode.INVALID_REQUEST, "method: expected a string", id=request_id)
    params_type = METHODS.get(method)
    if params_type is None:
        raise RpcError(
            ErrorCode.METHOD_NOT_FOUND,
            f"no method {method!r} (methods: {', '.join(sorted(METHODS))})",
            id=request_id,
        )
    if request_id is None and method not in NOTIFICATIONS:
        raise RpcError(ErrorCode.INVALID_REQUEST, f"{method} is a request: give it an id", id=None)
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(ErrorCode.INVALID_PARAMS, "params: expected an object", id=request_id)
    try:
        typed: object = structure(params, params_type)
    except PeerProtocolError as exc:
        path = "params" + exc.path.removeprefix("$")
        raise RpcError(ErrorCode.INVALID_PARAMS, f"{path}: {exc.message}", id=request_id) from None
    return Call(id=request_id, method=method, params=typed)


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def negotiate(offered: tuple[str, ...]) -> str:
    """The version to speak: the highest offered one within :data:`SUPPORTED_VERSIONS`.

    :class:`RpcError` ``UnsupportedProtocolVersion`` (-32005), whose data lists the
    supported versions, if none is.
    """
    best: tuple[tuple[int, int, int], str] | None = None
    for version in offered:
        match = _SEMVER.match(version)
        if match is None:
            continue
        numbers = (int(match[1]), int(match[2]), int(match[3]))
        if not any(_caret(numbers, supported) for supported in SUPPORTED_VERSIONS):
            continue
        if best is None or numbers > best[0]:
            best = (numbers, version)
    if best is None:
        raise RpcError(
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            f"none of {', '.join(offered) or 'no versions'} is supported "
            f"(supported: {', '.join(SUPPORTED_VERSIONS)})",
            data={"supportedVersions": list(SUPPORTED_VERSIONS)},
        )
    return best[1]


def _caret(version: tuple[int, int, int], supported: str) -> bool:
    """Whether ``version`` is in the caret range ``supported`` (``^0.7.0``: >=0.7.0 <0.8.0)."""
    match = _SEMVER.match(supported.removeprefix("^"))
    assert match is not None
    low = (int(match[1]), int(match[2]), int(match[3]))
    if low[0] > 0:
        return version[0] == low[0] and version >= low
    return version[:2] == low[:2] and version >= low


# ─── Frames out ──────────────────────────────────────────────────────────────


def result_frame(request_id: RequestId, result: object) -> str:
    """The success response to request ``request_id`` (``result`` None: ``null``)."""
    return _dumps(unstructure(JsonRpcSuccess(id=request_id, result=result)))


def error_frame(error: RpcError) -> str:
    """The error response for ``error`` (``"id": null`` when it names no request)."""
    body = JsonRpcError(code=int(error.code), message=error.message, data=error.data)
    return _dumps(unstructure(JsonRpcErrorResponse(id=error.id, error=body)))


def notification_frame(method: str, params: object) -> str:
    """A server → client notification (``action``: ``params`` is an ActionEnvelope)."""
    encoded = unstructure(params)
    return _dumps(unstructure(JsonRpcNotification(method=method, params=encoded)))


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ─── What a client sees of a session ─────────────────────────────────────────


def channel_envelopes(
    fact: Fact,
    channel: str,
    *,
    session_title: str,
    is_hidden: Callable[[str], bool],
    summary: SummaryUpdate | None = None,
) -> list[ActionEnvelope]:
    """The envelopes ``channel`` gets for ``fact`` (see the module docstring), each with the
    fact's ``origin``.

    Args:
        fact: A fact of the session.
        channel: The channel a client follows.
        session_title: The title the run's start gave the session.
        is_hidden: Whether a chat of the session is hidden.
        summary: The catalog update ``fact`` derived, if it made one
            (:meth:`~orchestrator.core.TeamState.summary_update`): the session channel gets it
            at the fact's ``serverSeq``, with no ``origin`` (the host made it).
    """
    action = fact.action
    if isinstance(action, RunStarted):
        if channel != fact.session or fact.channel != fact.session:
            return []
        title = SessionTitleChangedAction(title=session_title)
        return [ActionEnvelope(channel=channel, action=title, server_seq=fact.sequence)]
    if fact.channel != channel:
        if summary is None or channel != fact.session or is_hidden(fact.channel):
            return []
        return [ActionEnvelope(channel=channel, action=summary, server_seq=fact.sequence)]
    if action.type.startswith("team/") or isinstance(action, SessionChatUpdatedAction):
        # A recorded chatUpdated (journals before issue 35) said what its batch's chat facts
        # derive: the client was sent that at those facts.
        return []
    if isinstance(action, SessionChatAddedAction):
        if action.summary.interactivity is ChatInteractivity.HIDDEN:
            return []
    elif isinstance(action, SessionChatRemovedAction) and is_hidden(action.chat):
        return []
    state_action: Any = action
    return [
        ActionEnvelope(
            channel=channel, action=state_action, server_seq=fact.sequence, origin=fact.origin
        )
    ]


def session_snapshot_state(state: SessionState | None) -> SessionState:
    """The session channel's state as clients see it: hidden chats left out of the catalog."""
    if state is None:
        return new_session_state()  # not prompted yet: the run's start only gives it a title
    hidden = [c for c in state.chats if c.interactivity is ChatInteractivity.HIDDEN]
    if not hidden:
        return state
    return evolve(
        state, chats=[c for c in state.chats if c.interactivity is not ChatInteractivity.HIDDEN]
    )
