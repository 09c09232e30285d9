"""Conformance: the shared AHP round-trip fixtures, and the reducer fixtures' JSON, re-encode.

Round-trip fixtures (``round-trips/*.json``) decode ``input`` as their ``type`` and must
re-encode to exactly the canonical form: key presence matters, ``null`` is not absent (see
``round-trips/KNOWN-FIDELITY-GAPS.md``). For a fixture of group "B" (a known type carrying
keys it does not model) that form is ``preservedOutput``: like the TypeScript client, we keep
what we do not understand and pass it on unchanged; for the others, ``acceptableOutputs[0]``.

Reducer fixtures of the reducers we implement must decode (states and actions) and re-encode
to themselves with their ``null`` optionals left out.

Every fixture of the directory (``$AHP_FIXTURES`` or ours, see :mod:`tests.support.ahp_conformance`)
is a test of its own, whatever its name: a fixture of a type we model must pass; one of a type
listed out of scope there is skipped with the reason; any other fails and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.ahp import structure_action, structure_as, unstructure
from orchestrator.ahp.state import ChatState, RootState, SessionState
from tests.support.ahp_conformance import (
    canonical,
    fixture_files,
    implemented_type,
    load,
    out_of_scope_type,
    without_nulls,
)

REDUCER_STATES: dict[str, type] = {
    "chat": ChatState,
    "session": SessionState,
    "root": RootState,
}
"""Reducer kind → the state type its fixtures' ``initial`` and ``expected`` are."""


def type_of(path: Path, fixture: dict[str, Any]) -> Any:
    """The type a round-trip fixture decodes as; skips or fails for the others."""
    name = fixture.get("type")
    if not isinstance(name, str):
        pytest.fail(f"{path.name}: the fixture names no type")
    reason = out_of_scope_type(name)
    if reason is not None:
        pytest.skip(f"{name}: {reason}")
    found = implemented_type(name)
    if found is None:
        pytest.fail(
            f"{path.name}: type {name!r} is neither modelled (not in orchestrator.ahp.state, "
            ".actions or .commands) nor listed out of scope in tests/support/ahp_conformance.py"
        )
    return found


def expected_output(fixture: dict[str, Any]) -> Any:
    """The canonical re-encoding: ``preservedOutput`` when a fixture has one (group "B": a
    known type with keys it does not model, which we keep and pass on, as the TypeScript
    client does); else the one ``acceptableOutputs`` entry."""
    if "preservedOutput" in fixture:
        return fixture["preservedOutput"]
    outputs = fixture["acceptableOutputs"]
    assert len(outputs) == 1, "acceptableOutputs must have exactly one entry"
    return outputs[0]


@pytest.mark.parametrize("path", fixture_files("round-trips"), ids=lambda p: p.stem)
def test_round_trip_reencodes_canonically(path: Path) -> None:
    """Decode ``input`` as the fixture's type, re-encode, compare with the canonical form."""
    fixture = load(path)
    tp = type_of(path, fixture)
    actual = unstructure(structure_as(fixture["input"], tp))
    assert canonical(actual) == canonical(expected_output(fixture)), fixture.get("description")


def _reducer_fixtures() -> list[Path]:
    return [
        path for path in fixture_files("reducers") if load(path).get("reducer") in REDUCER_STATES
    ]


@pytest.mark.parametrize("path", _reducer_fixtures(), ids=lambda p: p.stem)
def test_reducer_fixture_states_reencode(path: Path) -> None:
    """``initial`` and ``expected`` decode and re-encode, ``null`` optionals left out."""
    fixture = load(path)
    state_type = REDUCER_STATES[fixture["reducer"]]
    for key in ("initial", "expected"):
        state = structure_as(fixture[key], state_type)
        assert canonical(unstructure(state)) == canonical(without_nulls(fixture[key])), key


@pytest.mark.parametrize("path", _reducer_fixtures(), ids=lambda p: p.stem)
def test_reducer_fixture_actions_reencode(path: Path) -> None:
    """Every action decodes, those of types we do not model too, and re-encodes to itself."""
    for action_json in load(path)["actions"]:
        action = structure_action(action_json)
        assert canonical(unstructure(action)) == canonical(without_nulls(action_json))


def test_the_corpus_is_there() -> None:
    """The directory has round-trip fixtures, most of them of types we model."""
    types = [load(path).get("type") for path in fixture_files("round-trips")]
    assert types, "no round-trip fixtures found: is AHP_FIXTURES the test-cases directory?"
    modelled = [name for name in types if isinstance(name, str) and implemented_type(name)]
    assert len(modelled) > len(types) // 2


class TestTypeOf:
    """How a fixture of each kind of type is treated."""

    def test_a_modelled_type_runs(self) -> None:
        assert type_of(Path("x.json"), {"type": "ChatState"}) is ChatState

    def test_a_union_alias_runs(self) -> None:
        from orchestrator.ahp.actions import StateAction

        assert type_of(Path("x.json"), {"type": "StateAction"}) == StateAction

    def test_an_out_of_scope_family_is_skipped_with_its_reason(self) -> None:
        with pytest.raises(pytest.skip.Exception, match="changeset channel"):
            type_of(Path("x.json"), {"type": "ChangesetFutureThing"})

    @pytest.mark.parametrize("name", ["HologramState", "structure_as", "ROOT"])
    def test_anything_else_fails_and_names_the_fixture(self, name: str) -> None:
        with pytest.raises(pytest.fail.Exception, match=rf"900-new\.json: type '{name}'"):
            type_of(Path("900-new.json"), {"type": name})

    def test_preserved_output_wins_over_the_dropped_form(self) -> None:
        fixture = {"acceptableOutputs": [{"a": 1}], "preservedOutput": {"a": 1, "b": 2}}
        assert expected_output(fixture) == {"a": 1, "b": 2}
