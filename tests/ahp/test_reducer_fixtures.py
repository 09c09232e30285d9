"""Conformance: the chat, session and root reducers reproduce the shared AHP reducer fixtures.

Each ``reducers/*.json`` fixture is ``{description, reducer, initial, actions, expected}``.
We decode ``initial`` and every action with the AHP converter (``null`` and an absent key
both mean "absent"), fold the actions with our reducer, re-encode, and compare with
``expected``, leaving ``null`` members out on both sides. The upstream suite pins
``Date.now()`` to 9999 ms while generating fixtures; here that instant is passed as ``now``.

Every fixture of the directory (``$AHP_FIXTURES`` or ours, see :mod:`tests.support.ahp_conformance`)
is a test of its own, whatever its name: a fixture of a reducer we implement must pass; one of a
channel listed out of scope there is skipped with the reason; any other fails and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.ahp import (
    reduce_chat,
    reduce_root,
    reduce_session,
    structure_action,
    structure_as,
    unstructure,
)
from orchestrator.ahp.state import ChatState, RootState, SessionState
from tests.support.ahp_conformance import OUT_OF_SCOPE_REDUCERS, fixture_files, load, without_nulls

FIXTURE_NOW = "1970-01-01T00:00:09.999Z"
"""``new Date(9999).toISOString()``: the pinned clock of the upstream fixture generator."""

_Reducer = Callable[[Any, Any], Any]

REDUCERS: dict[str, tuple[type, _Reducer]] = {
    "chat": (ChatState, lambda state, action: reduce_chat(state, action, now=FIXTURE_NOW)),
    "session": (
        SessionState,
        lambda state, action: reduce_session(state, action, now=FIXTURE_NOW),
    ),
    "root": (RootState, reduce_root),
}
"""Reducer kind → the state type it folds and our reducer."""


def reducer_of(path: Path, fixture: dict[str, Any]) -> tuple[type, _Reducer]:
    """The state type and reducer a fixture is for; skips or fails for the others."""
    kind = fixture.get("reducer")
    if kind in REDUCERS:
        return REDUCERS[kind]
    if kind in OUT_OF_SCOPE_REDUCERS:
        pytest.skip(f"{kind}: {OUT_OF_SCOPE_REDUCERS[kind]}")
    pytest.fail(
        f"{path.name}: reducer {kind!r} is neither implemented ({', '.join(REDUCERS)}) nor "
        "listed out of scope in tests/support/ahp_conformance.py"
    )


@pytest.mark.parametrize("path", fixture_files("reducers"), ids=lambda p: p.stem)
def test_fold_reaches_expected(path: Path) -> None:
    """Folding the fixture's actions over ``initial`` gives ``expected``."""
    fixture = load(path)
    state_type, reduce = reducer_of(path, fixture)
    state = structure_as(fixture["initial"], state_type)
    for action in fixture["actions"]:
        state = reduce(state, structure_action(action))
    assert without_nulls(unstructure(state)) == without_nulls(fixture["expected"]), fixture.get(
        "description"
    )


def test_the_corpus_is_there() -> None:
    """The directory has reducer fixtures, some of them of a reducer we implement."""
    fixtures = [load(path) for path in fixture_files("reducers")]
    assert fixtures, "no reducer fixtures found: is AHP_FIXTURES the test-cases directory?"
    assert any(fixture.get("reducer") in REDUCERS for fixture in fixtures)


class TestReducerOf:
    """How a fixture of each kind of reducer is treated."""

    def test_an_implemented_reducer_runs(self) -> None:
        assert reducer_of(Path("x.json"), {"reducer": "chat"})[0] is ChatState

    def test_an_out_of_scope_reducer_is_skipped_with_its_reason(self) -> None:
        with pytest.raises(pytest.skip.Exception, match="terminal channel"):
            reducer_of(Path("x.json"), {"reducer": "terminal"})

    def test_an_unknown_reducer_fails_and_names_the_fixture(self) -> None:
        with pytest.raises(pytest.fail.Exception, match=r"900-new\.json: reducer 'telepathy'"):
            reducer_of(Path("900-new.json"), {"reducer": "telepathy"})
