"""The session-channel reducer: ``(SessionState, action) -> SessionState``, and ChatSummary upkeep.

Theory of operation
-------------------
A session channel (``ahp-session:/<uuid>``) holds the catalog of the session's chats
(:class:`ChatSummary` entries), its active clients, customizations and MCP servers,
configuration, working directories, changesets and the input the session is blocked on. Its
state is a fold of ``session/*`` actions over the snapshot, with the semantics of the upstream
TypeScript ``sessionReducer``; the fixtures in ``protocols/ahp/test-cases/reducers`` with
``"reducer": "session"`` pin them down.

* :func:`reduce_session` is total and pure: no IO, no clock (``now`` is accepted for symmetry
  with the chat reducer; no session action stamps a time), no trio. An action that does not
  apply (unknown chat, unknown id, no config to merge into, a type this reducer does not handle,
  a chat action, a customization or input request of a kind we do not model, which no action
  addresses and which is never upserted) is a no-op and returns the *same* ``state`` object,
  so a caller can test ``new is old`` to skip fan-out. Setting a field to the value it
  already has is a no-op too.
* Dispatch is one dict lookup on the action's class (:data:`_HANDLERS`), so the cost of an action
  is that of its handler: the catalog (``chats``) is a :class:`ChatCatalog`, so ``chatAdded``
  and ``chatUpdated`` find their entry by resource and replace it in O(log n) whatever the
  size of the team (``chatRemoved``, rare, is linear); the session's other lists are short
  tuples scanned once.
* ``status`` is a bitset: bits 0-4 are the mutually exclusive *activity* (idle, error,
  in-progress, input-needed), the higher bits are orthogonal flags (read, archived, and any bit
  a later protocol adds). ``isRead`` / ``isArchived`` flip one flag; the input-needed queue
  rewrites only the activity bits.
* A chat's catalog entry is denormalized: :class:`ChatState` inlines every :class:`ChatSummary`
  field. The session reducer does not see chat actions, so the team's fold keeps the two in
  step: after every chat action that changed its chat it calls :func:`mirror_summary`, which
  applies the ``session/chatUpdated`` :func:`summary_action` gives (or, when a field was
  cleared, which ``chatUpdated`` cannot express on the wire, a ``session/chatAdded`` that
  replaces the entry in place). That action is derived, not recorded (issue 35); AHP clients
  of the session channel are sent it. The invariant this keeps is stated beside
  :func:`summary_of`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Final, TypeGuard, TypeVar

import attrs

from orchestrator.base import LocalProtocolError, evolve

from ._unknown import UnknownVariant
from .actions import (
    ChatSummaryChanges,
    SessionActiveClientRemovedAction,
    SessionActiveClientSetAction,
    SessionActivityChangedAction,
    SessionChangesetsChangedAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    SessionConfigChangedAction,
    SessionCreationFailedAction,
    SessionCustomizationRemovedAction,
    SessionCustomizationsChangedAction,
    SessionCustomizationToggledAction,
    SessionCustomizationUpdatedAction,
    SessionDefaultChatChangedAction,
    SessionInputNeededRemovedAction,
    SessionInputNeededSetAction,
    SessionIsArchivedChangedAction,
    SessionIsReadChangedAction,
    SessionMcpServerStartRequestedAction,
    SessionMcpServerStateChangedAction,
    SessionMcpServerStopRequestedAction,
    SessionMetaChangedAction,
    SessionReadyAction,
    SessionServerToolsChangedAction,
    SessionTitleChangedAction,
    SessionWorkingDirectoryRemovedAction,
    SessionWorkingDirectorySetAction,
    StateAction,
)
from .state import (
    ChatState,
    ChatSummary,
    Customization,
    DirectoryCustomization,
    McpServerCustomization,
    McpServerStartingState,
    McpServerStoppedState,
    PluginCustomization,
    SessionInputRequest,
    SessionLifecycle,
    SessionState,
    SessionStatus,
    SessionToolClientExecutionRequest,
    UnknownChildCustomization,
    UnknownCustomization,
    UnknownSessionInputRequest,
)

__all__ = [
    "chat_summary_action",
    "mirror_summary",
    "reduce_session",
    "session_status",
    "summary_action",
    "summary_changes",
    "summary_of",
]

_T = TypeVar("_T")

# ─── Status bits ─────────────────────────────────────────────────────────────

# Bits 0-4: the mutually exclusive activity; everything above is an orthogonal flag.
_ACTIVITY_MASK = (1 << 5) - 1
# INPUT_NEEDED includes the IN_PROGRESS bit; this is the bit that only INPUT_NEEDED has.
_INPUT_NEEDED_ONLY = int(SessionStatus.INPUT_NEEDED) & ~int(SessionStatus.IN_PROGRESS)


def _with_flag(status: SessionStatus, flag: SessionStatus, on: bool) -> SessionStatus:
    # int arithmetic: ``~`` on an IntFlag only inverts the named bits, and unknown bits must stay.
    value = int(status) | int(flag) if on else int(status) & ~int(flag)
    return SessionStatus(value)


def _awaits_user(request: SessionInputRequest) -> bool:
    # A tool call a client executes blocks the turn on that client, not on the user; a request
    # of a kind we do not know blocks nobody we know of (the host says so through the status).
    return not isinstance(request, SessionToolClientExecutionRequest | UnknownSessionInputRequest)


def _with_input_needed(
    status: SessionStatus, queue: tuple[SessionInputRequest, ...]
) -> SessionStatus:
    """Reflect the input queue in the activity bits, keeping the orthogonal flags.

    A request that awaits the user makes the activity INPUT_NEEDED; otherwise only the
    input-needed bit is cleared, so a blocked turn falls back to IN_PROGRESS while an idle
    session stays idle.
    """
    if any(_awaits_user(r) for r in queue):
        value = (int(status) & ~_ACTIVITY_MASK) | int(SessionStatus.INPUT_NEEDED)
    else:
        value = int(status) & ~_INPUT_NEEDED_ONLY
    return SessionStatus(value)


# ─── Small immutable helpers ─────────────────────────────────────────────────


def _same(a: object, b: object) -> bool:
    return a is b or a == b


def _set(state: SessionState, **changes: Any) -> SessionState:
    """``attrs.evolve`` that returns ``state`` itself when no field would change."""
    if all(_same(getattr(state, name), value) for name, value in changes.items()):
        return state
    return evolve(state, **changes)


_BY_CLIENT_ID = operator.attrgetter("client_id")


def _by_id(item: Any) -> object:
    # An unknown variant is never an action's target: it has no id this reducer knows.
    return None if isinstance(item, UnknownVariant) else item.id


_BY_ID: Final = _by_id


def _index(items: tuple[_T, ...], key: Callable[[_T], object], value: object) -> int:
    """The position of the first item whose ``key`` equals ``value``, or -1.

    For the session's short lists (clients, customizations, input needed); the catalog of
    chats, which grows with a team, is a :class:`ChatCatalog` and looks entries up by key.
    """
    try:
        return list(map(key, items)).index(value)
    except ValueError:
        return -1


def _replaced(items: tuple[_T, ...], i: int, item: _T) -> tuple[_T, ...]:
    return (*items[:i], item, *items[i + 1 :])


def _without(items: tuple[_T, ...], i: int) -> tuple[_T, ...]:
    return items[:i] + items[i + 1 :]


def _upsert(items: tuple[_T, ...], i: int, item: _T) -> tuple[_T, ...]:
    """Replace the item at ``i`` in place, or append when ``i`` is -1."""
    return (*items, item) if i < 0 else _replaced(items, i, item)


# ─── Lifecycle and metadata ──────────────────────────────────────────────────


def _ready(state: SessionState, action: SessionReadyAction) -> SessionState:
    # A lifecycle transition only: a provisional session's first turn may already be running,
    # so the status (kept in step by the other actions) is left alone.
    return _set(state, lifecycle=SessionLifecycle.READY)


def _creation_failed(state: SessionState, action: SessionCreationFailedAction) -> SessionState:
    return _set(state, lifecycle=SessionLifecycle.CREATION_FAILED, creation_error=action.error)


def _title_changed(state: SessionState, action: SessionTitleChangedAction) -> SessionState:
    return _set(state, title=action.title)


def _is_read_changed(state: SessionState, action: SessionIsReadChangedAction) -> SessionState:
    return _set(state, status=_with_flag(state.status, SessionStatus.IS_READ, action.is_read))


def _is_archived_changed(
    state: SessionState, action: SessionIsArchivedChangedAction
) -> SessionState:
    status = _with_flag(state.status, SessionStatus.IS_ARCHIVED, action.is_archived)
    return _set(state, status=status)


def _activity_changed(state: SessionState, action: SessionActivityChangedAction) -> SessionState:
    return _set(state, activity=action.activity)


def _changesets_changed(
    state: SessionState, action: SessionChangesetsChangedAction
) -> SessionState:
    return _set(state, changesets=action.changesets)


def _config_changed(state: SessionState, action: SessionConfigChangedAction) -> SessionState:
    config = state.config
    if config is None:
        # Values without a schema mean nothing; the host sends the whole config first.
        return state
    values = dict(action.config) if action.replace else {**config.values, **action.config}
    if values == config.values:
        return state
    return evolve(state, config=evolve(config, values=values))


def _meta_changed(state: SessionState, action: SessionMetaChangedAction) -> SessionState:
    return _set(state, meta=action.meta)


def _server_tools_changed(
    state: SessionState, action: SessionServerToolsChangedAction
) -> SessionState:
    return _set(state, server_tools=action.tools)


# ─── Chats ───────────────────────────────────────────────────────────────────


# The ChatSummary fields a chatUpdated may carry: all but the identity field ``resource``.
_MUTABLE_SUMMARY_FIELDS: tuple[str, ...] = tuple(
    f.name for f in attrs.fields(ChatSummaryChanges) if f.name not in {"resource", "unknown_fields"}
)
#: Those fields, read at once from a ChatSummary, its changes or a ChatState (which inlines
#: them): a tuple compared with ``==`` tests each pair as :func:`_same` does.
_summary_fields = operator.attrgetter(*_MUTABLE_SUMMARY_FIELDS)


def _chat_added(state: SessionState, action: SessionChatAddedAction) -> SessionState:
    # An upsert by resource: a re-announced chat keeps its place in the catalog.
    summary = action.summary
    chats = state.chats
    i = chats.find(summary.resource)
    if i is None:
        return evolve(state, chats=chats.append(summary))
    if _same(chats[i], summary):
        return state
    return evolve(state, chats=chats.set(i, summary))


def _chat_removed(state: SessionState, action: SessionChatRemovedAction) -> SessionState:
    chats = state.chats
    i = chats.find(action.chat)
    if i is None:
        return state
    default_chat = None if state.default_chat == action.chat else state.default_chat
    return evolve(state, chats=chats.remove(i), default_chat=default_chat)


def _chat_updated(state: SessionState, action: SessionChatUpdatedAction) -> SessionState:
    chats = state.chats
    i = chats.find(action.chat)
    if i is None:
        # The chatAdded that announces this chat has not arrived (yet); nothing to update.
        return state
    entry = chats[i]
    updated = _merge_changes(entry, action.changes)
    if updated is entry:
        return state
    return evolve(state, chats=chats.set(i, updated))


def _merge_changes(entry: ChatSummary, changes: ChatSummaryChanges) -> ChatSummary:
    """Write the fields present in ``changes`` (``resource`` is identity and is ignored)."""
    present = {
        name: value
        for name, value, old in zip(
            _MUTABLE_SUMMARY_FIELDS, _summary_fields(changes), _summary_fields(entry), strict=True
        )
        if value is not None and not _same(old, value)
    }
    return evolve(entry, **present) if present else entry


def _default_chat_changed(
    state: SessionState, action: SessionDefaultChatChangedAction
) -> SessionState:
    return _set(state, default_chat=action.default_chat)


# ─── Active clients and working directories ──────────────────────────────────


def _active_client_set(state: SessionState, action: SessionActiveClientSetAction) -> SessionState:
    client = action.active_client
    clients = state.active_clients
    i = _index(clients, _BY_CLIENT_ID, client.client_id)
    if i >= 0 and _same(clients[i], client):
        return state
    return evolve(state, active_clients=_upsert(clients, i, client))


def _active_client_removed(
    state: SessionState, action: SessionActiveClientRemovedAction
) -> SessionState:
    clients = state.active_clients
    i = _index(clients, _BY_CLIENT_ID, action.client_id)
    if i < 0:
        return state
    return evolve(state, active_clients=_without(clients, i))


def _working_directory_set(
    state: SessionState, action: SessionWorkingDirectorySetAction
) -> SessionState:
    directories = state.working_directories or ()
    if action.directory in directories:
        return state
    return evolve(state, working_directories=(*directories, action.directory))


def _working_directory_removed(
    state: SessionState, action: SessionWorkingDirectoryRemovedAction
) -> SessionState:
    directories = state.working_directories
    if directories is None or action.directory not in directories:
        return state
    # Removing the last one leaves an empty set (not an absent one), as upstream does.
    i = directories.index(action.directory)
    return evolve(state, working_directories=_without(directories, i))


# ─── Input needed ────────────────────────────────────────────────────────────


def _input_needed_set(state: SessionState, action: SessionInputNeededSetAction) -> SessionState:
    request = action.request
    if isinstance(request, UnknownSessionInputRequest):
        return state  # a kind we cannot place
    queue = state.input_needed or ()
    i = _index(queue, _BY_ID, request.id)
    queue = _upsert(queue, i, request)
    return _set(state, input_needed=queue, status=_with_input_needed(state.status, queue))


def _input_needed_removed(
    state: SessionState, action: SessionInputNeededRemovedAction
) -> SessionState:
    queue = state.input_needed
    if queue is None:
        return state
    i = _index(queue, _BY_ID, action.id)
    if i < 0:
        return state
    remaining = _without(queue, i)
    return evolve(
        state,
        input_needed=remaining or None,
        status=_with_input_needed(state.status, remaining),
    )


# ─── Customizations and MCP servers ──────────────────────────────────────────


def _is_container(
    customization: Customization,
) -> TypeGuard[PluginCustomization | DirectoryCustomization]:
    """Whether ``customization`` may hold children (an unknown type holds none we know)."""
    return isinstance(customization, PluginCustomization | DirectoryCustomization)


def _customizations_changed(
    state: SessionState, action: SessionCustomizationsChangedAction
) -> SessionState:
    return _set(state, customizations=action.customizations)


def _customization_toggled(
    state: SessionState, action: SessionCustomizationToggledAction
) -> SessionState:
    customizations = state.customizations
    if customizations is None:
        return state
    i = _index(customizations, _BY_ID, action.id)
    if i >= 0:
        entry = customizations[i]
        if isinstance(entry, UnknownCustomization) or entry.enabled == action.enabled:
            return state
        toggled = evolve(entry, enabled=action.enabled)
        return evolve(state, customizations=_replaced(customizations, i, toggled))
    # Not a container: the first container child with that id (ids are unique in practice).
    for i, container in enumerate(customizations):
        if not _is_container(container) or not container.children:
            continue
        children = container.children
        j = _index(children, _BY_ID, action.id)
        if j < 0:
            continue
        found = children[j]
        if isinstance(found, UnknownChildCustomization) or found.enabled == action.enabled:
            return state
        child = evolve(found, enabled=action.enabled)
        container = evolve(container, children=_replaced(children, j, child))
        return evolve(state, customizations=_replaced(customizations, i, container))
    return state


def _customization_updated(
    state: SessionState, action: SessionCustomizationUpdatedAction
) -> SessionState:
    customization = action.customization
    if isinstance(customization, UnknownCustomization):
        return state  # a type we cannot place
    customizations = state.customizations or ()
    i = _index(customizations, _BY_ID, customization.id)
    if i >= 0 and _same(customizations[i], customization):
        return state
    return evolve(state, customizations=_upsert(customizations, i, customization))


def _customization_removed(
    state: SessionState, action: SessionCustomizationRemovedAction
) -> SessionState:
    customizations = state.customizations
    if customizations is None:
        return state
    i = _index(customizations, _BY_ID, action.id)
    if i >= 0:
        # Removing a container removes its children with it.
        return evolve(state, customizations=_without(customizations, i))
    changed = False
    updated: list[Customization] = []
    for container in customizations:
        if _is_container(container) and container.children:
            children = container.children
            j = _index(children, _BY_ID, action.id)
            if j >= 0:
                container = evolve(container, children=_without(children, j))
                changed = True
        updated.append(container)
    return evolve(state, customizations=tuple(updated)) if changed else state


def _update_mcp_server(
    state: SessionState,
    server_id: str,
    update: Callable[[McpServerCustomization], McpServerCustomization],
) -> SessionState:
    """Apply ``update`` to the MCP server ``server_id``: top-level, or a child of containers.

    A top-level customization with that id that is not an MCP server makes this a no-op, as
    does a child with that id that is not one.
    """
    customizations = state.customizations
    if customizations is None:
        return state
    i = _index(customizations, _BY_ID, server_id)
    if i >= 0:
        entry = customizations[i]
        if not isinstance(entry, McpServerCustomization):
            return state
        new_entry = update(entry)
        if _same(new_entry, entry):
            return state
        return evolve(state, customizations=_replaced(customizations, i, new_entry))
    changed = False
    updated: list[Customization] = []
    for container in customizations:
        if _is_container(container) and container.children:
            children = container.children
            j = _index(children, _BY_ID, server_id)
            child = children[j] if j >= 0 else None
            if isinstance(child, McpServerCustomization):
                new_child = update(child)
                if not _same(new_child, child):
                    container = evolve(container, children=_replaced(children, j, new_child))
                    changed = True
        updated.append(container)
    return evolve(state, customizations=tuple(updated)) if changed else state


def _mcp_server_state_changed(
    state: SessionState, action: SessionMcpServerStateChangedAction
) -> SessionState:
    return _update_mcp_server(
        state, action.id, lambda s: evolve(s, state=action.state, channel=action.channel)
    )


def _mcp_server_start_requested(
    state: SessionState, action: SessionMcpServerStartRequestedAction
) -> SessionState:
    # Optimistic: the host answers with mcpServerStateChanged once the server is up (or not).
    return _update_mcp_server(
        state, action.id, lambda s: evolve(s, state=McpServerStartingState(), channel=None)
    )


def _mcp_server_stop_requested(
    state: SessionState, action: SessionMcpServerStopRequestedAction
) -> SessionState:
    return _update_mcp_server(
        state, action.id, lambda s: evolve(s, state=McpServerStoppedState(), channel=None)
    )


# ─── Dispatch ────────────────────────────────────────────────────────────────

_Handler = Callable[[SessionState, Any], SessionState]

# One entry per class of the SessionAction union (a test checks that none is missing).
_HANDLERS: dict[type[Any], _Handler] = {
    SessionReadyAction: _ready,
    SessionCreationFailedAction: _creation_failed,
    SessionChatAddedAction: _chat_added,
    SessionChatRemovedAction: _chat_removed,
    SessionChatUpdatedAction: _chat_updated,
    SessionDefaultChatChangedAction: _default_chat_changed,
    SessionTitleChangedAction: _title_changed,
    SessionIsReadChangedAction: _is_read_changed,
    SessionIsArchivedChangedAction: _is_archived_changed,
    SessionActivityChangedAction: _activity_changed,
    SessionChangesetsChangedAction: _changesets_changed,
    SessionServerToolsChangedAction: _server_tools_changed,
    SessionActiveClientSetAction: _active_client_set,
    SessionActiveClientRemovedAction: _active_client_removed,
    SessionWorkingDirectorySetAction: _working_directory_set,
    SessionWorkingDirectoryRemovedAction: _working_directory_removed,
    SessionInputNeededSetAction: _input_needed_set,
    SessionInputNeededRemovedAction: _input_needed_removed,
    SessionCustomizationsChangedAction: _customizations_changed,
    SessionCustomizationToggledAction: _customization_toggled,
    SessionCustomizationUpdatedAction: _customization_updated,
    SessionCustomizationRemovedAction: _customization_removed,
    SessionMcpServerStateChangedAction: _mcp_server_state_changed,
    SessionMcpServerStartRequestedAction: _mcp_server_start_requested,
    SessionMcpServerStopRequestedAction: _mcp_server_stop_requested,
    SessionConfigChangedAction: _config_changed,
    SessionMetaChangedAction: _meta_changed,
}


def reduce_session(state: SessionState, action: StateAction, *, now: str) -> SessionState:
    """Apply one action to a session's state and return the new state.

    Accepts any state action: ``session/*`` actions follow the upstream session reducer; any
    other action (a chat action, an :class:`~orchestrator.ahp.actions.UnknownAction`) is a
    no-op. Every no-op returns ``state`` itself. ``now`` (ISO 8601) is unused: no session action
    stamps a time, but the signature matches the chat reducer's so a runtime can fold both alike.
    """
    handler = _HANDLERS.get(type(action))
    if handler is None:
        return state
    return handler(state, action)


# ─── ChatSummary upkeep ──────────────────────────────────────────────────────


# Invariant: all(c == summary_of(chat_state(c.resource)) for c in session.chats)
#   (each ChatSummary equals the fields its ChatState inlines) holds after every chat action
#   once the session has reduced the action summary_action(before, after) returns for it, where
#   before / after are summary_of() of the chat's state before and after that chat action.
def summary_of(chat: ChatState) -> ChatSummary:
    """The catalog entry of ``chat``: the :class:`ChatSummary` fields its state inlines."""
    return ChatSummary(
        resource=chat.resource,
        title=chat.title,
        status=chat.status,
        activity=chat.activity,
        modified_at=chat.modified_at,
        origin=chat.origin,
        interactivity=chat.interactivity,
        working_directories=chat.working_directories,
    )


def summary_changes(before: ChatSummary, after: ChatSummary) -> ChatSummaryChanges | None:
    """The ``changes`` of a ``session/chatUpdated`` that turns ``before`` into ``after``.

    ``None`` when nothing changed. Raises :class:`~orchestrator.LocalProtocolError` when the two
    are different chats, or when ``after`` clears an optional field that ``before`` has:
    ``chatUpdated`` only writes the fields it carries, so it cannot clear one;
    :func:`summary_action` falls back to ``session/chatAdded`` for that.
    """
    if before.resource != after.resource:
        raise LocalProtocolError(
            f"summary_changes() got two different chats: {before.resource!r} "
            f"and {after.resource!r}",
            path="$.chat",
        )
    changes: dict[str, Any] = {}
    for name, old, new in zip(
        _MUTABLE_SUMMARY_FIELDS, _summary_fields(before), _summary_fields(after), strict=True
    ):
        if old is new or old == new:
            continue
        if new is None:
            raise LocalProtocolError(
                f"session/chatUpdated cannot clear {name!r} of chat {after.resource!r} "
                "(it only writes the fields it carries); send session/chatAdded instead",
                path=f"$.changes.{name}",
            )
        changes[name] = new
    return ChatSummaryChanges(**changes) if changes else None


def summary_action(
    before: ChatSummary, after: ChatSummary
) -> SessionChatUpdatedAction | SessionChatAddedAction | None:
    """The session action that brings a catalog entry equal to ``before`` to ``after``.

    ``None`` when nothing changed; ``session/chatUpdated`` with the changed fields when it can
    express them; otherwise (a field was cleared) ``session/chatAdded`` with the whole of
    ``after``, which replaces the entry in place. Raises
    :class:`~orchestrator.LocalProtocolError` when the two are different chats.
    """
    try:
        changes = summary_changes(before, after)
    except LocalProtocolError:
        if before.resource != after.resource:
            raise
        return SessionChatAddedAction(summary=after)
    if changes is None:
        return None
    return SessionChatUpdatedAction(chat=after.resource, changes=changes)


def chat_summary_action(
    entry: ChatSummary, chat: ChatState
) -> SessionChatUpdatedAction | SessionChatAddedAction | None:
    """``summary_action(entry, summary_of(chat))``: the session action that brings the catalog
    entry ``entry`` to the fields ``chat`` inlines, or None.

    The runtime asks this after every batch, for every chat the batch touched. Most batches
    change no summary field (a response part, a tool call's progress). That answer is found by
    comparing the fields in place, without building the chat's summary.
    """
    if entry.resource == chat.resource and _summary_fields(entry) == _summary_fields(chat):
        return None
    return summary_action(entry, summary_of(chat))


def mirror_summary(
    session: SessionState, chat_uri: str, chat: ChatState
) -> tuple[SessionState, SessionChatUpdatedAction | SessionChatAddedAction | None]:
    """``session`` with the catalog entry of ``chat_uri`` brought to the fields ``chat``
    inlines, and the session action that did it (``None``, and ``session`` itself, when the
    entry was equal already or the catalog has no such entry).

    The team's fold calls it after every chat action that changed its chat (issue 35: the
    catalog's upkeep is derived from the chat actions, not recorded as session actions).
    """
    chats = session.chats
    index = chats.find(chat_uri)
    if index is None:
        return session, None
    update = chat_summary_action(chats[index], chat)
    if update is None:
        return session, None
    return reduce_session(session, update, now=""), update


def session_status(session: SessionState) -> SessionStatus:
    """A session's status for its catalog entry (``SessionSummary.status``).

    It follows the schema's rule across its chats:

    - the activity bits of the default chat (else of the most recently modified one);
    - ``InputNeeded`` promoted when any chat needs input;
    - ``Error`` promoted when any chat is in error;
    - the other bits are the session state's own.

    Hidden chats count: a hidden worker that needs input still needs it.
    """
    chats = list(session.chats)
    own = int(session.status) & ~_ACTIVITY_MASK
    if not chats:
        return SessionStatus(int(session.status))
    lead = next((c for c in chats if c.resource == session.default_chat), None)
    if lead is None:
        lead = max(chats, key=lambda chat: chat.modified_at)
    activity = int(lead.status) & _ACTIVITY_MASK
    if any(int(c.status) & _ACTIVITY_MASK == SessionStatus.INPUT_NEEDED for c in chats):
        activity = int(SessionStatus.INPUT_NEEDED)
    if any(int(c.status) & _ACTIVITY_MASK == SessionStatus.ERROR for c in chats):
        activity = int(SessionStatus.ERROR)
    return SessionStatus(own | activity)
