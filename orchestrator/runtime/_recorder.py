"""The recorder: the single door through which facts enter the world.

Theory of operation
-------------------
Everything the runtime does becomes facts through one door, :meth:`Recorder.record`. A batch
of ``(channel, action)`` pairs goes through these steps:

- it is validated and reduced against the current :class:`TeamState` (nothing changes yet);
- it is appended to the fact log;
- it is committed to the state;
- only then is it published on the bus.

A batch is all or nothing; it is how a spawn records the worker's ChatOrigin
and the parent tool call's subagent content together. How batches in flight are
ordered, settled and failed is told in :class:`Recorder`'s docstring.

A client's action (AHP ``dispatchAction``) is carried out by the runtime later, as facts
of its own making: the turn the prompt starts, the tool call the approval confirms. Whoever
takes the client's action says first which fact will carry it (:meth:`Recorder.expect_origin`:
a channel and a test of the action). The first fact recorded that passes it is stamped with the
client's ``origin``. So the origin is in the journal and every subscriber sees it.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Final

import attrs
import structlog

from orchestrator.ahp.actions import ActionOrigin
from orchestrator.base import FactLogError, now_timestamp, slot_init
from orchestrator.core import Action, Fact, TeamState, Transition

from ._bus import FactBus
from ._factlog import FactLog, Ticket

__all__ = [
    "Recorder",
]

log = structlog.get_logger("orchestrator.runtime")

#: Origins waiting for the fact that carries their client's action (oldest dropped first).
MAX_EXPECTED_ORIGINS: Final = 256

#: Most batches in flight (submitted, not yet durable) before :meth:`Recorder.wait_for_room`
#: waits; see there.
MAX_IN_FLIGHT: Final = 256

#: ``Fact(...)``, the same instance at half the cost (every fact is made here).
_new_fact: Final = slot_init(Fact)


@attrs.define(eq=False)
class _ExpectedOrigin:
    """The fact that will carry a client's action, and the origin to stamp it with."""

    channel: str
    matches: Callable[[Action], bool]
    origin: ActionOrigin


class Recorder:
    """The single door through which facts enter the world (see module docstring).

    Theory of operation: :meth:`submit` prepares a batch against the state as the batches in
    flight will leave it. It numbers its facts and submits them to the fact log. All of that
    is done without an await: trio runs one task at a time, so batches are ordered without a
    lock. Waiting on the returned :class:`PendingBatch` is not cancellable: a submitted batch
    is never abandoned. The wait returns once the batch is durable. Before that it commits
    every batch that is durable, oldest first, and publishes their facts. :meth:`record` is
    the two in one. A log that writes in the background can thus make many batches durable in
    one transaction. A task may submit several batches before it waits (the spawns of one
    delegate step do). Whoever waits settles everything durable ahead of it. If the log fails,
    that batch and every later one fail with it. The recorder then refuses all else, and
    tells ``on_failed``. The runtime then ends the session: a task waiting on something else
    would never find out.
    """

    def __init__(
        self,
        state: TeamState,
        factlog: FactLog,
        bus: FactBus,
        *,
        clock: Callable[[], str] = now_timestamp,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.state = state
        self.factlog = factlog
        self.bus = bus
        self.clock = clock
        self._last_sequence = state.last_sequence  # of the last fact submitted
        self.max_in_flight = max_in_flight
        self._in_flight: collections.deque[PendingBatch] = collections.deque()
        self.failed: FactLogError | None = None
        # Told once the log fails (the runtime ends its session: nothing can be recorded).
        self.on_failed: Callable[[FactLogError], None] | None = None
        self._expected: collections.deque[_ExpectedOrigin] = collections.deque(
            maxlen=MAX_EXPECTED_ORIGINS
        )

    def expect_origin(
        self, channel: str, matches: Callable[[Action], bool], origin: ActionOrigin
    ) -> None:
        """Stamp ``origin`` on the first fact recorded from now on whose channel is
        ``channel`` and whose action passes ``matches`` (see the module docstring)."""
        self._expected.append(_ExpectedOrigin(channel=channel, matches=matches, origin=origin))

    def forget_origin(self, origin: ActionOrigin) -> None:
        """The client's action was refused: no fact will carry it."""
        for expected in list(self._expected):
            if expected.origin == origin:
                self._expected.remove(expected)

    def _origin_of(self, channel: str, action: Action) -> ActionOrigin | None:
        for expected in self._expected:
            if expected.channel == channel and expected.matches(action):
                self._expected.remove(expected)
                return expected.origin
        return None

    async def record(
        self, actions: Sequence[tuple[str, Action]], *, guard: Callable[[], None] | None = None
    ) -> list[Fact]:
        """Validate, append, apply and publish ``actions`` as one batch.

        Raises :class:`IllegalTransitionError` (nothing recorded) for an action the state
        refuses, and :class:`FactLogError` when the log cannot make the batch durable.
        ``guard`` runs first, in the same atomic step as the preparation, and refuses the
        batch by raising: a check of runtime bookkeeping that must not change between the
        check and the append. Once submitted, the batch is recorded whole even if the caller
        is cancelled meanwhile (the cancellation arrives at the caller's next checkpoint).
        """
        # PendingBatch.wait, inlined (one coroutine less per batch: most facts come this way).
        entry = self.submit(actions, guard=guard)
        ticket = entry.ticket
        if not ticket.done():
            await ticket.wait()
        self._settle()
        if entry.error is not None:
            raise entry.error
        return entry.facts

    async def wait_for_room(self) -> None:
        """Return once fewer than :attr:`max_in_flight` batches are in flight (at once when
        they already are): waits for the oldest to be durable and settles what is, as its
        waiter would.

        Some submit without waiting for the batches before them to be durable: a model
        round's tool calls, one after another, and the spawns of its delegations, one per
        task, behind each other. They call this before they submit. So a burst of them does not
        hold all its batches, their prepared transitions and encoded rows at once while the log
        writes the first. A fan-out of N workers would otherwise hold N of each at its peak. The
        process keeps the memory of its peak (pymalloc frees an arena only once it is
        empty). The log still
        takes many batches per write (group commit): the bound is far above what one
        write's time lets the trio thread prepare.
        """
        while len(self._in_flight) >= self.max_in_flight and self.failed is None:
            oldest = self._in_flight[0]
            if not oldest.ticket.done():
                await oldest.ticket.wait()
            self._settle()

    def submit(
        self, actions: Sequence[tuple[str, Action]], *, guard: Callable[[], None] | None = None
    ) -> PendingBatch:
        """Validate ``actions`` and hand them to the log as one batch; nothing is applied yet.

        As :meth:`record` without the wait: the batch is committed and published once it is
        durable and someone waits (on it or on any later batch). The caller must not act on
        it (start a worker, run a tool) before :meth:`PendingBatch.wait` returns. Raises as
        :meth:`record` does, except for the log's failure to make the batch durable, which
        :meth:`PendingBatch.wait` raises.
        """
        if self.failed is not None:
            raise self.failed
        if guard is not None:
            guard()
        now = self.clock()
        transition = self.state.prepare(actions, now=now, record=self.bus.wants_changes())
        first = self._last_sequence + 1
        facts = [
            _new_fact(
                sequence=first + offset,
                session=self.state.session_uri,
                channel=channel,
                at=now,
                action=action,
                origin=self._origin_of(channel, action) if self._expected else None,
            )
            for offset, (channel, action) in enumerate(transition.actions)
        ]
        try:
            # With the turns the batch ends, as reduced here: the journal writes their
            # history rows from them instead of folding their facts again.
            ticket = self.factlog.submit(facts, ended_turns=transition.ended_turns)
        except FactLogError as exc:
            # The log failed a batch before this one. Batches ahead of that one are durable
            # (their tickets say so) though perhaps not waited for yet: commit them first.
            self._settle()
            self._fail(exc)
            raise
        self._last_sequence = facts[-1].sequence
        self.state.push(transition)
        entry = PendingBatch(self, transition, facts, ticket)
        self._in_flight.append(entry)
        return entry

    def _settle(self) -> None:
        """Commit and publish every durable batch at the front of the queue, in order."""
        while self._in_flight and self._in_flight[0].ticket.done():
            entry = self._in_flight.popleft()
            error = entry.ticket.error
            if error is not None:
                entry.error = error
                self._fail(error)
                return
            self.state.commit(entry.transition, entry.facts[-1].sequence)
            # With what each fact wrote, for the readers that follow the state.
            tr = entry.transition
            self.bus.publish_nowait(entry.facts, tr.changes if tr.recorded else None)
            self.factlog.committed(self.state)

    def fail(self, error: FactLogError) -> None:
        """The log can take nothing more (its owner knows before a batch is refused):
        commit what is durable, fail the rest, refuse all else."""
        self._settle()
        self._fail(error)

    def _fail(self, error: FactLogError) -> None:
        # Every batch in flight was prepared on top of facts that never became durable.
        for entry in self._in_flight:
            entry.error = error
        self._in_flight.clear()
        self.state.discard_pending()
        if self.failed is None:
            self.failed = error
            log.error("fact log failed: nothing more can be recorded", error=str(error))
            if self.on_failed is not None:
                self.on_failed(error)


@attrs.define(eq=False)
class PendingBatch:
    """A submitted batch: its prepared transition, its facts, the log's ticket for them."""

    recorder: Recorder
    transition: Transition
    facts: list[Fact]
    ticket: Ticket
    error: FactLogError | None = None

    async def wait(self) -> list[Fact]:
        """Return the batch's facts once they are durable, committed and published; raise
        :class:`FactLogError` if the log failed it (or a batch before it)."""
        # Not cancellable (the ticket's wait is not): a cancelled waiter would leave its
        # batch durable but never committed if no one waited after it. The cancellation
        # arrives at the caller's next checkpoint. A done ticket's wait returns at once (no
        # checkpoint): it is not called then.
        if not self.ticket.done():
            await self.ticket.wait()
        self.recorder._settle()
        if self.error is not None:
            raise self.error
        return self.facts
