"""Forward compatibility: what an AHP model keeps of what this project does not model.

AHP evolves additively, so a peer must accept what a newer peer sends, keep it, and send it on
unchanged. Three things can be new, and each has its holder here:

* **An object key**: every model is a :class:`WireObject`, whose ``unknown_fields`` keeps the
  keys its class does not name, with their JSON values as received. The wire writes them back
  after the known keys. They take part in ``==`` (two objects that re-encode differently are
  not equal) but not in ``hash``. ``attrs.evolve`` and :func:`orchestrator.base.evolve` carry
  them over, so a reducer that updates a state keeps the state's unknown fields.
* **A union variant** (a ``kind`` / ``type`` / ``status`` / ``state`` value of an open union):
  an :class:`UnknownVariant` subclass, one per open union and listed in its type alias, keeps
  the whole JSON object and re-encodes it verbatim. Because it is a member of the alias, mypy
  makes every ``match`` and ``isinstance`` chain over the union say what it does with one;
  reducers skip it.
* **An enum value** of an enum the specification leaves open: an :class:`OpenStrEnum` gives a
  value it does not name as a pseudo-member (not cached, so a peer cannot grow the class)
  that equals its string and re-encodes as it.

Performance: a model without unknown keys (nearly all of them) shares the one empty
:data:`NO_UNKNOWN_FIELDS`; nothing is allocated for it.

Pure: no IO, no trio.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from typing import Any, ClassVar, Final

import attrs

__all__ = ["NO_UNKNOWN_FIELDS", "OpenStrEnum", "UnknownVariant", "WireObject"]

NO_UNKNOWN_FIELDS: Final[Mapping[str, Any]] = types.MappingProxyType({})
"""The ``unknown_fields`` of a model that carries none: one shared immutable empty mapping."""


@attrs.frozen(kw_only=True)
class WireObject:
    """The base of every AHP model: keeps the JSON keys its class does not model."""

    # Invariant: no key of self.unknown_fields is a wire name of a field of type(self)
    unknown_fields: Mapping[str, Any] = attrs.field(
        default=NO_UNKNOWN_FIELDS, repr=False, hash=False
    )


@attrs.frozen(kw_only=True)
class UnknownVariant:
    """A variant of an open union this project does not model, kept as its JSON object.

    A subclass per union names the union's discriminator in :attr:`TAG` and exposes it under
    that name as a property (``kind``, ``type``...), typed ``str``.
    """

    TAG: ClassVar[str]
    # Invariant: isinstance(self.raw.get(self.TAG), str)
    raw: Mapping[str, Any]

    @property
    def tag(self) -> str:
        """The discriminator's value as sent."""
        value: str = self.raw[self.TAG]
        return value


class OpenStrEnum(enum.StrEnum):
    """A string enum whose set of values the specification leaves open.

    A value no member names becomes a pseudo-member (``cls("future")``) that compares equal
    to its string, re-encodes as it, and is never one of the class's members.
    """

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, str):
            return None
        # Not cached in _value2member_map_: values a peer makes up must not grow the class.
        member = str.__new__(cls, value)
        member._name_ = value
        member._value_ = value
        return member
