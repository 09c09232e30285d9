"""A teammate's actions: their facts cross the wire and come back equal, and a teammate's URI
escapes what a URI cannot hold; each action is named by its own wire type.
"""

from __future__ import annotations

import json
import typing

import attrs
from hypothesis import given

from orchestrator.core import (
    TeammateAction,
    fact_from_json,
    fact_to_json,
    teammate_uri,
)
from orchestrator.core._teammate_actions import TEAMMATE_ACTION_TYPES
from tests.support.teammate_facts import actions, facts_of


@given(actions)
def test_teammate_facts_round_trip_the_wire(action: TeammateAction) -> None:
    (fact,) = facts_of([action])
    line = fact_to_json(fact)
    assert json.loads(line)["action"]["type"] == action.type
    assert fact_from_json(line) == fact


def test_teammate_uris_escape_what_a_uri_cannot_hold() -> None:
    assert teammate_uri("nightly", "dependency-audit") == (
        "orchestrator-teammate:/nightly/dependency-audit"
    )
    assert teammate_uri("a/b", "c d") == "orchestrator-teammate:/a%2Fb/c%20d"


def test_the_table_names_every_action_by_its_own_type() -> None:
    """The journal's converter reads a teammate fact's class off this table."""
    assert set(TEAMMATE_ACTION_TYPES.values()) == set(typing.get_args(TeammateAction))
    for wire_type, cls in TEAMMATE_ACTION_TYPES.items():
        assert wire_type.startswith("team/teammate")
        assert attrs.fields_dict(cls)["type"].default == wire_type
