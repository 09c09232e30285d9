"""The AHP conformance corpus: where it is, how a fixture is read, and what is out of scope.

The reducer and round-trip conformance tests (``test_ahp_reducer_fixtures.py``,
``test_ahp_roundtrip_fixtures.py``) run every ``*.json`` fixture of the directory this module
names, without knowing their names in advance: ``$AHP_FIXTURES`` points them at another fixture
set of the upstream shape (``reducers/`` and ``round-trips/``), e.g. a newer upstream release.

A fixture of a reducer or a type the project implements runs and must pass. A fixture of
anything else fails with a message that says so, unless its reducer or type is listed below as
out of scope, with the reason: this is the one place that decides what the suite leaves out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import attrs

from orchestrator.ahp import actions, commands, state
from tests.support.paths import PROTOCOLS

OUT_OF_SCOPE_REDUCERS: Final[dict[str, str]] = {
    "annotations": "the annotations channel: the daemon keeps no annotations",
    "changeset": "the changeset channel: agents here edit no files the host tracks",
    "resourceWatch": "the resource-watch channel: the daemon serves no file system",
    "terminal": "the terminal channel: the daemon runs no terminals",
}
"""Reducer kinds (a reducer fixture's ``reducer``) of channels the daemon does not serve."""

OUT_OF_SCOPE_TYPE_FAMILIES: Final[dict[str, str]] = {
    "Annotation": OUT_OF_SCOPE_REDUCERS["annotations"],
    "Changeset": OUT_OF_SCOPE_REDUCERS["changeset"],
    "ResourceWatch": OUT_OF_SCOPE_REDUCERS["resourceWatch"],
    "Terminal": OUT_OF_SCOPE_REDUCERS["terminal"],
}
"""Round-trip fixture types, by name prefix, of those channels (``ChangesetOperationTarget``,
``TerminalContentPart``...): their types are not modelled."""


def fixtures_dir() -> Path:
    """The AHP test-case directory: ``$AHP_FIXTURES`` (another set of the same shape) or ours."""
    configured = os.environ.get("AHP_FIXTURES")
    if configured:
        return Path(configured).resolve()
    return PROTOCOLS / "ahp" / "test-cases"


def fixture_files(kind: str) -> list[Path]:
    """The fixtures of ``kind`` (``reducers``, ``round-trips``), in name order."""
    return sorted((fixtures_dir() / kind).glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    """A fixture, or an error that names the file and what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AssertionError(f"{path}: not a readable JSON fixture: {exc}") from exc
    if not isinstance(data, dict):
        raise AssertionError(f"{path}: a fixture is a JSON object, got {type(data).__name__}")
    return data


def out_of_scope_type(name: str) -> str | None:
    """Why fixtures of type ``name`` are not run, or None if they must be."""
    for family, reason in OUT_OF_SCOPE_TYPE_FAMILIES.items():
        if name.startswith(family):
            return reason
    return None


def implemented_type(name: str) -> Any | None:
    """The AHP type a round-trip fixture's ``type`` names, if the project models it.

    The project's AHP types carry the schema's names and are exported by the schema mirror's
    modules (:mod:`orchestrator.ahp.state`, ``.actions``, ``.commands``): a class, an enum,
    or a union alias (``StateAction``).
    """
    for module in (state, actions, commands):
        found = getattr(module, name, None) if name in module.__all__ else None
        if found is not None and (
            isinstance(found, type) or attrs.has(found) or hasattr(found, "__args__")
        ):
            return found
    return None


def without_nulls(value: Any) -> Any:
    """``value`` with every ``null`` object member removed, recursively."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def canonical(value: Any) -> str:
    """JSON text that tells ``1`` from ``1.0`` and ``true`` from ``1``, keys in any order."""
    return json.dumps(value, sort_keys=True)
