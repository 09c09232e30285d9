"""The ``team/*`` actions: one class per wire ``type``, frozen, and each one's fact crosses the
wire (camelCase keys) and comes back equal."""

from __future__ import annotations

import json
import typing

import attrs
import pytest
from hypothesis import given, settings

from orchestrator.base import PeerProtocolError
from orchestrator.core import (
    Fact,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamAction,
    fact_from_json,
    fact_to_json,
)
from orchestrator.core._team_actions import TEAM_ACTION_TYPES
from tests.support.examples import examples
from tests.support.strategies import team_actions


def fact_of(action: TeamAction) -> Fact:
    return Fact(
        sequence=1, session="ahp-session:/s", channel="ahp-session:/s", at="t", action=action
    )


def test_the_table_names_every_action_by_its_own_type() -> None:
    assert set(TEAM_ACTION_TYPES.values()) == set(typing.get_args(TeamAction))
    for wire_type, cls in TEAM_ACTION_TYPES.items():
        assert wire_type.startswith("team/")
        assert attrs.fields_dict(cls)["type"].default == wire_type


def test_the_type_is_not_an_argument_and_an_action_is_frozen() -> None:
    with pytest.raises(TypeError):
        TaskStarted(type="team/taskFinished", task="t", chat="c")  # type: ignore[call-arg]
    started = TaskStarted(task="t", chat="c")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        started.task = "u"  # type: ignore[misc]


def test_the_wire_keys_are_camel_case_and_optional_fields_are_written() -> None:
    finished = TaskFinished(task="t", status=TaskStatus.KILLED, summary="stopped", duration_ms=3)
    action = json.loads(fact_to_json(fact_of(finished)))["action"]
    assert action == {
        "type": "team/taskFinished",
        "task": "t",
        "status": "killed",
        "summary": "stopped",
        "durationMs": 3,
        "inputTokens": 0,
        "outputTokens": 0,
        "chat": None,
    }


@settings(max_examples=examples(100))
@given(team_actions())
def test_every_action_round_trips_the_wire(action: TeamAction) -> None:
    line = fact_to_json(fact_of(action))
    assert json.loads(line)["action"]["type"] == action.type
    assert fact_from_json(line).action == action


@pytest.mark.parametrize(
    ("action", "path", "problem"),
    [
        ({"type": "team/taskStarted", "task": "t"}, "$.action.chat", "required field missing"),
        (
            {
                "type": "team/taskFinished",
                "task": "t",
                "status": "lost",
                "summary": "",
                "durationMs": 1,
            },
            "$.action.status",
            "expected TaskStatus",
        ),
    ],
)
def test_a_bad_action_is_refused_naming_its_field(
    action: dict[str, object], path: str, problem: str
) -> None:
    line = json.dumps({"sequence": 1, "session": "s", "channel": "s", "at": "t", "action": action})
    with pytest.raises(PeerProtocolError, match=problem) as caught:
        fact_from_json(line)
    assert path in str(caught.value)
