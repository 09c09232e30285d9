"""The one converter for Agent UI envelopes, and the edge functions that use it.

Wire rules (spec "Event envelope"; upstream schema ``agentui-event.schema.json``):

* names are camelCase (``sessionId``, ``rawEventRef``), made from the snake_case attribute
  names by a hook factory with ``override(rename=...)``, so no field is spelled twice;
* ``type`` is required and non-empty, ids are non-empty (the schema's ``minLength: 1``);
  every other field is optional and is left out of the output when it is ``None``;
  on input an explicit ``null`` reads as absent;
* fields the spec does not name are allowed (``additionalProperties: true``): they are kept
  in :attr:`Envelope.extra` and written back at top level, after the known fields;
* the taxonomy fields are closed sets; an unknown value is the peer's error, reported with
  its wire path (``$.phase``);
* ``type`` is not: the spec's event classes are "open to extension" and products add their
  own, so a well-formed envelope of a class we do not emit is read, not refused.

cattrs' own coercions (``int("7")``, ``str(7)``) are too lenient for a wire format, so the
primitive hooks here check types instead of converting them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from enum import Enum
from types import NoneType, UnionType
from typing import Any, Final, Union, get_args, get_origin

import attrs
from cattrs import Converter
from cattrs.errors import ClassValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import JsonConverter, make_converter
from cattrs.v import format_exception

from orchestrator.base import LocalProtocolError, PeerProtocolError, parse_json

from ._agentui import (
    Control,
    Envelope,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    Topology,
)

__all__ = [
    "envelope_from_json_line",
    "envelope_to_json_line",
    "structure_envelope",
    "unstructure_envelope",
]

_PROTOCOL: Final = "agent-ui"

_TAXONOMIES: Final[frozenset[type[Enum]]] = frozenset(
    {Owner, Scope, Phase, Surface, Persistence, Control, Topology}
)

_Refs = list[Any] | dict[str, Any]

_LINE_BREAK_ESCAPES: Final = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


class _WireValueError(ValueError):
    """A structuring failure whose message already says what was wrong (used verbatim)."""


def _json_type_name(value: object) -> str:
    # Name the JSON type the peer sent, not the Python one: the reader speaks JSON.
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int() | float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "object"
    return type(value).__name__


def _structure_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise _WireValueError(f"expected a string, got {_json_type_name(value)}")
    return value


def _structure_non_empty_str(value: object, _: type) -> str:
    text = _structure_str(value, str)
    if not text:
        raise _WireValueError("expected a non-empty string")
    return text


def _structure_int(value: object, _: type) -> int:
    # bool is an int subclass in Python but not a number in JSON.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _WireValueError(f"expected an integer, got {_json_type_name(value)}")
    return value


def _structure_object(value: object, _: type) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _WireValueError(f"expected an object, got {_json_type_name(value)}")
    return dict(value)


def _structure_refs(value: object, _: type) -> list[Any] | dict[str, Any]:
    # The spec: "Array or map of ids/refs". Either shape is kept as sent.
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    raise _WireValueError(f"expected an array or an object, got {_json_type_name(value)}")


def _is_optional(t: object) -> bool:
    return get_origin(t) in (Union, UnionType) and NoneType in get_args(t)


def _optional(handler: Callable[[object, type], Any]) -> Callable[[object, type], Any]:
    # An explicit null reads as absent: the output omits None, so it round-trips as absent.
    def structure(value: object, cl: type) -> Any:
        return None if value is None else handler(value, cl)

    return structure


def _optional_structure_factory(t: Any, c: Converter) -> Callable[[object, type], Any]:
    # Replaces the preconf union passthrough, which would let any string through as an
    # ``Owner | None`` (a StrEnum is a str) without looking at the value.
    inner_args = tuple(arg for arg in get_args(t) if arg is not NoneType)
    inner = inner_args[0] if len(inner_args) == 1 else Union[inner_args]  # noqa: UP007
    handler = c.get_structure_hook(inner)
    return _optional(lambda value, _: handler(value, inner))


def _taxonomy_hook(enum: type[Enum]) -> Callable[[object, type], Enum]:
    allowed = ", ".join(member.value for member in enum)

    def structure(value: object, _: type) -> Enum:
        if isinstance(value, str):
            try:
                return enum(value)
            except ValueError:
                pass
        raise _WireValueError(
            f"unknown {enum.__name__.lower()} {value!r}; expected one of: {allowed}"
        )

    return structure


def _structure_factory(cl: type[Any], c: Converter) -> Callable[[Mapping[str, Any], type], Any]:
    # Every Agent UI record allows fields the spec does not name and keeps them in ``extra``.
    fields = [a for a in attrs.fields(cl) if a.name != "extra"]
    overrides: dict[str, Any] = {
        a.name: override(
            rename=_camel(a.name),
            # The schema gives ids minLength 1; an empty type would select no reducer.
            struct_hook=_structure_non_empty_str
            if a.name == "type"
            else _optional(_structure_non_empty_str)
            if a.name.endswith("_id")
            else None,
        )
        for a in fields
    }
    base = make_dict_structure_fn(cl, c, **overrides, extra=override(omit=True))
    known = frozenset(_camel(a.name) for a in fields)

    def structure(data: Mapping[str, Any], _: type) -> Any:
        result = base(data, cl)
        extra = {key: value for key, value in data.items() if key not in known}
        return attrs.evolve(result, extra=extra) if extra else result

    return structure


def _unstructure_factory(cl: type[Any], c: Converter) -> Callable[[Any], dict[str, Any]]:
    fields = [a for a in attrs.fields(cl) if a.name != "extra"]
    overrides: dict[str, Any] = {a.name: override(rename=_camel(a.name)) for a in fields}
    # Every optional field defaults to None, so "omit if default" is "omit None".
    base = make_dict_unstructure_fn(
        cl, c, _cattrs_omit_if_default=True, **overrides, extra=override(omit=True)
    )
    known = frozenset(_camel(a.name) for a in fields)

    def unstructure(instance: Any) -> dict[str, Any]:
        result = base(instance)
        # Sorted, so that equal envelopes give byte-equal lines whatever the insertion order.
        for key in sorted(instance.extra):
            if key in known:
                raise LocalProtocolError(
                    f"extra field {key!r} collides with an envelope field",
                    path=f"$.{key}",
                    protocol=_PROTOCOL,
                )
            result[key] = c.unstructure(instance.extra[key])
        return result

    return unstructure


def _make_converter() -> JsonConverter:
    # Unknown keys are allowed: the structure hook collects them into ``extra``.
    c = make_converter(forbid_extra_keys=False)
    c.register_structure_hook(str, _structure_str)
    c.register_structure_hook(int, _structure_int)
    c.register_structure_hook_func(lambda t: t == dict[str, Any], _structure_object)
    c.register_structure_hook_func(lambda t: t == _Refs, _structure_refs)
    # Class hooks go through singledispatch, which the str hook above would otherwise win
    # for these StrEnums; a hook on the enum class itself is more specific.
    for enum in _TAXONOMIES:
        c.register_structure_hook(enum, _taxonomy_hook(enum))
    c.register_structure_hook_factory(_is_optional, _optional_structure_factory)
    # str() gives a StrEnum member's plain value (EventType in ``type``, the taxonomies, enum
    # members in a payload), so the output equals what json.loads would give back.
    c.register_unstructure_hook(str, str)
    c.register_structure_hook_factory(attrs.has, _structure_factory)
    c.register_unstructure_hook_factory(attrs.has, _unstructure_factory)
    return c


#: The Agent UI converter. Everything that reads or writes envelopes goes through it.
converter: Final[JsonConverter] = _make_converter()


def _wire_errors(exc: BaseException, path: str) -> list[tuple[str, str]]:
    """Flatten a cattrs validation error into ``(wire path, message)`` pairs."""
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        noted = [
            error
            for sub, note in with_notes
            for error in _wire_errors(sub, f"{path}.{_camel(note.name)}")
        ]
        return noted + [error for sub in without for error in _wire_errors(sub, path)]
    # Our hooks' messages are written for the peer; cattrs' formatter covers the rest
    # (a missing required key is a KeyError: "required field missing").
    message = str(exc) if isinstance(exc, _WireValueError) else format_exception(exc, None)
    return [(path, message)]


def structure_envelope(data: object) -> Envelope:
    """Read one envelope from decoded JSON; a peer's bad data raises PeerProtocolError."""
    if not isinstance(data, dict):
        raise PeerProtocolError(
            f"an envelope must be a JSON object, got {_json_type_name(data)}",
            path="$",
            protocol=_PROTOCOL,
        )
    try:
        envelope: Envelope = converter.structure(data, Envelope)
    except ClassValidationError as exc:
        errors = _wire_errors(exc, "$")
        path, message = errors[0]
        if len(errors) > 1:
            message += "; also " + "; ".join(f"{p}: {m}" for p, m in errors[1:])
        raise PeerProtocolError(message, path=path, protocol=_PROTOCOL) from exc
    return envelope


def unstructure_envelope(env: Envelope) -> dict[str, Any]:
    """Write one envelope as JSON data: known fields in spec order, then ``extra`` keys."""
    result: dict[str, Any] = converter.unstructure(env, Envelope)
    return result


def envelope_to_json_line(env: Envelope) -> str:
    """One envelope as compact JSON on one line, ``type`` and ``sequence`` first.

    Key order is the spec's table order, then ``extra`` keys sorted; payload key order is
    the producer's. The line holds no line break of any kind, so it can be framed by
    newlines (JSON Lines, a journal, an SSE ``data:`` field).
    """
    data = unstructure_envelope(env)
    try:
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LocalProtocolError(
            f"envelope is not JSON-serializable: {exc}", path="$", protocol=_PROTOCOL
        ) from exc
    # With ensure_ascii off, json.dumps leaves NEL, U+2028 and U+2029 raw, and
    # str.splitlines() (and JavaScript before ES2019) treats them as line breaks. They can
    # only occur inside strings, where the escape means the same.
    return line.translate(_LINE_BREAK_ESCAPES)


def envelope_from_json_line(line: str | bytes) -> Envelope:
    """Read one envelope from one line of JSON; bad JSON raises PeerProtocolError."""
    return structure_envelope(parse_json(line, protocol=_PROTOCOL))
