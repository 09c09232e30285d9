"""A fact's wire form (one JSON line): the optional ``origin`` of a client's action."""

from __future__ import annotations

import json

import pytest

from orchestrator.ahp import ActionOrigin, ChatTurnCancelledAction
from orchestrator.base import PeerProtocolError
from orchestrator.core import Fact, fact_from_json, fact_to_json

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
