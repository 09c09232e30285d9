"""The one gate for JSON from outside: every client frame and body, a model's stream, a file.

Everything the daemon reads from a peer passes :func:`parse_json` before it reaches a
converter, a reducer, the journal or an encoder. The standard library's ``json.loads`` takes
things that break the daemon further in, and this gate refuses them where they enter, naming
the field (``$.messages[2].content``):

* **text that cannot be encoded as UTF-8**: a JSON string may escape a lone UTF-16 surrogate
  (``"\\ud800"``); Python decodes it into a ``str`` that SQLite, the WebSocket frame encoder
  and ``str.encode`` all refuse, far from the request that brought it;
* **nesting deeper than** :attr:`JsonLimits.max_depth`: the converters and reducers recurse
  over the value, and a ``RecursionError`` half-way through a fold is no way to say "bad input";
* **integers of more than** :attr:`JsonLimits.max_integer_digits` **digits**: ``int()`` of
  thousands of digits is quadratic, and no field of any protocol we speak needs them;
* **NaN and Infinity** (and numbers like ``1e999`` that only a float's infinity holds): they
  are not JSON, and what we would send on would not be JSON either;
* bytes that are not UTF-8 (the JSON text itself).

What comes from a model or a tool is not refused for its text. :func:`parse_json` with
``bad_text="replace"`` and :func:`clean_text` replace each lone surrogate with U+FFFD (the
Unicode replacement character). They report how many they replaced. So the run goes on, and
what is recorded is what was shown.

How, cheaply: the decoder's ``parse_int`` / ``parse_float`` / ``parse_constant`` hooks turn
a refused number into a marker (and note that they did), counting an integer's digits before
``int()`` pays for them. Then a value is walked only when something may need refusing: a hook
refused a number, the text has an escaped (or raw) surrogate, or it has more brackets than the
depth allows and a level-by-level count finds it deeper. The walk names the field; anything
else is returned as the decoder made it. Measured (``json.loads`` → the gate, µs): a 310-byte
AHP frame 3.7 → 6.0, a model chunk 3.0 → 5.3, a 12.8 KB view update of 1,500 numbers
205 → 675 (a hook call per number).

Pure: no IO, no trio.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import threading
from collections.abc import Iterable
from typing import Any, Final, Literal

import attrs

from ._errors import PeerProtocolError

__all__ = [
    "JSON_LIMITS",
    "JsonLimits",
    "clean_text",
    "parse_json",
    "parse_json_counted",
    "text_problem",
]

#: A lone UTF-16 surrogate (a code point no UTF-8 encoder takes).
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


@attrs.frozen(kw_only=True)
class JsonLimits:
    """What :func:`parse_json` takes. The defaults are far above anything the protocols send
    (an AHP action nests about a dozen levels; ids and counters fit in 19 digits) and far
    below what costs the daemon anything."""

    #: Containers (objects and arrays) inside one another, the outermost counting as 1.
    max_depth: int = attrs.field(default=64, validator=attrs.validators.in_(range(1, 501)))
    #: Digits of one integer (without its sign).
    max_integer_digits: int = attrs.field(
        default=32, validator=attrs.validators.in_(range(1, 4301))
    )


#: The limits when the configuration names none (model backends, files, tests).
JSON_LIMITS: Final = JsonLimits()


def parse_json(
    text: str | bytes,
    *,
    protocol: str,
    limits: JsonLimits = JSON_LIMITS,
    bad_text: Literal["refuse", "replace"] = "refuse",
) -> Any:
    """The JSON value ``text`` holds, checked as the module docstring says.

    Raises :class:`PeerProtocolError` (of ``protocol``, ``path`` the field in wire names) for
    what it refuses. ``bad_text="replace"``: lone surrogates in strings (keys included) are
    replaced with U+FFFD instead of refused; :func:`parse_json_counted` also says how many.
    """
    return parse_json_counted(text, protocol=protocol, limits=limits, bad_text=bad_text)[0]


def parse_json_counted(
    text: str | bytes,
    *,
    protocol: str,
    limits: JsonLimits = JSON_LIMITS,
    bad_text: Literal["refuse", "replace"] = "refuse",
) -> tuple[Any, int]:
    """:func:`parse_json`, and how many lone surrogates it replaced (0 with ``"refuse"``)."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PeerProtocolError(
                f"not UTF-8 text: byte {exc.start} ({exc.object[exc.start]:#04x}) starts no "
                "character",
                protocol=protocol,
            ) from None
    _NUMBERS.refused = False
    try:
        value = _decoder(limits.max_integer_digits).decode(text)
    except json.JSONDecodeError as exc:
        raise PeerProtocolError(
            f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", protocol=protocol
        ) from None
    except RecursionError:
        raise PeerProtocolError(
            f"nested deeper than {limits.max_depth} levels", protocol=protocol
        ) from None
    if not (_NUMBERS.refused or _may_hold_a_surrogate(text)) and (
        text.count("[") + text.count("{") <= limits.max_depth
        or _depth_within(value, limits.max_depth)
    ):
        return value, 0  # nothing to refuse or replace: the value as json.loads made it
    walk = _Walk(limits.max_depth, replace=bad_text == "replace")
    try:
        value = walk.value(value, 1)
    except _RefusalError as refusal:
        raise PeerProtocolError(
            refusal.message, path=_path(reversed(refusal.path)), protocol=protocol
        ) from None
    return value, walk.replaced


#: A surrogate escaped in JSON text (``\ud800``-``\udfff``, high or low).
_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _may_hold_a_surrogate(text: str) -> bool:
    """Whether a string read from ``text`` may hold a lone surrogate: it has an escaped
    surrogate, or a raw one (which no UTF-8 decoder makes, but a ``str`` may bring). The
    cheap tests first: most texts have no ``\\u`` escape and are ASCII."""
    escaped = "\\u" in text and _ESCAPED_SURROGATE.search(text) is not None
    return escaped or (not text.isascii() and _SURROGATE.search(text) is not None)


def _depth_within(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests at most ``max_depth`` containers, a level at a time (cheaper
    than the walk, which also names the field when it does not)."""
    level = [value]
    for _ in range(max_depth):
        level = [
            item
            for container in level
            for item in (container.values() if type(container) is dict else container)
            if type(item) is dict or type(item) is list
        ]
        if not level:
            return True
    return False


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be encoded as UTF-8 (None if it can)."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"text that cannot be encoded as UTF-8: a lone surrogate "
        f"\\u{ord(found.group()):04x} at character {found.start()}"
    )


def clean_text(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many were."""
    if _SURROGATE.search(text) is None:  # the common case: no copy
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


# ─── the walk ────────────────────────────────────────────────────────────────


@attrs.frozen
class _RefusedNumber:
    """A number a hook of ``json.loads`` refused (NaN, Infinity, an integer past int()'s own
    limit); the walk names its field."""

    message: str


class _Refusals(threading.local):
    """Whether a hook of this thread's last read refused a number (so the walk must find
    it); per thread, as readers may run in worker threads."""

    refused = False


_NUMBERS: Final = _Refusals()


def _integer(limit: int, literal: str) -> int | _RefusedNumber:
    digits = len(literal) - literal.startswith("-")
    if digits > limit:  # counted before int() pays for them
        _NUMBERS.refused = True
        return _RefusedNumber(f"an integer of {digits} digits; the limit is {limit}")
    return int(literal)


def _float(literal: str) -> float | _RefusedNumber:
    number = float(literal)
    if math.isinf(number):
        _NUMBERS.refused = True
        return _RefusedNumber(f"the number {literal[:40]} is too large for a float")
    return number


def _constant(name: str) -> _RefusedNumber:
    _NUMBERS.refused = True
    return _RefusedNumber(f"{name} is not a JSON number")


@functools.cache
def _decoder(max_integer_digits: int) -> json.JSONDecoder:
    """A decoder for the limit, made once: ``json.loads`` with any option builds a decoder
    (and its C scanner) at every call, which costs more than reading a small frame."""
    return json.JSONDecoder(
        parse_int=functools.partial(_integer, max_integer_digits),
        parse_float=_float,
        parse_constant=_constant,
    )


class _RefusalError(Exception):
    """Raised by the walk; each container frame adds its key or index on the way out."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.path: list[str | int] = []


class _Walk:
    def __init__(self, max_depth: int, *, replace: bool) -> None:
        self.max_depth = max_depth
        self.replace = replace
        self.replaced = 0

    def text(self, text: str) -> str:
        problem = text_problem(text)
        if problem is None:
            return text
        if not self.replace:
            raise _RefusalError(problem)
        cleaned, count = clean_text(text)
        self.replaced += count
        return cleaned

    def value(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            if depth > self.max_depth:
                raise _RefusalError(f"nested deeper than {self.max_depth} levels")
            changed: dict[str, Any] | None = None
            for index, (key, item) in enumerate(value.items()):
                try:
                    new_key = self.text(key)
                    new_item = self.value(item, depth + 1)
                except _RefusalError as refusal:
                    refusal.path.append(key)
                    raise
                if changed is None and (new_key is not key or new_item is not item):
                    changed = dict(itertools.islice(value.items(), index))
                if changed is not None:
                    changed[new_key] = new_item
            return value if changed is None else changed
        if kind is list:
            if depth > self.max_depth:
                raise _RefusalError(f"nested deeper than {self.max_depth} levels")
            for index, item in enumerate(value):
                try:
                    new_item = self.value(item, depth + 1)
                except _RefusalError as refusal:
                    refusal.path.append(index)
                    raise
                if new_item is not item:
                    value[index] = new_item  # a list json.loads just made: ours to change
            return value
        if kind is _RefusedNumber:
            raise _RefusalError(value.message)
        return value


_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _path(steps: Iterable[str | int]) -> str:
    """``$.a[0]["b c"]``: the wire path of a field, as the other errors write it (the
    middle of a very deep one left out)."""
    out = ["$"]
    shown: list[str | int | None] = list(steps)
    if len(shown) > 12:
        shown = [*shown[:6], None, *shown[-4:]]
    for step in shown:
        if step is None:
            out.append("…")
        elif isinstance(step, int):
            out.append(f"[{step}]")
        elif _NAME.fullmatch(step):
            out.append(f".{step}")
        else:
            out.append(f"[{json.dumps(clean_text(step)[0][:40])}]")
    return "".join(out)
