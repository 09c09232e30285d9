"""The root channel, pure: ``reduce_root`` (its upstream fixtures run with the others in
test_ahp_reducer_fixtures), the root actions
and the root-channel notifications' params on the wire."""

from __future__ import annotations

import functools
import json
import typing
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.ahp import (
    _root_reducer,
    reduce_root,
    structure_action,
    structure_as,
    unstructure,
    wire_name,
)
from orchestrator.ahp.actions import (
    RootAction,
    RootActiveSessionsChangedAction,
    RootAgentsChangedAction,
    RootConfigChangedAction,
    SessionTitleChangedAction,
    StateAction,
    UnknownAction,
)
from orchestrator.ahp.commands import (
    PartialSessionSummary,
    SessionAddedParams,
    SessionRemovedParams,
    SessionSummaryChangedParams,
)
from orchestrator.ahp.state import (
    AgentInfo,
    ConfigSchema,
    RootConfigState,
    RootState,
    SessionStatus,
)
from tests.support import strategies
from tests.support.examples import examples
from tests.support.paths import AHP_SCHEMAS

SETTINGS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


root_states = strategies.ahp_values(RootState)
root_actions = strategies.ahp_values(RootAction)


class TestReduceRoot:
    def test_every_root_action_has_a_handler(self) -> None:
        assert set(_root_reducer._HANDLERS) == set(typing.get_args(RootAction))

    def test_each_action_sets_its_field(self) -> None:
        agent = AgentInfo(provider="echo", display_name="Echo", description="team echo", models=())
        state = RootState(agents=())
        state = reduce_root(state, RootAgentsChangedAction(agents=(agent,)))
        state = reduce_root(state, RootActiveSessionsChangedAction(active_sessions=3))
        assert state == RootState(agents=(agent,), active_sessions=3)

    def test_config_merges_or_replaces(self) -> None:
        config = RootConfigState(schema=ConfigSchema(properties={}), values={"a": 1, "b": 2})
        state = RootState(agents=(), config=config)
        merged = reduce_root(state, RootConfigChangedAction(config={"b": 3}))
        assert merged.config == RootConfigState(schema=config.schema, values={"a": 1, "b": 3})
        replaced = reduce_root(state, RootConfigChangedAction(config={"b": 3}, replace=True))
        assert replaced.config == RootConfigState(schema=config.schema, values={"b": 3})

    @pytest.mark.parametrize(
        "action",
        [
            SessionTitleChangedAction(title="not a root action"),
            UnknownAction(raw={"type": "root/fromTheFuture", "x": 1}),
            RootConfigChangedAction(config={"theme": "dark"}),  # no config to merge into
            RootActiveSessionsChangedAction(active_sessions=2),  # already 2
        ],
        ids=["session action", "unknown", "config without config", "same count"],
    )
    def test_a_no_op_returns_the_same_state(self, action: StateAction) -> None:
        state = RootState(agents=(), active_sessions=2)
        assert reduce_root(state, action) is state

    @SETTINGS
    @given(state=root_states, action=root_actions)
    def test_an_action_applied_twice_changes_nothing_more(
        self, state: RootState, action: RootAction
    ) -> None:
        """Every root action sets (or merges) values: applying it again is a no-op, so a
        client that gets an action it already folded (a snapshot taken just after) stays
        right."""
        once = reduce_root(state, action)
        assert reduce_root(once, action) is once

    @SETTINGS
    @given(state=root_states, actions=st.lists(strategies.state_actions(), max_size=5))
    def test_other_channels_actions_are_no_ops(
        self, state: RootState, actions: list[StateAction]
    ) -> None:
        for action in actions:
            if not isinstance(action, typing.get_args(RootAction)):
                assert reduce_root(state, action) is state

    @SETTINGS
    @given(action=root_actions)
    def test_root_actions_round_trip(self, action: RootAction) -> None:
        wire = unstructure(action)
        assert structure_action(wire) == action
        assert unstructure(structure_action(json.loads(json.dumps(wire)))) == wire


# ─── notifications ───────────────────────────────────────────────────────────

STATUS_BITSET = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}


@functools.cache
def notification_defs() -> dict[str, Any]:
    """The notifications schema's ``$defs``, with SessionStatus as the bitset it is (see
    tests/ahp/test_schema.py for that known defect)."""
    path = AHP_SCHEMAS / "notifications.schema.json"
    defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    defs["SessionStatus"] = STATUS_BITSET
    return defs


def validate_notification(value: object, name: str) -> None:
    schema = {"$defs": notification_defs(), **notification_defs()[name]}
    jsonschema.Draft202012Validator(schema).validate(unstructure(value))


NOTIFICATIONS = [SessionAddedParams, SessionRemovedParams, SessionSummaryChangedParams]


class TestNotificationParams:
    @pytest.mark.parametrize("cls", NOTIFICATIONS, ids=lambda cls: cls.__name__)
    @SETTINGS
    @given(data=st.data())
    def test_round_trip_and_match_the_schema(self, cls: type, data: st.DataObject) -> None:
        """Generated params encode to what the notifications schema accepts, and decode back
        to themselves."""
        value = data.draw(strategies.ahp_values(cls))
        validate_notification(value, cls.__name__)
        wire = json.loads(json.dumps(unstructure(value)))
        assert structure_as(wire, cls) == value

    def test_partial_summary_fields_are_the_schema_s(self) -> None:
        """Every field is optional, and the fields are the schema's inline ``changes``."""
        changes = notification_defs()["SessionSummaryChangedParams"]["properties"]["changes"]
        fields = [f for f in attrs.fields(PartialSessionSummary) if f.name != "unknown_fields"]
        assert {wire_name(PartialSessionSummary, f.name) for f in fields} == set(
            changes["properties"]
        )
        assert all(f.default is None for f in fields)

    def test_an_empty_change_decodes_and_re_encodes_empty(self) -> None:
        """Round-trip fixture 020: every field of a partial summary is optional."""
        assert structure_as({}, PartialSessionSummary) == PartialSessionSummary()
        assert unstructure(PartialSessionSummary()) == {}

    def test_changes_carry_only_what_is_set(self) -> None:
        params = SessionSummaryChangedParams(
            channel="ahp-root://",
            session="ahp-session:/a",
            changes=PartialSessionSummary(status=SessionStatus.IDLE, modified_at="t"),
        )
        assert unstructure(params) == {
            "channel": "ahp-root://",
            "session": "ahp-session:/a",
            "changes": {"status": 1, "modifiedAt": "t"},
        }
