"""``evolve``: ``attrs.evolve`` for the hot path of the reducers, twice as fast.

Reducers rebuild a frozen value for nearly every fact (a chat, its active turn, a tool call),
and ``attrs.evolve`` re-discovers the class's fields on every call. This one generates, once
per class, a function that passes each field either from ``changes`` or from the old value
straight to the class's own ``__init__`` (so converters and validators run as with
``attrs.evolve``), and reuses it. Same contract as ``attrs.evolve``: keyword changes only,
unknown names are a ``TypeError``.

Pure: no IO, no trio.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["evolve"]

T = TypeVar("T")

_EVOLVERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {}


def evolve(instance: T, **changes: Any) -> T:
    """A copy of the attrs instance ``instance`` with ``changes`` applied."""
    cls = type(instance)
    evolver = _EVOLVERS.get(cls)
    if evolver is None:
        evolver = _EVOLVERS[cls] = _make_evolver(cls)
    result: T = evolver(instance, changes)
    return result


def _make_evolver(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    fields = [field for field in attrs.fields(cls) if field.init]
    names = frozenset(field.name for field in fields)
    arguments = ", ".join(
        f"{field.alias}=changes[{field.name!r}] if {field.name!r} in changes "
        f"else instance.{field.name}"
        for field in fields
    )
    source = (
        "def evolve(instance, changes):\n"
        "    if not changes.keys() <= names:\n"
        "        unknown = ', '.join(sorted(changes.keys() - names))\n"
        "        raise TypeError(f'{cls.__name__} has no field(s) {unknown}')\n"
        f"    return cls({arguments})\n"
    )
    namespace: dict[str, Any] = {"cls": cls, "names": names}
    exec(compile(source, f"<evolve {cls.__qualname__}>", "exec"), namespace)
    evolver: Callable[[Any, dict[str, Any]], Any] = namespace["evolve"]
    return evolver
