"""A round's tool calls as the runtime records and runs them: how each is named and shown,
input its tool's schema refuses failing before anyone is asked to approve it, a plain tool's
scripted result, and a delegation's outcome, in request order."""

from __future__ import annotations

import trio.testing

from orchestrator.ahp.actions import (
    ChatToolCallCompleteAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
)
from orchestrator.ahp.state import ToolCallConfirmationReason, ToolResultTextContent
from orchestrator.core import ROUND_META, ApprovalRequested
from orchestrator.spec import parse_team
from tests.support import teams
from tests.support.runtime import Harness, run_to_end


async def run_calls() -> Harness:
    harness = Harness(parse_team(teams.TOOL_CALLS, file="calls.toml"))
    await run_to_end(harness)
    return harness


def lead_chat(harness: Harness) -> str:
    chat = harness.runtime.state.coordinator_chat()
    assert chat is not None
    return chat


async def test_each_call_is_named_and_shown_as_a_person_reads_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    harness = await run_calls()
    chat = lead_chat(harness)
    starts = [
        f.action
        for f in harness.facts
        if f.channel == chat and isinstance(f.action, ChatToolCallStartAction)
    ]
    readies = [
        f.action
        for f in harness.facts
        if f.channel == chat and isinstance(f.action, ChatToolCallReadyAction)
    ]
    assert [(s.tool_name, s.display_name) for s in starts] == [
        ("search_web", "Search web"),
        ("probe", "Probe"),
        ("delegate", "Delegate to worker"),
    ]
    assert [r.invocation_message for r in readies] == [
        "search_web(query=launch)",
        "probe(limt=3)",
        "worker: dig",
    ]
    assert [s.meta for s in starts] == [{ROUND_META: 0}, {ROUND_META: 1}, {ROUND_META: 2}]


async def test_input_the_schema_refuses_fails_and_is_put_to_no_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``probe`` needs approval, but input that cannot run is never put to a person (and
    its program never runs: an unmarked test may start no process)."""
    harness = await run_calls()
    chat = lead_chat(harness)
    [ready] = [
        f.action
        for f in harness.facts
        if isinstance(f.action, ChatToolCallReadyAction)
        and f.action.invocation_message == "probe(limt=3)"
    ]
    assert ready.confirmed is ToolCallConfirmationReason.NOT_NEEDED
    assert ready.confirmation_title is None
    assert ready.tool_input == '{"limt": 3}'
    assert harness.actions(ApprovalRequested) == []
    results = {
        f.action.tool_call_id: f.action.result
        for f in harness.facts
        if f.channel == chat and isinstance(f.action, ChatToolCallCompleteAction)
    }
    probe = results[ready.tool_call_id]
    assert not probe.success
    [text] = probe.content or ()
    assert isinstance(text, ToolResultTextContent)
    assert text.text.startswith("invalid input for probe: ")


async def test_a_plain_tool_answers_its_scripted_result_and_the_round_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    harness = await run_calls()
    chat = lead_chat(harness)
    completes = [
        f.action
        for f in harness.facts
        if f.channel == chat and isinstance(f.action, ChatToolCallCompleteAction)
    ]
    texts = [
        (
            c.result.success,
            [t.text for t in c.result.content or () if isinstance(t, ToolResultTextContent)],
        )
        for c in completes
    ]
    assert texts[0] == (True, ["three hits"])
    assert texts[2][0] is True
    assert any("found it" in t for t in texts[2][1])
