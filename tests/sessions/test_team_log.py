"""One fold per session: readers follow the runtime's reductions instead of folding again.

The runtime reduces each batch once (:meth:`TeamState.prepare`), and hands what each fact
wrote (:meth:`Transition.changes`) to the subscribers that follow its state
(:meth:`TeamState.follow`). These tests prove that a state so followed is the state a fold of
the same facts makes, and that the Agent UI envelopes projected from it are those a projector
folding the facts itself makes, over generated fact sequences, batchings and batches in
flight, and over real runs through the bus.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
import trio
import trio.lowlevel
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import IllegalTransitionError
from orchestrator.core import (
    Action,
    DelegationGraph,
    Fact,
    FactChange,
    TeamState,
    Transition,
    build_graph,
    to_json,
)
from orchestrator.protocols import (
    AgentUiProjector,
    Envelope,
    envelope_to_json_line,
    project_facts,
)
from orchestrator.runtime import FactBus, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.sessions import TeamLog
from tests.support.examples import examples
from tests.support.runtime import fanout
from tests.support.scenarios import SCENARIOS, SESSION, scenarios
from tests.support.team_state import NOW, assert_same, batches, fanout_facts


class Runtime:
    """What the recorder does to its state, without the log: prepare and push each batch,
    commit the oldest once ``in_flight`` batches are pushed (and all at the end), and give a
    follower what each committed fact wrote."""

    def __init__(self, session: str, in_flight: int) -> None:
        self.state = TeamState(session)
        self.follower = self.state.copy()  # a subscriber's view, taken before any fact
        self.projector = AgentUiProjector(session, self.follower)
        self.in_flight = in_flight
        self._pushed: list[tuple[Transition, list[Fact]]] = []
        self._sequence = 0
        self.facts: list[Fact] = []
        self.envelopes: list[Envelope] = []
        self.outcomes: list[list[Envelope] | str] = []  # by fact: envelopes, or the error

    def submit(self, actions: Sequence[tuple[str, Action]], *, validate: bool) -> bool:
        """Prepare and push one batch; False (nothing changed) if the state refused it."""
        try:
            tr = self.state.prepare(actions, now=NOW, validate=validate, record=True)
        except IllegalTransitionError:
            return False
        facts = []
        for channel, action in tr.actions:
            self._sequence += 1
            facts.append(
                Fact(sequence=self._sequence, session=self.state.session_uri, channel=channel,
                     at=NOW, action=action)
            )  # fmt: skip
        self.state.push(tr)
        self._pushed.append((tr, facts))
        if len(self._pushed) >= self.in_flight:
            self.commit_oldest()
        return True

    def commit_oldest(self) -> None:
        tr, facts = self._pushed.pop(0)
        self.state.commit(tr, facts[-1].sequence)
        for fact, change in zip(facts, tr.changes(), strict=True):
            self.follower.follow(change, fact.sequence)
            outcome = project(self.projector, fact)
            self.outcomes.append(outcome)
            if not isinstance(outcome, str):
                self.envelopes += outcome
        self.facts += facts

    def settle(self) -> None:
        while self._pushed:
            self.commit_oldest()


def project(projector: AgentUiProjector, fact: Fact) -> list[Envelope] | str:
    """The envelopes of ``fact``, or the error projecting it raised (a generated action
    may carry what no envelope can: an empty run id)."""
    try:
        return projector.feed(fact)
    except ValueError as exc:  # compared between the two projectors
        return f"{type(exc).__name__}: {exc}"


@st.composite
def cuts(draw: st.DrawFn, facts: Sequence[Fact]) -> list[list[Fact]]:
    """``facts`` split into consecutive batches at drawn places."""
    places = sorted(draw(st.sets(st.integers(1, max(len(facts) - 1, 1)), max_size=12)))
    bounds = [0, *(p for p in places if p < len(facts)), len(facts)]
    return [list(facts[a:b]) for a, b in itertools.pairwise(bounds) if b > a]


class TestFollowedStateProjects:
    @settings(max_examples=examples(150), deadline=None)
    @given(facts=scenarios(), data=st.data())
    def test_envelopes_from_the_followed_state_equal_the_own_fold(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """A run's facts recorded in any batching, up to four batches in flight: a
        projector reading the followed state makes exactly the envelopes of a projector that
        folds the facts itself, and the followed state is the folded one."""
        runtime = Runtime(SESSION, in_flight=data.draw(st.integers(1, 4)))
        for batch in data.draw(cuts(facts)):
            assert runtime.submit([(f.channel, f.action) for f in batch], validate=False)
        runtime.settle()
        assert [(f.channel, f.action) for f in runtime.facts] == [
            (f.channel, f.action) for f in facts
        ]
        assert runtime.envelopes == project_facts(SESSION, runtime.facts)
        assert_same(runtime.follower, TeamState.fold(SESSION, runtime.facts))

    @pytest.mark.parametrize("scenario", sorted(SCENARIOS))
    def test_each_scenario_in_one_batch(self, scenario: str) -> None:
        """The hand-written scenarios, every fact in one batch (a reader sees them only
        after the whole batch): the envelopes of a fact-by-fact fold still."""
        facts = SCENARIOS[scenario]().facts
        runtime = Runtime(SESSION, in_flight=1)
        assert runtime.submit([(f.channel, f.action) for f in facts], validate=False)
        assert len(runtime.facts) == len(facts)
        assert runtime.envelopes == project_facts(SESSION, runtime.facts)
        assert runtime.envelopes  # the scenario projects something

    @settings(max_examples=examples(100), deadline=None)
    @given(drawn=batches(), data=st.data())
    def test_validated_batches_of_any_actions(
        self, drawn: tuple[int, list[list[tuple[str, Action]]]], data: st.DataObject
    ) -> None:
        """A real run's prefix replayed, then generated batches of any actions (team, chat,
        session, unknown; legal or not) prepared as the runtime prepares them, summary
        announcements included, several in flight: the followed state and its envelopes
        equal a fold of the facts recorded."""
        prefix, steps = drawn
        log = fanout_facts()
        session = log[0].session
        runtime = Runtime(session, in_flight=data.draw(st.integers(1, 3)))
        for batch in data.draw(cuts(log[:prefix])):
            assert runtime.submit([(f.channel, f.action) for f in batch], validate=False)
        for actions in steps:
            runtime.submit(actions, validate=True)
        runtime.settle()
        assert_same(runtime.follower, TeamState.fold(session, runtime.facts))
        folding = AgentUiProjector(session)
        assert runtime.outcomes == [project(folding, fact) for fact in runtime.facts]


class TestProjectorGivenAState:
    def test_a_state_not_at_the_fact_fed_is_refused(self) -> None:
        """Fed a fact its followed state is not at, the projector says so rather than
        projecting from the wrong state."""
        facts = SCENARIOS["queued_task"]().facts
        projector = AgentUiProjector(SESSION, TeamState(SESSION))
        with pytest.raises(ValueError, match="at fact 0, not at fact 1"):
            projector.feed(facts[0])

    def test_it_folds_nothing_itself(self) -> None:
        """The state is the follower's: feeding the projector leaves it as it was."""
        facts = SCENARIOS["queued_task"]().facts
        state = TeamState.fold(SESSION, facts[:1])
        projector = AgentUiProjector(SESSION, state)
        assert projector.feed(facts[0])
        assert state.last_sequence == 1
        assert projector.state is state


class TestThroughTheBus:
    def test_a_run_projected_from_the_subscription_state(self) -> None:
        """A real fan-out: a subscriber following the runtime's state projects what a
        projector of the recorded facts projects, and ends at the runtime's state."""

        async def run() -> tuple[TeamRuntime, TeamState, list[Fact], list[Envelope]]:
            runtime = TeamRuntime(fanout(budget=2), backends=ScriptedBackend)
            subscription = runtime.bus.subscribe(
                "test", buffer_size=float("inf"), state=runtime.state
            )
            assert subscription.state is not None
            projector = AgentUiProjector(runtime.session, subscription.state)
            facts: list[Fact] = []
            envelopes: list[Envelope] = []

            async def read() -> None:
                async for fact in subscription:
                    facts.append(fact)
                    envelopes.extend(projector.feed(fact))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await runtime.run("Ship it")
                runtime.bus.close()
            return runtime, subscription.state, facts, envelopes

        runtime, followed, facts, envelopes = trio.run(run)
        assert len(facts) >= 45
        assert envelopes == project_facts(runtime.session, facts)
        assert_same(followed, TeamState.fold(runtime.session, facts))
        assert_same(followed, runtime.state)

    def test_facts_published_without_changes_are_folded(self) -> None:
        """A publisher that says nothing of what its facts wrote: the subscription's state
        folds them itself, and is the same."""
        facts = list(fanout_facts())

        async def run() -> TeamState:
            bus = FactBus()
            subscription = bus.subscribe("test", state=TeamState(facts[0].session))
            bus.publish_nowait(facts)
            bus.close()
            async for _ in subscription:
                pass
            assert subscription.state is not None
            return subscription.state

        assert_same(trio.run(run), TeamState.fold(facts[0].session, facts))

    def test_a_subscription_with_a_state_is_iterated(self) -> None:
        """Its state moves fact by fact: taking a batch of facts at once is refused."""

        async def run() -> None:
            bus = FactBus()
            subscription = bus.subscribe("test", state=TeamState("ahp-session:/x"))
            with pytest.raises(TypeError):
                await subscription.receive_batch()
            with pytest.raises(TypeError):
                await subscription.receive()

        trio.run(run)


class TestTeamLog:
    def test_live_envelopes_follow_the_runtime_and_equal_a_projection_of_the_log(self) -> None:
        """The daemon's team log of a live session, made before the run, during it (while
        facts are published: those kept aside overlap the journal's read) and after it: its
        lines are those of projecting the whole log, though live facts are followed, not
        folded."""
        logs: list[TeamLog] = []
        published: list[Fact] = []

        async def run() -> TeamRuntime:
            runtime = TeamRuntime(fanout(budget=2), backends=ScriptedBackend)

            def observe(facts: Sequence[Fact], changes: Sequence[FactChange | None]) -> None:
                assert all(change is not None for change in changes)
                published.extend(facts)
                for log in logs:
                    log.feed(facts, changes)

            runtime.bus.observe_changes(observe)

            def read(session: str, *, after: int = 0) -> list[Fact]:
                return [fact for fact in published if fact.sequence > after]

            async def join_late(after: int) -> None:
                while len(published) < after:
                    await trio.lowlevel.checkpoint()
                log = TeamLog(runtime.session, read)
                logs.append(log)
                await log.ready()

            logs.append(TeamLog(runtime.session, read))
            await logs[0].ready()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(join_late, 40)
                await runtime.run("Ship it")
            late = TeamLog(runtime.session, read)
            await late.ready()
            logs.append(late)
            return runtime

        runtime = trio.run(run)
        expected = [envelope_to_json_line(e) for e in project_facts(runtime.session, published)]
        assert len(logs) == 3
        for log in logs:
            assert log.lines == expected

    def test_changes_are_noted_only_while_an_observer_wants_them(self) -> None:
        """A change observer that keeps no view yet (the daemon's session before a team
        log) costs the recorder nothing: the facts come with no changes. Once it wants
        them, they come with each fact, and a log started then ends as a projection of the
        whole log."""
        published: list[Fact] = []
        noted: list[bool] = []
        logs: list[TeamLog] = []

        async def run() -> TeamRuntime:
            runtime = TeamRuntime(fanout(budget=2), backends=ScriptedBackend)

            def observe(facts: Sequence[Fact], changes: Sequence[FactChange | None]) -> None:
                published.extend(facts)
                noted.extend(change is not None for change in changes)
                for log in logs:
                    log.feed(facts, changes)

            runtime.bus.observe_changes(observe, wanted=lambda: bool(logs))
            assert not runtime.bus.wants_changes()

            async def join_late(after: int) -> None:
                while len(published) < after:
                    await trio.lowlevel.checkpoint()
                log = TeamLog(
                    runtime.session,
                    lambda session, *, after=0: [f for f in published if f.sequence > after],
                )
                logs.append(log)
                assert runtime.bus.wants_changes()
                await log.ready()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(join_late, 40)
                await runtime.run("Ship it")
            return runtime

        runtime = trio.run(run)
        first = noted.index(True)
        assert first >= 40, "none noted before the log wanted them"
        assert all(noted[first:]), "every batch prepared since comes with its changes"
        expected = [envelope_to_json_line(e) for e in project_facts(runtime.session, published)]
        assert logs[0].lines == expected


class TestGraphKeptIncrementally:
    @settings(max_examples=examples(100), deadline=None)
    @given(facts=scenarios(), data=st.data())
    def test_a_graph_fed_in_batches_and_read_between_equals_one_built_at_once(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """The session's one graph (the web view keeps it and feeds it what is new at each
        read) fed the log in any batches, read (exported, checked) between them: the graph
        built from scratch of the whole log."""
        graph = DelegationGraph()
        for batch in data.draw(cuts(facts)):
            for fact in batch:
                graph.apply(fact)
            to_json(graph)  # a read between batches changes nothing
            graph.check()
        assert to_json(graph) == to_json(build_graph(facts))
        assert graph.last_sequence == (facts[-1].sequence if facts else None)
