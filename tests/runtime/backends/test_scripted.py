"""The scripted backend: deterministic model rounds played from a team file."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import RunError
from orchestrator.core import (
    Backend,
    ModelEvent,
    ReasoningDelta,
    RoundContext,
    TextDelta,
    ToolCallRequest,
    ToolOutcome,
    UsageReport,
)
from orchestrator.runtime.backends import (
    ScriptedBackend,
    ScriptedFailure,
    chunk_text,
    turn_index_of,
)
from orchestrator.spec import AgentSpec, load_team, parse_team
from tests.support.paths import TEAMS

CHAT = "ahp-chat:/3f2a9c1e-0b7d-4c55-9e61-2d8f0a4b7c10"


def agent(steps: str, *, tools: Sequence[str] = (), extra_turns: str = "") -> AgentSpec:
    """A one-agent team whose agent plays ``steps`` (TOML step tables) as its first turn."""
    tool_list = ", ".join(f'"{t}"' for t in tools)
    team = parse_team(
        f"""
[team]
name = "t"
coordinator = "solo"

[agents.solo]
role = "coordinator"
tools = [{tool_list}]
delegates_to = ["solo"]

[[agents.solo.turns]]
steps = [{steps}]
{extra_turns}
""",
        file="test.toml",
    )
    return team.agent("solo")


def context(
    *,
    task: str = "Summarise the changelog",
    round_index: int = 0,
    history: Sequence[tuple[str, str]] = (("user", "Summarise the changelog"),),
    outcomes: Sequence[ToolOutcome] = (),
) -> RoundContext:
    return RoundContext(
        chat=CHAT,
        agent="solo",
        task=task,
        round_index=round_index,
        history=history,
        outcomes=outcomes,
    )


def outcome(output: str, index: int = 0) -> ToolOutcome:
    return ToolOutcome(
        tool_call_id=f"x-{index}", tool_name="web_search", success=True, output=output
    )


async def play(spec: AgentSpec, ctx: RoundContext) -> list[ModelEvent]:
    backend: Backend = ScriptedBackend(spec)
    return [event async for event in backend.stream_round(ctx)]


def without_usage(events: Sequence[ModelEvent]) -> list[ModelEvent]:
    return [e for e in events if not isinstance(e, UsageReport)]


def text_of(events: Sequence[ModelEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


class TestChunking:
    async def test_text_is_split_into_nearly_equal_chunks(self) -> None:
        """say streams ``chunks`` TextDeltas whose sizes differ by at most one."""
        events = await play(agent('{ say = "abcdefghij", chunks = 3 }'), context())
        assert without_usage(events) == [
            TextDelta(text="abcd"),
            TextDelta(text="efg"),
            TextDelta(text="hij"),
        ]

    async def test_default_is_three_chunks(self) -> None:
        """Without chunks, text comes in three pieces."""
        events = await play(agent('{ say = "123456" }'), context())
        assert text_of(events) == ["12", "34", "56"]

    async def test_short_text_never_yields_empty_chunks(self) -> None:
        """More chunks than characters gives one character per chunk."""
        events = await play(agent('{ say = "ab", chunks = 5 }'), context())
        assert text_of(events) == ["a", "b"]

    async def test_think_streams_reasoning(self) -> None:
        """think streams ReasoningDeltas, chunked the same way."""
        events = await play(agent('{ think = "hmm?", chunks = 2 }'), context())
        assert without_usage(events) == [ReasoningDelta(text="hm"), ReasoningDelta(text="m?")]

    @given(st.text(max_size=60), st.integers(min_value=1, max_value=80))
    def test_chunk_text_property(self, text: str, chunks: int) -> None:
        """Chunks rejoin to the text, are never empty and differ in size by <= 1."""
        pieces = chunk_text(text, chunks)
        assert "".join(pieces) == text
        assert len(pieces) == min(chunks, len(text))
        assert all(pieces)
        if pieces:
            assert max(map(len, pieces)) - min(map(len, pieces)) <= 1


class TestSubstitution:
    async def test_task_is_substituted(self) -> None:
        """{task} becomes the round context's task."""
        events = await play(agent('{ say = "Doing: {task}", chunks = 1 }'), context(task="X"))
        assert text_of(events) == ["Doing: X"]

    async def test_outcomes_are_the_previous_round_outputs_joined_by_newlines(self) -> None:
        """{outcomes} becomes the previous round's tool outputs, one per line."""
        spec = agent(
            '{ tool = "web_search" }, { say = "Found:\\n{outcomes}", chunks = 1 }',
            tools=["web_search"],
        )
        ctx = context(round_index=1, outcomes=[outcome("first", 0), outcome("second", 1)])
        assert text_of(await play(spec, ctx)) == ["Found:\nfirst\nsecond"]

    async def test_other_braces_are_left_alone(self) -> None:
        """Only the two placeholders are replaced; other braces stay as written."""
        events = await play(agent('{ say = "{x} {task}", chunks = 1 }'), context(task="t"))
        assert text_of(events) == ["{x} t"]

    async def test_tool_input_strings_are_substituted(self) -> None:
        """Strings inside a tool input get the same substitution, at any depth."""
        spec = agent(
            '{ tool = "web_search", input = { query = "{task}", n = 3, tags = ["{task}"] } }',
            tools=["web_search"],
        )
        (request, *_) = await play(spec, context(task="release"))
        assert isinstance(request, ToolCallRequest)
        assert request.arguments == {"query": "release", "n": 3, "tags": ["release"]}


class TestRounds:
    STEPS = (
        '{ say = "a", chunks = 1 }, { tool = "web_search", input = { q = "x" } },'
        ' { say = "b", chunks = 1 }'
    )

    async def test_a_tool_step_ends_the_round(self) -> None:
        """Round 0 stops at the first tool step; the tool call is its last event."""
        events = await play(agent(self.STEPS, tools=["web_search"]), context())
        assert events == [
            TextDelta(text="a"),
            ToolCallRequest(
                tool_call_id="3f2a9c1e-t0-r0-c0", tool_name="web_search", arguments={"q": "x"}
            ),
        ]

    async def test_the_next_round_continues_after_the_tool_step(self) -> None:
        """Round 1 plays the steps after the tool step and ends the turn with usage."""
        events = await play(agent(self.STEPS, tools=["web_search"]), context(round_index=1))
        assert events[0] == TextDelta(text="b")
        assert isinstance(events[-1], UsageReport)
        assert len(events) == 2

    async def test_a_round_the_script_lacks_is_a_run_error(self) -> None:
        """Asking for a round after the one that ended the turn is a runtime bug."""
        with pytest.raises(RunError, match="round 2 was asked for"):
            await play(agent(self.STEPS, tools=["web_search"]), context(round_index=2))

    async def test_tool_arguments_are_a_fresh_copy(self) -> None:
        """Mutating a request's arguments leaves the agent definition untouched."""
        spec = agent(self.STEPS, tools=["web_search"])
        request = (await play(spec, context()))[-1]
        assert isinstance(request, ToolCallRequest)
        request.arguments["q"] = "changed"  # type: ignore[index]
        again = (await play(spec, context()))[-1]
        assert isinstance(again, ToolCallRequest)
        assert again.arguments == {"q": "x"}


class TestTeamTools:
    async def test_delegate_yields_one_request_per_worker(self) -> None:
        """A delegate step requests N delegate calls in one round, with deterministic ids."""
        spec = agent(
            '{ delegate = [{ agent = "solo", task = "one" }, { agent = "solo", task = "two" },'
            ' { agent = "solo", task = "three" }] }',
            tools=["delegate"],
        )
        events = await play(spec, context())
        assert events == [
            ToolCallRequest(
                tool_call_id=f"3f2a9c1e-t0-r0-c{i}",
                tool_name="delegate",
                arguments={"agent": "solo", "task": task},
            )
            for i, task in enumerate(["one", "two", "three"])
        ]
        assert await play(spec, context()) == events

    async def test_ids_differ_between_turns_of_one_chat(self) -> None:
        """The turn number is part of the id, so ids stay unique within the chat."""
        spec = agent(
            '{ tool = "web_search" }',
            tools=["web_search"],
            extra_turns='[[agents.solo.turns]]\nsteps = [{ tool = "web_search" }]',
        )
        second_turn = context(history=[("user", "a"), ("assistant", "b"), ("user", "c")])
        first = (await play(spec, context()))[0]
        second = (await play(spec, second_turn))[0]
        assert isinstance(first, ToolCallRequest)
        assert isinstance(second, ToolCallRequest)
        assert (first.tool_call_id, second.tool_call_id) == (
            "3f2a9c1e-t0-r0-c0",
            "3f2a9c1e-t1-r0-c0",
        )

    async def test_handoff_request(self) -> None:
        """A handoff step requests one handoff call with agent, reason and resume."""
        spec = agent('{ handoff = "solo", reason = "billing: {task}" }', tools=["handoff"])
        (request, *_) = await play(spec, context(task="invoice"))
        assert request == ToolCallRequest(
            tool_call_id="3f2a9c1e-t0-r0-c0",
            tool_name="handoff",
            arguments={"agent": "solo", "reason": "billing: invoice", "resume": "solo"},
        )

    async def test_ask_request(self) -> None:
        """An ask step requests one ask call; select kinds carry their options."""
        spec = agent(
            '{ ask = "Which version?", kind = "single-select", options = ["1.0", "2.0"] }',
            tools=["ask"],
        )
        (request, *_) = await play(spec, context())
        assert isinstance(request, ToolCallRequest)
        assert request.tool_name == "ask"
        assert request.arguments == {
            "question": "Which version?",
            "kind": "single-select",
            "options": ["1.0", "2.0"],
        }

    async def test_plain_question_has_no_options(self) -> None:
        """A text question's arguments are just question and kind."""
        (request, *_) = await play(agent('{ ask = "Why?" }', tools=["ask"]), context())
        assert isinstance(request, ToolCallRequest)
        assert request.arguments == {"question": "Why?", "kind": "text"}


class TestWhenTaskContains:
    STEPS = (
        '{ say = "always", chunks = 1 },'
        ' { tool = "publish", when_task_contains = "PUBLISH" },'
        ' { say = "after", chunks = 1 }'
    )

    async def test_matching_task_runs_the_step(self) -> None:
        """A step runs when the task contains its substring, case-insensitively."""
        events = await play(agent(self.STEPS, tools=["publish"]), context(task="Publish notes"))
        assert [type(e) for e in events] == [TextDelta, ToolCallRequest]

    async def test_other_tasks_skip_the_step_and_its_round_break(self) -> None:
        """A skipped tool step does not end a round: the turn is one round for them."""
        events = await play(agent(self.STEPS, tools=["publish"]), context(task="Summarise"))
        assert text_of(events) == ["always", "after"]
        assert not any(isinstance(e, ToolCallRequest) for e in events)

    async def test_delivery_researchers_differ_by_task(self) -> None:
        """In teams/delivery.toml only the researcher asked to publish calls publish."""
        researcher = load_team(TEAMS / "delivery.toml").agent("researcher")

        async def tools_called(task: str) -> list[str]:
            called: list[str] = []
            for round_index in range(3):
                ctx = context(task=task, history=[("user", task)], round_index=round_index)
                events = await play(researcher, ctx)
                requests = [e.tool_name for e in events if isinstance(e, ToolCallRequest)]
                called += requests
                if not requests:
                    break
            return called

        assert await tools_called("Publish the release notes") == ["web_search", "publish"]
        assert await tools_called("List the known issues") == ["web_search"]


class TestFailAndSleep:
    async def test_fail_raises_scripted_failure(self) -> None:
        """A fail step raises ScriptedFailure, a RunError naming the agent and chat."""
        backend = ScriptedBackend(agent('{ say = "x", chunks = 1 }, { fail = "model down" }'))
        seen: list[ModelEvent] = []

        async def consume() -> None:
            async for event in backend.stream_round(context()):
                seen.append(event)  # noqa: PERF401 (keeps what came before the failure)

        with pytest.raises(ScriptedFailure) as info:
            await consume()
        assert seen == [TextDelta(text="x")]
        assert isinstance(info.value, RunError)
        assert info.value.message == "model down"
        assert info.value.agent == "solo"
        assert CHAT in str(info.value)

    async def test_sleep_advances_the_clock_exactly(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """sleep steps wait their seconds, in order, and nothing else takes time."""
        backend = ScriptedBackend(
            agent(
                '{ sleep = 2.5 }, { say = "a", chunks = 1 },'
                ' { sleep = 1 }, { say = "b", chunks = 1 }'
            )
        )
        start = trio.current_time()
        stamps = [
            (trio.current_time() - start, event) async for event in backend.stream_round(context())
        ]
        assert stamps[:2] == [(2.5, TextDelta(text="a")), (3.5, TextDelta(text="b"))]
        assert trio.current_time() - start == 3.5


class TestUsage:
    async def test_declared_usage_is_reported_as_written(self) -> None:
        """A usage step yields its UsageReport and suppresses the estimated one."""
        events = await play(agent('{ usage = [120, 40] }, { say = "x" }'), context())
        assert [e for e in events if isinstance(e, UsageReport)] == [
            UsageReport(input_tokens=120, output_tokens=40)
        ]

    async def test_estimated_usage_when_the_turn_declares_none(self) -> None:
        """input = history characters // 4; output = the turn's say/think characters // 4."""
        spec = agent(
            '{ think = "12345678" }, { tool = "web_search" }, { say = "{task}{outcomes}" }',
            tools=["web_search"],
        )
        history = [("user", "a" * 41)]
        first = await play(spec, context(task="abcd", history=history))
        assert not any(isinstance(e, UsageReport) for e in first)
        last = await play(
            spec, context(task="abcd", history=history, round_index=1, outcomes=[outcome("zz")])
        )
        assert last[-1] == UsageReport(input_tokens=10, output_tokens=3)


class TestTurns:
    @pytest.mark.parametrize(
        ("roles", "expected"),
        [
            ((), 0),
            (("user",), 0),
            (("user", "assistant"), 0),
            (("user", "assistant", "user"), 1),
            (("system", "user", "assistant", "user", "assistant", "user"), 2),
        ],
    )
    def test_turn_index_counts_user_messages(self, roles: tuple[str, ...], expected: int) -> None:
        """The current turn is the number of user messages in the history, minus one."""
        assert turn_index_of(context(history=[(role, "...") for role in roles])) == expected

    async def test_second_turn_plays_the_second_script(self) -> None:
        """The second user message is answered by [[turns]] entry 1."""
        spec = agent(
            '{ say = "first", chunks = 1 }',
            extra_turns='[[agents.solo.turns]]\nsteps = [{ say = "second", chunks = 1 }]',
        )
        ctx = context(history=[("user", "a"), ("assistant", "first"), ("user", "b")])
        assert text_of(await play(spec, ctx)) == ["second"]

    async def test_missing_turn_answers_a_default_text(self) -> None:
        """A turn with no script gets a short default answer instead of a failure."""
        ctx = context(history=[("user", "a"), ("assistant", "x"), ("user", "b")])
        events = await play(agent('{ say = "first" }'), ctx)
        assert text_of(events) == ["(solo has no scripted reply for turn 2.)"]
        assert isinstance(events[-1], UsageReport)

    async def test_missing_turn_has_a_single_round(self) -> None:
        """The default answer requests no tool, so there is no round 1 to ask for."""
        ctx = context(history=[("user", "a"), ("user", "b")], round_index=1)
        with pytest.raises(RunError, match="turn 1 has 1 round"):
            await play(agent('{ say = "first" }'), ctx)
