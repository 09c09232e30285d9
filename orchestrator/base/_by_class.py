"""Tables of functions by the class of the value they take: a reducer's handlers, a
validator's checks.

Dispatch is one dict lookup on ``type(value)``, so its cost does not grow with the number of
kinds, and a class with no entry (an action a newer peer sends) finds nothing and is skipped.
:func:`registrar` makes the decorator that fills such a table next to each function::

    _HANDLERS: dict[type, Handler] = {}
    _handles = registrar(_HANDLERS)

    @_handles(ChatTurnStartedAction)
    def _turn_started(state, action, now): ...

A table kept in the order a ``match`` would try its classes can also answer for a subclass
of one of them (a newer peer's refinement of a known action). :func:`resolve_subclass` finds
the entry a ``match`` on the table's classes in order would pick, once per class. It remembers
it in the table, so the next lookup is one dict hit again.

Pure: no trio, no IO.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["registrar", "resolve_subclass"]

F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")
D = TypeVar("D")


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


def resolve_subclass(table: dict[type, V], order: tuple[type, ...], cls: type, default: D) -> V | D:
    """The entry of the first class of ``order`` that ``cls`` is a subclass of, or ``default``.

    ``order`` is ``table``'s classes as it was made. The entry is the one a ``match`` on them in
    that order would pick. It is remembered in ``table`` under ``cls``, so it is asked once per
    class."""
    found: V | D = next((table[base] for base in order if issubclass(cls, base)), default)
    table[cls] = found  # type: ignore[assignment]
    return found
