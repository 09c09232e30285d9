"""The shared AHP fixtures: round trips re-encode canonically, reducer fixtures decode.

Round-trip fixtures (``round-trips/*.json``) decode ``input`` as their ``type`` and must
re-encode to exactly ``acceptableOutputs[0]``: key presence matters, ``null`` is not absent
(see ``round-trips/KNOWN-FIDELITY-GAPS.md``). Fixtures of types this project does not implement
are listed by name in ``SKIPPED`` with the reason; any other fixture of a type we do not
implement fails, so a new fixture is never skipped silently.

Reducer fixtures of the chat and session reducers must decode (states and actions) and
re-encode to themselves with their ``null`` optionals left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.ahp import (
    ActionEnvelope,
    ChatInputQuestion,
    ChatSource,
    ChatState,
    Customization,
    Implementation,
    InitializeResult,
    JsonRpcMessage,
    SessionState,
    SessionStatus,
    SessionSummary,
    StateAction,
    StringOrMarkdown,
    UnknownAction,
    structure_action,
    structure_as,
    unstructure,
)

from .conftest import ahp_fixtures_dir

IMPLEMENTED: dict[str, Any] = {
    "ActionEnvelope": ActionEnvelope,
    "ChatInputQuestion": ChatInputQuestion,
    "ChatSource": ChatSource,
    "Customization": Customization,
    "Implementation": Implementation,
    "InitializeResult": InitializeResult,
    "JsonRpcMessage": JsonRpcMessage,
    "SessionStatus": SessionStatus,
    "SessionSummary": SessionSummary,
    "StateAction": StateAction,
    "StringOrMarkdown": StringOrMarkdown,
}
"""Fixture ``type`` → the type it decodes as."""

SKIPPED: dict[str, tuple[str, str]] = {
    "012-changeset-target-resource": ("ChangesetOperationTarget", "changeset channel"),
    "013-changeset-target-range": ("ChangesetOperationTarget", "changeset channel"),
    "020-partial-summary-all-null": (
        "PartialSessionSummary",
        "root-channel notification payload (notifications schema)",
    ),
}
"""Fixtures of types this project does not implement: name → (type, reason)."""

REDUCERS = {"chat": ChatState, "session": SessionState}
"""The reducer fixtures that concern these types; the others are other channels'."""


def fixture_files(kind: str) -> list[Path]:
    return sorted((ahp_fixtures_dir() / kind).glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def canonical(value: Any) -> str:
    """JSON text that tells ``1`` from ``1.0`` and ``true`` from ``1``, keys in any order."""
    return json.dumps(value, sort_keys=True)


def without_nulls(value: Any) -> Any:
    """``value`` with every ``null`` object member removed, recursively."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def reducer_fixtures() -> list[Path]:
    return [path for path in fixture_files("reducers") if load(path)["reducer"] in REDUCERS]


class TestRoundTripFixtures:
    @pytest.mark.parametrize("path", fixture_files("round-trips"), ids=lambda p: p.stem)
    def test_reencodes_canonically(self, path: Path) -> None:
        """Decode ``input``, re-encode, compare with ``acceptableOutputs[0]`` exactly."""
        fixture = load(path)
        kind = fixture["type"]
        if path.stem in SKIPPED:
            skipped_kind, reason = SKIPPED[path.stem]
            assert kind == skipped_kind not in IMPLEMENTED
            pytest.skip(f"{kind}: {reason}")
        assert kind in IMPLEMENTED, f"fixture type {kind!r} is neither implemented nor skipped"
        (expected,) = fixture["acceptableOutputs"]
        if fixture.get("group") == "B" and "preservedOutput" in fixture:
            # We keep unknown keys, as TypeScript does (round-trips/KNOWN-FIDELITY-GAPS.md).
            expected = fixture["preservedOutput"]
        actual = unstructure(structure_as(fixture["input"], IMPLEMENTED[kind]))
        assert canonical(actual) == canonical(expected)

    def test_fixture_directory_is_read(self, ahp_fixtures: Path) -> None:
        """The corpus comes from the configured directory and every skip names a fixture."""
        names = {path.stem for path in (ahp_fixtures / "round-trips").glob("*.json")}
        assert SKIPPED.keys() <= names
        assert len(names - SKIPPED.keys()) >= len(IMPLEMENTED)


class TestReducerFixtures:
    @pytest.mark.parametrize("path", reducer_fixtures(), ids=lambda p: p.stem)
    def test_states_decode_and_reencode(self, path: Path) -> None:
        """``initial`` and ``expected`` decode and re-encode, ``null`` optionals left out."""
        fixture = load(path)
        state_type = REDUCERS[fixture["reducer"]]
        for key in ("initial", "expected"):
            state = structure_as(fixture[key], state_type)
            assert canonical(unstructure(state)) == canonical(without_nulls(fixture[key])), key

    @pytest.mark.parametrize("path", reducer_fixtures(), ids=lambda p: p.stem)
    def test_actions_decode_and_reencode(self, path: Path) -> None:
        """Every action decodes; unknown ones (no-op fixtures) as UnknownAction."""
        for action_json in load(path)["actions"]:
            action = structure_action(action_json)
            prefix = action_json["type"].split("/")[0]
            if isinstance(action, UnknownAction):
                assert action_json["type"].endswith(("nonExistentAction", "unknownActionType"))
            else:
                assert prefix in REDUCERS
            assert canonical(unstructure(action)) == canonical(without_nulls(action_json))

    def test_there_are_fixtures_of_both_reducers(self) -> None:
        reducers = {load(path)["reducer"] for path in reducer_fixtures()}
        assert reducers == REDUCERS.keys()
