"""Agent UI envelopes on the wire: the one converter that reads and writes them, with errors
that name the wire path, unknown fields kept, and the compact JSON line.

Spec: ``shared/spec/agent-ui-flow-and-taxonomy.txt``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.base import LocalProtocolError, PeerProtocolError
from orchestrator.protocols import (
    Control,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    TeammateStatus,
    Topology,
    envelope_from_json_line,
    envelope_to_json_line,
    structure_envelope,
    unstructure_envelope,
)

# The spec's "Minimal example", verbatim.
SPEC_EXAMPLE: dict[str, Any] = {
    "type": "agent.spawned",
    "sequence": 42,
    "sessionId": "session-lead",
    "threadId": "thread-lead",
    "taskId": "task-research",
    "agentId": "researcher@delivery-team",
    "parentSessionId": "session-lead",
    "parentThreadId": "thread-lead",
    "owner": "agent",
    "scope": "agent",
    "phase": "acting",
    "surface": "team_roster",
    "persistence": "snapshot",
    "topology": "coordinator_team",
    "payload": {
        "agentName": "researcher",
        "teamName": "delivery-team",
        "role": "researcher",
        "status": "running",
    },
}


TAXONOMY_WIRE_FIELDS = ["owner", "scope", "phase", "surface", "persistence", "control", "topology"]


def peer_error(data: object) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as info:
        structure_envelope(data)
    assert info.value.protocol == "agent-ui"
    return info.value


class TestSpecExample:
    def test_structures_to_typed_fields(self) -> None:
        """The spec's minimal example reads into snake_case fields and taxonomy enums."""
        env = structure_envelope(SPEC_EXAMPLE)

        assert env == Envelope(
            type=EventType.AGENT_SPAWNED,
            sequence=42,
            session_id="session-lead",
            thread_id="thread-lead",
            task_id="task-research",
            agent_id="researcher@delivery-team",
            parent_session_id="session-lead",
            parent_thread_id="thread-lead",
            owner=Owner.AGENT,
            scope=Scope.AGENT,
            phase=Phase.ACTING,
            surface=Surface.TEAM_ROSTER,
            persistence=Persistence.SNAPSHOT,
            topology=Topology.COORDINATOR_TEAM,
            payload=SPEC_EXAMPLE["payload"],
        )
        assert env.owner is Owner.AGENT
        assert env.extra == {}

    def test_round_trips_exactly(self) -> None:
        """Read then written, the example is the same data with the same key order."""
        out = unstructure_envelope(structure_envelope(SPEC_EXAMPLE))

        assert out == SPEC_EXAMPLE
        assert list(out) == list(SPEC_EXAMPLE)

    def test_json_line_is_the_compact_example(self) -> None:
        """The JSON line is the example, compact, byte for byte."""
        line = envelope_to_json_line(structure_envelope(SPEC_EXAMPLE))

        assert line == json.dumps(SPEC_EXAMPLE, separators=(",", ":"))
        assert envelope_from_json_line(line) == structure_envelope(SPEC_EXAMPLE)


class TestStructureRejects:
    @pytest.mark.parametrize(
        ("data", "got"),
        [
            ([], "array"),
            ("run.started", "string"),
            (None, "null"),
            (42, "number"),
            (True, "boolean"),
            ([SPEC_EXAMPLE], "array"),
            ((("type", "run.started"),), "tuple"),
        ],
    )
    def test_non_object(self, data: object, got: str) -> None:
        """An envelope is a JSON object; anything else is refused at the root, named."""
        err = peer_error(data)

        assert err.path == "$"
        assert err.message == f"an envelope must be a JSON object, got {got}"

    def test_missing_type(self) -> None:
        """A missing type is named by its wire path."""
        data = dict(SPEC_EXAMPLE)
        del data["type"]

        err = peer_error(data)

        assert err.path == "$.type"
        assert err.message == "required field missing"

    @pytest.mark.parametrize("value", ["", None, 7, ["agent.spawned"]])
    def test_bad_type(self, value: object) -> None:
        """The type is a non-empty string."""
        assert peer_error({"type": value}).path == "$.type"

    def test_unknown_owner_names_the_path(self) -> None:
        """owner is a closed taxonomy: an unknown value is refused, naming $.owner."""
        err = peer_error({**SPEC_EXAMPLE, "owner": "supervisor"})

        assert err.path == "$.owner"
        assert "'supervisor'" in err.message
        assert "ui_projection" in err.message  # the allowed values are listed
        assert str(err).startswith("agent-ui: $.owner: ")

    @pytest.mark.parametrize("field", TAXONOMY_WIRE_FIELDS)
    @pytest.mark.parametrize("value", ["not-a-value", "AGENT", 3, {"kind": "agent"}])
    def test_unknown_taxonomy_value(self, field: str, value: object) -> None:
        """Every taxonomy field is closed, case-sensitive and a string."""
        assert peer_error({"type": "run.status", field: value}).path == f"$.{field}"

    @pytest.mark.parametrize(
        ("wire", "path"),
        [
            ({"sequence": "42"}, "$.sequence"),
            ({"sequence": True}, "$.sequence"),
            ({"sequence": 4.5}, "$.sequence"),
            ({"timestamp": 1700000000}, "$.timestamp"),
            ({"sessionId": 7}, "$.sessionId"),
            ({"parentThreadId": ""}, "$.parentThreadId"),
            ({"toolCallId": ["a"]}, "$.toolCallId"),
            ({"payload": ["status", "running"]}, "$.payload"),
            ({"payload": "running"}, "$.payload"),
            ({"refs": "artifact-1"}, "$.refs"),
            ({"rawEventRef": {"offset": 3}}, "$.rawEventRef"),
        ],
    )
    def test_wrong_field_type_names_the_wire_path(self, wire: dict[str, Any], path: str) -> None:
        """A field of the wrong JSON type is refused with its camelCase wire path."""
        assert peer_error({"type": "task.changed", **wire}).path == path

    def test_several_errors_are_all_reported(self) -> None:
        """The first bad field gives the path; the message lists the others too."""
        err = peer_error({"type": 1, "phase": "nope"})

        assert err.path == "$.type"
        assert "$.phase" in err.message

    def test_invalid_json_line(self) -> None:
        """A line that is not JSON is the peer's error."""
        with pytest.raises(PeerProtocolError) as info:
            envelope_from_json_line('{"type": "run.started"')
        assert info.value.path == "$"


class TestStructureAccepts:
    def test_type_is_an_open_class(self) -> None:
        """The event class list is open to extension: any non-empty string is a type."""
        env = structure_envelope({"type": "vendor.widget.changed"})

        assert env.type == "vendor.widget.changed"
        assert envelope_to_json_line(env) == '{"type":"vendor.widget.changed"}'

    def test_null_reads_as_absent(self) -> None:
        """An explicit null in an optional field means the field is absent."""
        env = structure_envelope({"type": "run.started", "runId": None, "phase": None})

        assert env == Envelope(type="run.started")
        assert unstructure_envelope(env) == {"type": "run.started"}

    @pytest.mark.parametrize("refs", [["artifact-1", "evidence-2"], {"transcript": "t-1"}])
    def test_refs_array_or_map(self, refs: list[str] | dict[str, str]) -> None:
        """refs is an array or a map of ids/refs, kept in the shape it came in."""
        env = structure_envelope({"type": "evidence.changed", "refs": refs})

        assert env.refs == refs
        assert unstructure_envelope(env)["refs"] == refs

    def test_every_envelope_field_by_its_wire_name(self) -> None:
        """All 27 envelope fields of the spec table are read by their camelCase names."""
        wire: dict[str, Any] = {
            "type": "action.required",
            "sequence": 7,
            "timestamp": "2026-08-01T12:00:00Z",
            "sessionId": "s",
            "threadId": "th",
            "runId": "r",
            "turnId": "tu",
            "messageId": "m",
            "partId": "p",
            "taskId": "ta",
            "agentId": "a",
            "parentSessionId": "ps",
            "parentThreadId": "pt",
            "toolCallId": "tc",
            "actionId": "ac",
            "artifactId": "ar",
            "evidenceId": "ev",
            "owner": "action",
            "scope": "action_request",
            "phase": "waiting",
            "surface": "hitl",
            "persistence": "snapshot",
            "control": "approve",
            "topology": "coordinator_team",
            "payload": {"actionType": "delegated_permission"},
            "refs": {"toolCall": "tc"},
            "rawEventRef": "journal:7",
        }

        env = structure_envelope(wire)

        assert env.extra == {}
        assert env.raw_event_ref == "journal:7"
        assert env.control is Control.APPROVE
        assert unstructure_envelope(env) == wire
        assert list(unstructure_envelope(env)) == list(wire)


class TestExtraFields:
    def test_unknown_fields_are_kept_and_written_back(self) -> None:
        """Envelopes allow extra fields: they survive a round trip at top level."""
        data = {**SPEC_EXAMPLE, "teamParallelBudget": 3, "x-vendor": {"trace": [1, 2]}}

        env = structure_envelope(data)

        assert env.extra == {"teamParallelBudget": 3, "x-vendor": {"trace": [1, 2]}}
        assert unstructure_envelope(env) == data

    def test_extra_keys_follow_known_fields_sorted(self) -> None:
        """Known fields come first in spec order, then extra keys sorted: a stable line."""
        env = Envelope(type="team.changed", sequence=1, extra={"zeta": 1, "alpha": None})

        assert envelope_to_json_line(env) == (
            '{"type":"team.changed","sequence":1,"alpha":null,"zeta":1}'
        )

    def test_a_wire_field_named_extra_is_just_extra(self) -> None:
        """The attribute name ``extra`` is not a wire name: a peer's "extra" is kept as data."""
        env = structure_envelope({"type": "run.status", "extra": {"a": 1}})

        assert env.extra == {"extra": {"a": 1}}
        assert unstructure_envelope(env) == {"type": "run.status", "extra": {"a": 1}}

    def test_snake_case_names_are_not_wire_names(self) -> None:
        """A peer's ``session_id`` is an unknown field, not our sessionId."""
        env = structure_envelope({"type": "run.status", "session_id": "s"})

        assert env.session_id is None
        assert env.extra == {"session_id": "s"}

    def test_extra_colliding_with_a_field_is_our_bug(self) -> None:
        """Building an envelope whose extra shadows a real field fails on output."""
        env = Envelope(type="run.status", extra={"sessionId": "s"})

        with pytest.raises(LocalProtocolError) as info:
            unstructure_envelope(env)
        assert info.value.path == "$.sessionId"


class TestOutput:
    def test_none_fields_are_omitted_and_enums_are_plain_strings(self) -> None:
        """Output holds only set fields, as plain JSON values (no enum members)."""
        env = Envelope(
            type=EventType.WORKER_NOTIFICATION,
            sequence=0,
            owner=Owner.AGENT,
            payload={"status": TeammateStatus.COMPLETED},
        )

        out = unstructure_envelope(env)

        assert out == {
            "type": "worker.notification",
            "sequence": 0,
            "owner": "agent",
            "payload": {"status": "completed"},
        }
        assert type(out["type"]) is str
        assert type(out["owner"]) is str
        assert type(out["payload"]["status"]) is str

    def test_type_and_sequence_lead_the_line(self) -> None:
        """The JSON line starts with type, then sequence, with no spaces."""
        env = Envelope(
            type="run.finished",
            sequence=9,
            run_id="r",
            phase=Phase.COMPLETED,
            extra={"aaa": 1},
        )

        assert envelope_to_json_line(env) == (
            '{"type":"run.finished","sequence":9,"runId":"r","phase":"completed","aaa":1}'
        )

    def test_line_has_no_line_breaks(self) -> None:
        """Newlines and Unicode line separators inside strings stay escaped: one line."""
        env = Envelope(type="text.final", payload={"text": "a\nb\u2028c\u2029d\re\x85f\x0bg é"})

        line = envelope_to_json_line(env)

        assert line.splitlines() == [line]
        assert "é" in line  # not ASCII-escaped
        assert envelope_from_json_line(line) == env

    def test_non_json_payload_is_our_bug(self) -> None:
        """NaN is not JSON: writing it is a local protocol error, not a bad line."""
        env = Envelope(type="metric.changed", payload={"latency": float("nan")})

        with pytest.raises(LocalProtocolError):
            envelope_to_json_line(env)
