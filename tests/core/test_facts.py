"""The fact: one action of any of the three families (AHP, ``team/*``, teammates), stamped with
its sequence, session, channel, time and the client's origin when a client's action it is."""

from __future__ import annotations

import typing

import attrs
import pytest

from orchestrator.ahp.actions import ActionOrigin, ChatTurnCancelledAction, StateAction
from orchestrator.core import (
    BOARD_ACTION_TYPES,
    Action,
    Fact,
    RunFinished,
    RunStatus,
    TeammatePaused,
)
from orchestrator.core._review_actions import REVIEW_ACTION_TYPES
from orchestrator.core._team_actions import TEAM_ACTION_TYPES
from orchestrator.core._teammate_actions import TEAMMATE_ACTION_TYPES


def members(tp: object) -> set[object]:
    return set(typing.get_args(tp))


def test_an_action_is_of_one_of_the_four_families() -> None:
    """A new team, teammate, board or review action that the fact cannot hold would not
    reach the journal."""
    families = members(StateAction) | set(TEAM_ACTION_TYPES.values())
    families |= set(TEAMMATE_ACTION_TYPES.values()) | set(BOARD_ACTION_TYPES.values())
    families |= set(REVIEW_ACTION_TYPES.values())
    assert members(Action) == families


@pytest.mark.parametrize(
    "action",
    [
        ChatTurnCancelledAction(turn_id="t", duration=0),
        RunFinished(run="r", status=RunStatus.COMPLETED),
        TeammatePaused(name="audit", by="alice"),
    ],
    ids=lambda action: action.type,
)
def test_a_fact_s_type_is_its_action_s(action: Action) -> None:
    fact = Fact(sequence=1, session="s", channel="c", at="t", action=action)
    assert fact.type == action.type
    assert fact.origin is None


def test_a_fact_is_a_value() -> None:
    """Equal when every stamp is, the origin included; never changed in place."""
    action = ChatTurnCancelledAction(turn_id="t", duration=0)
    fact = Fact(sequence=1, session="s", channel="c", at="t", action=action)
    dispatched = attrs.evolve(fact, origin=ActionOrigin(client_id="ui", client_seq=1))
    assert fact != dispatched
    assert attrs.evolve(dispatched, origin=None) == fact
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fact.sequence = 2  # type: ignore[misc]
