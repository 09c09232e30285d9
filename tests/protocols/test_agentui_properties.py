"""Properties of the Agent UI converter: any envelope survives JSON unchanged.

The strategies here build every field of :class:`Envelope`, including arbitrary JSON in
``payload``, ``refs`` and ``extra``; they can move to ``tests/support/strategies.py`` when another
test needs them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.protocols import (
    Control,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    Topology,
    envelope_from_json_line,
    envelope_to_json_line,
    structure_envelope,
    unstructure_envelope,
)

#: Integers the input gate reads (at most 32 digits: see orchestrator.base._input_gate).
gate_integers = st.integers(-(10**32) + 1, 10**32 - 1)
json_scalars = (
    st.none()
    | st.booleans()
    | gate_integers
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=4)

ids = st.none() | st.text(min_size=1)

# Wire names of the spec's envelope fields: an extra key must not shadow one of them.
ENVELOPE_WIRE_NAMES = frozenset(
    {
        "type",
        "sequence",
        "timestamp",
        "sessionId",
        "threadId",
        "runId",
        "turnId",
        "messageId",
        "partId",
        "taskId",
        "agentId",
        "parentSessionId",
        "parentThreadId",
        "toolCallId",
        "actionId",
        "artifactId",
        "evidenceId",
        "owner",
        "scope",
        "phase",
        "surface",
        "persistence",
        "control",
        "topology",
        "payload",
        "refs",
        "rawEventRef",
    }
)
extra_fields = st.dictionaries(
    st.text().filter(lambda key: key not in ENVELOPE_WIRE_NAMES), json_values, max_size=3
)

envelopes = st.builds(
    Envelope,
    # Open class: the known ones, and anything else non-empty.
    type=st.sampled_from(EventType) | st.text(min_size=1),
    sequence=st.none() | gate_integers,
    timestamp=st.none() | st.text(),
    session_id=ids,
    thread_id=ids,
    run_id=ids,
    turn_id=ids,
    message_id=ids,
    part_id=ids,
    task_id=ids,
    agent_id=ids,
    parent_session_id=ids,
    parent_thread_id=ids,
    tool_call_id=ids,
    action_id=ids,
    artifact_id=ids,
    evidence_id=ids,
    owner=st.none() | st.sampled_from(Owner),
    scope=st.none() | st.sampled_from(Scope),
    phase=st.none() | st.sampled_from(Phase),
    surface=st.none() | st.sampled_from(Surface),
    persistence=st.none() | st.sampled_from(Persistence),
    control=st.none() | st.sampled_from(Control),
    topology=st.none() | st.sampled_from(Topology),
    payload=st.none() | json_objects,
    refs=st.none() | st.lists(json_values, max_size=3) | json_objects,
    raw_event_ref=st.none() | st.text(),
    extra=extra_fields,
)


class TestRoundTrip:
    @given(envelopes)
    def test_json_line_round_trip(self, env: Envelope) -> None:
        """Any envelope, written as a JSON line and read back, is equal to itself."""
        assert envelope_from_json_line(envelope_to_json_line(env)) == env

    @given(envelopes)
    def test_data_round_trip(self, env: Envelope) -> None:
        """unstructure then structure is the identity, and the data is plain JSON."""
        data = unstructure_envelope(env)

        assert json.loads(json.dumps(data)) == data
        assert structure_envelope(data) == env

    @given(envelopes)
    def test_line_shape(self, env: Envelope) -> None:
        """One line, type first, sequence second when present, no None written."""
        line = envelope_to_json_line(env)
        keys = list(json.loads(line))

        assert line.splitlines() == [line]
        assert keys[0] == "type"
        if env.sequence is not None:
            assert keys[1] == "sequence"
        set_fields = {
            name
            for name, value in attrs.asdict(env, recurse=False).items()
            if value is not None and name != "extra"
        }
        assert len(keys) == len(set_fields) + len(env.extra)

    @given(envelopes)
    def test_line_is_stable(self, env: Envelope) -> None:
        """Equal envelopes give the same line, whatever order extra keys were added in."""
        shuffled = attrs.evolve(env, extra=dict(reversed(list(env.extra.items()))))

        assert envelope_to_json_line(shuffled) == envelope_to_json_line(env)

    @given(envelopes)
    def test_output_is_plain_json(self, env: Envelope) -> None:
        """Written data holds plain str for enum values, so it equals what json.loads gives."""
        plain = {str, int, float, bool, list, dict, type(None)}

        assert {type(value) for value in unstructure_envelope(env).values()} <= plain


#: Every field of an envelope, ids and type maybe empty (which ``Envelope`` refuses).
maybe_empty_ids = st.none() | st.text(max_size=2)
any_fields = st.fixed_dictionaries(
    {
        "type": st.sampled_from(EventType) | st.text(max_size=2),
        "sequence": st.none() | gate_integers,
        "timestamp": st.none() | st.text(),
        **dict.fromkeys(
            (
                "session_id",
                "thread_id",
                "run_id",
                "turn_id",
                "message_id",
                "part_id",
                "task_id",
                "agent_id",
                "parent_session_id",
                "parent_thread_id",
                "tool_call_id",
                "action_id",
                "artifact_id",
                "evidence_id",
            ),
            maybe_empty_ids,
        ),
        "owner": st.none() | st.sampled_from(Owner),
        "scope": st.none() | st.sampled_from(Scope),
        "phase": st.none() | st.sampled_from(Phase),
        "surface": st.none() | st.sampled_from(Surface),
        "persistence": st.none() | st.sampled_from(Persistence),
        "control": st.none() | st.sampled_from(Control),
        "topology": st.none() | st.sampled_from(Topology),
        "payload": st.none() | json_objects,
        "refs": st.none() | st.lists(json_values, max_size=3) | json_objects,
        "raw_event_ref": st.none() | st.text(),
        "extra": extra_fields,
    }
)


class TestFromValues:
    @given(any_fields)
    def test_builds_what_the_constructor_builds(self, fields: dict[str, Any]) -> None:
        """``Envelope.from_values`` (the projector's constructor) gives the envelope
        ``Envelope(...)`` gives for the same fields, and refuses what it refuses (an empty id
        or type) with the same error."""
        values = tuple(fields[field.name] for field in attrs.fields(Envelope))
        try:
            expected = Envelope(**fields)
        except ValueError as error:
            with pytest.raises(ValueError, match=re.escape(str(error))):
                Envelope.from_values(values)
            return
        built = Envelope.from_values(values)
        assert built == expected
        assert envelope_to_json_line(built) == envelope_to_json_line(expected)
        assert built.extra is fields["extra"]
