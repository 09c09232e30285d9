"""The root-channel reducer: ``reduce_root(state, action) -> RootState``.

Theory of operation
-------------------
The root channel (``ahp-root://``) holds what a host offers every client: its agent providers,
how many sessions are active, its terminals and its configuration. A subscriber's
:class:`RootState` is the snapshot it was given, folded with every ``root/*`` action sent on the
channel after it; a host changes the state only through those actions, so the fold always equals
a fresh snapshot. The semantics are the upstream TypeScript ``rootReducer``'s; the fixtures in
``protocols/ahp/test-cases/reducers`` with ``"reducer": "root"`` pin them down.

* :func:`reduce_root` is total and pure: no IO, no clock, no trio. An action of any other
  type (a chat or session action, an :class:`~orchestrator.ahp.actions.UnknownAction`) is a
  no-op, as is ``root/configChanged`` on a state with no configuration (values without a schema
  mean nothing). A no-op returns the *same* ``state`` object, and so does an action that sets
  what is already set.
* ``agentsChanged`` and ``terminalsChanged`` replace their lists whole;
  ``activeSessionsChanged`` sets the count; ``configChanged`` merges its values into the
  current ones, or replaces them all with ``replace``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.base import evolve, registrar

from .actions import (
    RootActiveSessionsChangedAction,
    RootAgentsChangedAction,
    RootConfigChangedAction,
    RootTerminalsChangedAction,
    StateAction,
)
from .state import RootState

__all__ = ["reduce_root"]

_Handler = Callable[[RootState, Any], RootState]

# One entry per class of the RootAction union (a test checks that none is missing).
_HANDLERS: dict[type, _Handler] = {}
_handles = registrar(_HANDLERS)


def _set(state: RootState, **changes: Any) -> RootState:
    """``state`` with ``changes``, or ``state`` itself when they change nothing."""
    if all(getattr(state, name) == value for name, value in changes.items()):
        return state
    return evolve(state, **changes)


@_handles(RootAgentsChangedAction)
def _agents_changed(state: RootState, action: RootAgentsChangedAction) -> RootState:
    return _set(state, agents=action.agents)


@_handles(RootActiveSessionsChangedAction)
def _active_sessions_changed(
    state: RootState, action: RootActiveSessionsChangedAction
) -> RootState:
    return _set(state, active_sessions=action.active_sessions)


@_handles(RootTerminalsChangedAction)
def _terminals_changed(state: RootState, action: RootTerminalsChangedAction) -> RootState:
    return _set(state, terminals=action.terminals)


@_handles(RootConfigChangedAction)
def _config_changed(state: RootState, action: RootConfigChangedAction) -> RootState:
    config = state.config
    if config is None:
        return state
    values = dict(action.config) if action.replace else {**config.values, **action.config}
    if values == config.values:
        return state
    return evolve(state, config=evolve(config, values=values))


def reduce_root(state: RootState, action: StateAction) -> RootState:
    """Apply one action to the root channel's state and return the new state.

    Accepts any state action: ``root/*`` actions follow the upstream root reducer; any other
    is a no-op. Every no-op returns ``state`` itself.
    """
    handler = _HANDLERS.get(type(action))
    if handler is None:
        return state
    return handler(state, action)
