"""Functions the Python-tool tests name in team files
(``python = "tests.support.python_tools:add"``).

``CALLS`` records every call of the functions that count, so a test can assert that a
function ran, with what, or that it never did; :func:`reset` empties it (and the signals)
before each test.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import threading
from collections.abc import Iterator
from typing import Annotated, Any, Literal, NoReturn

import pydantic
import trio
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict on 3.12 only

#: (function, keyword arguments) of each call, in order.
CALLS: list[tuple[str, dict[str, Any]]] = []


@dataclasses.dataclass
class Signals:
    """What a test and a long-running tool tell each other (reset before each test)."""

    started: trio.Event | None = None  # set by an async tool once it runs
    ended: list[str] = dataclasses.field(default_factory=list)  # how async tools ended
    thread_started: threading.Event = dataclasses.field(default_factory=threading.Event)
    release: threading.Event = dataclasses.field(default_factory=threading.Event)


SIGNALS = Signals()


def reset() -> None:
    CALLS.clear()
    SIGNALS.started = None
    SIGNALS.ended.clear()
    SIGNALS.thread_started = threading.Event()
    SIGNALS.release = threading.Event()


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


def add(a: int, b: int = 1) -> int:
    """Add two integers.

    The second is one unless given.
    """
    CALLS.append(("add", {"a": a, "b": b}))
    return a + b


async def shout(text: str, times: int = 1) -> str:
    """Say it louder."""
    await trio.lowlevel.checkpoint()
    CALLS.append(("shout", {"text": text, "times": times}))
    return (text.upper() + "!") * times


def where() -> dict[str, Any]:
    """Which thread runs it, and whether trio runs there."""
    try:
        trio.lowlevel.current_task()
        in_trio = True
    except RuntimeError:
        in_trio = False
    return {"thread": threading.get_ident(), "in_trio": in_trio}


def describe(
    colour: Literal["red", "green"],
    sizes: list[int],
    point: Point,
    box: Box | None = None,
    shade: Colour = Colour.RED,
    note: Annotated[str, pydantic.Field(description="Anything to add.")] = "",
) -> dict[str, Any]:
    """What it was given, with the Python types it was given as."""
    return {
        "colour": colour,
        "sizes": sizes,
        "point": point,
        "box": None if box is None else [type(box).__name__, box.width, box.height],
        "shade": [type(shade).__name__, shade.value],
        "note": note,
    }


def echo(**values: Any) -> dict[str, Any]:
    """Whatever it is given (its schema comes from the team file)."""
    CALLS.append(("echo", values))
    return values


def fails(message: str) -> str:
    raise ValueError(message)


def exits(status: int) -> str:
    """Calls sys.exit(), from its worker thread."""
    sys.exit(status)


async def exits_async(status: int) -> str:
    """Calls sys.exit(), in trio."""
    sys.exit(status)


async def _never_awaited() -> None:  # pragma: no cover - closed, not run
    await trio.lowlevel.checkpoint()


def give(kind: str) -> object:
    """A return value of the kind asked for."""
    values: dict[str, Any] = {
        "text": "plain text",
        "dict": {"a": [1, 2.5, None, True], "é": "ü"},
        "none": None,
        "list": ["x", 1],
        "set": {1, 2},
        "nan": float("nan"),
        "object": object(),
        "surrogate": "a\ud800b",
        "big": "é" * 40,
    }
    if kind == "coroutine":
        return _never_awaited()
    return values[kind]


async def forever() -> NoReturn:
    """Runs until cancelled, saying so."""
    assert SIGNALS.started is not None
    SIGNALS.started.set()
    try:
        await trio.sleep_forever()
    finally:
        SIGNALS.ended.append("cancelled")


async def slow(seconds: float) -> str:
    await trio.sleep(seconds)
    return "slept"


def blocking() -> str:
    """A sync tool that blocks its thread until the test releases it."""
    SIGNALS.thread_started.set()
    SIGNALS.release.wait(timeout=60)
    CALLS.append(("blocking", {}))
    return "released"


# ── references that cannot be tools ────────────────────────────────────────

NOT_CALLABLE = 3


def star_args(*values: int) -> int:
    return sum(values)


def positional(a: int, /) -> int:
    return a


class Opaque:
    """No JSON Schema describes it."""


def takes_opaque(thing: Opaque) -> str:
    return repr(thing)


def numbers() -> Iterator[int]:
    yield 1


def generated(**values: Any) -> dict[str, Any]:
    """Given a signature by the property test (``__signature__``)."""
    return values
