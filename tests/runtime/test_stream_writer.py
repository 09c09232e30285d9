"""A model round's stream is read at the model's pace and written in as few facts as the log's
pace asks: chunks that arrive while the chat's previous write is in flight, or within the
window, join one fact; nothing is seen before it is durable; the order is the model's."""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallDeltaAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatSummary,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    ReasoningResponsePart,
    SessionStatus,
    Turn,
    UserChatOrigin,
)
from orchestrator.base import FactLogError
from orchestrator.core import (
    Fact,
    ModelEvent,
    ReasoningDelta,
    RoundContext,
    TeamState,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
)
from orchestrator.runtime import (
    DEFAULT_DELTA_WINDOW,
    EventTicket,
    FactBus,
    Ids,
    MemoryFactLog,
    Recorder,
    RunOutcome,
    StreamFlusher,
    StreamWriter,
    TeamRuntime,
    Ticket,
)
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team
from tests.support.examples import examples
from tests.support.runtime import fanout
from tests.support.sessions import solo_opening

LONE = parse_team(
    """
[team]
name = "lone"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["web_search"]
[agents.lead.tool_results]
web_search = "found it"
""",
    file="lone.toml",
)


class SlowLog(MemoryFactLog):
    """A log whose batches become durable ``latency`` seconds after the one before, in
    order, as a disk that syncs each write; ``served`` makes them so."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency
        self.durable: list[Fact] = []
        self.batches: list[list[Fact]] = []
        self._queue: list[tuple[list[Fact], EventTicket]] = []
        self._wake = trio.Event()

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        ticket = EventTicket()
        self._queue.append((list(facts), ticket))
        self.batches.append(list(facts))
        self._wake.set()
        return ticket

    async def serve(self) -> None:
        while True:
            if not self._queue:
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            await trio.sleep(self.latency)
            facts, ticket = self._queue.pop(0)
            self.durable.extend(facts)
            self.facts.extend(facts)
            ticket.complete()


@attrs.define
class Model:
    """A model that sends ``events``, each ``gaps[i]`` seconds after the one before (the
    last gap repeats), and notes when it sent each text chunk."""

    events: Sequence[ModelEvent]
    gaps: Sequence[float] = (0.01,)
    fail_at: int | None = None  # raise instead of sending this event
    pause_at: int | None = None  # stop for a long time before this event
    sent_at: list[float] = attrs.Factory(list)
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def took(self) -> float:
        """Seconds from the round's start to its last event."""
        assert self.started_at is not None
        assert self.finished_at is not None
        return self.finished_at - self.started_at

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        if context.round_index > 0:
            yield TextDelta(text="done")
            return
        self.started_at = trio.current_time()
        for index, event in enumerate(self.events):
            await trio.sleep(self.gaps[min(index, len(self.gaps) - 1)])
            if index == self.pause_at:
                await trio.sleep(3600)
            if index == self.fail_at:
                raise RuntimeError("the model's connection dropped")
            self.sent_at.append(trio.current_time())
            yield event
        self.finished_at = trio.current_time()


@attrs.define
class Seen:
    """What a reader saw, and when."""

    facts: list[tuple[float, Fact]] = attrs.Factory(list)

    def of(self, cls: type) -> list[Any]:
        return [f.action for _, f in self.facts if isinstance(f.action, cls)]


async def run(
    model: Model, *, log: MemoryFactLog | None = None, window: float = DEFAULT_DELTA_WINDOW
) -> tuple[RunOutcome, Seen, TeamRuntime]:
    log = log or MemoryFactLog()
    runtime = TeamRuntime(
        LONE,
        backends=lambda agent: model,
        factlog=log,
        ids=Ids(deterministic=True),
        delta_window=window,
    )
    seen = Seen()
    subscription = runtime.bus.subscribe("reader", buffer_size=float("inf"))

    async def read() -> None:
        async for fact in subscription:
            seen.facts.append((trio.current_time(), fact))

    async with trio.open_nursery() as nursery:
        if isinstance(log, SlowLog):
            nursery.start_soon(log.serve)
        nursery.start_soon(read)
        outcome = await runtime.run("go")
        runtime.bus.close()
        nursery.cancel_scope.cancel()  # the run ended once its last batch was durable
    return outcome, seen, runtime


#: The facts that carry streamed text.
TEXT_TYPES = ("chat/responsePart", "chat/delta")


def words(count: int) -> list[ModelEvent]:
    return [TextDelta(text=f"w{i} ") for i in range(count)]


def content(action: object) -> str:
    """The text a text fact adds: a new part's first text, or a delta's."""
    if isinstance(action, ChatResponsePartAction):
        part = action.part
        assert isinstance(part, MarkdownResponsePart | ReasoningResponsePart)
        return part.content or ""
    assert isinstance(action, ChatDeltaAction | ChatReasoningAction | ChatToolCallDeltaAction)
    return action.content or ""


def text_of(seen: Seen) -> str:
    """The answer as a client builds it from the facts it saw (reasoning aside)."""
    return "".join(
        content(f.action)
        for _, f in seen.facts
        if isinstance(f.action, ChatDeltaAction)
        or (
            isinstance(f.action, ChatResponsePartAction)
            and isinstance(f.action.part, MarkdownResponsePart)
        )
    )


class TestAtTheModelsPace:
    async def test_a_slow_log_does_not_hold_the_model_back(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """100 chunks 10 ms apart, each write 40 ms: the model sends at its own pace (1 s),
        its text lands in a few facts, each write carrying what arrived during the last."""
        model = Model(words(100), gaps=(0.01,))
        log = SlowLog(latency=0.04)
        outcome, seen, _ = await run(model, log=log)
        assert outcome.status.value == "completed"
        assert model.took == pytest.approx(1.0)
        assert text_of(seen) == "".join(f"w{i} " for i in range(100))
        text_facts = len(seen.of(ChatResponsePartAction)) + len(seen.of(ChatDeltaAction))
        assert 10 <= text_facts <= 30, text_facts

    async def test_with_no_window_each_chunk_is_its_own_fact_and_waits_for_its_write(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        model = Model(words(20), gaps=(0.01,))
        log = SlowLog(latency=0.04)
        _, seen, _ = await run(model, log=log, window=0)
        assert len(seen.of(ChatResponsePartAction)) == 1
        assert len(seen.of(ChatDeltaAction)) == 19
        # Each write held the model back: 20 chunks took 20 x (10 + 40) ms.
        assert model.took == pytest.approx(1.0)

    async def test_a_fast_log_writes_at_most_one_fact_per_window(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """In memory, writes take no time: the window alone merges. The first chunk after a
        quiet spell is written at once; nothing waits longer than the window."""
        model = Model(words(50), gaps=(0.01,))
        _, seen, _ = await run(model, window=0.05)
        first = seen.of(ChatResponsePartAction)
        assert [part.part.content for part in first] == ["w0 "]
        deltas = seen.of(ChatDeltaAction)
        assert 8 <= len(deltas) <= 11, len(deltas)
        texts = [(at, f) for at, f in seen.facts if f.type in ("chat/responsePart", "chat/delta")]
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(texts)]
        # (The stream's end writes what gathered at once: the last gap may be shorter.)
        assert min(gaps[:-1]) >= 0.05 - 1e-9
        assert text_of(seen) == "".join(f"w{i} " for i in range(50))

    async def test_every_chunk_is_seen_within_the_window_and_one_write(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        model = Model(words(60), gaps=(0.007,))
        log = SlowLog(latency=0.02)
        _, seen, _ = await run(model, log=log, window=0.05)
        shown = 0
        texts = [
            (at, f.action) for at, f in seen.facts if f.type in ("chat/responsePart", "chat/delta")
        ]
        chunk = 0
        for at, action in texts:
            shown += len(content(action))
            while chunk < 60 and sum(len(f"w{i} ") for i in range(chunk + 1)) <= shown:
                assert at - model.sent_at[chunk] <= 0.05 + 2 * 0.02 + 1e-9
                chunk += 1
        assert chunk == 60

    async def test_a_stream_that_pauses_is_not_held_back(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The model stops for an hour after five chunks: they are seen within the window,
        not when the stream goes on."""
        model = Model(words(10), gaps=(0.01,), pause_at=5)
        _, seen, _ = await run(model, window=0.05)
        before_pause = [at for at, f in seen.facts if f.type in ("chat/responsePart", "chat/delta")]
        assert before_pause[1] < 1.0  # the second write (chunks 2-5), long before the hour


class TestOrder:
    async def test_parts_tool_calls_and_their_input_keep_the_models_order(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        events: list[ModelEvent] = [
            ReasoningDelta(text="think "),
            ReasoningDelta(text="more"),
            TextDelta(text="Let me "),
            TextDelta(text="search."),
            ToolCallStarted(tool_call_id="call-1", tool_name="web_search"),
            ToolCallInputDelta(tool_call_id="call-1", text='{"query"'),
            ToolCallInputDelta(tool_call_id="call-1", text=': "x"}'),
            ToolCallRequest(
                tool_call_id="call-1", tool_name="web_search", arguments={"query": "x"}
            ),
        ]
        model = Model(events, gaps=(0.001,))
        _, seen, _ = await run(model, log=SlowLog(latency=0.01), window=0.05)
        kinds = [
            type(f.action).__name__
            for _, f in seen.facts
            if isinstance(
                f.action,
                ChatResponsePartAction
                | ChatDeltaAction
                | ChatReasoningAction
                | ChatToolCallStartAction
                | ChatToolCallDeltaAction
                | ChatToolCallReadyAction,
            )
        ]
        # Reasoning, then text, each one part (a part's first chunk may be written alone,
        # the rest joins); the call's start, its input, then ready; then the next round.
        pattern = (
            r"ChatResponsePartAction (ChatReasoningAction )?ChatResponsePartAction "
            r"(ChatDeltaAction )?ChatToolCallStartAction (ChatToolCallDeltaAction )+"
            r"ChatToolCallReadyAction ChatResponsePartAction "
        )
        assert re.fullmatch(pattern, " ".join(kinds) + " "), kinds
        reasoning = content(seen.of(ChatResponsePartAction)[0])
        reasoning += "".join(a.content for a in seen.of(ChatReasoningAction))
        assert reasoning == "think more"
        tool_input = "".join(a.content for a in seen.of(ChatToolCallDeltaAction))
        assert tool_input == '{"query": "x"}'

    async def test_parallel_calls_input_gathers_per_call(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Two calls' input chunks interleave, as parallel calls arrive from an OpenAI
        stream: each call's input is whole, one fact per call in a write."""
        half = ['{"query"', ': "x"}']
        events: list[ModelEvent] = [
            ToolCallStarted(tool_call_id="a", tool_name="web_search"),
            ToolCallStarted(tool_call_id="b", tool_name="web_search"),
            ToolCallInputDelta(tool_call_id="a", text=half[0]),
            ToolCallInputDelta(tool_call_id="b", text=half[0]),
            ToolCallInputDelta(tool_call_id="a", text=half[1]),
            ToolCallInputDelta(tool_call_id="b", text=half[1]),
            ToolCallRequest(tool_call_id="a", tool_name="web_search", arguments={"query": "x"}),
            ToolCallRequest(tool_call_id="b", tool_name="web_search", arguments={"query": "x"}),
        ]
        model = Model(events, gaps=(0.001,))
        log = SlowLog(latency=0.05)
        _, seen, _ = await run(model, log=log)
        deltas = seen.of(ChatToolCallDeltaAction)
        for call in ("a", "b"):
            assert "".join(d.content for d in deltas if d.tool_call_id == call) == "".join(half)
        assert len(deltas) < 4, "chunks that came during a write joined"
        [batch] = [b for b in log.batches if any(f.type == "chat/toolCallDelta" for f in b)][-1:]
        # One fact per call in a write (in the order each began since the last write).
        calls = [
            f.action.tool_call_id for f in batch if isinstance(f.action, ChatToolCallDeltaAction)
        ]
        assert sorted(calls) == ["a", "b"]


class TestEndings:
    async def test_a_failing_stream_keeps_what_it_sent_before_its_error(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        model = Model(words(10), gaps=(0.001,), fail_at=7)
        outcome, seen, _ = await run(model, log=SlowLog(latency=0.05))
        assert outcome.status.value == "failed"
        assert "the model's connection dropped" in outcome.error
        assert text_of(seen) == "".join(f"w{i} " for i in range(7))
        [error] = seen.of(ChatErrorAction)
        assert error.error.error_type == "RuntimeError"  # the model's, not a group's
        last_text = max(
            i
            for i, (_, f) in enumerate(seen.facts)
            if f.type in ("chat/responsePart", "chat/delta")
        )
        assert seen.facts[last_text + 1 :][0][1].type != "chat/delta"
        assert any(isinstance(f.action, ChatErrorAction) for _, f in seen.facts[last_text:])

    async def test_a_cancelled_turn_keeps_what_was_sent_then_says_so(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        model = Model(words(10), gaps=(0.01,), pause_at=6)
        log = SlowLog(latency=0.02)
        runtime = TeamRuntime(
            LONE, backends=lambda agent: model, factlog=log, ids=Ids(deterministic=True)
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.serve)
            nursery.start_soon(runtime.run, "go")
            await trio.sleep(1)  # well into the pause
            runtime.cancel()
            await trio.sleep(1)  # the cancellation's facts are written
            nursery.cancel_scope.cancel()
        facts = log.durable
        texts = [f for f in facts if f.type in ("chat/responsePart", "chat/delta")]
        assert "".join(content(f.action) for f in texts) == "".join(f"w{i} " for i in range(6))
        assert any(isinstance(f.action, ChatTurnCancelledAction) for f in facts)

    async def test_a_runtime_that_stops_drops_what_gathered_as_a_crash_would(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """``stop()`` (the daemon's shutdown) records nothing more: the text that gathered
        during the last write is not written, and the turn is left cut off, not cancelled."""
        model = Model(words(200), gaps=(0.01,))
        log = SlowLog(latency=0.05)
        runtime = TeamRuntime(
            LONE, backends=lambda agent: model, factlog=log, ids=Ids(deterministic=True)
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.serve)
            nursery.start_soon(runtime.run, "go")
            await trio.sleep(0.5035)  # between two chunks, a write in flight
            runtime.stop()
            sent = len(model.sent_at)
            await trio.sleep(1)  # what was submitted before the stop is durable
            nursery.cancel_scope.cancel()
        texts = [f for f in log.durable if f.type in ("chat/responsePart", "chat/delta")]
        stored = "".join(content(f.action) for f in texts)
        assert "".join(f"w{i} " for i in range(sent)).startswith(stored)
        assert len(stored.split()) < sent, "what gathered during the last write is dropped"
        assert not any(isinstance(f.action, ChatTurnCancelledAction) for f in log.durable)

    async def test_a_log_that_fails_mid_stream_ends_the_run_with_its_error(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        class Breaks(SlowLog):
            def submit(
                self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
            ) -> Ticket:
                if any(f.type == "chat/delta" for f in facts):
                    raise FactLogError("disk I/O error", source="slow.db")
                return super().submit(facts, ended_turns=ended_turns)

        model = Model(words(30), gaps=(0.01,))
        outcome, _, _ = await run(model, log=Breaks(latency=0.03))
        assert outcome.status.value == "failed"
        assert "disk I/O error" in outcome.error


class TestTeamWide:
    async def test_the_chats_streaming_at_once_share_one_write_per_window(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Three workers stream at once: their text is written by the session's one flusher,
        one batch per window holding each chat's text as one fact (not one write per chat),
        and each worker's answer is whole and in order."""
        sent = {task: [f"{task}{i} " for i in range(30)] for task in ("alpha", "beta", "gamma")}

        class Worker:
            async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
                for word in sent[context.task]:
                    await trio.sleep(0.01)
                    yield TextDelta(text=word)

        team = fanout()
        log = SlowLog(latency=0.002)
        runtime = TeamRuntime(
            team,
            backends=lambda agent: Worker() if agent.name == "worker" else ScriptedBackend(agent),
            factlog=log,
            ids=Ids(deterministic=True),
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.serve)
            outcome = await runtime.run("go")
            nursery.cancel_scope.cancel()
        assert outcome.status.value == "completed"
        workers = {chat for chat, m in runtime.state.members.items() if m.agent == "worker"}
        text_batches = [
            [f for f in batch if f.channel in workers and f.type in TEXT_TYPES]
            for batch in log.batches
        ]
        text_batches = [batch for batch in text_batches if batch]
        for batch in text_batches:
            assert len({f.channel for f in batch}) == len(batch), "one fact per chat a write"
        shared = [batch for batch in text_batches if len(batch) == len(workers)]
        # 0.3 s of streaming at a 50 ms window: about 6 shared writes, against about 18 when
        # each chat wrote its own.
        assert len(shared) >= 4
        assert len(text_batches) <= 12
        answers = {
            "".join(
                content(f.action) for f in log.durable if f.channel == chat and f.type in TEXT_TYPES
            )
            for chat in workers
        }
        assert answers == {"".join(words) for words in sent.values()}

    async def test_a_chat_whose_turn_ended_meanwhile_loses_only_its_own_text(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The flusher's batch is refused when one chat's turn ended by a fact not durable
        yet (a client's cancel): that chat's gathered text is dropped, the others' written."""
        session, first, second = "ahp-session:/s", "ahp-chat:/first", "ahp-chat:/second"
        now = "2026-12-07T00:00:00.000Z"
        log = SlowLog(latency=0.01)
        recorder = Recorder(TeamState(session), log, FactBus(), clock=lambda: now)
        async with trio.open_nursery() as nursery:
            cut, kept = await two_writers(nursery, recorder, first, second, now)
            await cut.text("markdown", "lost ")
            await kept.text("markdown", "kept ")
            # Before the flusher runs: the first chat's turn ends, not durable yet.
            recorder.submit([(first, ChatTurnCancelledAction(turn_id="t1", duration=0))])
            await trio.sleep(1)
            nursery.cancel_scope.cancel()
        texts = [(f.channel, content(f.action)) for f in log.durable if f.type in TEXT_TYPES]
        assert texts == [(second, "kept ")]
        assert log.durable[-1].type == "chat/responsePart"

    async def test_a_chat_whose_text_cannot_be_submitted_fails_its_own_round(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Another chat's text that the recorder cannot take (an error of its own, not a
        refusal) does not fail the others' write, and is raised in that chat's round: at
        its next chunk, and as it ends."""
        session, bad, good = "ahp-session:/s", "ahp-chat:/bad", "ahp-chat:/good"
        now = "2026-12-07T00:00:00.000Z"

        class Picky(Recorder):
            def submit(self, actions: Any, **options: Any) -> Any:
                if any(
                    channel == bad and isinstance(a, ChatResponsePartAction)
                    for channel, a in actions
                ):
                    raise RuntimeError("this text does not encode")
                return super().submit(actions, **options)

        log = SlowLog(latency=0.01)
        recorder = Picky(TeamState(session), log, FactBus(), clock=lambda: now)
        async with trio.open_nursery() as nursery:
            failing, kept = await two_writers(nursery, recorder, bad, good, now)
            await failing.text("markdown", "\ud800 ")
            await kept.text("markdown", "kept ")
            await trio.sleep(1)
            with pytest.raises(RuntimeError, match="does not encode"):
                await failing.text("markdown", "more ")
            with pytest.raises(RuntimeError, match="does not encode"):
                failing.close(failing=False)
            nursery.cancel_scope.cancel()
        texts = [(f.channel, content(f.action)) for f in log.durable if f.type in TEXT_TYPES]
        assert texts == [(good, "kept ")]


async def two_writers(
    nursery: trio.Nursery, recorder: Recorder, first: str, second: str, now: str
) -> tuple[StreamWriter, StreamWriter]:
    """``recorder``'s log served and :func:`two_turns` recorded; a session flusher (50 ms)
    run in ``nursery``, and a writer of each turn (``t1`` on ``first``, ``t2``)."""
    log = recorder.factlog
    assert isinstance(log, SlowLog)
    nursery.start_soon(log.serve)
    await recorder.record(two_turns(recorder.state.session_uri, first, second, now))
    flusher = StreamFlusher(recorder, window=0.05)
    flusher.start_soon_in(nursery)
    ids = Ids(deterministic=True)
    return StreamWriter(flusher, ids, first, "t1"), StreamWriter(flusher, ids, second, "t2")


def two_turns(session: str, first: str, second: str, now: str) -> list[tuple[str, Any]]:
    """A session with two chats, a turn running on each (``t1`` on ``first``, ``t2``)."""
    other = ChatSummary(
        resource=second,
        title="b",
        status=SessionStatus.IDLE,
        modified_at=now,
        origin=UserChatOrigin(),
    )
    message = Message(text="go", origin=MessageOrigin(kind=MessageKind.USER))
    return [
        *solo_opening(session, first, prompt="go", at=now, member=False),
        (session, SessionChatAddedAction(summary=other)),
        (first, ChatTurnStartedAction(turn_id="t1", started_at=now, message=message)),
        (second, ChatTurnStartedAction(turn_id="t2", started_at=now, message=message)),
    ]


class TestSettings:
    @pytest.mark.parametrize("window", [-0.01, float("inf"), float("nan")])
    def test_a_window_that_is_no_duration_is_refused(self, window: float) -> None:
        with pytest.raises(ValueError, match="delta_window"):
            TeamRuntime(LONE, backends=lambda agent: Model(()), delta_window=window)


# ── the property: whatever the pace of the model and of the log ─────────────────

chunk_text = st.text(alphabet="ab ✓\n", min_size=1, max_size=4)
stream_events = st.lists(
    st.one_of(
        st.builds(TextDelta, text=chunk_text),
        st.builds(ReasoningDelta, text=chunk_text),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=examples(60), deadline=None)
@given(
    events=stream_events,
    gaps=st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.03, 0.2]), min_size=1, max_size=8),
    latency=st.sampled_from([0.0, 0.002, 0.02, 0.1]),
    window=st.sampled_from([0.0, 0.01, 0.05]),
)
def test_the_facts_hold_the_models_text_part_by_part_in_order(
    events: list[ModelEvent], gaps: list[float], latency: float, window: float
) -> None:
    """However chunks and writes interleave: each part's text is exactly what the model
    sent for it, parts come in the model's order (a new part where the kind changes), and the
    turn completes after the last text."""
    model = Model(events, gaps=gaps)
    log = SlowLog(latency=latency)
    outcome, seen, _ = trio.run(
        lambda: run(model, log=log, window=window),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    assert outcome.status.value == "completed"
    expected: list[tuple[str, str]] = []  # (kind, text) per part
    for event in events:
        kind = "markdown" if isinstance(event, TextDelta) else "reasoning"
        assert isinstance(event, TextDelta | ReasoningDelta)
        if expected and expected[-1][0] == kind:
            expected[-1] = (kind, expected[-1][1] + event.text)
        else:
            expected.append((kind, event.text))
    got: list[tuple[str, str]] = []
    by_id: dict[str, int] = {}
    for _, fact in seen.facts:
        action = fact.action
        if isinstance(action, ChatResponsePartAction):
            part = action.part
            assert isinstance(part, MarkdownResponsePart | ReasoningResponsePart)
            by_id[part.id] = len(got)
            got.append((part.kind, part.content))
        elif isinstance(action, ChatDeltaAction | ChatReasoningAction):
            index = by_id[action.part_id]
            got[index] = (got[index][0], got[index][1] + action.content)
    # The second round (after no tool call there is none) adds nothing: one turn.
    assert got == expected
    last_text = max(
        i
        for i, (_, f) in enumerate(seen.facts)
        if f.type in ("chat/responsePart", "chat/delta", "chat/reasoning")
    )
    completes = [
        i for i, (_, f) in enumerate(seen.facts) if isinstance(f.action, ChatTurnCompleteAction)
    ]
    assert completes
    assert completes[0] > last_text
