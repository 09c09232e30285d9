"""The pure parts of background teammates: their facts on the wire, their fold, the
teammates channel's parser and the Agent UI envelopes."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import PeerProtocolError
from orchestrator.core import (
    Fact,
    TeammateAction,
    TeammatePaused,
    TeammateResumed,
    TeammateRunFinished,
    TeammateRunOutcome,
    TeammateRunStarted,
    TeammateSlept,
    TeammateWoke,
    WakeDecision,
    WakeReason,
    fold_teammate,
)
from orchestrator.protocols import (
    ControlTeammate,
    ListTeammates,
    Subscribe,
    TeammateHistory,
    parse_request,
    structure_envelope,
    teammate_envelopes,
    unstructure_envelope,
)
from orchestrator.sessions import describe_schedule
from orchestrator.spec import BackgroundSpec, Every, parse_cron
from tests.support.teammate_facts import NAME, URI, actions, facts_of


@given(st.lists(actions, max_size=30))
def test_the_fold_keeps_its_invariants(batch: list[TeammateAction]) -> None:
    facts = facts_of(batch)
    state = fold_teammate("nightly", NAME, facts)
    assert state.last_sequence == len(facts)
    assert state.running is None or state.running.outcome is None
    assert all(run.outcome is not None and run.ended_at is not None for run in state.runs)
    assert len(state.runs) == state.run_count
    # Every ended run was started by a teammateRunStarted of its session.
    started = {a.session for a in batch if isinstance(a, TeammateRunStarted)}
    assert {run.session for run in state.runs} <= started
    waiting = sum(
        isinstance(a, TeammateWoke) and a.decision in (WakeDecision.QUEUE, WakeDecision.REPLACE)
        for a in batch
    )
    assert len(state.backlog) <= waiting
    # Paused iff the last pause/resume was a pause.
    toggles = [a for a in batch if isinstance(a, TeammatePaused | TeammateResumed)]
    assert state.paused == (bool(toggles) and isinstance(toggles[-1], TeammatePaused))
    # The envelopes of any state are valid Agent UI envelopes.
    for envelope in teammate_envelopes(
        state,
        sequence=state.last_sequence,
        at="2026-03-28T00:00:00.000Z",
        agent="lead",
        next_wake=state.due_from,
    ):
        assert structure_envelope(unstructure_envelope(envelope)) == envelope


def test_a_run_in_order_then_its_status() -> None:
    state = fold_teammate(
        "nightly",
        NAME,
        facts_of(
            [
                TeammateSlept(
                    name=NAME,
                    team="nightly",
                    schedule="every 1h",
                    next_wake="2026-03-28T02:00:00.000Z",
                ),
            ]
        ),
    )
    assert state.status().value == "scheduled"
    state = fold_teammate(
        "nightly",
        NAME,
        facts_of(
            [
                TeammateSlept(
                    name=NAME,
                    team="nightly",
                    schedule="every 1h",
                    next_wake="2026-03-28T02:00:00.000Z",
                ),
                TeammateWoke(
                    name=NAME,
                    reason=WakeReason.SCHEDULE,
                    decision=WakeDecision.START,
                    scheduled_for="2026-03-28T02:00:00.000Z",
                ),
                TeammateRunStarted(
                    name=NAME,
                    session="ahp-session:/1",
                    reason=WakeReason.SCHEDULE,
                    scheduled_for="2026-03-28T02:00:00.000Z",
                ),
                TeammateWoke(
                    name=NAME,
                    reason=WakeReason.SCHEDULE,
                    decision=WakeDecision.QUEUE,
                    scheduled_for="2026-03-28T03:00:00.000Z",
                ),
            ]
        ),
    )
    assert state.status().value == "running"
    assert state.status(blocked=True).value == "blocked"
    assert len(state.backlog) == 1
    more = facts_of(
        [
            TeammateRunFinished(
                name=NAME, session="ahp-session:/1", outcome=TeammateRunOutcome.COMPLETED
            ),
            TeammateRunStarted(
                name=NAME,
                session="ahp-session:/2",
                reason=WakeReason.SCHEDULE,
                scheduled_for="2026-03-28T03:00:00.000Z",
            ),
        ]
    )
    for i, fact in enumerate(more, start=state.last_sequence + 1):
        state = state.apply(
            Fact(sequence=i, session=URI, channel=URI, at=fact.at, action=fact.action)
        )
    assert state.backlog == ()
    assert state.running is not None
    assert state.running.scheduled_for == "2026-03-28T03:00:00.000Z"
    assert [r.session for r in state.runs] == ["ahp-session:/1"]
    assert state.to_json(next_wake=None)["lastRun"]["outcome"] == "completed"


def test_a_state_keeps_the_last_thousand_runs() -> None:
    batch: list[TeammateAction] = []
    for i in range(1_005):
        session = f"ahp-session:/{i}"
        batch += [
            TeammateRunStarted(name=NAME, session=session, reason=WakeReason.TRIGGER),
            TeammateRunFinished(name=NAME, session=session, outcome=TeammateRunOutcome.COMPLETED),
        ]
    state = fold_teammate("nightly", NAME, facts_of(batch))
    assert (len(state.runs), state.run_count) == (1_000, 1_005)
    assert state.runs[0].session == "ahp-session:/5"
    assert state.runs[-1].session == "ahp-session:/1004"


@pytest.mark.parametrize(
    ("schedule", "described"),
    [
        (parse_cron("0 3 * * *", "Europe/Berlin"), "0 3 * * * Europe/Berlin"),
        (Every(interval=dt.timedelta(minutes=15)), "every 15m"),
        (Every(interval=dt.timedelta(hours=1, minutes=30)), "every 1h30m"),
        (Every(interval=dt.timedelta(days=1, seconds=5)), "every 1d5s"),
    ],
)
def test_schedules_are_described_as_the_team_file_writes_them(
    schedule: Any, described: str
) -> None:
    spec = BackgroundSpec(name="x", schedule=schedule, prompt="p", agent="lead")
    assert describe_schedule(spec) == described


# ─── the teammates channel ───────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ('{"type": "list"}', ListTeammates()),
        ('{"type": "subscribe", "id": 3}', Subscribe(id=3)),
        ('{"channel": "teammates", "type": "history", "name": "a"}', TeammateHistory(name="a")),
        ('{"type": "history", "name": "a", "limit": 5, "id": "x"}', TeammateHistory("a", 5, "x")),
        ('{"type": "trigger", "name": "t/a"}', ControlTeammate("trigger", "t/a")),
    ],
)
def test_requests_parse(frame: str, expected: object) -> None:
    assert parse_request(frame, max_bytes=1_000) == expected


@pytest.mark.parametrize(
    ("frame", "path", "message"),
    [
        ("nope", "$", "not JSON"),
        ("[]", "$", "expected a JSON object, got an array"),
        ('{"type": "lisst"}', "$.type", "expected one of list, history, pause"),
        ('{"type": "pause", "name": ""}', "$.name", "got an empty string"),
        ('{"type": "stop", "name": 4}', "$.name", "got a number"),
        ('{"type": "history", "name": "a", "limit": true}', "$.limit", "from 1 to 1000"),
        ('{"type": "list", "id": [1]}', "$.id", "a string or an integer"),
        ('{"type": "list", "channel": "agent"}', "$.channel", "got 'agent'"),
        (b'{"type": "list"}', "$", "binary frames"),
        ('{"type": "list", "pad": "' + "x" * 2_000 + '"}', "$", "the limit is 1000"),
    ],
)
def test_bad_requests_name_what_is_wrong(frame: str | bytes, path: str, message: str) -> None:
    with pytest.raises(PeerProtocolError) as error:
        parse_request(frame, max_bytes=1_000)
    assert error.value.path == path
    assert message in error.value.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@given(
    st.dictionaries(
        st.sampled_from(["type", "name", "id", "limit", "channel", "other"]),
        json_values | st.sampled_from(["list", "history", "pause", "trigger", "teammates"]),
    )
    | json_values
)
def test_any_json_is_a_request_or_a_protocol_error(data: object) -> None:
    try:
        parse_request(json.dumps(data), max_bytes=10_000)
    except PeerProtocolError as exc:
        problem = exc
    else:
        return
    assert problem.path.startswith("$")
