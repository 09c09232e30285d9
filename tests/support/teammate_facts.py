"""Generated teammate actions and the facts of a batch of them: what the teammate actions' and
the teammate state's tests share."""

from __future__ import annotations

from hypothesis import strategies as st

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
    teammate_uri,
)

URI = teammate_uri("nightly", "audit")


NAME = "audit"


names = st.sampled_from(["alice", "bob", "ci-bot"])


instants = st.sampled_from(
    ["2026-03-28T02:00:00.000Z", "2026-03-29T01:00:00.000Z", "2026-03-30T01:00:00.000Z"]
)


sessions = st.sampled_from([f"ahp-session:/{i}" for i in range(3)])


actions: st.SearchStrategy[TeammateAction] = st.one_of(
    st.builds(
        TeammateSlept,
        name=st.just(NAME),
        team=st.just("nightly"),
        schedule=st.just("0 3 * * * Europe/Berlin"),
        next_wake=instants,
    ),
    st.builds(
        TeammateWoke,
        name=st.just(NAME),
        reason=st.sampled_from(WakeReason),
        decision=st.sampled_from(WakeDecision),
        scheduled_for=st.none() | instants,
        by=st.none() | names,
    ),
    st.builds(
        TeammateRunStarted,
        name=st.just(NAME),
        session=sessions,
        reason=st.sampled_from(WakeReason),
        scheduled_for=st.none() | instants,
        by=st.none() | names,
    ),
    st.builds(
        TeammateRunFinished,
        name=st.just(NAME),
        session=sessions,
        outcome=st.sampled_from(TeammateRunOutcome),
        summary=st.text(max_size=20),
        error=st.text(max_size=20),
        by=st.none() | names,
        usage=st.dictionaries(
            st.sampled_from(["inputTokens", "outputTokens"]), st.integers(0, 10**6)
        ),
    ),
    st.builds(TeammatePaused, name=st.just(NAME), by=names),
    st.builds(TeammateResumed, name=st.just(NAME), by=names),
)


def facts_of(batch: list[TeammateAction]) -> list[Fact]:
    return [
        Fact(sequence=i, session=URI, channel=URI, at=f"2026-03-28T0{i % 10}:00:00.000Z", action=a)
        for i, a in enumerate(batch, start=1)
    ]
