"""The recorder stamps a client's origin on the fact that carries the client's action."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import ActionOrigin, ChatTurnCancelledAction, ChatTurnStartedAction
from orchestrator.ahp.state import Message, MessageKind, MessageOrigin, Turn
from orchestrator.base import FactLogError
from orchestrator.core import Action, Fact, TeamState
from orchestrator.runtime import EventTicket, FactBus, MemoryFactLog, Recorder, Ticket
from orchestrator.runtime._recorder import PendingBatch
from tests.support.sessions import solo_opening

SESSION = "ahp-session:/origins"
CHAT = "ahp-chat:/origins"
NOW = "2026-11-26T00:00:00.000Z"
FIRST = ActionOrigin(client_id="ui", client_seq=1)
SECOND = ActionOrigin(client_id="ui", client_seq=2)


def turn(turn_id: str) -> ChatTurnStartedAction:
    message = Message(text=turn_id, origin=MessageOrigin(kind=MessageKind.USER))
    return ChatTurnStartedAction(turn_id=turn_id, started_at=NOW, message=message)


def turn_started(action: Action) -> bool:
    return isinstance(action, ChatTurnStartedAction)


async def opened() -> Recorder:
    recorder = Recorder(TeamState(SESSION), MemoryFactLog(), FactBus(), clock=lambda: NOW)
    await recorder.record(solo_opening(SESSION, CHAT, prompt="go", at=NOW, member=False))
    return recorder


class TestOrigins:
    async def test_the_first_matching_fact_carries_the_origin_once(self) -> None:
        """Only the fact on the expected channel whose action matches gets the origin, and
        only the first such fact. The summary update the turn's start derives is no fact
        (issue 35): the batch is the one fact."""
        recorder = await opened()
        recorder.expect_origin(CHAT, turn_started, FIRST)
        recorder.expect_origin("ahp-chat:/other", turn_started, SECOND)
        started = await recorder.record([(CHAT, turn("t1"))])
        assert [(f.type, f.origin) for f in started] == [("chat/turnStarted", FIRST)]
        assert recorder.state.summary_update(started[0].sequence) is not None
        await recorder.record([(CHAT, ChatTurnCancelledAction(turn_id="t1", duration=0))])
        again = await recorder.record([(CHAT, turn("t2"))])
        assert [f.origin for f in again] == [None]

    async def test_a_refused_action_is_forgotten(self) -> None:
        """A client action that was refused after it was expected (forget_origin) stamps
        nothing: the next client's action gets its own origin, not the refused one's."""
        recorder = await opened()
        recorder.expect_origin(CHAT, turn_started, FIRST)
        recorder.forget_origin(FIRST)
        recorder.expect_origin(CHAT, turn_started, SECOND)
        (started,) = await recorder.record([(CHAT, turn("t1"))])
        assert started.origin == SECOND


class HeldTickets(MemoryFactLog):
    """A fact log whose batches become durable when the test completes their tickets."""

    def __init__(self) -> None:
        super().__init__()
        self.tickets: list[EventTicket] = []

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        super().submit(facts, ended_turns=ended_turns)
        ticket = EventTicket()
        self.tickets.append(ticket)
        return ticket


class TestWaiting:
    async def test_a_cancelled_waiter_waits_until_its_batch_is_durable(self) -> None:
        """Cancelling a task that waits on its batch does not abandon the batch: the wait
        goes on until the batch is durable, commits and publishes it, and the cancellation
        arrives at the task's next checkpoint."""
        log = HeldTickets()
        recorder = Recorder(TeamState(SESSION), log, FactBus(), clock=lambda: NOW)
        published: list[Fact] = []
        recorder.bus.observe(published.extend)
        batch = solo_opening(SESSION, CHAT, prompt="go", at=NOW, member=False)
        got: list[list[Fact]] = []
        reached_checkpoint = False

        scope = trio.CancelScope()

        async def record() -> None:
            nonlocal reached_checkpoint
            with scope:
                got.append(await recorder.record(batch))
                reached_checkpoint = True
                await trio.lowlevel.checkpoint()

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(record)
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
                await trio.testing.wait_all_tasks_blocked()
                assert not got  # still waiting: the cancellation did not end the wait
                assert recorder.state.last_sequence == 0
                log.tickets[0].complete()
        assert scope.cancelled_caught
        assert reached_checkpoint  # cancelled at the checkpoint after the wait, not in it
        assert [f.sequence for f in got[0]] == list(range(1, len(batch) + 1))
        assert recorder.state.last_sequence == len(batch)
        assert published == got[0]

    async def test_wait_for_room_bounds_the_batches_in_flight_and_loses_none(self) -> None:
        """A task that waits for room before each submission never has more than
        ``max_in_flight`` batches in flight however slowly the log makes them durable, and
        every batch is still numbered, committed and published once, in submission order."""
        log = HeldTickets()
        recorder = Recorder(TeamState(SESSION), log, FactBus(), clock=lambda: NOW, max_in_flight=3)
        published: list[Fact] = []
        recorder.bus.observe(published.extend)
        batches: list[list[tuple[str, Action]]] = [
            solo_opening(SESSION, CHAT, prompt="go", at=NOW, member=False)
        ]
        for index in range(6):
            batches.append([(CHAT, turn(f"t{index}"))])
            batches.append([(CHAT, ChatTurnCancelledAction(turn_id=f"t{index}", duration=0))])
        submitted: list[PendingBatch] = []

        async def produce() -> None:
            for batch in batches:
                await recorder.wait_for_room()
                submitted.append(recorder.submit(batch))

        in_flight: list[int] = []
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(produce)
                durable = 0
                while durable < len(batches):
                    await trio.testing.wait_all_tasks_blocked()
                    in_flight.append(len(log.tickets) - durable)
                    log.tickets[durable].complete()
                    durable += 1
        assert max(in_flight) == 3  # reached and never passed
        assert len(submitted) == len(batches)
        await submitted[-1].wait()  # settles the durable batches nobody waited for
        sequences = [f.sequence for f in published]
        assert sequences == list(range(1, len(sequences) + 1))
        assert published == [f for entry in submitted for f in entry.facts] == log.facts
        assert recorder.state.last_sequence == sequences[-1]

    async def test_a_log_that_fails_while_a_task_waits_for_room_lets_it_go(self) -> None:
        """The log fails the oldest batch while a task waits for room: the wait returns
        (nothing hangs on a failed log), every batch in flight fails with the log's error,
        nothing of them is published, and the next submission is refused with that error."""
        log = HeldTickets()
        recorder = Recorder(TeamState(SESSION), log, FactBus(), clock=lambda: NOW, max_in_flight=2)
        published: list[Fact] = []
        recorder.bus.observe(published.extend)
        opening = recorder.submit(solo_opening(SESSION, CHAT, prompt="go", at=NOW, member=False))
        started = recorder.submit([(CHAT, turn("t0"))])
        waited = trio.Event()

        async def wait_then_go() -> None:
            await recorder.wait_for_room()
            waited.set()

        error = FactLogError("the disk is full", source="journal.db")
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_then_go)
                await trio.testing.wait_all_tasks_blocked()
                assert not waited.is_set()  # two in flight: no room
                log.tickets[0].complete(error)
        assert recorder.failed is error
        assert (opening.error, started.error) == (error, error)
        assert published == []
        with pytest.raises(FactLogError, match="the disk is full"):
            recorder.submit([(CHAT, ChatTurnCancelledAction(turn_id="t0", duration=0))])

    async def test_every_waiter_of_a_ticket_wakes_and_a_done_ticket_does_not_wait(
        self,
    ) -> None:
        ticket = EventTicket()
        woken: list[int] = []

        async def wait(index: int) -> None:
            await ticket.wait()
            woken.append(index)

        async with trio.open_nursery() as nursery:
            for index in range(3):
                nursery.start_soon(wait, index)
            await trio.testing.wait_all_tasks_blocked()
            assert not woken
            assert not ticket.done()
            ticket.complete()
            assert ticket.done()
            assert ticket.error is None
        assert sorted(woken) == [0, 1, 2]
        with trio.CancelScope() as scope:
            scope.cancel()
            await ticket.wait()  # done: returns without a checkpoint, so no Cancelled
        assert not scope.cancelled_caught
