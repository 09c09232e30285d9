"""Seeded hostile input for every endpoint: frames and bodies made from valid requests.

A :class:`Fuzzer` takes a request that the endpoint would take (a *template*) and breaks it
the way an attacker, a broken client or a newer peer would: a field's value replaced by
something hostile (a lone surrogate, NaN, an integer of thousands of digits, nesting past
every limit, a wrong type, a huge string), a field dropped, an unknown field added, the text
cut short, bytes that are not UTF-8, a top-level value that is not an object. The same seed
gives the same inputs, so a failure found by the soak (``bench/soak.py``) is replayed by
naming its seed.

Used by ``tests/test_fuzz.py`` (a bounded run in the suite) and ``bench/soak.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

#: Raw JSON text an attacker puts where a value goes, each one of a kind.
_HOSTILE: Final[Sequence[Callable[[random.Random], str]]] = (
    lambda r: '"\\ud800"',
    lambda r: '"x\\udfffy"',
    lambda r: '"\\ud83d"',  # half an emoji
    lambda r: "NaN",
    lambda r: "-Infinity",
    lambda r: "1e999",
    lambda r: "9" * r.choice([33, 400, 5_000]),
    lambda r: "-" + "1" * 4_301,
    lambda r: "[" * (n := r.choice([65, 500, 5_000])) + "]" * n,
    lambda r: '{"a":' * (n := r.choice([65, 300])) + "1" + "}" * n,
    lambda r: "null",
    lambda r: "true",
    lambda r: "[]",
    lambda r: "{}",
    lambda r: "-1",
    lambda r: "0.5",
    lambda r: json.dumps("x" * r.choice([0, 1, 300, 70_000])),
    lambda r: json.dumps('\u2028\u0000\ufeff\U0001f600 \\ " </script>'),
    lambda r: json.dumps("ahp-session:/" + "a" * r.choice([1, 36, 2_000])),
    lambda r: json.dumps("../../etc/passwd"),
    lambda r: json.dumps({"kind": "future-kind", "x": [1, {"y": None}]}),
)

_HOLE: Final = "\u0001hole\u0001"


class Fuzzer:
    """Hostile variants of templates, from one seed."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.random = random.Random(seed)

    def hostile(self) -> str:
        return self.random.choice(_HOSTILE)(self.random)

    def frame(self, template: Mapping[str, Any]) -> str | bytes:
        """One hostile variant of ``template`` (sometimes the template itself)."""
        r = self.random
        kind = r.random()
        if kind < 0.08:
            return json.dumps(template)
        if kind < 0.55:
            return self._replace(template)
        if kind < 0.65:
            return self._drop(template)
        if kind < 0.72:
            return json.dumps({**template, "unknownField": json.loads(_safe(self.hostile()))})
        if kind < 0.80:
            text = json.dumps(template)
            return text[: r.randrange(len(text))]
        if kind < 0.86:
            raw = bytearray(json.dumps(template).encode())
            raw[r.randrange(len(raw))] = r.choice([0xFF, 0xC3, 0x80, 0xED])
            return bytes(raw)
        if kind < 0.92:
            return self.hostile()
        return "[" + json.dumps(template) + "]"

    def _replace(self, template: Mapping[str, Any]) -> str:
        """``template`` with one value, at any depth, replaced by a hostile one."""
        paths = list(_paths(template))
        path = self.random.choice(paths)
        holed = _set(template, path, _HOLE)
        return json.dumps(holed).replace(json.dumps(_HOLE), self.hostile(), 1)

    def _drop(self, template: Mapping[str, Any]) -> str:
        paths = [p for p in _paths(template) if p]
        if not paths:
            return json.dumps({})
        path = self.random.choice(paths)
        return json.dumps(_set(template, path, None, drop=True))


def _safe(text: str) -> str:
    """``text`` if the standard library reads it to something it can write back, else a
    string holding it (an unknown field's value need not be hostile to json.dumps)."""
    try:
        value = json.loads(text)
        json.dumps(value, allow_nan=False).encode()
    except (ValueError, RecursionError, UnicodeEncodeError):
        return json.dumps(text[:40])
    return text


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Any:
    """Every path to a value inside ``value`` (the empty path: the whole)."""
    yield prefix
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _set(value: Any, path: tuple[Any, ...], new: Any, *, drop: bool = False) -> Any:
    """A copy of ``value`` with ``new`` at ``path`` (or the item there removed)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        copy = dict(value)
        if drop and not rest:
            del copy[head]
        else:
            copy[head] = _set(value[head], rest, new, drop=drop)
        return copy
    items = list(value)
    if drop and not rest:
        del items[head]
    else:
        items[head] = _set(items[head], rest, new, drop=drop)
    return items
