"""The OpenAI-compatible backend against a fake chat-completions server on loopback.

Every scenario runs a real team whose agents use ``backend = "openai"``; the fake server
(tests/support/fake_openai.py) speaks the streaming wire format over real HTTP and records what it
was sent. Each test checks the facts the run produced and, where it matters, the requests
the model saw (the conversation derived from the chat's state, the tool schemas).
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import subprocess
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog.testing
import trio
import trio.testing
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputRequestedAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeltaAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatUsageAction,
)
from orchestrator.ahp.state import (
    MarkdownResponsePart,
    ReasoningResponsePart,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallResponsePart,
)
from orchestrator.base import RunError, forget_secrets, redact_text
from orchestrator.core import (
    ApprovalRequested,
    RunStatus,
    TaskCreated,
    TaskStarted,
    fact_to_json,
    parse_traceparent,
)
from orchestrator.runtime import RunOutcome, Tracing, TracingSettings, install_tracing
from orchestrator.runtime.backends import HOSTED_API, backend_factory, http_client
from orchestrator.spec import TeamSpec, parse_team
from tests.support.fake_openai import (
    Answer,
    FakeOpenAI,
    Refusal,
    Stream,
    fake_openai,
    reasoning,
    rounds_done,
    text,
    tool_calls,
    tool_results,
    usage,
)
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness, wait_for

# httpx reads a response through nested async generators (httpx, httpcore, httpx-sse); when
# the backend stops reading early ([DONE], a cancelled turn, a broken stream) it closes the
# response and the outer generator, and trio's finalizer closes the inner ones, with this
# warning. The connection is released either way; nothing leaks.
# Its tests start servers (tests/support/daemon_marker.py).
pytestmark = [
    pytest.mark.daemon,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(httpx|httpcore|httpx_sse)\.[^']*' was garbage collected"
        ":ResourceWarning"
    ),
]

ORCHESTRATOR = (sys.executable, "-m", "orchestrator")
SHIPPED = str(PROJECT_ROOT / "teams" / "openai-delivery.toml")
KEY = "sk-test-do-not-leak"
ENV = {"FAKE_KEY": KEY}

TEAM = """
[team]
name = "model-team"
coordinator = "lead"
parallel_budget = 2

[openai]
model = "fake-model"
base_url = "{url}"
api_key_env = "FAKE_KEY"
max_retries = {retries}
read_timeout = 5

[agents.lead]
role = "coordinator"
backend = "openai"
instructions = "Plan, delegate, report."
tools = ["delegate", "handoff", "ask", "deploy"]
delegates_to = ["writer", "tester"]
needs_approval = ["deploy"]

[agents.writer]
role = "writes code"
backend = "openai"

[agents.tester]
role = "tests code"
backend = "openai"
"""

Answerer = Callable[[dict[str, Any]], Answer]


def agent_of(request: Mapping[str, Any]) -> str:
    """Which agent a request is for: its system prompt starts "You are <name>,"."""
    match = re.match(r"You are ([\w-]+),", request["messages"][0]["content"])
    assert match is not None
    return match.group(1)


@asynccontextmanager
async def model_team(
    answer: Answerer, *, retries: int = 3, team_toml: str = TEAM
) -> AsyncIterator[tuple[Harness, FakeOpenAI]]:
    """A harness whose agents talk to a fake server answering with ``answer``."""
    async with fake_openai(answer) as server, http_client() as http:
        team = team_of(team_toml.format(url=server.url, retries=retries))
        harness = Harness(team, backends=backend_factory(team, client=http, environ=ENV))
        yield harness, server


def team_of(toml: str) -> TeamSpec:
    return parse_team(toml, file="model-team.toml")


async def run(harness: Harness, prompt: str = "Ship it") -> RunOutcome:
    with trio.fail_after(120):
        return await harness.runtime.run(prompt)


async def run_into(harness: Harness, outcomes: list[RunOutcome]) -> None:
    outcomes.append(await run(harness))


async def approval_requested(harness: Harness) -> ApprovalRequested:
    """The first approval the run asks for, once it has."""
    fact = await wait_for(harness, lambda f: isinstance(f.action, ApprovalRequested))
    assert isinstance(fact.action, ApprovalRequested)
    return fact.action


def closed_port() -> int:
    """A port of 127.0.0.1 where nothing listens: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


#: A retry's warning: the wait, the attempt to come and what failed.
RETRY_LINE = re.compile(
    r"model request failed, retrying in (?P<wait>\d+\.\d) s "
    r"\(attempt (?P<attempt>\d+) of (?P<attempts>\d+)\): (?P<failure>.*)"
)


def retry_lines(logs: Sequence[MutableMapping[str, Any]]) -> list[re.Match[str]]:
    """The retry warnings among ``logs``, each matched by :data:`RETRY_LINE`."""
    lines = [e for e in logs if str(e["event"]).startswith("model request failed")]
    assert all(e["log_level"] == "warning" for e in lines)
    assert all(e["agent"] == "lead" for e in lines)  # whose request (the coordinator's here)
    matched = [RETRY_LINE.fullmatch(e["event"]) for e in lines]
    assert None not in matched, lines
    return [m for m in matched if m is not None]


def no_key_anywhere(harness: Harness) -> None:
    for fact in harness.facts:
        assert KEY not in repr(fact)


def coordinator_error(harness: Harness) -> ChatErrorAction:
    errors = harness.actions(ChatErrorAction)
    assert len(errors) == 1
    return errors[0]


# ─── streaming ───────────────────────────────────────────────────────────────


class TestStreaming:
    async def test_text_reasoning_and_usage_become_parts_deltas_and_usage(self) -> None:
        def answer(request: dict[str, Any]) -> Answer:
            return Stream([*reasoning("Think", "ing"), *text("Hel", "lo ", "world"), usage(12, 5)])

        async with model_team(answer) as (h, server):
            outcome = await run(h)
        assert outcome.status is RunStatus.COMPLETED
        assert outcome.result == "Hello world"

        thought, said = (a.part for a in h.actions(ChatResponsePartAction))
        assert isinstance(thought, ReasoningResponsePart)
        assert isinstance(said, MarkdownResponsePart)
        more_thought = "".join(a.content for a in h.actions(ChatReasoningAction))
        assert thought.content + more_thought == "Thinking"
        more_said = "".join(a.content for a in h.actions(ChatDeltaAction))
        assert said.content + more_said == "Hello world"
        [used] = h.actions(ChatUsageAction)
        assert (used.usage.input_tokens, used.usage.output_tokens) == (12, 5)
        h.finished()

        [request] = server.requests
        assert request["model"] == "fake-model"
        assert request["stream"] is True
        assert request["stream_options"] == {"include_usage": True}
        system, user = request["messages"]
        assert system["role"] == "system"
        assert "Plan, delegate, report." in system["content"]
        assert user == {"role": "user", "content": "Ship it"}
        assert server.headers[0]["authorization"] == f"Bearer {KEY}"
        no_key_anywhere(h)

    async def test_tools_are_offered_with_the_team_in_their_schemas(self) -> None:
        async with model_team(lambda request: Stream(text("ok"))) as (h, server):
            await run(h)
        tools = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
        assert list(tools) == ["delegate", "handoff", "ask", "deploy"]
        delegate = tools["delegate"]["parameters"]
        assert delegate["properties"]["agent"]["enum"] == ["writer", "tester"]
        assert delegate["required"] == ["agent", "task"]
        assert delegate["additionalProperties"] is False
        assert tools["handoff"]["parameters"]["properties"]["resume"]["enum"] == [
            "lead",
            "writer",
            "tester",
        ]
        assert tools["deploy"]["parameters"] == {"type": "object", "additionalProperties": True}
        assert server.requests[0]["parallel_tool_calls"] is True

    async def test_a_model_without_tools_is_offered_none(self) -> None:
        solo = TEAM.split("[agents.lead]")[0] + (
            '[agents.lead]\nrole = "coordinator"\nbackend = "openai"\n'
        )
        async with model_team(lambda request: Stream(text("ok")), team_toml=solo) as (h, server):
            assert (await run(h)).status is RunStatus.COMPLETED
        assert "tools" not in server.requests[0]
        assert "parallel_tool_calls" not in server.requests[0]


class TestTraced:
    async def test_a_round_is_a_chat_span_and_its_request_carries_it(self) -> None:
        """Tracing on: the request carries the round's span as ``traceparent``, and the
        round's span says the model asked for and the one that answered, the server, the
        tokens, why it stopped and when the first token came."""
        solo = TEAM.split("[agents.lead]")[0] + (
            '[agents.lead]\nrole = "coordinator"\nbackend = "openai"\n'
        )
        exporter = InMemorySpanExporter()
        tracing = Tracing(TracingSettings(enabled=True), processor=SimpleSpanProcessor(exporter))
        before = install_tracing(tracing)
        try:
            answer = Stream([*text("Hel", "lo"), usage(12, 5)])
            async with model_team(lambda request: answer, team_toml=solo) as (h, server):
                assert (await run(h)).status is RunStatus.COMPLETED
        finally:
            install_tracing(before)
        (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat fake-model"]
        sent = parse_traceparent(server.headers[0]["traceparent"])
        assert sent is not None
        assert (sent.trace_id, sent.span_id) == (chat.context.trace_id, chat.context.span_id)
        url = urllib.parse.urlsplit(server.url)
        assert dict(chat.attributes or {}) == {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "fake-model",
            "gen_ai.response.model": "fake-model",
            "gen_ai.provider.name": "openai",
            "gen_ai.agent.name": "lead",
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.usage.output_tokens": 5,
            "server.address": url.hostname,
            "server.port": url.port,
        }
        assert [event.name for event in chat.events] == ["gen_ai.first_token"]
        assert (chat.start_time or 0) <= chat.events[0].timestamp <= (chat.end_time or 0)


# ─── tool calls ──────────────────────────────────────────────────────────────


class TestToolCalls:
    async def test_two_parallel_delegations_fan_out_and_the_results_go_back(self) -> None:
        calls = (
            ("call_w", "delegate", {"agent": "writer", "task": "write the parser"}),
            ("call_t", "delegate", {"agent": "tester", "task": "test the parser"}),
        )

        def answer(request: dict[str, Any]) -> Answer:
            agent = agent_of(request)
            if agent == "lead":
                if rounds_done(request) == 0:
                    return Stream([*text("Splitting up. "), *tool_calls(*calls)])
                return Stream(text("Both done: ", " | ".join(tool_results(request))))
            return Stream(text(f"{agent} did: {request['messages'][-1]['content']}"))

        async with model_team(answer) as (h, server):
            outcome = await run(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "writer did: write the parser" in outcome.result
        assert "tester did: test the parser" in outcome.result

        # Each call: started, its input streamed in deltas, then ready with the whole input.
        for call_id, _, arguments in calls:
            [start] = [a for a in h.actions(ChatToolCallStartAction) if a.tool_call_id == call_id]
            assert start.tool_name == "delegate"
            assert start.meta == {"round": 0}
            deltas = [a for a in h.actions(ChatToolCallDeltaAction) if a.tool_call_id == call_id]
            # Three fragments, gathered into as few writes as the log's pace asks.
            assert 1 <= len(deltas) <= 3
            assert json.loads("".join(d.content or "" for d in deltas)) == arguments
            [ready] = [a for a in h.actions(ChatToolCallReadyAction) if a.tool_call_id == call_id]
            assert isinstance(ready.tool_input, str)
            assert json.loads(ready.tool_input) == arguments
        kinds = [type(f.action) for f in h.facts]
        # Both starts before any delta (parallel calls announce themselves first).
        first_delta = kinds.index(ChatToolCallDeltaAction)
        assert kinds[:first_delta].count(ChatToolCallStartAction) == 2
        assert {a.agent for a in h.actions(TaskCreated)} == {"writer", "tester"}
        assert len(h.actions(TaskStarted)) == 2
        h.finished()

        # The lead's second round sees its first round and both results, from the state.
        follow_up = next(r for r in server.requests if agent_of(r) == "lead" and rounds_done(r))
        roles = [m["role"] for m in follow_up["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "tool"]
        assistant = follow_up["messages"][2]
        assert assistant["content"] == "Splitting up. "
        assert [c["id"] for c in assistant["tool_calls"]] == ["call_w", "call_t"]
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == calls[0][2]
        results = follow_up["messages"][3:]
        assert [m["tool_call_id"] for m in results] == ["call_w", "call_t"]
        assert "writer did: write the parser" in results[0]["content"]
        # The workers were given their task, not the lead's conversation.
        worker = next(r for r in server.requests if agent_of(r) == "writer")
        assert worker["messages"][1:] == [{"role": "user", "content": "write the parser"}]
        assert "delegated to you" in worker["messages"][0]["content"]

    async def test_an_approval_gates_the_call_until_the_user_decides(self) -> None:
        def answer(request: dict[str, Any]) -> Answer:
            if rounds_done(request) == 0:
                return Stream(tool_calls(("call_d", "deploy", {"env": "prod"})))
            return Stream(text("deploy said: ", *tool_results(request)))

        outcomes: list[RunOutcome] = []
        async with model_team(answer) as (h, server), trio.open_nursery() as nursery:
            nursery.start_soon(run_into, h, outcomes)
            requested = await approval_requested(h)
            assert requested.tool_call_id == "call_d"
            assert len(server.requests) == 1  # nothing runs before the decision
            await h.runtime.resolve_approval(requested.approval, approved=True)
        assert outcomes[0].status is RunStatus.COMPLETED
        assert outcomes[0].result == "deploy said: ok"
        h.finished()

    async def test_steering_is_read_where_it_was_injected(self) -> None:
        def answer(request: dict[str, Any]) -> Answer:
            if not tool_results(request):
                return Stream(tool_calls(("call_d", "deploy", {"env": "prod"})))
            return Stream(text("done"))

        outcomes: list[RunOutcome] = []
        async with model_team(answer) as (h, server), trio.open_nursery() as nursery:
            nursery.start_soon(run_into, h, outcomes)
            requested = await approval_requested(h)
            await h.runtime.steer(requested.chat, "use the blue environment")
            await h.runtime.resolve_approval(requested.approval, approved=True)
        assert outcomes[0].status is RunStatus.COMPLETED
        follow_up = server.requests[1]["messages"]
        assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "tool", "user"]
        assert follow_up[-1]["content"] == "use the blue environment"
        # The turn keeps it, so later turns read it too.
        [turn] = h.finished().chats[requested.chat].turns
        notes = [p for p in turn.response_parts if isinstance(p, SystemNotificationResponsePart)]
        assert [(n.content, n.meta) for n in notes] == [
            ("use the blue environment", {"steering": notes[0].meta["steering"]})  # type: ignore[index]
        ]

    async def test_a_question_is_answered_and_the_model_reads_the_answer(self) -> None:
        question = {"question": "Which region?", "kind": "single-select", "options": ["eu", "us"]}

        def answer(request: dict[str, Any]) -> Answer:
            if rounds_done(request) == 0:
                return Stream(tool_calls(("call_q", "ask", question)))
            return Stream(text("going to ", *tool_results(request)))

        outcomes: list[RunOutcome] = []
        async with model_team(answer) as (h, _), trio.open_nursery() as nursery:
            nursery.start_soon(run_into, h, outcomes)
            fact = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            asked = fact.action
            assert isinstance(asked, ChatInputRequestedAction)
            assert asked.request.id == "input-call_q"
            await h.runtime.answer_input(fact.channel, asked.request.id, "eu")
        assert outcomes[0].status is RunStatus.COMPLETED
        assert outcomes[0].result == "going to eu"
        h.finished()

    async def test_a_handoff_moves_the_task_and_brings_it_back(self) -> None:
        handoff = {"agent": "writer", "reason": "needs code"}

        def answer(request: dict[str, Any]) -> Answer:
            if agent_of(request) == "writer":
                return Stream(text("code written"))
            if rounds_done(request) == 0:
                return Stream(tool_calls(("call_h", "handoff", handoff)))
            return Stream(text("back: ", *tool_results(request)))

        async with model_team(answer) as (h, _):
            outcome = await run(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "code written" in outcome.result
        h.finished()

    async def test_input_that_does_not_fit_the_schema_fails_the_call_not_the_turn(self) -> None:
        bad = {"agent": "nobody", "task": "x"}

        def answer(request: dict[str, Any]) -> Answer:
            if rounds_done(request) == 0:
                return Stream(tool_calls(("call_x", "delegate", bad), ("call_y", "launch", {})))
            return Stream(text("noted: ", " / ".join(tool_results(request))))

        async with model_team(answer) as (h, server):
            outcome = await run(h)
        assert outcome.status is RunStatus.COMPLETED
        assert h.actions(TaskStarted) == []  # nothing ran
        completes = {a.tool_call_id: a.result for a in h.actions(ChatToolCallCompleteAction)}
        assert not completes["call_x"].success
        assert not completes["call_y"].success
        results = tool_results(server.requests[1])
        assert "$.agent" in results[0]
        assert "'nobody' is not one of ['writer', 'tester']" in results[0]
        assert "there is no tool named 'launch'" in results[1]
        h.finished()

    async def test_arguments_that_are_not_json_are_reported_to_the_model(self) -> None:
        broken = tool_calls(("call_j", "deploy", {}))
        broken[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = '{"env": '

        def answer(request: dict[str, Any]) -> Answer:
            if rounds_done(request) == 0:
                return Stream(broken)
            return Stream(text(*tool_results(request)))

        async with model_team(answer) as (h, server):
            outcome = await run(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "is not valid JSON" in outcome.result
        # The model reads its malformed call back as {} (servers refuse the broken JSON).
        call = server.requests[1]["messages"][2]["tool_calls"][0]
        assert call["function"]["arguments"] == "{}"
        assert h.actions(ApprovalRequested) == []  # a call that cannot run asks nobody
        [ready] = h.actions(ChatToolCallReadyAction)
        assert ready.tool_input == '{"env": }'  # as the model sent it

    async def test_text_that_cannot_be_encoded_is_recorded_as_u_fffd(self) -> None:
        """A model that streams a lone surrogate (an escape JSON allows, UTF-8 does not)
        neither fails the turn nor reaches the journal: each one is recorded as U+FFFD, in
        text, reasoning and tool input alike, and the log says how many were replaced."""
        calls = tool_calls(("call_s", "delegate", {"agent": "writer", "task": "pro\udc00d"}))

        def answer(request: dict[str, Any]) -> Answer:
            if agent_of(request) == "writer":
                return Stream(text(f"did {request['messages'][-1]['content']}"))
            if rounds_done(request) == 0:
                return Stream([*reasoning("th\ud800ink"), *calls])
            return Stream(text("Hel\ud800lo", " wor\udfffld"))

        with structlog.testing.capture_logs() as logs:
            async with model_team(answer) as (h, server):
                outcome = await run(h)
        assert outcome.status is RunStatus.COMPLETED
        assert outcome.result == "Hel\ufffdlo wor\ufffdld"
        for fact in h.facts:
            fact_to_json(fact).encode("utf-8")  # every fact can be stored and sent
        thought = h.actions(ChatResponsePartAction)[0].part
        assert isinstance(thought, ReasoningResponsePart)
        assert thought.content == "th\ufffdink"
        # The worker was given the task with U+FFFD in place of the surrogate.
        assert server.requests[1]["messages"][-1]["content"] == "pro\ufffdd"
        replaced = [e for e in logs if e["event"] == "model text replaced"]
        assert sum(e["characters"] for e in replaced) == 3
        h.finished()


# ─── failures ────────────────────────────────────────────────────────────────


class TestFailures:
    async def test_a_429_with_retry_after_is_waited_out_then_succeeds(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        def answer(request: dict[str, Any]) -> Answer:
            if len(server.requests) == 1:
                return Refusal(429, "slow down", {"retry-after": "45"})
            return Stream(text("finally"))

        async with model_team(answer) as (h, server):
            started = trio.current_time()
            outcome = await run(h)
            waited = trio.current_time() - started
        assert outcome.status is RunStatus.COMPLETED
        assert outcome.result == "finally"
        assert len(server.requests) == 2
        assert 45 <= waited < 46  # what the server asked, beyond the 30 s exponential cap
        assert server.requests[0] == server.requests[1]  # the same request, sent again

    async def test_a_500_storm_gives_up_after_the_bounded_retries(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Each retry is one warning in our words: the wait, the attempt to come and the
        answer that failed; the waits it names are the ones waited (exponential, jittered)."""
        with structlog.testing.capture_logs() as logs:
            async with model_team(lambda request: Refusal(503, "overloaded"), retries=2) as (
                h,
                server,
            ):
                started = trio.current_time()
                outcome = await run(h)
                waited = trio.current_time() - started
        assert outcome.status is RunStatus.FAILED
        assert len(server.requests) == 3
        error = coordinator_error(h).error
        assert error.error_type == "ModelRequestError"
        refusal = f"POST {server.url}/chat/completions: 503 Service Unavailable: overloaded"
        assert error.message == f"{refusal} (fake_error) (gave up after 3 attempts)"
        h.finished()

        retries = retry_lines(logs)
        assert [(m["attempt"], m["attempts"]) for m in retries] == [("2", "3"), ("3", "3")]
        assert {m["failure"] for m in retries} == {f"{refusal} (fake_error)"}
        waits = [float(m["wait"]) for m in retries]
        assert 1.0 <= waits[0] <= 2.0  # 1 s, plus up to 1 s of jitter
        assert 2.0 <= waits[1] <= 3.0
        assert waited == pytest.approx(sum(waits), abs=0.1)
        # capture_logs sees events before the configured processors: that stamina's own line
        # is dropped is tested through the real configuration, in a subprocess (TestShippedTeam).

    async def test_a_client_error_is_not_retried_and_its_message_is_kept(self) -> None:
        async with model_team(lambda request: Refusal(400, "model 'x' does not exist")) as (
            h,
            server,
        ):
            outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert len(server.requests) == 1
        assert coordinator_error(h).error.message == (
            f"POST {server.url}/chat/completions: 400 Bad Request: model 'x' does not exist "
            "(fake_error)"
        )
        no_key_anywhere(h)

    async def test_a_key_the_server_echoes_is_blanked_in_facts_and_logs(self) -> None:
        echo = Refusal(401, f"Incorrect API key provided: {KEY}")
        with structlog.testing.capture_logs() as logs:
            async with model_team(lambda request: echo) as (h, _):
                outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert "Incorrect API key provided: [api key]" in coordinator_error(h).error.message
        no_key_anywhere(h)
        assert logs
        assert KEY not in repr(logs)

    async def test_a_retry_after_beyond_the_limit_is_not_waited_for(self) -> None:
        async with model_team(lambda request: Refusal(429, "quota", {"retry-after": "3600"})) as (
            h,
            server,
        ):
            outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert len(server.requests) == 1
        assert "asks to wait 3600 s" in coordinator_error(h).error.message

    async def test_a_cut_stream_ends_the_turn_and_never_runs_the_half_streamed_call(
        self,
    ) -> None:
        chunks = tool_calls(("call_c", "delegate", {"agent": "writer", "task": "write it"}))

        async with model_team(lambda request: Stream(chunks, cut_after=2)) as (h, server):
            outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        error = coordinator_error(h).error
        assert error.error_type == "ModelStreamError"
        assert "broke off" in error.message
        assert [a.tool_call_id for a in h.actions(ChatToolCallStartAction)] == ["call_c"]
        assert h.actions(ChatToolCallReadyAction) == []
        assert h.actions(TaskStarted) == []
        assert len(server.requests) == 1  # a stream that started is never sent again
        state = h.finished()
        [turn] = state.chats[h.runtime.state.coordinator_chat() or ""].turns
        [part] = [p for p in turn.response_parts if isinstance(p, ToolCallResponsePart)]
        assert isinstance(part.tool_call, ToolCallCancelledState)

    async def test_a_stream_that_stops_without_finishing_is_an_error(self) -> None:
        chunks = text("half an ans")[:-1]  # no finish_reason
        async with model_team(lambda request: Stream(chunks, done=False)) as (h, _):
            outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert "ended before the model finished" in coordinator_error(h).error.message

    async def test_a_stalled_stream_times_out(self, autojump_clock: trio.testing.MockClock) -> None:
        async with model_team(lambda request: Stream(text("a", "b"), stall_after=2)) as (h, _):
            outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert "sent nothing for 5 s (read_timeout)" in coordinator_error(h).error.message

    async def test_cancelling_mid_stream_closes_the_stream(self) -> None:
        outcomes: list[RunOutcome] = []
        stalling = Stream(text("a", "b", "c"), stall_after=2)
        async with model_team(lambda r: stalling) as (h, server), trio.open_nursery() as nursery:
            nursery.start_soon(run_into, h, outcomes)
            with trio.fail_after(60):
                await server.stalled.wait()
                h.runtime.cancel()
                await server.disconnected.wait()
        assert outcomes[0].status is RunStatus.CANCELLED
        assert len(h.actions(ChatTurnCancelledAction)) == 1
        h.finished()

    async def test_a_local_server_that_is_not_running_fails_the_round_at_once(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Nothing listens on a loopback port: the turn fails on the first refusal, with no
        wait and no retry, in one line that names the URL and says what is wrong."""
        port = closed_port()
        team = team_of(TEAM.format(url=f"http://127.0.0.1:{port}/v1", retries=4))
        with structlog.testing.capture_logs() as logs:
            async with http_client() as http:
                h = Harness(team, backends=backend_factory(team, client=http, environ=ENV))
                started = trio.current_time()
                outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert trio.current_time() == started  # not one backoff waited
        error = coordinator_error(h).error
        assert error.error_type == "ModelRequestError"
        assert error.message == (
            f"could not reach http://127.0.0.1:{port}/v1/chat/completions: "
            f"nothing listens on 127.0.0.1:{port}"
        )
        assert retry_lines(logs) == []

    async def test_a_server_that_drops_connections_is_retried_then_reported(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A server that takes the connection and closes it before answering may be
        restarting: that is retried, each retry logged, then reported with the count."""

        async def drop(stream: trio.SocketStream) -> None:
            await stream.aclose()

        async with trio.open_nursery() as nursery:
            [listener] = await nursery.start(
                functools.partial(trio.serve_tcp, drop, 0, host="127.0.0.1")
            )
            port = listener.socket.getsockname()[1]
            team = team_of(TEAM.format(url=f"http://127.0.0.1:{port}/v1", retries=1))
            with structlog.testing.capture_logs() as logs:
                async with http_client() as http:
                    h = Harness(team, backends=backend_factory(team, client=http, environ=ENV))
                    outcome = await run(h)
            nursery.cancel_scope.cancel()
        assert outcome.status is RunStatus.FAILED
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        message = coordinator_error(h).error.message
        assert message.startswith(f"could not reach {url}: ")
        assert message.endswith(" (gave up after 2 attempts)")
        [retry] = retry_lines(logs)
        assert (retry["attempt"], retry["attempts"]) == ("2", "2")
        assert retry["failure"].startswith(f"could not reach {url}: ")


# ─── configuration ───────────────────────────────────────────────────────────


class TestConfiguration:
    async def test_the_hosted_api_needs_a_key_before_the_run_starts(self) -> None:
        toml = TEAM.replace('base_url = "{url}"\n', "").format(retries=0)
        team = team_of(toml)
        async with http_client() as http:
            with pytest.raises(
                RunError, match=r"FAKE_KEY \(api_key_env in model-team.toml\) is not set"
            ) as caught:
                backend_factory(team, client=http, environ={})
        assert HOSTED_API in str(caught.value)

    async def test_making_a_backend_registers_its_key_for_redaction(self) -> None:
        """Whatever logs the key afterwards (a traceback, a library), the line shows
        ``[redacted]``: the backend registers it with the logging when it is made."""
        secret = "a-key-no-pattern-would-catch"  # not sk-...: redacted as registered
        team = team_of(TEAM.format(url="http://127.0.0.1:9", retries=0))
        try:
            assert redact_text(f"key {secret}") == f"key {secret}"
            async with http_client() as http:
                backend_factory(team, client=http, environ={"FAKE_KEY": secret})
            assert redact_text(f"key {secret}") == "key [redacted]"
        finally:
            forget_secrets()

    async def test_base_url_falls_back_to_the_environment(self) -> None:
        toml = TEAM.replace('base_url = "{url}"\n', "").format(retries=0)
        team = team_of(toml)
        async with fake_openai(lambda request: Stream(text("hi"))) as server, http_client() as http:
            environ = {"OPENAI_BASE_URL": server.url}  # a local server: no key needed
            h = Harness(team, backends=backend_factory(team, client=http, environ=environ))
            assert (await run(h)).result == "hi"
        assert "authorization" not in server.headers[0]

    @pytest.mark.parametrize(
        ("toml", "message"),
        [
            (
                '[team]\nname="t"\ncoordinator="a"\n[agents.a]\nrole="r"\nbackend="openai"\n',
                'agents.a.model: backend = "openai" needs a model',
            ),
            (
                '[team]\nname="t"\ncoordinator="a"\n[agents.a]\nrole="r"\nmodel="m"\n',
                "agents.a.model: model is a setting of the openai backend",
            ),
            (
                '[team]\nname="t"\ncoordinator="a"\n[openai]\nmodel="m"\nbase_url="localhost"\n'
                '[agents.a]\nrole="r"\nbackend="openai"\n',
                "openai.base_url: expected an http:// or https:// URL",
            ),
            (
                '[team]\nname="t"\ncoordinator="a"\n[openai]\nmodel="m"\napi_key_env="sk-123"\n'
                '[agents.a]\nrole="r"\nbackend="openai"\n',
                "openai.api_key_env: 'sk-123' is not an environment variable name",
            ),
            (
                '[team]\nname="t"\ncoordinator="a"\n[openai]\nmodel="m"\nmodle="x"\n'
                '[agents.a]\nrole="r"\nbackend="openai"\n',
                "openai.modle: unknown key 'modle' (did you mean 'model'?)",
            ),
            (
                '[team]\nname="t"\ncoordinator="a"\n[openai]\nmodel="m"\n'
                '[agents.a]\nrole="r"\nbackend="openai"\n[[agents.a.turns]]\nsteps=[{say="x"}]\n',
                "agents.a.turns: turns script the scripted backend",
            ),
        ],
    )
    def test_bad_settings_name_the_key(self, toml: str, message: str) -> None:
        with pytest.raises(Exception, match=re.escape(message)):
            team_of(toml)

    def test_agent_settings_override_the_openai_table(self) -> None:
        team = team_of(
            '[team]\nname="t"\ncoordinator="a"\n[openai]\nmodel="m"\ntemperature=0.2\n'
            '[agents.a]\nrole="r"\nbackend="openai"\nmodel="big"\n'
            '[agents.b]\nrole="r"\nbackend="openai"\n'
        )
        a, b = team.agents
        assert a.openai is not None
        assert b.openai is not None
        assert (a.openai.model, a.openai.temperature) == ("big", 0.2)
        assert (b.openai.model, b.openai.api_key_env, b.openai.base_url) == (
            "m",
            "OPENAI_API_KEY",
            None,
        )


def test_http_client_is_an_httpx_client() -> None:
    assert isinstance(http_client(), httpx.AsyncClient)


# ─── the shipped team ────────────────────────────────────────────────────────


class TestShippedTeam:
    async def test_openai_delivery_runs_end_to_end_against_a_local_server(
        self, tmp_path: Path
    ) -> None:
        """`orchestrator run teams/openai-delivery.toml` as a user runs it (a subprocess),
        with OPENAI_BASE_URL pointing at a local server and no API key."""
        tasks = ("Summarise the changelog", "List the known issues")

        def answer(request: dict[str, Any]) -> Answer:
            if agent_of(request) == "researcher":
                if rounds_done(request) == 0:
                    return Stream(tool_calls(("call_s", "web_search", {"query": "2.4"})))
                task = request["messages"][1]["content"]
                return Stream([*text(f"{task}: done"), usage(20, 4)])
            if rounds_done(request) == 0:
                delegations = [
                    (f"call_{i}", "delegate", {"agent": "researcher", "task": task})
                    for i, task in enumerate(tasks)
                ]
                return Stream(tool_calls(*delegations))
            return Stream(text("Release notes: ", " / ".join(tool_results(request))))

        db = tmp_path / "journal.db"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        async with fake_openai(answer) as server:
            environ["OPENAI_BASE_URL"] = server.url
            with trio.fail_after(120):
                done = await trio.run_process(
                    [*ORCHESTRATOR, "run", SHIPPED, "Release 2.4", "--db", str(db), "--plain"],
                    env=environ,
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                )
        stdout, stderr = done.stdout.decode(), done.stderr.decode()
        assert done.returncode == 0, stderr
        assert "Release notes: " in stdout
        for task in tasks:
            assert f"{task}: done" in stdout
        assert len(server.requests) == 2 + 2 * 2  # the lead's two rounds, each worker's two
        assert all("authorization" not in headers for headers in server.headers)

        listed = subprocess.run(
            [*ORCHESTRATOR, "sessions", "--json", "--db", str(db)],
            capture_output=True,
            text=True,
            check=True,
        )
        [session] = json.loads(listed.stdout)
        checked = subprocess.run(
            [*ORCHESTRATOR, "graph", session["session"], "--check", "--db", str(db)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr

    async def test_a_local_server_that_is_not_running_fails_the_run_in_one_line(
        self, tmp_path: Path
    ) -> None:
        """`orchestrator run` with OPENAI_BASE_URL on a port where nothing listens: exit 1 at
        the first refusal, one error line naming the URL, no retry lines; the journal holds
        the coordinator's error."""
        port = closed_port()
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{port}/v1"
        db = tmp_path / "journal.db"
        command = [*ORCHESTRATOR, "run", SHIPPED, "go", "--db", str(db), "--log-format", "json"]
        with trio.fail_after(60):
            done = await trio.run_process(
                command, env=environ, capture_stdout=True, capture_stderr=True, check=False
            )
        assert done.returncode == 1
        records = [json.loads(line) for line in done.stderr.decode().splitlines()]
        errors = [r for r in records if r["level"] in ("warning", "error")]
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        [failed] = errors
        assert failed["event"] == (
            f"the run failed: lead: could not reach {url}: nothing listens on 127.0.0.1:{port} "
            f"(session {failed['session']})"
        )
        assert all(r["logger"].startswith("orchestrator") for r in records)

        events = subprocess.run(
            [*ORCHESTRATOR, "events", failed["session"], "--db", str(db), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        facts = [json.loads(line) for line in events.stdout.splitlines()]
        reason = f"could not reach {url}: nothing listens on 127.0.0.1:{port}"
        chat_errors = [f["action"] for f in facts if f["action"]["type"] == "chat/error"]
        assert [a["error"]["message"] for a in chat_errors] == [reason]
        [finished] = [f["action"] for f in facts if f["action"]["type"] == "team/runFinished"]
        assert (finished["status"], finished["error"]) == ("failed", f"lead: {reason}")

    async def test_a_retried_run_logs_each_retry_once_in_our_words(self, tmp_path: Path) -> None:
        """`orchestrator run` against a server that asks twice to come back later: stderr,
        under the logging the CLI configures, holds one warning per retry in our words and
        not stamina's own `stamina.retry_scheduled` line; the run then succeeds."""
        refused = 0

        def answer(request: dict[str, Any]) -> Answer:
            nonlocal refused
            if refused < 2:
                refused += 1
                return Refusal(429, "slow down", headers={"retry-after-ms": "200"})
            return Stream(text("done"))

        environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        db = str(tmp_path / "journal.db")
        command = [*ORCHESTRATOR, "run", SHIPPED, "go", "--db", db, "--log-format", "json"]
        async with fake_openai(answer) as server:
            environ["OPENAI_BASE_URL"] = server.url
            with trio.fail_after(60):
                done = await trio.run_process(
                    command, env=environ, capture_stdout=True, capture_stderr=True, check=False
                )
        assert done.returncode == 0, done.stderr.decode()
        assert len(server.requests) == 3
        records = [json.loads(line) for line in done.stderr.decode().splitlines()]
        refusal = (
            f"POST {server.url}/chat/completions: 429 Too Many Requests: slow down (fake_error)"
        )
        warnings = [r for r in records if r["level"] != "info"]
        assert [(r["level"], r["logger"], r["event"], r.get("agent")) for r in warnings] == [
            (
                "warning",
                "orchestrator.backend.openai",
                f"model request failed, retrying in 0.2 s (attempt {attempt} of 5): {refusal}",
                "lead",
            )
            for attempt in (2, 3)
        ]
        assert all(r["logger"].startswith("orchestrator") for r in records)
        assert "retry_scheduled" not in done.stderr.decode()

    @pytest.mark.parametrize("how", ["--model", "ORCHESTRATOR_MODEL"])
    async def test_the_model_is_chosen_for_one_run(self, tmp_path: Path, how: str) -> None:
        """`run --model` (or $ORCHESTRATOR_MODEL) asks every OpenAI-compatible agent's
        rounds of that model; the team file is unchanged and the next run asks its own."""

        def answer(request: dict[str, Any]) -> Answer:
            if agent_of(request) == "researcher":
                return Stream(text("found it"))
            if rounds_done(request) == 0:
                return Stream(tool_calls(("c0", "delegate", {"agent": "researcher", "task": "x"})))
            return Stream(text("done"))

        environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        environ.pop("ORCHESTRATOR_MODEL", None)
        command = [*ORCHESTRATOR, "run", SHIPPED, "go", "--db", str(tmp_path / "j.db"), "--plain"]
        async with fake_openai(answer) as server:
            environ["OPENAI_BASE_URL"] = server.url
            chosen = {**environ, "ORCHESTRATOR_MODEL": "tiny-1"} if how != "--model" else environ
            extra = ["--model", "tiny-1"] if how == "--model" else []
            with trio.fail_after(120):
                done = await trio.run_process(
                    [*command, *extra], env=chosen, capture_stderr=True, check=False
                )
                assert done.returncode == 0, done.stderr.decode()
                asked = len(server.requests)
                again = await trio.run_process(command, env=environ, capture_stderr=True)
                assert again.returncode == 0
        models = [request["model"] for request in server.requests]
        assert asked == 3
        assert set(models[:asked]) == {"tiny-1"}
        assert "tiny-1" not in models[asked:]


# ─── structured output ───────────────────────────────────────────────────────

#: A team of one agent whose answer must fit ``{schema}``; ``{extra}`` adds to its table.
STRUCTURED = """
[team]
name = "structured"
coordinator = "lead"

[openai]
model = "fake-model"
base_url = "{url}"
api_key_env = "FAKE_KEY"
max_retries = {retries}
read_timeout = 5

[agents.lead]
role = "coordinator"
backend = "openai"
output_schema = {schema}
{extra}
"""
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
}


def structured_team(
    extra: str = "",
    schema: str = '{ type = "object", properties = { score = { type = "integer" } }, '
    'required = ["score"] }',
) -> str:
    """:data:`STRUCTURED` with ``extra`` and ``schema`` (TOML), still to be formatted."""
    doubled = schema.replace("{", "{{").replace("}", "}}")
    return STRUCTURED.replace("{extra}", extra).replace("{schema}", doubled)


class TestStructuredOutput:
    async def test_without_tools_the_schema_is_asked_for_as_the_response_format(self) -> None:
        """``auto``, no tools: the request carries ``response_format`` (json_schema) and no
        tools; the answer's parsed value is the run's."""
        async with model_team(
            lambda request: Stream(text('{"score"', ": 7}")), team_toml=structured_team()
        ) as (h, server):
            outcome = await run(h)
        assert (outcome.status, outcome.result_value) == (RunStatus.COMPLETED, {"score": 7})
        [request] = server.requests
        assert request["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": SCORE_SCHEMA},
        }
        assert "tools" not in request
        assert request["messages"][0]["content"].endswith(
            "Your final answer is one JSON value that fits the response format's schema."
        )
        h.finished()

    async def test_with_tools_the_answer_is_a_final_answer_tool_call(self) -> None:
        """``auto``, an agent with tools: a ``final_answer`` tool whose input schema is the
        output schema is offered beside them; its call is the answer, recorded as text, and
        is never run as a tool."""

        def answer(request: dict[str, Any]) -> Answer:
            return Stream(tool_calls(("call_9", "final_answer", {"score": 4})))

        extra = 'tools = ["lookup"]'
        async with model_team(answer, team_toml=structured_team(extra)) as (h, server):
            outcome = await run(h)
        assert (outcome.status, outcome.result_value) == (RunStatus.COMPLETED, {"score": 4})
        assert outcome.result == '{"score":4}'
        assert h.actions(ChatToolCallStartAction) == []
        assert h.actions(ChatToolCallReadyAction) == []
        [request] = server.requests
        assert "response_format" not in request
        tools = {t["function"]["name"]: t["function"] for t in request["tools"]}
        assert list(tools) == ["lookup", "final_answer"]
        assert tools["final_answer"]["parameters"] == SCORE_SCHEMA
        assert "call the final_answer tool" in request["messages"][0]["content"]
        h.finished()

    async def test_the_tool_strategy_wraps_a_schema_that_is_no_object(self) -> None:
        """``structured_output = "tool"`` (a server without response formats): a schema of
        another type is the tool's ``answer`` property, unwrapped again."""
        team = structured_team(
            'structured_output = "tool"', schema='{ type = "array", items = { type = "string" } }'
        )

        def answer(request: dict[str, Any]) -> Answer:
            return Stream(tool_calls(("c1", "final_answer", {"answer": ["a", "b"]})))

        async with model_team(answer, team_toml=team) as (h, server):
            outcome = await run(h)
        assert outcome.result_value == ["a", "b"]
        [request] = server.requests
        [tool] = request["tools"]
        assert tool["function"]["parameters"] == {
            "type": "object",
            "properties": {"answer": {"type": "array", "items": {"type": "string"}}},
            "required": ["answer"],
            "additionalProperties": False,
        }
        assert "response_format" not in request
        h.finished()

    async def test_response_format_may_be_asked_for_beside_tools(self) -> None:
        extra = 'tools = ["lookup"]\nstructured_output = "response_format"'
        async with model_team(
            lambda request: Stream(text('{"score": 1}')), team_toml=structured_team(extra)
        ) as (h, server):
            assert (await run(h)).result_value == {"score": 1}
        [request] = server.requests
        assert [t["function"]["name"] for t in request["tools"]] == ["lookup"]
        assert request["response_format"]["json_schema"]["schema"] == SCORE_SCHEMA

    async def test_an_answer_that_does_not_fit_is_asked_for_again_with_the_error(self) -> None:
        """The second request holds the invalid answer, then the retry prompt naming where
        and what was wrong, as a user message."""

        def answer(request: dict[str, Any]) -> Answer:
            if rounds_done(request) == 0 and len(request["messages"]) == 2:
                return Stream(text('{"score": "many"}'))
            return Stream(text('{"score": 12}'))

        async with model_team(answer, team_toml=structured_team()) as (h, server):
            outcome = await run(h)
        assert outcome.result_value == {"score": 12}
        _first, second = server.requests
        assert second["messages"][1:3] == [
            {"role": "user", "content": "Ship it"},
            {"role": "assistant", "content": '{"score": "many"}'},
        ]
        retry = second["messages"][3]
        assert retry["role"] == "user"
        assert retry["content"].startswith(
            "Your answer does not fit the required output schema: at $.score: 'many' is not "
            "of type 'integer'."
        )
        assert len(second["messages"]) == 4
        h.finished()

    async def test_a_final_answer_that_does_not_fit_twice_fails_the_run(self) -> None:
        def answer(request: dict[str, Any]) -> Answer:
            return Stream(tool_calls(("c1", "final_answer", {"score": 1.5})))

        extra = 'tools = ["lookup"]'
        async with model_team(answer, team_toml=structured_team(extra)) as (h, server):
            outcome = await run(h)
        assert outcome.status is RunStatus.FAILED
        assert outcome.error == (
            "lead: agent 'lead' answered twice with output that does not fit its "
            "output_schema; the second answer: at $.score: 1.5 is not of type 'integer'"
        )
        assert len(server.requests) == 2
        h.finished()
