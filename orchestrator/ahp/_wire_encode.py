"""Encoding AHP values as JSON-ready data, compiled: what :mod:`._wire`'s converter gives,
in a third of the time.

The converter's hooks (cattrs) unstructure a model through layers of calls per field: the
model hook, the generated function, an optional's hook, a union's dispatch on the value's
class, a literal's or an enum's hook. Every fact the journal writes and every snapshot part
goes through them. Here each model class gets one generated function that builds its dict
with those layers inlined, from the same rules, read off the converter's own hooks:

* a field whose hook is the identity is read as it is; an enum's (``member.value``), a
  literal's, an optional's (``None`` omitted, as the wire omits it) and a homogeneous
  tuple's (a list) are written inline; a union's dispatches on the value's class to the
  compiled function of that class, as the converter dispatches to its hook;
* a nested model calls its own compiled function;
* any other hook (free-form JSON, mappings, a status bitset, a JSON-RPC response) is called
  as it is: the converter's own.

The keys come in the converter's order (the fields always written, in declaration order,
then those omitted when ``None``), then the model's unknown fields. So the result is equal,
key order included, to ``_wire._converter.unstructure(value)`` for every value (a property
test holds them together over generated values of every AHP type). A class this does not
compile (one whose hook is not the model hook) goes to the converter.

Pure: no IO, no trio.
"""

from __future__ import annotations

import enum
import itertools
import threading
import typing
from collections.abc import Callable
from typing import Any, Final

import attrs
from cattrs.fns import identity

from . import state
from ._unknown import UnknownVariant
from ._wire import (
    _converter,
    _is_model,
    _plain,
    _unstructure_unknown_variant,
    _wire_fields,
    _with_unknown_fields,
    wire_name,
)

__all__ = ["unstructure"]

_Encoder = Callable[[Any], Any]


class _Probe(enum.StrEnum):
    PROBE = "probe"


def _code_of(hook: object) -> object:
    return getattr(hook, "__code__", None)


#: The converter's hooks recognised by their code (they are closures made per type).
_MODEL_CODE: Final = _code_of(_converter.get_unstructure_hook(state.ChatSummary))
_ENUM_CODE: Final = _code_of(_converter.get_unstructure_hook(_Probe))
_LITERAL_CODE: Final = _code_of(_converter.get_unstructure_hook(typing.Literal["probe"]))
_OPTIONAL_CODE: Final = _code_of(_converter.get_unstructure_hook(state.ChatSummary | None))
_ITERABLE_CODE: Final = _code_of(_converter.get_unstructure_hook(tuple[state.ChatSummary, ...]))
_UNION: Final = _converter.get_unstructure_hook(state.ResponsePart)  # a bound method: ==
_KEYED: Final = _converter.get_unstructure_hook(state.ResponseParts)


_ANY: Final = _converter.get_unstructure_hook(Any)  # the converter's own dispatch


def _free_form(hook: Any) -> bool:
    """Whether ``hook`` is cattrs' for a mapping of any values (``Mapping[str, Any]``): it
    keeps the keys and unstructures each value by its class, into a dict."""
    made = getattr(hook, "__globals__", {})
    return (
        getattr(hook, "__name__", None) == "unstructure_mapping"
        and "__cattr_mapping_cl" not in made
        and made.get("__cattr_k_u", ...) is None
        and made.get("__cattr_v_u") == _ANY
    )


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})


def _json_tree(value: Any) -> Any:
    """``value`` unstructured by its class (as the converter does a value typed ``Any``):
    plain JSON data directly, anything else by the converter."""
    cls = value.__class__
    if cls in _PLAIN:
        return value
    if cls is dict:
        return {
            key if key.__class__ is str else _converter.unstructure(key): _json_tree(item)
            for key, item in value.items()
        }
    if cls is list:
        return [_json_tree(item) for item in value]
    return _converter.unstructure(value)


class _NotCompiledError(Exception):
    """A model this module does not compile: the converter's hook is used for it."""


class _Compiler:
    """Compiles model classes on demand; :attr:`encoders` maps a class to its function."""

    def __init__(self) -> None:
        self.encoders: dict[type, _Encoder] = {}
        self._compiling: set[type] = set()
        self._names = itertools.count()
        # Compiling is rare and takes the lock (the journal's writer thread encodes too);
        # encoding reads ``encoders`` without it.
        self._lock = threading.RLock()

    def encoder_of(self, cls: type) -> _Encoder:
        """The function that unstructures a value of exactly ``cls`` as the converter does."""
        found = self.encoders.get(cls)  # compiled: no lock to wait for (a compile elsewhere)
        if found is not None:
            return found
        with self._lock:
            found = self.encoders.get(cls)
            if found is not None:
                return found
            hook = _converter.get_unstructure_hook(cls)
            encoder: _Encoder = hook
            if isinstance(cls, type) and issubclass(cls, UnknownVariant):
                encoder = _unstructure_unknown_variant
            elif _code_of(hook) is _MODEL_CODE and _is_model(cls):
                self._compiling.add(cls)
                try:
                    encoder = self._compile(cls)
                except _NotCompiledError:
                    pass
                finally:
                    self._compiling.discard(cls)
            self.encoders[cls] = encoder
            return encoder

    def dispatch(self, value: Any) -> Any:
        """As the converter unstructures a value of a union: by the value's own class."""
        encoder = self.encoders.get(value.__class__)
        if encoder is None:
            encoder = self.encoder_of(value.__class__)
        return encoder(value)

    def _compile(self, cls: type) -> _Encoder:
        attrs.resolve_types(cls)
        names: dict[str, Any] = {
            "_with_unknown_fields": _with_unknown_fields,
            "_dispatch": self.dispatch,
            "_encoder_of": self.encoder_of,
            "_plain": _plain,
            "_str": str,
            "_json_tree": _json_tree,
        }
        always: list[str] = []
        unless_none: list[str] = []
        for field in _wire_fields(cls):
            if not field.init:
                continue  # cattrs leaves out what __init__ does not take
            key = wire_name(cls, field.name)
            read = f"instance.{field.name}"
            if field.default is None:
                if field.converter is not None:
                    raise _NotCompiledError(cls)  # the default to compare with is converted
                # Written only when it is not None: an optional's own None check is moot.
                tp = field.type
                if _code_of(_converter.get_unstructure_hook(tp)) is _OPTIONAL_CODE:
                    tp = _optional_of(tp)
                value = self._expression(tp, read, names)
                unless_none.append(f"  if {read} is not None:\n    res[{key!r}] = {value}")
            else:
                always.append(f"    {key!r}: {self._expression(field.type, read, names)},")
        name = f"encode_{cls.__name__}"
        source = "\n".join(
            [
                f"def {name}(instance):",
                "  res = {",
                *always,
                "  }",
                *unless_none,
                "  if instance.unknown_fields:",
                "    return _with_unknown_fields(res, instance)",
                "  return res",
            ]
        )
        exec(compile(source, f"<ahp encoder {cls.__qualname__}>", "exec"), names)
        encoder: _Encoder = names[name]
        return encoder

    def _expression(self, tp: Any, value: str, names: dict[str, Any]) -> str:
        """Python source that unstructures ``value`` (an expression) of type ``tp`` as the
        converter's hook for ``tp`` does."""
        hook: Any = _converter.get_unstructure_hook(tp)
        if hook == identity:
            return value
        code = _code_of(hook)
        if code is _ENUM_CODE:
            return f"{value}.value"
        if code is _LITERAL_CODE:
            return f"({value} if {value}.__class__ is _str else _plain({value}))"
        if hook == _UNION:
            return f"_dispatch({value})"
        if hook is _KEYED:
            return f"[_dispatch(item) for item in {value}]"
        if hook == _ANY:
            return f"_json_tree({value})"
        if _free_form(hook):
            return f"{{key: _json_tree(item) for key, item in {value}.items()}}"
        if code is _MODEL_CODE and isinstance(tp, type) and _is_model(tp):
            if tp in self._compiling:  # a model that holds itself: looked up when called
                return f"_encoder_of({self._name(tp, names)})({value})"
            return f"{self._name(self.encoder_of(tp), names)}({value})"
        if code is _ITERABLE_CODE and hook.__defaults__[0] is list and typing.get_args(tp):
            item = f"item{next(self._names)}"
            inner = self._expression(typing.get_args(tp)[0], item, names)
            return f"[{inner} for {item} in {value}]"
        if code is _OPTIONAL_CODE:
            inner = self._expression(_optional_of(tp), "optional", names)
            function = eval(f"lambda optional: None if optional is None else {inner}", names)
            return f"{self._name(function, names)}({value})"
        return f"{self._name(hook, names)}({value})"

    def _name(self, thing: object, names: dict[str, Any]) -> str:
        name = f"_bound{next(self._names)}"
        names[name] = thing
        return name


def _optional_of(tp: Any) -> Any:
    """The type an optional's hook unstructures (as cattrs picks it: the other member)."""
    first, second = typing.get_args(tp)
    return first if second is type(None) else second


_COMPILER: Final = _Compiler()


def unstructure(value: object) -> Any:
    """Encode an AHP value (model, union member, enum, tuple...) as JSON-ready data: equal,
    key order included, to what the converter of :mod:`._wire` gives. A class is compiled
    when first met (as the converter makes its hooks): a process pays for what it encodes."""
    return _COMPILER.dispatch(value)
