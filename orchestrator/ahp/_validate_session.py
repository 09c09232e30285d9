"""Validation of session actions: may this action be appended to this session channel?

The session side of :mod:`orchestrator.ahp._validate` (read its theory of operation), with the
same two refusals:

- an action that names what the session does not have (a chat, an active client, a
  customization or MCP server, an input-needed entry);
- one that would change nothing, unless it states a value (:data:`IDEMPOTENT_SESSION_ACTIONS`).

The session has no turn lifecycle, so it needs no table of transitions: one lookup of what the
action names, then one reduction.

Pure: no IO, no trio.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

from orchestrator.base import IllegalTransitionError

from ._session_reducer import reduce_session
from ._unknown import UnknownVariant
from .actions import (
    SessionAction,
    SessionActiveClientRemovedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    SessionConfigChangedAction,
    SessionCustomizationRemovedAction,
    SessionCustomizationToggledAction,
    SessionDefaultChatChangedAction,
    SessionInputNeededRemovedAction,
    SessionInputNeededSetAction,
    SessionMcpServerStartRequestedAction,
    SessionMcpServerStateChangedAction,
    SessionMcpServerStopRequestedAction,
    UnknownAction,
)
from .state import (
    McpServerCustomization,
    SessionState,
    UnknownChildCustomization,
    UnknownCustomization,
    UnknownSessionInputRequest,
)

__all__ = ["IDEMPOTENT_SESSION_ACTIONS", "describe_session_state", "validate_session_action"]

IDEMPOTENT_SESSION_ACTIONS: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        "session/titleChanged": "sets the title",
        "session/isReadChanged": "sets a flag",
        "session/isArchivedChanged": "sets a flag",
        "session/activityChanged": "sets the activity text",
        "session/metaChanged": "sets _meta",
        "session/configChanged": "merges or replaces config values",
        "session/serverToolsChanged": "replaces the server's tools",
        "session/changesetsChanged": "replaces the changeset catalogue",
        "session/customizationsChanged": "replaces the customizations",
        "session/customizationUpdated": "upserts a customization",
        "session/customizationToggled": "sets a flag",
        "session/activeClientSet": "upserts an active client (clients re-announce themselves)",
        "session/workingDirectorySet": "adds to a set; the protocol calls it idempotent",
        "session/workingDirectoryRemoved": "removes from a set; the protocol calls it idempotent",
        "session/defaultChatChanged": "sets the default chat",
        "session/chatAdded": "upserts a catalog entry",
        "session/chatUpdated": "sets summary fields (the runtime mirrors every chat change)",
        "session/inputNeededSet": "upserts an input-needed entry",
        "session/mcpServerStateChanged": "sets an MCP server's state",
        "session/mcpServerStartRequested": "a request to the host, not a change of state",
        "session/mcpServerStopRequested": "a request to the host, not a change of state",
        "session/ready": "declares the session ready",
    }
)
"""Session action types accepted even when they change nothing: type → why."""


def describe_session_state(state: SessionState) -> str:
    """The session's lifecycle as an error reports it: ``session ready``, ``session creating``."""
    return f"session {state.lifecycle}"


def _customization_ids(state: SessionState) -> dict[str, bool]:
    """Every customization id, top-level or child, → whether it is an MCP server."""
    ids: dict[str, bool] = {}
    # A customization of a type we do not model is no action's target (the reducer skips it).
    for entry in state.customizations or ():
        if isinstance(entry, UnknownCustomization):
            continue
        ids.setdefault(entry.id, isinstance(entry, McpServerCustomization))
        if not isinstance(entry, McpServerCustomization):
            for child in entry.children or ():
                if not isinstance(child, UnknownChildCustomization):
                    ids.setdefault(child.id, isinstance(child, McpServerCustomization))
    return ids


def _session_target_missing(state: SessionState, action: SessionAction) -> str | None:
    """What ``action`` names that the session does not have (or must not name), or None."""
    match action:
        case SessionChatRemovedAction(chat=chat) | SessionChatUpdatedAction(chat=chat):
            pass
        case SessionDefaultChatChangedAction(default_chat=str() as chat):
            pass
        case SessionInputNeededSetAction(request=request):
            if isinstance(request, UnknownSessionInputRequest):
                return f"an input-needed request of kind {request.kind!r} is not one we know"
            chat = request.chat
        case SessionInputNeededRemovedAction(id=entry_id):
            known = (e for e in state.input_needed or () if not isinstance(e, UnknownVariant))
            if all(entry.id != entry_id for entry in known):
                return f"there is no input-needed entry {entry_id!r}"
            return None
        case SessionActiveClientRemovedAction(client_id=client_id):
            if all(client.client_id != client_id for client in state.active_clients):
                return f"there is no active client {client_id!r}"
            return None
        case (
            SessionCustomizationToggledAction(id=custom_id)
            | SessionCustomizationRemovedAction(id=custom_id)
        ):
            if custom_id not in _customization_ids(state):
                return f"there is no customization {custom_id!r}"
            return None
        case (
            SessionMcpServerStateChangedAction(id=server_id)
            | SessionMcpServerStartRequestedAction(id=server_id)
            | SessionMcpServerStopRequestedAction(id=server_id)
        ):
            if not _customization_ids(state).get(server_id, False):
                return f"there is no MCP server {server_id!r}"
            return None
        case SessionConfigChangedAction():
            return None if state.config is not None else "the session has no configuration"
        case _:
            return None
    if state.chats.find(chat) is None:
        return f"the session has no chat {chat!r}"
    return None


def validate_session_action(
    state: SessionState, action: SessionAction | UnknownAction, *, channel: str
) -> None:
    """Refuse ``action`` on session ``channel`` if it names what is not there or changes nothing.

    The same principle as :func:`~orchestrator.ahp.validate_chat_action`. An action that
    names a chat, client, customization, MCP server or input-needed entry the session does not
    have is refused (a default chat or an input-needed entry must name a chat of the catalog:
    the invariants of :class:`SessionState`). So is one that would leave the state unchanged,
    unless its type is in :data:`IDEMPOTENT_SESSION_ACTIONS`.
    """
    where = describe_session_state(state)
    if isinstance(action, UnknownAction):
        reason = f"{action.type!r} is not a session action this server knows"
        raise IllegalTransitionError(reason, action_type=action.type, channel=channel, state=where)
    missing = _session_target_missing(state, action)
    if missing is not None:
        raise IllegalTransitionError(missing, action_type=action.type, channel=channel, state=where)
    if action.type in IDEMPOTENT_SESSION_ACTIONS:
        return
    reduced = reduce_session(state, action, now="")
    if reduced is state:  # no-op returns the same object, as for chats
        raise IllegalTransitionError(
            "the action would not change the session",
            action_type=action.type,
            channel=channel,
            state=where,
        )
