"""The AHP wire format: the one cattrs converter for the root, session and chat channels.

Everything that knows how AHP looks as JSON is here; the models in :mod:`.state` and
:mod:`.actions` are plain data. The rules:

* Keys are camelCase (``tool_call_id`` ↔ ``toolCallId``), ``meta`` ↔ ``_meta``, except
  :class:`ProtectedResourceMetadata`, whose RFC 9728 keys are snake_case on the wire too.
* An optional field is ``None`` in Python. On input, an absent key and ``null`` both give
  ``None``; on output, ``None`` is omitted (fixtures write absent optionals as ``null``, the
  canonical re-encoding omits them).
* What a newer peer adds is kept and re-encoded verbatim (see :mod:`._unknown`): a key a
  model does not name goes to its ``unknown_fields`` and is written back after the known keys
  (round-trip fixture 017, as its ``preservedOutput``); a known key is known by its wire name
  (``_meta``, camelCase), never taken for an unknown one.
* Unions are discriminated on ``kind`` / ``type`` / ``status`` / ``state`` (and
  ``chat/toolCallConfirmed`` on ``approved``); :data:`StringOrMarkdown` and :data:`ToolInput`
  are told apart by being a string or an object. A union is *open* when its type alias lists
  an :class:`UnknownVariant` subclass: any other string tag decodes as that class, which keeps
  the object and re-encodes it verbatim (an unknown action ``type`` is an
  :class:`UnknownAction`, fixture 002). A tag of the wrong JSON type (a number for a string)
  is still an error, as is any unknown tag of a closed union: the tool-call ``status`` (a
  state machine the reducers own, whose table has no row for a status it does not know), the
  confirmation ``approved`` flag, the ``chat/*`` and ``session/*`` action unions (an unknown
  action is a :data:`StateAction`), and the host's own ``reconnect`` result.
* A :class:`OpenStrEnum` (values the specification leaves open) takes any string; every other
  enum is closed and takes only its members.
* Primitives are checked strictly: a string is never taken for a number, ``true`` never for
  ``1``, and a JSON array never for a string. A ``float`` field keeps the int it was given, so
  ``0`` re-encodes as ``0``. :class:`SessionStatus` accepts any 32-bit unsigned bitset.

At the edge, :func:`structure` and friends turn every failure into
:class:`~orchestrator.PeerProtocolError` whose ``path`` names the offending field in wire terms,
e.g. ``$.activeTurn.responseParts[0].toolCall.status``.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs
import cattrs
import cattrs.preconf.json
from cattrs.cols import homogenous_tuple_structure_factory, is_mapping, is_sequence
from cattrs.gen import (
    make_dict_structure_fn,
    make_dict_unstructure_fn,
    mapping_structure_factory,
    override,
)

from orchestrator.base import KeyedVector, PeerProtocolError

from . import actions, commands, state
from ._unknown import UnknownVariant, WireObject
from .actions import (
    ActionEnvelope,
    ChatAction,
    ChatToolCallConfirmedAction,
    RootAction,
    SessionAction,
    StateAction,
)
from .commands import (
    ChatSource,
    JsonRpcErrorResponse,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcSuccess,
    ReconnectResult,
    Snapshot,
)
from .state import (
    ChatCatalog,
    ChatInputAnswer,
    ChatInputAnswerValue,
    ChatInputQuestion,
    ChatOrigin,
    ChatState,
    ChatSummary,
    ChildCustomization,
    ContentRef,
    Customization,
    CustomizationLoadState,
    MarkdownString,
    McpServerState,
    MessageAttachment,
    ProtectedResourceMetadata,
    ResponsePart,
    ResponseParts,
    RootState,
    SessionInputRequest,
    SessionState,
    SessionStatus,
    TerminalClaim,
    ToolCallConfirmationState,
    ToolCallContributor,
    ToolCallRiskAssessment,
    ToolCallState,
    ToolResultContent,
)

__all__ = [
    "json_type",
    "structure",
    "structure_action",
    "structure_as",
    "structure_chat_action",
    "structure_chat_state",
    "structure_envelope",
    "structure_session_action",
    "structure_session_state",
    "wire_name",
]

T = TypeVar("T")

_SESSION_STATUS_LIMIT: Final = 1 << 32
_MAX_LISTED_CHOICES: Final = 12
_MAX_SHOWN: Final = 60
_MODEL_MODULES: Final = frozenset({state.__name__, actions.__name__, commands.__name__})
_SNAKE_CASE_ON_WIRE: Final[frozenset[type]] = frozenset({ProtectedResourceMetadata})


class _WireError(Exception):
    """A structuring failure found by one of our hooks; ``key`` extends the path (a tag)."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key


def wire_name(cls: type, attribute: str) -> str:
    """The JSON key of ``cls.attribute``: camelCase, with ``meta`` as ``_meta``."""
    if attribute == "meta":
        return "_meta"
    if cls in _SNAKE_CASE_ON_WIRE:
        return attribute
    head, *rest = attribute.split("_")
    return head + "".join(part.capitalize() for part in rest)


def json_type(value: object) -> str:
    """How a decoded JSON value is called in error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _show(value: object) -> str:
    """A JSON value as it appears on the wire, shortened for an error message."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _require_object(data: object) -> Mapping[str, Any]:
    if type(data) is dict:  # what json.loads gives: skip the slower ABC check
        return data
    if not isinstance(data, Mapping):
        raise _WireError(f"expected a JSON object, got {json_type(data)}")
    return data


def _is_model(cls: Any) -> bool:
    return (
        isinstance(cls, type)
        and attrs.has(cls)
        and cls.__module__ in _MODEL_MODULES
        and not issubclass(cls, UnknownVariant)
    )


def _is_unknown_variant(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, UnknownVariant)


def _union_members(tp: Any) -> frozenset[Any] | None:
    """The members of a union type other than ``None``, or None if ``tp`` is no union."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return None
    return frozenset(arg for arg in typing.get_args(tp) if arg is not type(None))


# ─── Discriminated unions ────────────────────────────────────────────────────


@attrs.frozen
class _TaggedUnion:
    """How to pick the variant of a union from the value of its tag key."""

    name: str
    tag: str
    members: frozenset[Any]
    # (type of the tag value, tag value) -> class or nested union. Keyed by type too, so
    # that ``1`` never selects the ``true`` variant.
    variants: Mapping[tuple[type, object], Any]
    # The union's UnknownVariant member, if the union is open: it takes any other string tag.
    unknown: type[UnknownVariant] | None = None

    def structure(self, data: object) -> object:
        obj = _require_object(data)
        if self.tag not in obj:
            raise _WireError(f"required discriminator {self.tag!r} is missing", key=self.tag)
        value = obj[self.tag]
        target = self.variants.get((type(value), value))
        if target is not None:
            return _converter.structure(obj, target)
        if self.unknown is not None:
            if isinstance(value, str):
                return self.unknown(raw=dict(obj))
            raise _WireError(
                f"expected the {self.name} {self.tag} as a string, got {json_type(value)}",
                key=self.tag,
            )
        message = f"unknown {self.name} {self.tag} {_show(value)}"
        if len(self.variants) <= _MAX_LISTED_CHOICES:
            message += f"; expected one of {', '.join(sorted(_show(v) for _, v in self.variants))}"
        raise _WireError(message, key=self.tag)


def _tag_values(cls: type, tag: str) -> tuple[object, ...]:
    attrs.resolve_types(cls)
    for field in attrs.fields(cls):
        if wire_name(cls, field.name) == tag:
            return typing.get_args(field.type)
    raise TypeError(f"{cls.__name__} has no discriminator field {tag!r}")


def _tagged(name: str, union: Any, tag: str, *, nested: Any = None) -> _TaggedUnion:
    """The dispatch table of ``union``; members of the ``nested`` union dispatch through it.

    The union is open if one of its members is an :class:`UnknownVariant` (of this ``tag``).
    """
    members = _union_members(union) or frozenset()
    nested_members = _union_members(nested) or frozenset()
    unknowns = [cls for cls in members if _is_unknown_variant(cls)]
    unknown = unknowns[0] if unknowns else None
    if len(unknowns) > 1 or (unknown is not None and tag != unknown.TAG):
        raise TypeError(f"{name}: expected at most one unknown variant, of tag {tag!r}")
    variants: dict[tuple[type, object], Any] = {}
    for cls in members - {unknown}:
        target = nested if cls in nested_members else cls
        for value in _tag_values(cls, tag):
            key = (type(value), value)
            if variants.get(key, target) is not target:
                raise TypeError(f"{name}: {tag} {value!r} names two variants")
            variants[key] = target
    return _TaggedUnion(name=name, tag=tag, members=members, variants=variants, unknown=unknown)


_TAGGED_UNIONS: Final = (
    _tagged("ChatOrigin", ChatOrigin, "kind"),
    _tagged("ChatInputQuestion", ChatInputQuestion, "kind"),
    _tagged("ChatInputAnswerValue", ChatInputAnswerValue, "kind"),
    _tagged("ChatInputAnswer", ChatInputAnswer, "state"),
    _tagged("MessageAttachment", MessageAttachment, "type"),
    _tagged("ResponsePart", ResponsePart, "kind"),
    _tagged("ToolCallRiskAssessment", ToolCallRiskAssessment, "status"),
    _tagged("ToolCallContributor", ToolCallContributor, "kind"),
    _tagged("ToolCallState", ToolCallState, "status"),
    _tagged("ToolCallConfirmationState", ToolCallConfirmationState, "status"),
    _tagged("ToolResultContent", ToolResultContent, "type"),
    _tagged("SessionInputRequest", SessionInputRequest, "kind"),
    _tagged("CustomizationLoadState", CustomizationLoadState, "kind"),
    _tagged("ChildCustomization", ChildCustomization, "type"),
    _tagged("Customization", Customization, "type"),
    _tagged("McpServerState", McpServerState, "kind"),
    _tagged("ChatToolCallConfirmedAction", ChatToolCallConfirmedAction, "approved"),
    _tagged("ChatAction", ChatAction, "type", nested=ChatToolCallConfirmedAction),
    _tagged("SessionAction", SessionAction, "type"),
    _tagged("RootAction", RootAction, "type"),
    _tagged("TerminalClaim", TerminalClaim, "kind"),
    _tagged("StateAction", StateAction, "type", nested=ChatToolCallConfirmedAction),
    _tagged("ChatSource", ChatSource, "kind"),
    _tagged("ReconnectResult", ReconnectResult, "type"),
)


def _structure_string_or(cls: type, what: str) -> Callable[[object], object]:
    """A hook for ``str | cls``: a JSON string stays a string, an object becomes ``cls``."""

    def structure(data: object) -> object:
        if isinstance(data, str):
            return data
        if isinstance(data, Mapping):
            return _converter.structure(data, cls)
        raise _WireError(f"expected {what}, got {json_type(data)}")

    return structure


def _structure_json_primitive(data: object) -> object:
    if data is None or isinstance(data, str | int | float | bool):
        return data
    raise _WireError(f"expected a JSON string, number, boolean or null, got {json_type(data)}")


def _structure_request_id(data: object) -> object:
    if isinstance(data, str) or (isinstance(data, int) and not isinstance(data, bool)):
        return data
    raise _WireError(f"expected a string or an integer id, got {json_type(data)}")


def _structure_json_rpc(data: object) -> object:
    """A JSON-RPC message, by the keys it has (``method`` and ``id``, ``result``, ``error``)."""
    obj = _require_object(data)
    if "method" in obj:
        target: type = JsonRpcRequest if "id" in obj else JsonRpcNotification
    elif "error" in obj:
        target = JsonRpcErrorResponse
    elif "result" in obj:
        target = JsonRpcSuccess
    else:
        raise _WireError("a JSON-RPC message needs a method, a result or an error")
    return _converter.structure(obj, target)


_SNAPSHOT_STATES: Final = (
    ("ahp-root:", RootState),
    ("ahp-session:", SessionState),
    ("ahp-chat:", ChatState),
)


_SNAPSHOT_KEYS: Final = frozenset({"resource", "state", "fromSeq"})


def _structure_snapshot(data: object, _: Any) -> Snapshot:
    """A snapshot; its state's type follows from its resource's scheme."""
    obj = _require_object(data)
    resource = obj.get("resource")
    state_type: Any = Mapping[str, Any]
    if isinstance(resource, str):
        for prefix, cls in _SNAPSHOT_STATES:
            if resource.startswith(prefix):
                state_type = cls
    try:
        state = _converter.structure(obj["state"], state_type) if "state" in obj else None
    except Exception as exc:
        path, message = _locate(exc, "")
        raise _WireError(message, key=f"state{path}") from exc
    if state is None:
        raise _WireError("required field is missing", key="state")
    snapshot = Snapshot(
        resource=_converter.structure(resource, str),
        state=state,
        from_seq=_converter.structure(obj.get("fromSeq"), int),
    )
    _keep_unknown_fields(snapshot, obj, _SNAPSHOT_KEYS)
    return snapshot


def _unstructure_response(response: JsonRpcSuccess | JsonRpcErrorResponse) -> dict[str, Any]:
    """A response keeps ``id`` and ``result`` even when they are ``null``."""
    if isinstance(response, JsonRpcSuccess):
        encoded = {
            "jsonrpc": "2.0",
            "id": response.id,
            "result": _converter.unstructure(response.result),
        }
    else:
        encoded = {
            "jsonrpc": "2.0",
            "id": response.id,
            "error": _converter.unstructure(response.error),
        }
    return _with_unknown_fields(encoded, response)


# Union hooks keyed by the union's members other than None, so that ``ResponsePart`` and
# ``ResponsePart | None`` find the same hook.
_UNION_HOOKS: Final[Mapping[frozenset[Any], Callable[[object], object]]] = {
    frozenset({str, MarkdownString}): _structure_string_or(
        MarkdownString, "a string or a {markdown} object"
    ),
    frozenset({str, ContentRef}): _structure_string_or(ContentRef, "a string or a content ref"),
    frozenset({str, int, float, bool}): _structure_json_primitive,
    frozenset({str, int}): lambda data: _structure_request_id(data),
    frozenset(typing.get_args(JsonRpcMessage)): lambda data: _structure_json_rpc(data),
    **{union.members: union.structure for union in _TAGGED_UNIONS},
}


def _union_structure_hook(tp: Any) -> Callable[[object, Any], object]:
    hook = _UNION_HOOKS[_union_members(tp) or frozenset()]
    optional = type(None) in typing.get_args(tp)

    def structure_union(data: object, _: Any) -> object:
        if data is None and optional:
            return None
        return hook(data)

    return structure_union


# ─── Models, primitives, collections ─────────────────────────────────────────


_UNKNOWN_FIELDS: Final = "unknown_fields"


def _wire_fields(cls: type) -> list[attrs.Attribute[Any]]:
    """The fields of model ``cls`` that are JSON keys (all but ``unknown_fields``)."""
    return [a for a in attrs.fields(cls) if a.name != _UNKNOWN_FIELDS]


def _known_keys(cls: type) -> frozenset[str]:
    return frozenset(wire_name(cls, a.name) for a in _wire_fields(cls))


def _keep_unknown_fields(value: WireObject, obj: Mapping[str, Any], known: frozenset[str]) -> None:
    """Give the freshly built ``value`` the keys of ``obj`` that are not in ``known``."""
    if obj.keys() <= known:  # nearly always: keep the shared empty mapping
        return
    extra = {key: item for key, item in obj.items() if key not in known}
    # ``value`` is ours alone until we return it: set the field as attrs' own __init__ does,
    # rather than building the object (and its converters) a second time with attrs.evolve.
    object.__setattr__(value, _UNKNOWN_FIELDS, extra)


def _model_structure_hook(cls: type) -> Callable[[object, Any], object]:
    renames: dict[str, Any] = {
        a.name: override(rename=wire_name(cls, a.name)) for a in _wire_fields(cls)
    }
    structure_fields: Callable[[Mapping[str, Any], Any], WireObject] = make_dict_structure_fn(
        cls, _converter, **renames, unknown_fields=override(omit=True)
    )
    known = _known_keys(cls)

    def structure_model(data: object, _: Any) -> object:
        obj = _require_object(data)
        value = structure_fields(obj, cls)
        if not obj.keys() <= known:  # inline the common case: this runs for every object
            _keep_unknown_fields(value, obj, known)
        return value

    return structure_model


def _with_unknown_fields(known: dict[str, Any], value: WireObject) -> dict[str, Any]:
    """``known`` (a model's encoded fields) followed by the model's unknown fields."""
    for key, item in value.unknown_fields.items():
        known.setdefault(key, item)  # the invariant says no key is known; if one is, it wins
    return known


def _model_unstructure_hook(cls: type) -> Callable[[Any], dict[str, Any]]:
    overrides: dict[str, Any] = {
        a.name: override(rename=wire_name(cls, a.name), omit_if_default=a.default is None)
        for a in _wire_fields(cls)
    }
    unstructure_fields: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls, _converter, **overrides, unknown_fields=override(omit=True)
    )

    def unstructure_model(value: WireObject) -> dict[str, Any]:
        if value.unknown_fields:
            return _with_unknown_fields(unstructure_fields(value), value)
        return unstructure_fields(value)

    return unstructure_model


def _unknown_variant_structure_hook(cls: type[UnknownVariant]) -> Callable[[object, Any], object]:
    def structure_unknown(data: object, _: Any) -> UnknownVariant:
        obj = _require_object(data)
        if not isinstance(obj.get(cls.TAG), str):
            raise _WireError(f"expected the {cls.TAG} as a string", key=cls.TAG)
        return cls(raw=dict(obj))

    return structure_unknown


def _unstructure_unknown_variant(value: UnknownVariant) -> dict[str, Any]:
    return dict(value.raw)


def _strict(kind: type | tuple[type, ...], what: str) -> Callable[[object, Any], Any]:
    """A hook that accepts ``kind`` as it is (never a bool for a number) and nothing else."""
    exact = kind if isinstance(kind, tuple) else (kind,)

    def structure_primitive(data: object, _: Any) -> Any:
        if type(data) in exact:  # the common case, decided without isinstance
            return data
        if isinstance(data, kind) and (kind is bool or not isinstance(data, bool)):
            return data
        raise _WireError(f"expected {what}, got {json_type(data)}")

    return structure_primitive


def _structure_session_status(data: object, _: Any) -> SessionStatus:
    if isinstance(data, bool) or not isinstance(data, int):
        raise _WireError(f"expected a status bitset (an integer), got {json_type(data)}")
    if not 0 <= data < _SESSION_STATUS_LIMIT:
        raise _WireError(f"status bitset {data} is out of the 32-bit unsigned range")
    return SessionStatus(data)


def _structure_str_enum(data: object, cls: type[enum.StrEnum]) -> enum.StrEnum:
    if isinstance(data, str):
        # The member by value: what cls(data) returns, without the enum call machinery.
        member = cls._value2member_map_.get(data)
        if member is not None:
            return member  # type: ignore[return-value]
        try:
            return cls(data)
        except ValueError:
            pass
    allowed = ", ".join(_show(member.value) for member in cls)
    raise _WireError(f"expected one of {allowed}, got {_show(data)}")


def _literal_structure_hook(tp: Any) -> Callable[[object, Any], object]:
    # Compare types as well as values: Literal[True] must not accept 1.
    allowed = {(type(_plain(value)), _plain(value)): value for value in typing.get_args(tp)}
    shown = ", ".join(_show(_plain(value)) for value in typing.get_args(tp))

    def structure_literal(data: object, _: Any) -> object:
        try:
            return allowed[(type(data), data)]
        except (KeyError, TypeError):
            raise _WireError(f"expected {shown}, got {_show(data)}") from None

    return structure_literal


def _plain(value: object) -> object:
    """The JSON value of a literal or enum member."""
    return value.value if isinstance(value, enum.Enum) else value


def _is_homogenous_tuple(tp: Any) -> bool:
    origin: Any = typing.get_origin(tp)
    return origin is tuple and is_sequence(tp)


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Literal


def _sequence_structure_hook(tp: Any) -> Callable[[object, Any], object]:
    structure_items = homogenous_tuple_structure_factory(tp, _converter)

    def structure_sequence(data: object, _: Any) -> object:
        if not isinstance(data, list | tuple):
            raise _WireError(f"expected a JSON array, got {json_type(data)}")
        return structure_items(data, tp)

    return structure_sequence


def _mapping_structure_hook(tp: Any) -> Callable[[object, Any], object]:
    _, value_type = typing.get_args(tp)
    structure_values = (
        None if value_type is Any else mapping_structure_factory(tp, _converter, dict)
    )

    def structure_mapping(data: object, _: Any) -> object:
        obj = _require_object(data)
        return dict(obj) if structure_values is None else structure_values(obj, tp)

    return structure_mapping


def _keyed_structure_hook(
    cls: type[KeyedVector[Any]], item: Any
) -> Callable[[object, Any], object]:
    """Structure a JSON array into ``cls`` through the tuple hook (same errors, same paths)."""
    as_tuple = tuple[item, ...]

    def structure_keyed(data: object, _: Any) -> object:
        return cls(_converter.structure(data, as_tuple))

    return structure_keyed


def _keyed_unstructure(vector: KeyedVector[Any]) -> list[Any]:
    return [_converter.unstructure(item) for item in vector]


def _make_converter() -> cattrs.Converter:
    converter = cattrs.preconf.json.make_converter(forbid_extra_keys=False)
    # Later registrations take precedence over earlier ones.
    converter.register_structure_hook_factory(_is_model, _model_structure_hook)
    converter.register_unstructure_hook_factory(_is_model, _model_unstructure_hook)
    converter.register_structure_hook_factory(_is_unknown_variant, _unknown_variant_structure_hook)
    converter.register_unstructure_hook_factory(
        _is_unknown_variant, lambda _: _unstructure_unknown_variant
    )
    converter.register_structure_hook_factory(
        lambda tp: (_union_members(tp) or frozenset()) in _UNION_HOOKS, _union_structure_hook
    )
    converter.register_structure_hook_factory(_is_literal, _literal_structure_hook)
    converter.register_unstructure_hook_factory(_is_literal, lambda _: lambda value: _plain(value))
    # Class hooks are dispatched on the most specific class first: StrEnum before str.
    converter.register_structure_hook(enum.StrEnum, _structure_str_enum)
    converter.register_unstructure_hook(enum.StrEnum, lambda member: member.value)
    converter.register_structure_hook(SessionStatus, _structure_session_status)
    converter.register_structure_hook(Snapshot, _structure_snapshot)
    converter.register_unstructure_hook(JsonRpcSuccess, _unstructure_response)
    converter.register_unstructure_hook(JsonRpcErrorResponse, _unstructure_response)
    converter.register_unstructure_hook(SessionStatus, int)
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(bool, _strict(bool, "a boolean"))
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(float, _strict((int, float), "a number"))
    converter.register_structure_hook_factory(_is_homogenous_tuple, _sequence_structure_hook)
    converter.register_structure_hook_factory(is_mapping, _mapping_structure_hook)
    for keyed, item in ((ResponseParts, ResponsePart), (ChatCatalog, ChatSummary)):
        converter.register_structure_hook(keyed, _keyed_structure_hook(keyed, item))
        converter.register_unstructure_hook(keyed, _keyed_unstructure)
    return converter


_converter: Final = _make_converter()


# ─── The edge ────────────────────────────────────────────────────────────────


def _locate(exc: BaseException, path: str = "$") -> tuple[str, str]:
    """The wire path and message of the first failure inside a cattrs error tree."""
    if isinstance(exc, cattrs.ClassValidationError):
        with_notes, without = exc.group_exceptions()
        if with_notes:
            inner, note = with_notes[0]
            return _locate(inner, f"{path}.{wire_name(exc.cl, note.name)}")
        return _locate(without[0], path)
    if isinstance(exc, cattrs.IterableValidationError):
        with_items, without = exc.group_exceptions()
        if with_items:
            inner, item = with_items[0]
            index = item.index if isinstance(item.index, int) else repr(item.index)
            return _locate(inner, f"{path}[{index}]")
        return _locate(without[0], path)
    if isinstance(exc, _WireError):
        return (path if exc.key is None else f"{path}.{exc.key}"), exc.message
    if isinstance(exc, KeyError):
        return path, "required field is missing"
    return path, str(exc) or type(exc).__name__


def structure_as(data: object, tp: Any) -> Any:
    """Decode ``data`` as ``tp``, which may be a union alias such as :data:`ResponsePart`.

    Raises :class:`PeerProtocolError` naming the wire path of the first problem.
    """
    try:
        return _converter.structure(data, tp)
    except Exception as exc:
        path, message = _locate(exc)
        raise PeerProtocolError(message, path=path) from exc


def structure(data: object, cls: type[T]) -> T:
    """Decode JSON-ready ``data`` (as from :func:`json.loads`) into the AHP class ``cls``."""
    value: T = structure_as(data, cls)
    return value


def structure_action(data: object) -> StateAction:
    """Decode any state action; a ``type`` we do not model gives :class:`UnknownAction`."""
    action: StateAction = structure_as(data, StateAction)
    return action


def structure_chat_action(data: object) -> ChatAction:
    """Decode a ``chat/*`` action (an unknown ``type`` is an error)."""
    action: ChatAction = structure_as(data, ChatAction)
    return action


def structure_session_action(data: object) -> SessionAction:
    """Decode a ``session/*`` action (an unknown ``type`` is an error)."""
    action: SessionAction = structure_as(data, SessionAction)
    return action


def structure_envelope(data: object) -> ActionEnvelope:
    """Decode an action envelope."""
    return structure(data, ActionEnvelope)


def structure_chat_state(data: object) -> ChatState:
    """Decode a chat channel snapshot."""
    return structure(data, ChatState)


def structure_session_state(data: object) -> SessionState:
    """Decode a session channel snapshot."""
    return structure(data, SessionState)
