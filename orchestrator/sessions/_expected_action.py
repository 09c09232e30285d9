"""Which fact will carry an AHP client's action: a test of actions that can be written down.

An AHP client's action (``dispatchAction``) is carried out by the runtime as facts of its
own making; the dispatcher says first which fact will carry it
(:meth:`LiveSession.expect_origin`), and that fact is recorded with the client's origin.
The test is an :class:`ExpectedAction` rather than a function, so that it can travel. A node
that follows another node's session forwards the client's action to the owner with its expected
actions and origins (see :mod:`orchestrator.sessions._forwarding`). The owner's recorder then
stamps the fact as its own dispatcher would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from orchestrator.ahp.actions import (
    ActionOrigin,
    ChatInputCompletedAction,
    ChatPendingMessageSetAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatTurnCancelledAction,
    ChatTurnStartedAction,
)
from orchestrator.base import PeerProtocolError
from orchestrator.core import Action

__all__ = ["ExpectedAction", "decode_origin", "encode_origin"]

Kind = Literal["turn", "pending", "confirmation", "completion", "cancellation"]
_KINDS: Final = ("turn", "pending", "confirmation", "completion", "cancellation")


@attrs.frozen(kw_only=True)
class ExpectedAction:
    """The action that will carry a client's: ``kind`` says which, ``key`` the message
    text (``turn``, ``pending``), the tool call (``confirmation``), the input request
    (``completion``) or the turn (``cancellation``); ``pending`` is the pending message's
    kind (queued, steering)."""

    kind: Kind
    key: str
    pending: str = ""

    def __call__(self, action: Action) -> bool:
        match self.kind:
            case "turn":
                return isinstance(action, ChatTurnStartedAction) and action.message.text == self.key
            case "pending":
                return (
                    isinstance(action, ChatPendingMessageSetAction)
                    and action.kind == self.pending
                    and action.message.text == self.key
                )
            case "confirmation":
                return (
                    isinstance(action, ChatToolCallApprovedAction | ChatToolCallDeniedAction)
                    and action.tool_call_id == self.key
                )
            case "completion":
                return (
                    isinstance(action, ChatInputCompletedAction) and action.request_id == self.key
                )
            case _:
                return isinstance(action, ChatTurnCancelledAction) and action.turn_id == self.key

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "key": self.key, "pending": self.pending}

    @classmethod
    def from_json(cls, data: Any) -> ExpectedAction:
        """:class:`PeerProtocolError` for anything :meth:`to_json` does not make."""
        if not isinstance(data, Mapping):
            raise PeerProtocolError("an expected action is an object", protocol="forwarding")
        kind, key, pending = data.get("kind"), data.get("key"), data.get("pending", "")
        if kind not in _KINDS or not isinstance(key, str) or not isinstance(pending, str):
            raise PeerProtocolError(
                f"not an expected action: {dict(data)!r:.200}", protocol="forwarding"
            )
        return cls(kind=kind, key=key, pending=pending)


def encode_origin(origin: ActionOrigin) -> dict[str, Any]:
    return {"clientId": origin.client_id, "clientSeq": origin.client_seq}


def decode_origin(data: Any) -> ActionOrigin:
    """:class:`PeerProtocolError` for anything :func:`encode_origin` does not make."""
    if not isinstance(data, Mapping):
        raise PeerProtocolError("an origin is an object", protocol="forwarding")
    client, seq = data.get("clientId"), data.get("clientSeq")
    if not isinstance(client, str) or not isinstance(seq, int) or isinstance(seq, bool):
        raise PeerProtocolError(f"not an origin: {dict(data)!r:.200}", protocol="forwarding")
    return ActionOrigin(client_id=client, client_seq=seq)
