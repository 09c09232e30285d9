"""Fan-out of recorded facts to subscribers, with bounded buffers.

Theory of operation: the recorder calls :meth:`FactBus.publish_nowait` after a
batch is durable and applied. Each subscriber owns a bounded trio memory
channel. Publishing never blocks: a subscriber whose buffer is full is dropped
on the spot, its channel closed, and the reason kept in
:attr:`Subscription.dropped_reason`, so one slow reader (a stalled WebSocket, a
terminal that stopped scrolling) can never stall the runtime. A dropped
subscriber sees its iteration end and can read the log from its last sequence
to catch up.

One fold per session: a subscriber that needs the team state beside each fact (a projector
of Agent UI envelopes, the console) subscribes with the runtime's state and reads
:attr:`Subscription.state`, which is at each fact as it is handed out. It is not a second
fold. The recorder publishes, with each batch, what each of its facts wrote as the runtime
reduced it (:class:`~orchestrator.core.FactChange`). The subscription advances its view by
those values (:meth:`~orchestrator.core.TeamState.follow`: dictionary stores, no reducer).
Each subscriber has a view of its own, not the runtime's live state. A subscriber reads a fact
after the runtime has moved on (a batch's later facts, later batches). A projection needs the
state as each fact left it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import attrs
import trio

from orchestrator.core import Fact, FactChange, TeamState

__all__ = ["BusStatistics", "FactBus", "Subscription"]


@attrs.frozen(kw_only=True)
class BusStatistics:
    """A snapshot of the bus: how many subscribers, the fullest buffer, drops so far."""

    subscribers: int
    max_buffered: int
    dropped: int
    published: int


@attrs.define(eq=False)
class Subscription:
    """One subscriber's view of the bus; iterate it to receive facts in order."""

    name: str
    buffer_size: float
    _send: trio.MemorySendChannel[Fact]
    _receive: trio.MemoryReceiveChannel[Fact]
    dropped_reason: str | None = None
    _pending: deque[Fact] = attrs.field(factory=deque)  # drained, not yet handed out
    #: With a state: the runtime's state as of the last fact handed out (see the module
    #: docstring); ``None`` for a subscriber that reads facts alone.
    state: TeamState | None = None
    # With a state: what each fact sent and not yet handed out wrote, in order (None: the
    # publisher said nothing, and the fact is folded instead).
    _changes: deque[FactChange | None] = attrs.field(factory=deque)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Fact:
        # A plain iterator, not an async generator: a reader may break out of its loop at
        # any point without leaving a generator to be finalized.
        if self._pending:
            return self._advance(self._pending.popleft())
        try:
            batch = await self._receive_batch()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
        self._pending.extend(batch[1:])
        return self._advance(batch[0])

    def _advance(self, fact: Fact) -> Fact:
        """Bring :attr:`state` to ``fact`` as it is handed out."""
        if self.state is not None:
            change = self._changes.popleft()
            if change is None:
                self.state.apply(fact)
            else:
                self.state.follow(change, fact.sequence)
        return fact

    async def receive(self) -> Fact:
        self._refuse_with_state()
        return await self._receive.receive()

    async def receive_batch(self) -> list[Fact]:
        """Wait for a fact, then take every fact already buffered behind it.

        One trip through the scheduler per batch rather than per fact: while a reader waits
        its turn, the runtime records many facts. Raises ``trio.EndOfChannel`` at the end.
        A subscription with a state is iterated instead (its state moves fact by fact).
        """
        self._refuse_with_state()
        return await self._receive_batch()

    def _refuse_with_state(self) -> None:
        if self.state is not None:
            raise TypeError("a subscription with a state is read by iterating it")

    async def _receive_batch(self) -> list[Fact]:
        batch = [await self._receive.receive()]
        while True:
            try:
                batch.append(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return batch

    def buffered(self) -> int:
        return self._receive.statistics().current_buffer_used


class FactBus:
    """Publishes facts to every current subscriber without ever blocking the publisher."""

    def __init__(self, *, buffer_size: int = 10_000) -> None:
        self._buffer_size = buffer_size
        self._subscriptions: list[Subscription] = []
        self._observers: list[Callable[[Sequence[Fact]], None]] = []
        self._change_observers: list[
            Callable[[Sequence[Fact], Sequence[FactChange | None]], None]
        ] = []
        # Whether each change observer needs the changes now (see observe_changes).
        self._changes_wanted: list[Callable[[], bool]] = []
        self._dropped = 0
        self._published = 0
        self._following = 0  # subscriptions with a state

    def subscribe(
        self, name: str, *, buffer_size: float | None = None, state: TeamState | None = None
    ) -> Subscription:
        """Start receiving every fact published from now on.

        ``buffer_size`` may be ``math.inf`` for an in-process consumer that is
        known to keep up (the fact file writer); the default bounds the buffer.
        ``state``: the publisher's state, as of the last fact published (the runtime's
        :class:`TeamState`); the subscription's :attr:`Subscription.state` starts as a copy
        of it and follows every fact handed out (see the module docstring).
        """
        size = self._buffer_size if buffer_size is None else buffer_size
        send, receive = trio.open_memory_channel[Fact](size)
        subscription = Subscription(
            name, size, send, receive, state=None if state is None else state.copy()
        )
        self._subscriptions.append(subscription)
        if state is not None:
            self._following += 1
        return subscription

    def observe(self, observer: Callable[[Sequence[Fact]], None]) -> None:
        """Call ``observer`` with every batch, as it is published, before any subscriber
        can see it: for bookkeeping that must be up to date when a subscriber reads a fact
        (what the daemon projects once for all its clients). It must be quick and must not
        raise: it runs inside the recorder's commit."""
        self._observers.append(observer)

    def observe_changes(
        self,
        observer: Callable[[Sequence[Fact], Sequence[FactChange | None]], None],
        *,
        wanted: Callable[[], bool] = lambda: True,
    ) -> None:
        """As :meth:`observe`, with what each fact wrote as the runtime reduced it (``None``
        where the publisher did not say): for bookkeeping that keeps a view of the state
        (:meth:`~orchestrator.core.TeamState.follow`) rather than folding the facts again.
        ``wanted``: whether the observer needs the changes now (while it keeps no view, the
        recorder need not note them: the observer is given ``None`` for each fact)."""
        self._change_observers.append(observer)
        self._changes_wanted.append(wanted)

    def wants_changes(self) -> bool:
        """Whether anyone follows the state (then the recorder notes what each fact writes;
        a batch published without that is folded by its followers instead)."""
        # Asked for every batch: no generator while no one asks for the changes.
        return bool(self._following) or (
            bool(self._changes_wanted) and any(wanted() for wanted in self._changes_wanted)
        )

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
            subscription._send.close()
            if subscription.state is not None:
                self._following -= 1

    def publish_nowait(
        self,
        facts: Sequence[Fact],
        changes: Callable[[], Sequence[FactChange]] | None = None,
    ) -> None:
        """Deliver ``facts`` to every subscriber; drop the ones that cannot keep up.

        ``changes`` gives what each fact wrote (:meth:`~orchestrator.core.Transition.changes`),
        asked only if a subscriber follows the state; without it, such a subscriber folds the
        facts itself.
        """
        self._published += len(facts)
        for observer in self._observers:
            observer(facts)
        written: Sequence[FactChange | None] = ()
        if self._following or self._change_observers:
            written = changes() if changes is not None else [None] * len(facts)
        for change_observer in self._change_observers:
            change_observer(facts, written)
        slow: list[Subscription] = []
        for subscription in self._subscriptions:
            if subscription.state is not None:
                # First: if the buffer fills part way, the facts it took are still read.
                subscription._changes.extend(written)
            try:
                for fact in facts:
                    subscription._send.send_nowait(fact)
            except trio.WouldBlock:
                slow.append(subscription)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                # The subscriber went away without unsubscribing: forget it.
                slow.append(subscription)
        for subscription in slow:
            if subscription.dropped_reason is None:
                subscription.dropped_reason = (
                    f"subscriber {subscription.name!r} fell behind: its buffer of "
                    f"{subscription.buffer_size} facts was full"
                )
            self._dropped += 1
            self.unsubscribe(subscription)

    def close(self) -> None:
        """End every subscription (iteration ends once buffered facts are read)."""
        for subscription in list(self._subscriptions):
            self.unsubscribe(subscription)

    def statistics(self) -> BusStatistics:
        return BusStatistics(
            subscribers=len(self._subscriptions),
            max_buffered=max((s.buffered() for s in self._subscriptions), default=0),
            dropped=self._dropped,
            published=self._published,
        )
