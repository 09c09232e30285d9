"""The trace of a session's facts (core/_spans.py): the span tree is the delegation tree."""

from __future__ import annotations

import functools
import json

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.semconv._incubating.attributes import error_attributes as error_attrs
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.attributes import server_attributes as server_attrs

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import ErrorInfo
from orchestrator.core import (
    CANCELLED,
    CHAT_SPAN_TEAM_TYPES,
    SEMCONV_VERSION,
    Fact,
    RunStarted,
    SpanFold,
    SpanIds,
    SpanRecord,
    TaskCreated,
    TaskStatus,
    chat_spans,
    parse_traceparent,
    span_id_of,
    trace_id_of,
)
from orchestrator.core import _spans as spans_module
from orchestrator.spec import load_team
from tests.support.examples import examples
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness, run_to_end
from tests.support.traces import delegation_tree, delivery_run, span_delegations

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def fold_all(
    facts: list[Fact], *, capture_content: bool = False
) -> tuple[SpanFold, list[SpanRecord]]:
    session = facts[0].session
    fold = SpanFold(session, capture_content=capture_content)
    ended = [span for fact in facts for span in fold.apply(fact)]
    return fold, ended


@functools.cache
def _delivery() -> tuple[Fact, ...]:
    """One in-memory run of the delivery team's facts (played once, folded by many tests)."""

    async def main() -> list[Fact]:
        return (await delivery_run()).facts

    return tuple(trio.run(main))


@pytest.fixture
def delivery_facts() -> list[Fact]:
    return list(_delivery())


class TestConventions:
    def test_attribute_names_are_the_conventions(self) -> None:
        """Every GenAI name the spans use is the one the semantic-conventions package
        defines, at the version the docs name."""
        import importlib.metadata

        assert importlib.metadata.version("opentelemetry-semantic-conventions") == (SEMCONV_VERSION)
        ours = {
            spans_module.OPERATION: gen_ai.GEN_AI_OPERATION_NAME,
            spans_module.PROVIDER: gen_ai.GEN_AI_PROVIDER_NAME,
            spans_module.AGENT_NAME: gen_ai.GEN_AI_AGENT_NAME,
            spans_module.AGENT_ID: gen_ai.GEN_AI_AGENT_ID,
            spans_module.CONVERSATION_ID: gen_ai.GEN_AI_CONVERSATION_ID,
            spans_module.WORKFLOW_NAME: gen_ai.GEN_AI_WORKFLOW_NAME,
            spans_module.REQUEST_MODEL: gen_ai.GEN_AI_REQUEST_MODEL,
            spans_module.RESPONSE_MODEL: gen_ai.GEN_AI_RESPONSE_MODEL,
            spans_module.FINISH_REASONS: gen_ai.GEN_AI_RESPONSE_FINISH_REASONS,
            spans_module.INPUT_TOKENS: gen_ai.GEN_AI_USAGE_INPUT_TOKENS,
            spans_module.OUTPUT_TOKENS: gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
            spans_module.TOOL_NAME: gen_ai.GEN_AI_TOOL_NAME,
            spans_module.TOOL_TYPE: gen_ai.GEN_AI_TOOL_TYPE,
            spans_module.TOOL_CALL_ID: gen_ai.GEN_AI_TOOL_CALL_ID,
            spans_module.TOOL_ARGUMENTS: gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS,
            spans_module.TOOL_RESULT: gen_ai.GEN_AI_TOOL_CALL_RESULT,
            spans_module.INPUT_MESSAGES: gen_ai.GEN_AI_INPUT_MESSAGES,
            spans_module.SERVER_ADDRESS: server_attrs.SERVER_ADDRESS,
            spans_module.SERVER_PORT: server_attrs.SERVER_PORT,
            spans_module.ERROR_TYPE: error_attrs.ERROR_TYPE,
        }
        assert {name: name for name in ours} == ours
        operations = {v.value for v in gen_ai.GenAiOperationNameValues}
        assert {"invoke_workflow", "invoke_agent", "chat", "execute_tool"} <= operations


class TestDeliveryRun:
    async def test_the_span_tree_is_the_delegation_tree(self, delivery_facts: list[Fact]) -> None:
        """Every worker's invoke_agent span is a child of the delegate call that started it,
        which is a child of its coordinator's turn: the same edges as the facts'."""
        fold, ended = fold_all(delivery_facts)
        edges = delegation_tree(delivery_facts)
        assert len(edges) == 3
        assert span_delegations(ended) == edges
        assert fold.open_spans() == 0, "every span that started has ended"

    async def test_one_trace_one_root_every_parent_present(
        self, delivery_facts: list[Fact]
    ) -> None:
        _, ended = fold_all(delivery_facts)
        assert len({span.trace_id for span in ended}) == 1
        ids = [span.span_id for span in ended]
        assert len(ids) == len(set(ids)), "span ids are unique"
        roots = [span for span in ended if span.parent_id is None]
        assert [span.name for span in roots] == ["invoke_workflow delivery"]
        assert all(span.parent_id in set(ids) for span in ended if span.parent_id is not None)
        assert all(span.start <= span.end for span in ended)

    async def test_names_and_required_attributes(self, delivery_facts: list[Fact]) -> None:
        _, ended = fold_all(delivery_facts)
        names = sorted({span.name for span in ended})
        assert names == [
            "await_approval",
            "chat scripted",
            "execute_tool delegate",
            "execute_tool publish",
            "execute_tool web_search",
            "invoke_agent lead",
            "invoke_agent researcher",
            "invoke_workflow delivery",
        ]
        for span in ended:
            operation = span.attributes.get("gen_ai.operation.name")
            if span.name.startswith("invoke_agent"):
                assert operation == "invoke_agent"
                assert span.attributes["gen_ai.agent.name"] == span.name.split(" ", 1)[1]
                assert str(span.attributes["gen_ai.agent.id"]).startswith("ahp-chat:/")
                assert span.attributes["orchestrator.team"] == "delivery"
                assert span.attributes["orchestrator.task"]
            elif span.name.startswith("execute_tool"):
                assert operation == "execute_tool"
                assert span.attributes["gen_ai.tool.call.id"]
                assert span.attributes["gen_ai.tool.type"] == "function"
            elif span.name.startswith("chat"):
                assert operation == "chat"
                assert span.kind == "client"
                assert span.attributes["gen_ai.request.model"] == "scripted"
                assert span.attributes["gen_ai.provider.name"] == "scripted"
                assert span.attributes["gen_ai.response.finish_reasons"] in (
                    ("stop",),
                    ("tool_calls",),
                )
        kinds = {
            span.attributes["gen_ai.tool.name"]: span.attributes["orchestrator.tool.kind"]
            for span in ended
            if span.name.startswith("execute_tool")
        }
        assert kinds == {"delegate": "team", "web_search": "function", "publish": "function"}

    async def test_the_approval_waits_under_its_call(self, delivery_facts: list[Fact]) -> None:
        _, ended = fold_all(delivery_facts)
        (approval,) = [span for span in ended if span.name == "await_approval"]
        (call,) = [span for span in ended if span.span_id == approval.parent_id]
        assert call.name == "execute_tool publish"
        assert approval.attributes["orchestrator.approval.decision"] == "approved"
        assert approval.attributes["orchestrator.approval.resolved_by"] == "user"
        assert approval.attributes["orchestrator.approval.routed_to"] == "user"

    async def test_no_content_unless_opted_in(self, delivery_facts: list[Fact]) -> None:
        """Privacy by default: no prompt, answer or tool input/output on any span."""
        content = {"gen_ai.input.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
        _, ended = fold_all(delivery_facts)
        assert not any(content & set(span.attributes) for span in ended)
        assert "Ship the release notes" not in repr(ended)
        _, captured = fold_all(delivery_facts, capture_content=True)
        (root,) = [span for span in captured if span.parent_id is None]
        messages = json.loads(str(root.attributes["gen_ai.input.messages"]))
        assert messages[0]["parts"][0]["content"] == "Ship the release notes"
        assert any("gen_ai.tool.call.arguments" in span.attributes for span in captured)
        assert any("gen_ai.tool.call.result" in span.attributes for span in captured)

    async def test_ids_are_derived_from_the_facts(self, delivery_facts: list[Fact]) -> None:
        """Folding the same facts again gives the same spans: a resumed run's fold names
        the spans its first process started."""
        _, first = fold_all(delivery_facts)
        _, again = fold_all(delivery_facts)
        assert first == again
        run = next(f for f in delivery_facts if isinstance(f.action, RunStarted))
        assert isinstance(run.action, RunStarted)
        root = next(span for span in first if span.parent_id is None)
        assert root.trace_id == trace_id_of(run.session, run.action.task)
        assert root.span_id == span_id_of("run", run.session, run.action.task)

    async def test_a_traceparent_is_continued(self, delivery_facts: list[Fact]) -> None:
        """A prompt that came with a traceparent: the run's root is that span's child, in
        its trace."""
        facts = [
            attrs.evolve(f, action=attrs.evolve(f.action, trace_parent=PARENT))
            if isinstance(f.action, RunStarted)
            else f
            for f in delivery_facts
        ]
        _, ended = fold_all(facts)
        parent = parse_traceparent(PARENT)
        assert parent is not None
        assert {span.trace_id for span in ended} == {parent.trace_id}
        (root,) = [span for span in ended if span.name.startswith("invoke_workflow")]
        assert root.parent_id == parent.span_id
        assert root.remote_parent

    @given(cut=st.integers(min_value=1))
    @settings(max_examples=examples(30))
    def test_any_prefix_ends_only_spans_whose_parents_are_known(self, cut: int) -> None:
        """Facts folded up to any point (a crash) end spans that hang in the run's trace:
        each span's parent is the root's, a span this fold ended, or one still open."""
        facts = list(_delivery())
        prefix = facts[: cut % (len(facts) + 1)]
        if not prefix:
            return
        _, ended = fold_all(prefix)
        _, complete = fold_all(facts)
        every = {span.span_id for span in complete}
        for span in ended:
            assert span in complete or span.error is not None
            assert span.parent_id is None or span.parent_id in every


class TestChatSpans:
    async def test_each_chats_turns_and_calls_are_the_spans_the_fold_ends(
        self, delivery_facts: list[Fact]
    ) -> None:
        """chat_spans (what the web view links to a trace UI) names, for every chat, the
        invoke_agent span of each turn and the execute_tool span of each call that the fold
        exports: the same trace and span ids, none missing, none more."""
        _, ended = fold_all(delivery_facts)
        session = delivery_facts[0].session
        chats = {f.channel for f in delivery_facts if isinstance(f.action, ChatTurnStartedAction)}
        assert len(chats) == 4  # the lead and three researchers
        turns: dict[tuple[str, str], SpanIds] = {}
        calls: dict[tuple[str, str], SpanIds] = {}
        for chat in chats:
            found = chat_spans(session, delivery_facts, chat)
            turns.update({(chat, turn): ids for turn, ids in found.turns.items()})
            calls.update({(chat, call): ids for call, ids in found.tool_calls.items()})
        assert turns == {
            (str(s.attributes["gen_ai.agent.id"]), str(s.attributes["orchestrator.turn"])): SpanIds(
                trace_id=s.trace_id, span_id=s.span_id
            )
            for s in ended
            if s.name.startswith("invoke_agent ")
        }
        tool_spans = [s for s in ended if s.name.startswith("execute_tool ")]
        assert len(calls) == len(tool_spans) == 7
        assert {(ids.trace_id, ids.span_id) for ids in calls.values()} == {
            (s.trace_id, s.span_id) for s in tool_spans
        }
        for (chat, call), ids in calls.items():
            assert ids.span_id == span_id_of("tool", chat, call)
        (one,) = {ids.trace_hex for ids in turns.values()}
        assert len(one) == 32
        assert int(one, 16) == next(iter(turns.values())).trace_id
        assert all(len(ids.span_hex) == 16 for ids in calls.values())

    async def test_the_chats_own_facts_and_the_team_types_give_the_same_answer(
        self, delivery_facts: list[Fact]
    ) -> None:
        """What the web view reads for one chat (its channel's facts and those of
        CHAT_SPAN_TEAM_TYPES) places its turns and calls in the traces that every fact of
        the session does, ids for ids; the other chats' facts are left out."""
        session = delivery_facts[0].session
        chats = {f.channel for f in delivery_facts if isinstance(f.action, ChatTurnStartedAction)}
        assert len(chats) == 4
        for chat in chats:
            some = [
                f for f in delivery_facts if f.channel == chat or f.type in CHAT_SPAN_TEAM_TYPES
            ]
            assert any(f.channel in chats - {chat} for f in delivery_facts)
            assert not any(f.channel in chats - {chat} for f in some)
            whole = chat_spans(session, delivery_facts, chat)
            assert whole.turns, "a chat with turns in a trace"
            assert chat_spans(session, some, chat) == whole

    def test_the_team_types_are_those_the_fold_reads_but_approvals(self) -> None:
        """Every session-wide fact the fold reads places chats in traces, but an approval's
        (it only opens an await_approval span under a call, which chat_spans does not name):
        a new kind the fold reads is a kind CHAT_SPAN_TEAM_TYPES must consider."""
        read = {
            attrs.fields_dict(kind)["type"].default
            for kind in spans_module._HANDLERS
            if str(attrs.fields_dict(kind)["type"].default).startswith("team/")
        }
        assert read - CHAT_SPAN_TEAM_TYPES == {"team/approvalRequested", "team/approvalResolved"}
        assert read >= CHAT_SPAN_TEAM_TYPES

    async def test_a_chat_it_does_not_know_has_none(self, delivery_facts: list[Fact]) -> None:
        found = chat_spans(delivery_facts[0].session, delivery_facts, "ahp-chat:/nobody")
        assert found.turns == {}
        assert found.tool_calls == {}


class TestHandoff:
    def test_a_specialists_turn_is_under_the_handoff_call(self) -> None:
        """A handoff, like a delegation: the specialist's invoke_agent span is a child of
        the handoff call's span, in the run's trace."""

        async def main() -> list[Fact]:
            harness = Harness(load_team(PROJECT_ROOT / "teams" / "handoff.toml"))
            await run_to_end(harness, "Why was I charged twice?")
            return harness.facts

        _, ended = fold_all(trio.run(main))
        (billing,) = [s for s in ended if s.name == "invoke_agent billing"]
        (call,) = [s for s in ended if s.span_id == billing.parent_id]
        assert call.name == "execute_tool handoff"
        (triage,) = [s for s in ended if s.span_id == call.parent_id]
        assert triage.name == "invoke_agent triage"
        assert len({s.trace_id for s in ended}) == 1


class TestPromptsOfAConversation:
    def test_each_prompt_is_a_root_linked_to_the_one_before(self) -> None:
        session = "ahp-session:/s"
        first = Fact(
            sequence=1,
            session=session,
            channel=session,
            at="2026-12-07T10:00:00.000Z",
            action=RunStarted(
                run="run-1",
                team="t",
                topology="coordinator-workers",
                parallel_budget=1,
                coordinator="lead",
                prompt="one",
                task="task-1",
            ),
        )
        second = Fact(
            sequence=2,
            session=session,
            channel=session,
            at="2026-12-07T10:01:00.000Z",
            action=TaskCreated(
                task="task-2",
                title="two",
                agent="lead",
                status=TaskStatus.RUNNING,
                trace_parent=PARENT,
            ),
        )
        fold = SpanFold(session)
        assert fold.apply(first) == []
        assert fold.apply(second) == []
        roots = list(fold._roots.values())
        assert [r.trace_id for r in roots] == [
            trace_id_of(session, "task-1"),
            parse_traceparent(PARENT).trace_id,  # type: ignore[union-attr]
        ]
        assert roots[1].links == (
            spans_module.SpanLink(trace_id=roots[0].trace_id, span_id=roots[0].span_id),
        )


class TestTraceparent:
    @given(trace=st.integers(1, 2**128 - 1), span=st.integers(1, 2**64 - 1), sampled=st.booleans())
    @settings(max_examples=examples(50))
    def test_a_header_reads_back(self, trace: int, span: int, sampled: bool) -> None:
        header = f"00-{trace:032x}-{span:016x}-{'01' if sampled else '00'}"
        assert parse_traceparent(header) == spans_module.TraceParent(
            trace_id=trace, span_id=span, sampled=sampled
        )

    @given(text=st.text(max_size=80))
    @settings(max_examples=examples(100))
    def test_anything_else_is_ignored_never_an_error(self, text: str) -> None:
        parsed = parse_traceparent(text)
        assert parsed is None or (parsed.trace_id and parsed.span_id)

    @pytest.mark.parametrize(
        "header",
        [
            "",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # zero trace
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # zero span
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # version ff
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  # upper case
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01",
        ],
    )
    def test_malformed_headers_are_ignored(self, header: str) -> None:
        assert parse_traceparent(header) is None

    def test_a_later_version_may_say_more(self) -> None:
        """A later version's header is read for its first four fields; what is recorded is
        their version-00 form, bounded, whatever more the client sent."""
        parsed = parse_traceparent(PARENT.replace("00-", "01-", 1) + "-more" * 1000)
        assert parsed is not None
        assert parsed.header == PARENT


class TestEndings:
    def test_a_cancelled_turn_says_so(self, delivery_facts: list[Fact]) -> None:
        """A turn cut off by a cancellation ends its span, and its open tool calls', with
        the status message "cancelled" and error.type "cancelled"."""
        index, start = next(
            (i, f)
            for i, f in enumerate(delivery_facts)
            if isinstance(f.action, ChatToolCallStartAction) and f.action.tool_name == "publish"
        )
        assert isinstance(start.action, ChatToolCallStartAction)
        cancelled = attrs.evolve(
            start,
            sequence=start.sequence + 1,
            action=ChatTurnCancelledAction(turn_id=start.action.turn_id, duration=1.0),
        )
        _, ended = fold_all([*delivery_facts[: index + 1], cancelled])
        tool, turn = ended[-2:]
        assert (tool.name, turn.name) == ("execute_tool publish", "invoke_agent researcher")
        for span in (tool, turn):
            assert span.error == CANCELLED
            assert span.attributes["error.type"] == "cancelled"

    def test_a_failed_turn_carries_the_facts_message(self, delivery_facts: list[Fact]) -> None:
        start = next(f for f in delivery_facts if isinstance(f.action, ChatTurnStartedAction))
        assert isinstance(start.action, ChatTurnStartedAction)
        failed = attrs.evolve(
            start,
            sequence=start.sequence + 1,
            action=ChatErrorAction(
                turn_id=start.action.turn_id,
                duration=1.0,
                error=ErrorInfo(error_type="ModelError", message="the model server said 500"),
            ),
        )
        index = delivery_facts.index(start)
        _, ended = fold_all([*delivery_facts[: index + 1], failed])
        assert [(s.name, s.error) for s in ended] == [
            ("invoke_agent lead", "the model server said 500")
        ]
