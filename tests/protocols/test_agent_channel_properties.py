"""Properties of the pure pieces behind ``/ws``: the client message parser and the rate limit."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orchestrator.base import PeerProtocolError
from orchestrator.protocols import Abort, ClientMessage, Prompt, TeamSubscribe, parse_client_message
from orchestrator.server import TokenBucket
from tests.support.examples import examples

MAX_BYTES = 65_536

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**32) + 1, 10**32 - 1)  # what the input gate reads: 32 digits at most
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)
#: Objects that look like client messages: a known or unknown channel and type, the
#: fields some message takes, each of any JSON type.
FIELDS = (
    "prompt",
    "taskId",
    "kind",
    "toolCallId",
    "result",
    "requestId",
    "fromSequence",
    "model",
)
message_like = st.fixed_dictionaries(
    {
        "channel": st.sampled_from(["agent", "team", "views", ""]) | json_values,
        "type": st.sampled_from(["prompt", "abort", "subscribe", "approve", "tool_response"])
        | json_values,
    },
    optional={
        **dict.fromkeys(FIELDS, json_values),
        "kind": st.sampled_from(["queued", "steering"]) | json_values,
    },
)
frames: st.SearchStrategy[str | bytes] = (
    st.text(max_size=200)
    | json_values.map(json.dumps)
    | message_like.map(json.dumps)
    | st.binary(max_size=200)
    # Numbers beyond what int() converts (4300 digits) and text past the frame limit.
    | st.integers(min_value=4_000, max_value=5_000).map(lambda n: "9" * n)
    | st.text(min_size=1, max_size=3).map(lambda s: s * (MAX_BYTES // len(s) + 1))
)


def parse(frame: str | bytes, max_bytes: int = MAX_BYTES) -> ClientMessage | PeerProtocolError:
    """The message ``frame`` parses to, or the PeerProtocolError it raises."""
    try:
        return parse_client_message(frame, max_bytes=max_bytes)
    except PeerProtocolError as exc:
        return exc


class TestParseClientMessage:
    @settings(max_examples=examples(500), deadline=None)
    @given(frames)
    @example("1" * 4_301)
    @example('{"channel": "team", "type": "subscribe", "fromSequence": ' + "9" * 4_400 + "}")
    @example("[" * 10_000)
    def test_any_frame_is_a_message_or_a_peer_protocol_error_with_a_path(
        self, frame: str | bytes
    ) -> None:
        """Whatever a client sends, the parser returns a typed message or raises
        PeerProtocolError whose path is a JSON path (``$``, ``$.field`` or ``$[0]``); nothing
        else."""
        parsed = parse(frame)
        if isinstance(parsed, PeerProtocolError):
            assert parsed.path == "$" or parsed.path.startswith(("$.", "$[")), parsed.path
            assert parsed.message
        else:
            assert isinstance(parsed, ClientMessage)

    @given(message_like)
    def test_an_object_parses_exactly_when_its_fields_fit_the_table(
        self, data: dict[str, Any]
    ) -> None:
        """A parsed message carries the frame's values; a refused one names the field."""
        message = parse(json.dumps(data), max_bytes=1 << 20)
        if isinstance(message, PeerProtocolError):
            field = message.path.removeprefix("$.")
            assert message.path == "$" or field in data or field in FIELDS
            return
        match message:
            case Prompt(prompt=prompt, task_id=task_id, kind=kind):
                assert (prompt, task_id) == (data["prompt"], data.get("taskId"))
                assert kind == (data.get("kind") or "queued")
                assert kind in ("queued", "steering")
                assert not (kind == "steering" and task_id is not None)
            case Abort(task_id=task_id):
                assert task_id == data["taskId"]
            case TeamSubscribe(from_sequence=sequence):
                assert sequence == (data.get("fromSequence") or 0)
            case _:
                pass

    @given(st.integers(min_value=0, max_value=2**70), st.sampled_from(["", " ", "\n"]))
    def test_a_valid_team_subscribe_parses_whatever_its_spacing(
        self, sequence: int, space: str
    ) -> None:
        frame = (
            f'{{{space}"channel":{space}"team", "type": "subscribe", '
            f'"fromSequence":{space}{sequence}}}'
        )
        assert parse_client_message(frame, max_bytes=MAX_BYTES) == TeamSubscribe(
            from_sequence=sequence
        )


rates = st.floats(min_value=0.1, max_value=1_000)
bursts = st.integers(min_value=1, max_value=100)
gaps = st.lists(st.floats(min_value=0, max_value=5), max_size=200)


class TestTokenBucket:
    @given(rates, bursts, gaps)
    def test_never_more_than_the_burst_plus_the_rate_over_any_window(
        self, rate: float, burst: int, steps: list[float]
    ) -> None:
        """Between any two calls, the messages let through are at most
        ``burst + rate * elapsed`` (the window's first call included)."""
        bucket = TokenBucket(rate=rate, burst=burst, now=0.0)
        now = 0.0
        passed: list[float] = []  # the times of the messages let through
        for gap in steps:
            now += gap
            if bucket.take(now):
                passed.append(now)
        for i, start in enumerate(passed):
            for j in range(i, len(passed)):
                assert j - i + 1 <= burst + rate * (passed[j] - start) + 1e-6

    @given(rates, bursts)
    def test_a_burst_at_one_instant_passes_exactly_burst_messages(
        self, rate: float, burst: int
    ) -> None:
        bucket = TokenBucket(rate=rate, burst=burst, now=10.0)
        assert [bucket.take(10.0) for _ in range(burst + 3)] == [True] * burst + [False] * 3

    @given(rates, bursts, st.floats(min_value=0, max_value=100))
    def test_after_a_refusal_one_period_later_a_message_passes_again(
        self, rate: float, burst: int, start: float
    ) -> None:
        """The limit is a delay, never a ban: ``1 / rate`` seconds refill one token."""
        bucket = TokenBucket(rate=rate, burst=burst, now=start)
        while bucket.take(start):
            pass
        later = start + 1.000001 / rate
        assert bucket.take(later)
        assert not bucket.take(later)

    @given(rates, bursts, st.floats(min_value=0, max_value=1e6))
    def test_idle_time_never_saves_up_more_than_the_burst(
        self, rate: float, burst: int, idle: float
    ) -> None:
        bucket = TokenBucket(rate=rate, burst=burst, now=0.0)
        taken = sum(bucket.take(idle) for _ in range(burst + 5))
        assert taken == burst

    @pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1.0, 5), (1.0, 0), (math.nan, 1)])
    def test_a_rate_or_burst_that_limits_nothing_is_refused(self, rate: float, burst: int) -> None:
        with pytest.raises(ValueError, match="token bucket"):
            TokenBucket(rate=rate, burst=burst, now=0.0)
