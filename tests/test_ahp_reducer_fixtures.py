"""Conformance: the chat and session reducers reproduce the shared AHP reducer fixtures.

Each ``reducers/*.json`` fixture is ``{description, reducer, initial, actions, expected}``.
We decode ``initial`` and every action with the AHP converter (``null`` and an absent key
both mean "absent"), fold the actions with our reducer, re-encode, and compare with
``expected``, leaving ``null`` members out on both sides. The upstream suite pins
``Date.now()`` to 9999 ms while generating fixtures; here that instant is passed as ``now``.

Fixtures of reducers this project does not implement (root, terminal, changeset, annotations,
resource watch) are not run, but one test lists them, so that a fixture of a new reducer kind
fails instead of being skipped silently. ``$AHP_FIXTURES`` points the suite at another corpus.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.ahp import (
    ChatState,
    SessionState,
    reduce_chat,
    structure_action,
    structure_as,
    unstructure,
)

from .conftest import ahp_fixtures_dir

FIXTURE_NOW = "1970-01-01T00:00:09.999Z"
"""``new Date(9999).toISOString()``: the pinned clock of the upstream fixture generator."""

IMPLEMENTED = ("chat", "session")
"""Reducer kinds this project implements; their fixtures must all pass."""

NOT_IMPLEMENTED = {
    "annotations": "annotations channel",
    "changeset": "changeset channel",
    "resourceWatch": "resource-watch channel",
    "root": "root channel (agent catalogue)",
    "terminal": "terminal channel",
}
"""Reducer kinds of channels this project does not serve: kind → what it is."""

_Reducer = Callable[[Any, Any], Any]


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _reducer_files(kinds: tuple[str, ...]) -> list[str]:
    """File names of the reducer fixtures of ``kinds``, read at collection time."""
    directory = ahp_fixtures_dir() / "reducers"
    return sorted(p.name for p in directory.glob("*.json") if _load(p)["reducer"] in kinds)


def without_nulls(value: Any) -> Any:
    """``value`` with every ``null`` object member removed, recursively."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def _chat_reducer() -> tuple[type, _Reducer]:
    return ChatState, lambda state, action: reduce_chat(state, action, now=FIXTURE_NOW)


def _session_reducer() -> tuple[type, _Reducer]:
    try:
        module = importlib.import_module("orchestrator.ahp._session_reducer")
    except ModuleNotFoundError as exc:
        if exc.name != "orchestrator.ahp._session_reducer":
            raise
        pytest.fail(
            "session fixture, but orchestrator/ahp/_session_reducer.py (reduce_session) does not "
            "exist yet"
        )
    reduce_session = module.reduce_session
    return SessionState, lambda state, action: reduce_session(state, action, now=FIXTURE_NOW)


REDUCERS: dict[str, Callable[[], tuple[type, _Reducer]]] = {
    "chat": _chat_reducer,
    "session": _session_reducer,
}


class TestReducerFixtures:
    @pytest.mark.parametrize("name", _reducer_files(IMPLEMENTED))
    def test_fold_reaches_expected(self, ahp_fixtures: Path, name: str) -> None:
        """Folding the fixture's actions over ``initial`` gives ``expected``."""
        fixture = _load(ahp_fixtures / "reducers" / name)
        state_type, reduce = REDUCERS[fixture["reducer"]]()
        state = structure_as(fixture["initial"], state_type)
        for action in fixture["actions"]:
            state = reduce(state, structure_action(action))
        assert without_nulls(unstructure(state)) == without_nulls(fixture["expected"]), fixture[
            "description"
        ]

    def test_only_unimplemented_reducers_are_left_out(self, ahp_fixtures: Path) -> None:
        """Every reducer fixture is run, except those of the channels listed as not served."""
        kinds: dict[str, list[str]] = {}
        for path in sorted((ahp_fixtures / "reducers").glob("*.json")):
            kinds.setdefault(_load(path)["reducer"], []).append(path.name)
        left_out = set(kinds) - set(IMPLEMENTED)
        assert left_out <= NOT_IMPLEMENTED.keys(), f"unknown reducer kinds: {left_out}"
        assert kinds.get("chat"), "no chat fixtures found: is the corpus complete?"
        assert sorted(name for kind in IMPLEMENTED for name in kinds.get(kind, ())) == (
            _reducer_files(IMPLEMENTED)
        )
