"""AHP codec benchmark: decoding and encoding a chat state, as snapshot loading does.

A chat state of a few turns whose response parts are markdown, reasoning and completed tool
calls (a tool call is four objects: the part, its state, a text content block and a markdown
message), decoded with :func:`orchestrator.ahp.structure` and encoded with
:func:`orchestrator.ahp.unstructure`; best of many repeats (the machine is shared), per state.

``plain`` is what this project and its peers send today; ``unknown keys`` adds one key a
newer peer might send to every object (the slower path, which collects them).

    .venv/bin/python bench/ahp_codec.py            # 100, 400 and 1600 parts
    .venv/bin/python bench/ahp_codec.py 400 3200
"""

from __future__ import annotations

import sys
import timeit
from typing import Any

from orchestrator.ahp import structure, unstructure
from orchestrator.ahp.state import ChatState

USAGE = (__doc__ or "").rsplit("\n\n", 1)[-1]
REPEATS = 40


def part(i: int) -> dict[str, Any]:
    if i % 3 == 0:
        return {"kind": "markdown", "id": f"m{i}", "content": "hello world " * 5}
    if i % 3 == 1:
        return {"kind": "reasoning", "id": f"r{i}", "content": "thinking " * 5}
    return {
        "kind": "toolCall",
        "toolCall": {
            "status": "completed",
            "toolCallId": f"t{i}",
            "toolName": "run",
            "displayName": "Run",
            "invocationMessage": "Running",
            "toolInput": '{"x": 1}',
            "confirmed": "not-needed",
            "success": True,
            "pastTenseMessage": {"markdown": "Ran"},
            "content": [{"type": "text", "text": "output " * 4}],
        },
    }


def chat_state(parts: int) -> dict[str, Any]:
    """A chat whose turns hold ``parts`` response parts in all, a quarter in the active turn."""
    message = {"text": "do it", "origin": {"kind": "user"}}
    done, active = parts - parts // 4, parts // 4
    per_turn = 60
    turns = [
        {
            "id": f"turn{k}",
            "message": message,
            "state": "complete",
            "responseParts": [part(i) for i in range(min(per_turn, done - k * per_turn))],
        }
        for k in range((done + per_turn - 1) // per_turn)
    ]
    return {
        "resource": "ahp-chat:/x",
        "title": "t",
        "status": 8,
        "modifiedAt": "2024",
        "origin": {"kind": "user"},
        "turns": turns,
        "activeTurn": {
            "id": "a",
            "startedAt": "2024",
            "message": message,
            "responseParts": [part(i) for i in range(active)],
        },
    }


def with_unknown_keys(value: Any) -> Any:
    """``value`` with a key no model names added to every object."""
    if isinstance(value, dict):
        return {**{k: with_unknown_keys(v) for k, v in value.items()}, "laterField": [1]}
    if isinstance(value, list):
        return [with_unknown_keys(v) for v in value]
    return value


def best(function: Any, number: int) -> float:
    return min(timeit.repeat(function, number=number, repeat=REPEATS)) / number


def main(argv: list[str]) -> None:
    if any(arg in ("-h", "--help") for arg in argv):
        print(USAGE)
        return
    try:
        sizes = [int(arg) for arg in argv] or [100, 400, 1600]
    except ValueError:
        sys.exit(f"sizes are numbers of response parts\n{USAGE}")
    print(f"{'parts':>6} {'wire':<13} {'decode ms':>10} {'encode ms':>10}")
    for size in sizes:
        plain = chat_state(size)
        for label, wire in (("plain", plain), ("unknown keys", with_unknown_keys(plain))):
            state = structure(wire, ChatState)
            assert unstructure(state) == wire, "not a round trip"
            number = max(1, 2000 // size)
            decode = best(lambda wire=wire: structure(wire, ChatState), number)
            encode = best(lambda state=state: unstructure(state), number)
            print(f"{size:>6} {label:<13} {decode * 1e3:>10.2f} {encode * 1e3:>10.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
