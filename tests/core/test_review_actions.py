"""Review actions: their facts cross the wire and come back equal; each is named by its own
wire type."""

from __future__ import annotations

import json
import typing

import attrs
from hypothesis import given, settings

from orchestrator.core import ReviewAction, ReviewRequested, fact_from_json, fact_to_json
from orchestrator.core._review_actions import REVIEW_ACTION_TYPES
from tests.support.examples import examples
from tests.support.review_facts import actions, facts_of


@settings(max_examples=examples(200))
@given(actions)
def test_review_facts_round_trip_the_wire(action: ReviewAction) -> None:
    (fact,) = facts_of([action])
    line = fact_to_json(fact)
    assert json.loads(line)["action"]["type"] == action.type
    assert fact_from_json(line) == fact


def test_the_wire_names_are_camel_case() -> None:
    (fact,) = facts_of(
        [
            ReviewRequested(
                review="review-1",
                task="task-1",
                worker_chat="ahp-chat:/w",
                reviewer="checker",
                round=1,
                requested_by="ahp-chat:/lead",
                tool_call_id="call-1",
            )
        ]
    )
    action = json.loads(fact_to_json(fact))["action"]
    assert action == {
        "type": "team/reviewRequested",
        "review": "review-1",
        "task": "task-1",
        "workerChat": "ahp-chat:/w",
        "reviewer": "checker",
        "round": 1,
        "requestedBy": "ahp-chat:/lead",
        "toolCallId": "call-1",
    }


def test_the_table_names_every_action_by_its_own_type() -> None:
    assert set(REVIEW_ACTION_TYPES.values()) == set(typing.get_args(ReviewAction))
    for wire_type, cls in REVIEW_ACTION_TYPES.items():
        assert wire_type.startswith("team/review")
        assert attrs.fields_dict(cls)["type"].default == wire_type
