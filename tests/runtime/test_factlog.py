"""The fact log: a batch is written before anyone sees it; submissions are pipelined; a
failing log fails the run."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import (
    ChatToolCallReadyAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import Turn
from orchestrator.base import FactLogError
from orchestrator.core import (
    Fact,
    RunStatus,
    TaskCreated,
    TaskStarted,
    TaskStatus,
    TeamState,
    build_graph,
    task_started,
)
from orchestrator.runtime import (
    DoneTicket,
    EventTicket,
    MemoryFactLog,
    RunOutcome,
    TeamRuntime,
    Ticket,
)
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team
from tests.support.runtime import fanout

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


class FullDisk(MemoryFactLog):
    """A fact log that takes ``room`` batches and then fails, like a disk that fills up."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.facts: list[Fact] = []
        self.broken: FactLogError | None = None

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self.broken is not None:
            raise self.broken
        if self.room == 0:
            self.broken = FactLogError("database or disk is full", source="journal.db")
            return DoneTicket(self.broken)
        self.room -= 1
        self.facts.extend(facts)
        return DoneTicket()


#: A coordinator whose one round delegates ``calls`` (a list of delegate calls).
BURST = """
[team]
name = "burst"
parallel_budget = 7
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]

[[agents.lead.turns]]
steps = [ {{ delegate = [ {calls} ] }}, {{ say = "All done" }} ]

[agents.worker]
role = "researcher"

[[agents.worker.turns]]
steps = [ {{ say = "did {{task}}" }} ]
"""


class SlowDisk(MemoryFactLog):
    """A fact log that makes batches durable later, in order, a few at a time: many batches
    are in flight at once, as with the SQLite journal's group commits."""

    def __init__(self, seed: int) -> None:
        self.facts: list[Fact] = []
        self.queue: list[tuple[list[Fact], EventTicket]] = []
        self.random = random.Random(seed)
        self.most_in_flight = 0

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        ticket = EventTicket()
        self.queue.append((list(facts), ticket))
        self.most_in_flight = max(self.most_in_flight, len(self.queue))
        return ticket

    async def write(self) -> None:
        while True:
            await trio.sleep(self.random.choice([0.001, 0.01, 0.1]))
            size = self.random.randint(1, 8)  # the rest waits for the next commit
            group, self.queue = self.queue[:size], self.queue[size:]
            for facts, ticket in group:
                self.facts.extend(facts)
                ticket.complete()


class TestPipelining:
    @pytest.mark.parametrize("seed", range(4))
    async def test_batches_in_flight_commit_in_order(
        self, autojump_clock: trio.testing.MockClock, seed: int
    ) -> None:
        """With batches made durable later and in groups, facts are still numbered without
        gaps, published in order, and the live state equals a fold of what was written."""
        disk = SlowDisk(seed)
        runtime = TeamRuntime(fanout(budget=3), backends=ScriptedBackend, factlog=disk)
        published: list[int] = []
        subscription = runtime.bus.subscribe("test")

        async def read() -> None:
            async for fact in subscription:
                published.append(fact.sequence)  # noqa: PERF401 (observed as it arrives)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(disk.write)
            nursery.start_soon(read)
            outcome = await runtime.run("Ship it")
            runtime.bus.close()
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        assert outcome.status is RunStatus.COMPLETED
        assert disk.most_in_flight > 1
        sequences = [f.sequence for f in disk.facts]
        assert sequences == list(range(1, len(sequences) + 1))
        assert published == sequences
        folded = TeamState.fold(runtime.session, disk.facts)
        assert folded.chats == runtime.state.chats
        assert folded.tasks == runtime.state.tasks
        assert build_graph(disk.facts).check() == []


class HeldLog(MemoryFactLog):
    """A fact log whose batches become durable only when the test says so, in order, and
    which keeps the contract on failure: a failed batch fails every later one, and later
    submissions are refused."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []  # the durable ones
        self.submitted: list[Fact] = []
        self.pending: list[tuple[list[Fact], EventTicket]] = []
        self.broken: FactLogError | None = None

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self.broken is not None:
            raise self.broken
        self.submitted.extend(facts)
        ticket = EventTicket()
        self.pending.append((list(facts), ticket))
        return ticket

    def held(self, cls: type) -> list[list[Fact]]:
        """The pending batches with an action of type ``cls``."""
        return [b for b, _ in self.pending if any(_is(f.action, cls) for f in b)]

    def complete(self, count: int | None = None) -> None:
        """Make the first ``count`` pending batches (default: all) durable."""
        count = len(self.pending) if count is None else count
        done, self.pending = self.pending[:count], self.pending[count:]
        for facts, ticket in done:
            self.facts.extend(facts)
            ticket.complete()

    def fail_next(self) -> None:
        """Fail the first pending batch, and with it every later one."""
        self.broken = FactLogError("disk I/O error", source="held.db")
        for _, ticket in self.pending:
            ticket.complete(self.broken)
        self.pending = []


def _is(action: object, cls: type) -> bool:
    """``action`` is a ``cls``; a task's start is its own fact or the member's joining that
    starts it (issue 35)."""
    if cls is TaskStarted:
        return task_started(action) is not None
    return isinstance(action, cls)


async def complete_until(log: HeldLog, cls: type) -> None:
    """Make batches durable as they come until one holding a ``cls`` action is pending."""
    while not log.held(cls):
        log.complete()
        await trio.testing.wait_all_tasks_blocked()


@asynccontextmanager
async def held_run(runtime: TeamRuntime, log: HeldLog) -> AsyncIterator[list[RunOutcome]]:
    """Run the team in the background while the block steps ``log``; the list holds the
    outcome once the block is over."""
    outcome: list[RunOutcome] = []

    async def run() -> None:
        outcome.append(await runtime.run("Ship it"))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            try:
                yield outcome
            except BaseException:
                # A check failed: fail what is pending, or the run's shielded waits for
                # durability would keep the nursery open for ever.
                log.fail_next()
                raise


class TestPipelinedSubmission:
    """A delegate step's batches are written together: each waits only for its own."""

    async def test_a_rounds_tool_calls_and_spawns_are_submitted_before_any_is_durable(
        self,
    ) -> None:
        """The round's three tool calls are submitted at once, then the three spawns; nothing
        of a batch is applied or published before it is durable, and each worker starts
        only once its own spawn is durable."""
        log = HeldLog()
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=log)
        published: list[Fact] = []
        runtime.bus.observe(published.extend)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, ChatToolCallReadyAction)
            assert len(log.held(ChatToolCallReadyAction)) == 3
            assert not any(isinstance(f.action, ChatToolCallReadyAction) for f in published)

            log.complete()
            await trio.testing.wait_all_tasks_blocked()
            spawns = log.held(TaskStarted)
            assert len(spawns) == 3, "all three spawns wait to be durable together"
            workers = [
                f.action.summary.resource
                for b in spawns
                for f in b
                if f.channel == runtime.session and isinstance(f.action, SessionChatAddedAction)
            ]
            assert not set(workers) & set(runtime.state.chats), "nothing applied yet"
            assert not any(
                isinstance(f.action, SessionChatAddedAction)
                and f.action.summary.resource in workers
                for f in published
            )
            assert not log.held(ChatTurnStartedAction), "no worker starts before its spawn"

            log.complete(1)  # the first spawn only
            await trio.testing.wait_all_tasks_blocked()
            assert workers[0] in runtime.state.chats
            assert not set(workers[1:]) & set(runtime.state.chats)
            started = [b[0].channel for b in log.held(ChatTurnStartedAction)]
            assert started == [workers[0]]

            while log.pending:
                log.complete()
                await trio.testing.wait_all_tasks_blocked()
        assert outcome[0].status is RunStatus.COMPLETED
        assert [f.sequence for f in published] == [f.sequence for f in log.facts]

    async def test_a_burst_of_tool_calls_and_spawns_holds_at_most_the_bound_in_flight(
        self,
    ) -> None:
        """A round of seven delegate calls with room for two batches in flight: while
        nothing becomes durable, two tool calls are pending, then two spawns, never more
        (Recorder.wait_for_room); as batches become durable one at a time the rest follow,
        and the run ends with every fact written once, in order, as the state folds it."""
        calls = ", ".join(f'{{ agent = "worker", task = "t{index}" }}' for index in range(7))
        team = parse_team(BURST.format(calls=calls), file="burst.toml")
        log = HeldLog()
        runtime = TeamRuntime(team, backends=ScriptedBackend, factlog=log)
        runtime.recorder.max_in_flight = 2
        published: list[Fact] = []
        runtime.bus.observe(published.extend)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, ChatToolCallReadyAction)
            assert len(log.pending) == 2
            for _ in range(5):  # the next call's batch takes each place made
                log.complete(1)
                await trio.testing.wait_all_tasks_blocked()
                assert len(log.pending) == 2
                assert len(log.held(ChatToolCallReadyAction)) == 2
            await complete_until(log, TaskStarted)
            assert len(log.pending) == len(log.held(TaskStarted)) == 2
            while log.pending:
                log.complete(1)
                await trio.testing.wait_all_tasks_blocked()
        assert outcome[0].status is RunStatus.COMPLETED
        delegated = [t for t in runtime.state.tasks.values() if t.agent == "worker"]
        assert sorted(t.title for t in delegated) == [f"t{index}" for index in range(7)]
        assert all(t.status is TaskStatus.COMPLETED for t in delegated)
        sequences = [f.sequence for f in log.facts]
        assert sequences == list(range(1, len(sequences) + 1))
        assert published == log.facts
        assert TeamState.fold(runtime.session, log.facts).chats == runtime.state.chats
        assert build_graph(log.facts).check() == []

    async def test_a_failed_spawn_fails_the_spawns_behind_it_and_none_is_applied(
        self,
    ) -> None:
        """When the first of the round's spawns fails, the two submitted behind it fail with
        it: no worker chat is applied or published, no worker starts, and the run stops
        with the facts durable before the failure."""
        log = HeldLog()
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=log)
        published: list[Fact] = []
        runtime.bus.observe(published.extend)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, TaskStarted)
            assert len(log.held(TaskStarted)) == 3
            durable = len(log.facts)
            log.fail_next()
        assert outcome[0].status is RunStatus.FAILED
        assert "disk I/O error" in outcome[0].error
        assert runtime.state.last_sequence == durable == len(published)
        assert runtime.state.in_flight() == 0
        assert list(runtime.state.chats) == [runtime.state.coordinator_chat()]
        workers = {s.chat for f in log.submitted if (s := task_started(f.action)) is not None}
        assert len(workers) == 3
        assert not any(
            f.channel in workers
            for f in log.submitted
            if isinstance(f.action, ChatTurnStartedAction)
        )
        assert TeamState.fold(runtime.session, log.facts).chats == runtime.state.chats

    async def test_a_failed_tool_call_fails_the_rest_of_the_round_and_none_runs(
        self,
    ) -> None:
        """When the first of the round's tool calls fails to become durable, the calls
        submitted behind it fail with it and none of them runs: no task is created."""
        log = HeldLog()
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=log)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, ChatToolCallReadyAction)
            assert len(log.held(ChatToolCallReadyAction)) == 3
            durable = len(log.facts)
            log.fail_next()
        assert outcome[0].status is RunStatus.FAILED
        assert runtime.state.last_sequence == durable
        assert not any(isinstance(f.action, TaskCreated) for f in log.submitted)
        coordinator = runtime.state.coordinator_chat()
        assert coordinator is not None
        turn = runtime.state.chats[coordinator].active_turn
        assert turn is not None
        assert turn.response_parts == (), "no tool call of the round was applied"

    async def test_queued_delegations_take_their_places_in_the_order_they_were_made(
        self,
    ) -> None:
        """Budget 1: the second and third delegations of the round queue. Each enters the
        budget's queue before the next is submitted, so they start in order even when
        the log makes their batches durable together (trio wakes tasks woken together in
        either order): task ids and worker chats are reproducible."""
        for _ in range(12):
            log = HeldLog()
            runtime = TeamRuntime(fanout(budget=1), backends=ScriptedBackend, factlog=log)
            async with held_run(runtime, log) as outcome:
                while log.pending or not outcome:
                    log.complete()
                    await trio.testing.wait_all_tasks_blocked()
            assert outcome[0].status is RunStatus.COMPLETED
            started = [s.task for f in log.facts if (s := task_started(f.action)) is not None]
            created = [f.action.task for f in log.facts if isinstance(f.action, TaskCreated)]
            assert started == created, (started, created)


class TestFactLogFailure:
    @pytest.mark.parametrize("room", [3, 12, 20])
    async def test_the_run_stops_with_the_reason_and_the_durable_prefix(
        self, autojump_clock: trio.testing.MockClock, room: int
    ) -> None:
        """Wherever the log fails, the run ends failed at once, says why and how far the
        facts are durable, and the state holds exactly the durable facts."""
        disk = FullDisk(room)
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=disk)
        with trio.fail_after(60):
            outcome = await runtime.run("Ship it")
        assert outcome.status is RunStatus.FAILED
        assert "database or disk is full" in outcome.error
        assert f"facts 1 to {len(disk.facts)} of {runtime.session} are durable" in outcome.error
        assert runtime.state.last_sequence == len(disk.facts)
        assert runtime.state.in_flight() == 0
        folded = TeamState.fold(runtime.session, disk.facts)
        assert folded.chats == runtime.state.chats
        assert folded.tasks == runtime.state.tasks
        with pytest.raises(FactLogError, match="disk is full"):
            await runtime.recorder.record([])
