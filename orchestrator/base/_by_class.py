"""Tables of functions by the class of the value they take: a reducer's handlers, a
validator's checks.

Dispatch is one dict lookup on ``type(value)``, so its cost does not grow with the number of
kinds, and a class with no entry (an action a newer peer sends) finds nothing and is skipped.
:func:`registrar` makes the decorator that fills such a table next to each function::

    _HANDLERS: dict[type, Handler] = {}
    _handles = registrar(_HANDLERS)

    @_handles(ChatTurnStartedAction)
    def _turn_started(state, action, now): ...

Pure: no trio, no IO.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["registrar"]

F = TypeVar("F", bound=Callable[..., Any])


def registrar(table: dict[type, F]) -> Callable[..., Callable[[F], F]]:
    """A decorator factory: ``registrar(table)(A, B)(function)`` puts ``function`` in
    ``table`` under ``A`` and ``B`` and returns it unchanged."""

    def for_classes(*classes: type) -> Callable[[F], F]:
        def register(function: F) -> F:
            for cls in classes:
                table[cls] = function
            return function

        return register

    return for_classes
