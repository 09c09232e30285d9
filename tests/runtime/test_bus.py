"""The fact bus: ordered fan-out that never blocks the runtime, and drops whoever falls behind."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from orchestrator.core import Fact
from orchestrator.runtime import BusStatistics, FactBus
from tests.support.facts import facts, sequences


class TestDelivery:
    async def test_every_subscriber_gets_every_fact_in_order(self) -> None:
        bus = FactBus()
        first, second = bus.subscribe("a"), bus.subscribe("b")
        bus.publish_nowait(facts(1, 3))
        bus.publish_nowait(facts(4, 2))
        bus.close()
        assert sequences([f async for f in first]) == [1, 2, 3, 4, 5]
        assert sequences([f async for f in second]) == [1, 2, 3, 4, 5]

    async def test_a_subscriber_sees_only_what_is_published_after_it_subscribed(self) -> None:
        bus = FactBus()
        bus.publish_nowait(facts(1, 2))
        late = bus.subscribe("late")
        bus.publish_nowait(facts(3, 1))
        bus.close()
        assert sequences([f async for f in late]) == [3]

    async def test_a_batch_is_everything_buffered(self) -> None:
        """receive_batch waits for one fact, then takes all that are already there."""
        bus = FactBus()
        subscription = bus.subscribe("reader")
        bus.publish_nowait(facts(1, 4))
        assert sequences(await subscription.receive_batch()) == [1, 2, 3, 4]
        bus.publish_nowait(facts(5, 1))
        assert sequences(await subscription.receive_batch()) == [5]

    async def test_a_reader_can_stop_in_the_middle(self) -> None:
        """Breaking out of the loop leaves nothing behind; the rest is still there."""
        bus = FactBus()
        subscription = bus.subscribe("reader")
        bus.publish_nowait(facts(1, 3))
        async for fact in subscription:
            if fact.sequence == 2:
                break
        bus.close()
        assert sequences([f async for f in subscription]) == [3]

    async def test_a_waiting_reader_wakes_for_the_next_fact(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        bus = FactBus()
        subscription = bus.subscribe("reader")
        received: list[Fact] = []

        async def read() -> None:
            async for fact in subscription:
                received.append(fact)  # noqa: PERF401 (observed as it arrives)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            await trio.testing.wait_all_tasks_blocked()
            assert received == []
            bus.publish_nowait(facts(1, 1))
            await trio.testing.wait_all_tasks_blocked()
            assert sequences(received) == [1]
            bus.close()


class TestSlowSubscribers:
    async def test_a_full_buffer_drops_that_subscriber_only(self) -> None:
        """Publishing never blocks: the reader that cannot keep up is dropped, with a reason,
        after it has received what fitted; the others get everything."""
        bus = FactBus(buffer_size=2)
        slow = bus.subscribe("slow")
        fast = bus.subscribe("fast", buffer_size=math.inf)
        bus.publish_nowait(facts(1, 2))
        bus.publish_nowait(facts(3, 1))
        assert slow.dropped_reason == (
            "subscriber 'slow' fell behind: its buffer of 2 facts was full"
        )
        bus.publish_nowait(facts(4, 1))
        bus.close()
        assert sequences([f async for f in slow]) == [1, 2]
        assert sequences([f async for f in fast]) == [1, 2, 3, 4]
        assert bus.statistics().dropped == 1

    async def test_a_subscriber_that_went_away_is_forgotten(self) -> None:
        bus = FactBus()
        gone = bus.subscribe("gone")
        await gone._receive.aclose()
        bus.publish_nowait(facts(1, 1))
        assert bus.statistics().subscribers == 0

    async def test_unsubscribe_ends_delivery(self) -> None:
        bus = FactBus()
        subscription = bus.subscribe("reader")
        bus.unsubscribe(subscription)
        bus.publish_nowait(facts(1, 1))
        assert [f async for f in subscription] == []
        bus.unsubscribe(subscription)  # twice is harmless


class TestStatistics:
    @pytest.mark.parametrize("published", [0, 3])
    def test_counts_subscribers_buffers_drops_and_facts(self, published: int) -> None:
        bus = FactBus()
        bus.subscribe("a")
        bus.subscribe("b")
        if published:
            bus.publish_nowait(facts(1, published))
        assert bus.statistics() == BusStatistics(
            subscribers=2, max_buffered=published, dropped=0, published=published
        )


class TestObservers:
    async def test_an_observer_sees_each_batch_before_any_subscriber_can(self) -> None:
        bus = FactBus(buffer_size=10)
        subscription = bus.subscribe("reader")
        seen: list[tuple[list[int], int]] = []
        # What the observer records is there by the time a subscriber reads the batch.
        bus.observe(lambda batch: seen.append((sequences(list(batch)), subscription.buffered())))
        bus.publish_nowait(facts(1, 3))
        bus.publish_nowait(facts(4, 2))
        assert seen == [([1, 2, 3], 0), ([4, 5], 3)]
        assert sequences(await subscription.receive_batch()) == [1, 2, 3, 4, 5]
