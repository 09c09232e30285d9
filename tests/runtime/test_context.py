"""What the parts of a team runtime share: the parallel budget's slots, the record of what a
cancellation ended (shielded, and nothing while stopping), which exceptions are
cancellations, and the action that adds an agent's chat to the session."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import (
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
    ChatToolCallStartAction,
)
from orchestrator.ahp.state import (
    ChatInteractivity,
    SessionStatus,
    SystemNotificationResponsePart,
    ToolChatOrigin,
    UserChatOrigin,
)
from orchestrator.core import RunStarted, TaskStarted, TeamState, artifact_of
from orchestrator.protocols import project_facts
from orchestrator.runtime import FactBus, Ids, MemoryFactLog
from orchestrator.runtime._context import RunContext, Slot, chat_added, is_cancellation
from orchestrator.runtime._recorder import Recorder
from orchestrator.spec import parse_team
from tests.support import mcp_servers, teams
from tests.support.runtime import Harness, run_to_end

SESSION = "ahp-session:/00000000-0000-0000-0000-00000000c0de"
TEAM = parse_team(teams.ECHO, file="echo.toml")


def context(budget: int = 1) -> tuple[RunContext, MemoryFactLog]:
    log = MemoryFactLog()
    state = TeamState(SESSION)
    bus = FactBus()
    return (
        RunContext(
            team=TEAM,
            ids=Ids(deterministic=True),
            session=SESSION,
            state=state,
            bus=bus,
            recorder=Recorder(state, log, bus, clock=lambda: "2026-11-22T00:00:00.000Z"),
            callback=None,
            limiter=trio.CapacityLimiter(budget),
            delta_window=0.0,
        ),
        log,
    )


class TestSlots:
    async def test_a_slot_waits_for_the_place_another_gives_back(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        ctx, _ = context(budget=1)
        first, second = Slot(), Slot()
        taken_at: list[float] = []

        async def take_second() -> None:
            await ctx.take_slot(second)
            taken_at.append(trio.current_time())

        await ctx.take_slot(first)
        assert first.held
        async with trio.open_nursery() as nursery:
            nursery.start_soon(take_second)
            await trio.sleep(5)
            assert taken_at == []
            assert not second.held
            ctx.release_slot(first)
        assert (first.held, second.held, taken_at) == (False, True, [5])
        assert ctx.limiter.borrowed_tokens == 1

    def test_giving_back_a_slot_that_holds_none_does_nothing(self) -> None:
        ctx, _ = context()
        ctx.release_slot(None)
        ctx.release_slot(Slot())
        assert ctx.limiter.borrowed_tokens == 0

    async def test_a_slot_given_back_can_be_taken_again(self) -> None:
        """A delegating worker hands its place back while it waits, and takes one again."""
        ctx, _ = context(budget=1)
        slot = Slot()
        await ctx.take_slot(slot)
        ctx.release_slot(slot)
        ctx.release_slot(slot)  # twice: the second gives back nothing
        await ctx.take_slot(slot)
        assert (slot.held, ctx.limiter.borrowed_tokens) == (True, 1)


STARTED = RunStarted(
    run="run-1",
    team="echo",
    topology="solo_run",
    parallel_budget=1,
    coordinator="lead",
    prompt="Ship it",
    task="task-0",
)
BATCH = [(SESSION, STARTED)]


class TestRecordCancelled:
    async def test_the_batch_lands_though_its_scope_is_cancelled(self) -> None:
        """What a cancellation ended is recorded in the cancelled scope itself (the call is
        shielded, and a submitted batch is recorded whole besides)."""
        ctx, log = context()
        with trio.CancelScope() as scope:
            scope.cancel()
            await ctx.record_cancelled(BATCH)
        assert [fact.action for fact in log.facts] == [STARTED]

    async def test_nothing_is_recorded_while_the_runtime_stops(self) -> None:
        """A stop leaves the journal as a crash would: the run resumes where it was."""
        ctx, log = context()
        ctx.stopping = True
        await ctx.record_cancelled(BATCH)
        assert log.facts == []


async def a_cancellation() -> trio.Cancelled:
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as exc:
            return exc
    raise AssertionError("not cancelled")


class TestIsCancellation:
    async def test_a_cancellation_and_groups_of_only_cancellations(self) -> None:
        cancelled = await a_cancellation()
        assert is_cancellation(cancelled)
        assert is_cancellation(BaseExceptionGroup("g", [cancelled, cancelled]))
        nested = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [cancelled])])
        assert is_cancellation(nested)

    async def test_anything_else_in_it_is_not(self) -> None:
        cancelled = await a_cancellation()
        assert not is_cancellation(ValueError("x"))
        assert not is_cancellation(KeyboardInterrupt())
        assert not is_cancellation(BaseExceptionGroup("g", [cancelled, ValueError("x")]))
        nested = BaseExceptionGroup("o", [cancelled, ExceptionGroup("i", [ValueError("x")])])
        assert not is_cancellation(nested)


class TestChatAdded:
    def test_the_coordinator_s_chat_is_the_user_s(self) -> None:
        [lead] = TEAM.agents
        action = chat_added(
            "ahp-chat:/lead", lead, "Ship it\nand more", None, "2026-01-01T00:00:00Z"
        )
        summary = action.summary
        assert (summary.resource, summary.title, summary.status, summary.modified_at) == (
            "ahp-chat:/lead",
            "lead: Ship it",
            SessionStatus.IDLE,
            "2026-01-01T00:00:00Z",
        )
        assert summary.origin == UserChatOrigin()
        assert summary.interactivity is ChatInteractivity(lead.interactivity)

    def test_a_worker_s_chat_names_the_call_that_delegated_it(self) -> None:
        [lead] = TEAM.agents
        origin = ToolChatOrigin(chat="ahp-chat:/lead", tool_call_id="call-1")
        action = chat_added("ahp-chat:/w", lead, "dig", origin, "2026-01-01T00:00:00Z")
        assert action.summary.origin == origin


class TestToolArtifacts:
    """A tool an agent lists in ``artifacts``: a successful call's result is recorded as an
    artifact, in the same append as the call's completion, whatever kind of tool it is."""

    @pytest.mark.daemon  # starts the command tool's program and the MCP server
    async def test_command_python_mcp_and_plain_tools_results_are_artifacts(
        self, every_scenario_is_checked: None
    ) -> None:
        team = parse_team(
            teams.artifact_tools(mcp_server=str(Path(mcp_servers.__file__).resolve())),
            file="artifacts.toml",
        )
        h = Harness(team)
        with trio.fail_after(60):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed", outcome
        analyst = next(a.chat for a in h.actions(TaskStarted))
        calls = {
            f.action.tool_call_id: f.action.tool_name
            for f in h.facts_of(ChatToolCallStartAction)
            if f.channel == analyst
        }
        completed = {
            f.action.tool_call_id: f
            for f in h.facts_of(ChatToolCallCompleteAction)
            if f.channel == analyst
        }
        recorded = [
            (f, artifact)
            for f in h.facts_of(ChatResponsePartAction)
            if (artifact := artifact_of(f.action.part)) is not None
        ]
        assert [calls[a["toolCallId"]] for _, a in recorded] == [
            "count_rows",
            "shout",
            "mcp.calc/only_structured",
            "note",
        ]  # in call order; "lookup" is not listed in artifacts
        for fact, artifact in recorded:
            call = artifact["toolCallId"]
            assert fact.channel == analyst
            assert artifact["artifactId"] == f"tool-{call}"
            assert artifact["name"] == calls[call]
            assert (artifact["append"], artifact["lastChunk"]) == (False, True)
            # In the completion's append, just before it.
            assert completed[call].sequence == fact.sequence + 1
            assert completed[call].action.result.success
            assert fact.action.part == SystemNotificationResponsePart(
                content=f"[artifact {calls[call]}]", meta={"artifact": artifact}
            )
        assert [(a["mediaType"], a["parts"]) for _, a in recorded] == [
            ("application/json", [{"data": {"rows": 3, "table": "users"}}]),
            ("text/plain", [{"text": "DONE!DONE!"}]),
            ("application/json", [{"data": {"n": 4, "double": 8}}]),
            ("text/plain", [{"text": "a plain note"}]),
        ]
        # Agent UI: an artifact.changed each, of the analyst's turn, in the team's topology.
        changed = [
            e for e in project_facts(h.runtime.session, h.facts) if e.type == "artifact.changed"
        ]
        assert [e.artifact_id for e in changed] == [a["artifactId"] for _, a in recorded]
        assert {e.thread_id for e in changed} == {analyst}
        assert {e.topology for e in changed} == {"coordinator_team"}
        assert {(e.payload or {})["runtimeEntity"] for e in changed} == {"subagent_turn"}
        assert [(e.payload or {})["toolCallId"] for e in changed] == [
            a["toolCallId"] for _, a in recorded
        ]
        assert [e.phase for e in changed] == ["completed"] * 4

    async def test_a_failed_call_records_no_artifact(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """``probe``'s input is refused by its schema: the call fails, and no artifact."""
        text = teams.TOOL_CALLS.replace(
            'needs_approval = ["probe"]',
            'needs_approval = ["probe"]\nartifacts = ["probe", "search_web"]',
        )
        h = Harness(parse_team(text, file="calls.toml"))
        await run_to_end(h)
        recorded = [
            artifact
            for f in h.facts
            if isinstance(f.action, ChatResponsePartAction)
            and (artifact := artifact_of(f.action.part)) is not None
        ]
        assert [(a["name"], a["parts"]) for a in recorded] == [
            ("search_web", [{"text": "three hits"}])
        ]
