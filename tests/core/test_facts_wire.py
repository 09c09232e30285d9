"""A fact's wire form (one JSON line): the optional ``origin`` of a client's action; the
text written is the reference encoder's (cattrs' converters), byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.ahp import _wire as _ahp_wire
from orchestrator.ahp.actions import ActionOrigin, ChatTurnCancelledAction
from orchestrator.base import PeerProtocolError, compact_dumps
from orchestrator.core import (
    Fact,
    RunFinished,
    RunStarted,
    RunStatus,
    TaskFinished,
    TaskStatus,
    _facts_wire,
    fact_from_json,
    fact_to_json,
)
from tests.support import strategies
from tests.support.examples import examples

CANCELLED = Fact(
    sequence=7,
    session="ahp-session:/s",
    channel="ahp-chat:/c",
    at="2026-11-26T12:00:00.000Z",
    action=ChatTurnCancelledAction(turn_id="t", duration=0),
)


class TestOrigin:
    def test_a_client_action_keeps_its_origin_after_the_action(self) -> None:
        fact = Fact(
            sequence=CANCELLED.sequence,
            session=CANCELLED.session,
            channel=CANCELLED.channel,
            at=CANCELLED.at,
            action=CANCELLED.action,
            origin=ActionOrigin(client_id="ui-1", client_seq=4),
        )
        line = fact_to_json(fact)
        assert list(json.loads(line))[-2:] == ["action", "origin"]
        assert json.loads(line)["origin"] == {"clientId": "ui-1", "clientSeq": 4}
        assert fact_from_json(line) == fact

    def test_a_fact_of_the_host_has_none_and_reads_as_before(self) -> None:
        """No ``origin`` key is written, and a line without one (every line written before
        origins were kept) reads with ``origin`` None."""
        line = fact_to_json(CANCELLED)
        assert "origin" not in json.loads(line)
        assert fact_from_json(line).origin is None

    def test_a_bad_origin_is_refused_naming_its_field(self) -> None:
        data = json.loads(fact_to_json(CANCELLED))
        data["origin"] = {"clientId": "ui-1"}
        with pytest.raises(PeerProtocolError) as caught:
            fact_from_json(json.dumps(data))
        assert caught.value.path == "$.origin.clientSeq"


def reference_text(fact: Fact) -> str:
    """A fact's line as the converters write it, each through its own dispatch: what the
    journal stored before the encoders were compiled."""
    action: dict[str, Any]
    if fact.action.type.startswith("team/"):
        action = {"type": fact.action.type}
        action.update(_facts_wire._team.unstructure(fact.action))
    else:
        action = _ahp_wire._converter.unstructure(fact.action)
    encoded: dict[str, Any] = {
        "sequence": fact.sequence,
        "session": fact.session,
        "channel": fact.channel,
        "at": fact.at,
        "action": action,
    }
    if fact.origin is not None:
        encoded["origin"] = _ahp_wire._converter.unstructure(fact.origin)
    return compact_dumps(encoded)


facts = st.builds(
    Fact,
    sequence=st.integers(min_value=1, max_value=2**53),
    session=st.text(max_size=12),
    channel=st.text(max_size=12),
    at=st.text(max_size=24),
    action=strategies.state_actions() | strategies.team_actions(),
    origin=st.none() | strategies.ahp_values(ActionOrigin),
)


class TestSameText:
    @settings(
        max_examples=examples(300),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(facts)
    def test_every_fact_as_the_reference_encoder(self, fact: Fact) -> None:
        """The stored text (and so its checksum) is what the converters wrote."""
        assert fact_to_json(fact) == reference_text(fact)


def _finished(value: Any = None) -> Fact:
    return Fact(
        sequence=9,
        session="ahp-session:/s",
        channel="ahp-session:/s",
        at="2026-11-26T12:00:00.000Z",
        action=TaskFinished(
            task="task-2", status=TaskStatus.COMPLETED, summary="{}", duration_ms=3, value=value
        ),
    )


class TestStructuredValue:
    """``value`` (a structured answer's parsed value) was added to taskFinished and
    runFinished after journals were written without it."""

    def test_without_a_value_the_line_is_as_before(self) -> None:
        """No ``value`` key: the line (and so its checksum) is what older versions wrote,
        and such a line reads with value None."""
        line = fact_to_json(_finished())
        assert line == (
            '{"sequence":9,"session":"ahp-session:/s","channel":"ahp-session:/s",'
            '"at":"2026-11-26T12:00:00.000Z","action":{"type":"team/taskFinished",'
            '"task":"task-2","status":"completed","summary":"{}","durationMs":3,'
            '"inputTokens":0,"outputTokens":0,"chat":null}}'
        )
        assert fact_from_json(line) == _finished()
        finished = RunFinished(run="r", status=RunStatus.COMPLETED)
        assert "value" not in _facts_wire.encode_action(finished)

    @given(strategies.json_values.filter(lambda v: v is not None))
    def test_a_value_is_written_last_and_read_back(self, value: Any) -> None:
        line = fact_to_json(_finished(value))
        assert list(json.loads(line)["action"])[-1] == "value"
        assert fact_from_json(line) == _finished(value)
        run = RunFinished(run="r", status=RunStatus.COMPLETED, value=value)
        assert _facts_wire.decode_action(_facts_wire.encode_action(run)) == run


class TestChosenModel:
    """``model`` (the model chosen for a session) was added to runStarted after journals
    were written without it."""

    def started(self, model: str | None) -> RunStarted:
        return RunStarted(
            run="r",
            team="t",
            topology="coordinator_team",
            parallel_budget=2,
            coordinator="lead",
            prompt="go",
            task="task-1",
            model=model,
        )

    def test_without_a_model_the_line_is_as_before(self) -> None:
        """No ``model`` key: what older versions wrote, and read back with model None."""
        encoded = _facts_wire.encode_action(self.started(None))
        assert "model" not in encoded
        assert list(encoded) == [
            "type",
            "run",
            "team",
            "topology",
            "parallelBudget",
            "coordinator",
            "prompt",
            "task",
            "background",
        ]
        assert _facts_wire.decode_action(encoded) == self.started(None)

    @given(st.text(min_size=1, max_size=60))
    def test_a_model_is_written_and_read_back(self, model: str) -> None:
        encoded = _facts_wire.encode_action(self.started(model))
        assert encoded["model"] == model
        assert _facts_wire.decode_action(encoded) == self.started(model)
