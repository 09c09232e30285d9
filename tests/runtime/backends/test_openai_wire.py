"""The chat-completions wire format, pure: chunk assembly, Retry-After, tool definitions.

Properties over generated input: however a server fragments and interleaves a response,
the events carry exactly its text and tool-call input and hand each call over once, whole,
at the end.
"""

from __future__ import annotations

import datetime
import email.utils
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import ModelStreamError
from orchestrator.core import (
    ModelEvent,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    UsageReport,
)
from orchestrator.runtime.backends import (
    FINAL_ANSWER,
    ChunkAssembler,
    OutputRequest,
    final_answer_text,
    output_request,
    provider_message,
    retry_after_seconds,
)
from orchestrator.spec import (
    AgentSpec,
    ToolDefinition,
    check_tool_input,
    parse_team,
    tool_definitions,
)
from tests.support import strategies
from tests.support.fake_openai import text, tool_calls, usage

ANY = ToolDefinition(name="note", description="", parameters={"type": "object"})
#: Tool input a model writes, within what the input gate takes (integers of 32 digits at most).
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**32) + 1, 10**32 - 1) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
CALLS = st.lists(
    st.tuples(st.text("abcdef", min_size=1, max_size=6), st.dictionaries(st.text(), JSON)),
    max_size=4,
    unique_by=lambda call: call[0],
)


def feed_all(assembler: ChunkAssembler, chunks: list[dict[str, Any]]) -> list[ModelEvent]:
    events = [event for chunk in chunks for event in assembler.feed(chunk)]
    return events + assembler.finish()


class TestChunkAssembler:
    @given(calls=CALLS, fragments=st.integers(1, 7), answer=st.lists(st.text(min_size=1)))
    def test_any_fragmentation_gives_back_the_text_and_the_calls_whole(
        self, calls: list[tuple[str, dict[str, Any]]], fragments: int, answer: list[str]
    ) -> None:
        spec = [(f"call_{ident}", "note", arguments) for ident, arguments in calls]
        chunks = [*text(*answer, finish="stop")[:-1], *tool_calls(*spec, fragments=fragments)]
        chunks.append(usage(3, 4))
        events = feed_all(ChunkAssembler([ANY]), chunks)

        said = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert said == "".join(answer)
        requests = [e for e in events if isinstance(e, ToolCallRequest)]
        assert [(r.tool_call_id, dict(r.arguments)) for r in requests] == [
            (call_id, arguments) for call_id, _, arguments in spec
        ]
        assert all(r.input_error is None for r in requests)
        for call_id, _, arguments in spec:
            positions = [i for i, e in enumerate(events) if _about(e, call_id)]
            kinds = [type(events[i]) for i in positions]
            assert kinds[0] is ToolCallStarted
            assert kinds[-1] is ToolCallRequest
            assert set(kinds[1:-1]) <= {ToolCallInputDelta}
            streamed = "".join(
                e.text for e in events if isinstance(e, ToolCallInputDelta) and _about(e, call_id)
            )
            assert streamed == json.dumps(arguments)
        # Every call is handed over after the last text and input, once the response ended.
        if requests:
            first_request = events.index(requests[0])
            assert not any(
                isinstance(e, TextDelta | ToolCallInputDelta) for e in events[first_request:]
            )
        # With what the server said of the round: the model that answered, why it stopped.
        assert events[-1] == UsageReport(
            input_tokens=3, output_tokens=4, model="fake-model", finish_reasons=("tool_calls",)
        )

    def test_no_call_is_handed_over_without_a_finish_reason(self) -> None:
        assembler = ChunkAssembler([ANY])
        chunks = tool_calls(("call_1", "note", {"a": 1}))[:-1]
        events = [event for chunk in chunks for event in assembler.feed(chunk)]
        assert not any(isinstance(e, ToolCallRequest) for e in events)
        with pytest.raises(ModelStreamError, match="no finish_reason"):
            assembler.finish()

    @pytest.mark.parametrize(
        ("arguments", "words"),
        [
            ('{"n": ' + "9" * 5000 + "}", "$.n: an integer of 5000 digits; the limit is 32"),
            ('{"n": [' + "9" * 33 + "]}", "$.n[0]: an integer of 33 digits; the limit is 32"),
            ('{"x": NaN}', "$.x: NaN is not a JSON number"),
            ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ],
    )
    def test_input_json_cannot_read_fails_the_call_not_the_round(
        self, arguments: str, words: str
    ) -> None:
        """Input the gate refuses (a huge number, NaN, nesting past its limit) is input that
        is not valid JSON: the call fails with a message naming the field; nothing raises."""
        chunks = tool_calls(("call_1", "note", {}))
        for chunk in chunks:
            for call in chunk["choices"][0]["delta"].get("tool_calls") or ():
                if call.get("function", {}).get("arguments"):
                    call["function"]["arguments"] = ""
        chunks[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = arguments
        requests = [
            e for e in feed_all(ChunkAssembler([ANY]), chunks) if isinstance(e, ToolCallRequest)
        ]
        assert len(requests) == 1
        assert requests[0].input_error is not None
        assert "not valid JSON" in requests[0].input_error
        assert words in requests[0].input_error

    def test_a_call_cut_by_the_output_limit_is_refused(self) -> None:
        chunks = tool_calls(("call_1", "note", {"a": 1}))
        chunks[-1]["choices"][0]["finish_reason"] = "length"
        with pytest.raises(ModelStreamError, match="output limit while writing a tool call"):
            feed_all(ChunkAssembler([ANY]), chunks)

    def test_missing_taken_and_repeated_ids_are_replaced(self) -> None:
        chunks = tool_calls(("call_0", "note", {}), ("call_0", "note", {}), ("", "note", {}))
        assembler = ChunkAssembler([ANY], taken_ids={"call_0"}, id_prefix="call-turn-3-r1-a0")
        ids = [
            e.tool_call_id for e in feed_all(assembler, chunks) if isinstance(e, ToolCallRequest)
        ]
        assert ids == ["call-turn-3-r1-a0-0", "call-turn-3-r1-a0-1", "call-turn-3-r1-a0-2"]

    @pytest.mark.parametrize(
        ("chunk", "message"),
        [
            ([], "expected a chunk object, got list"),
            ({"error": {"message": "boom", "code": "x"}}, "mid-stream: boom (x)"),
            ({"choices": {"0": {}}}, "$.choices: expected an array"),
            ({"choices": [{"delta": {"tool_calls": [{"index": "0"}]}}]}, "index: expected an"),
        ],
    )
    def test_chunks_that_make_no_sense_are_refused(self, chunk: object, message: str) -> None:
        with pytest.raises(ModelStreamError) as caught:
            ChunkAssembler([ANY]).feed(chunk)
        assert message in str(caught.value)

    def test_reasoning_comes_from_either_field(self) -> None:
        chunks = [
            {"choices": [{"index": 0, "delta": {"reasoning_content": "a"}}]},
            {"choices": [{"index": 0, "delta": {"reasoning": "b"}, "finish_reason": "stop"}]},
        ]
        events = feed_all(ChunkAssembler([]), chunks)
        assert [getattr(e, "text", None) for e in events] == ["a", "b"]


def _about(event: ModelEvent, call_id: str) -> bool:
    return getattr(event, "tool_call_id", None) == call_id


class TestRetryAfter:
    NOW = datetime.datetime(2026, 11, 24, 12, 0, tzinfo=datetime.UTC)

    @given(st.integers(0, 10**6))
    def test_seconds_and_http_dates_agree(self, seconds: int) -> None:
        when = self.NOW + datetime.timedelta(seconds=seconds)
        date = email.utils.format_datetime(when, usegmt=True)
        assert retry_after_seconds({"retry-after": str(seconds)}, self.NOW) == seconds
        assert retry_after_seconds({"retry-after": date}, self.NOW) == seconds

    def test_milliseconds_win_and_nonsense_is_ignored(self) -> None:
        headers = {"retry-after-ms": "1500", "retry-after": "9"}
        assert retry_after_seconds(headers, self.NOW) == 1.5
        for nonsense in ("soon", "-3", "nan", "inf", ""):
            assert retry_after_seconds({"retry-after": nonsense}, self.NOW) is None
        assert retry_after_seconds({}, self.NOW) is None
        past = email.utils.format_datetime(self.NOW - datetime.timedelta(hours=1), usegmt=True)
        assert retry_after_seconds({"retry-after": past}, self.NOW) == 0

    def test_provider_messages_prefer_the_error_object(self) -> None:
        body = json.dumps({"error": {"message": "no such model", "code": "model_not_found"}})
        assert provider_message(404, "Not Found", body.encode()) == (
            "404 Not Found: no such model (model_not_found)"
        )
        assert provider_message(502, "Bad Gateway", b"<html>upstream</html>") == (
            "502 Bad Gateway: <html>upstream</html>"
        )
        long = provider_message(500, "", b"x" * 2000)
        assert long.startswith("500: ")
        assert len(long) < 520


class TestToolDefinitions:
    TEAM = parse_team(
        '[team]\nname="t"\ncoordinator="lead"\n'
        '[agents.lead]\nrole="lead"\ntools=["delegate","ask","search"]\ndelegates_to=["w"]\n'
        '[agents.w]\nrole="worker"\n',
        file="t.toml",
    )

    def test_the_offered_schema_is_the_one_that_checks(self) -> None:
        tools = tool_definitions(self.TEAM, self.TEAM.agent("lead"))
        assert [t.name for t in tools] == ["delegate", "ask", "search"]
        assert check_tool_input(tools, "delegate", {"agent": "w", "task": "go"}) is None
        assert check_tool_input(tools, "delegate", {"agent": "w"}) == (
            "invalid input for delegate: the input: 'task' is a required property"
        )
        assert check_tool_input(tools, "delegate", {"agent": "w", "task": "go", "x": 1}) == (
            "invalid input for delegate: the input: Additional properties are not allowed "
            "('x' was unexpected)"
        )
        assert check_tool_input(tools, "ask", {"question": "?", "kind": "colour"}) == (
            "invalid input for ask: $.kind: 'colour' is not one of ['text', 'number', "
            "'integer', 'boolean', 'single-select', 'multi-select']"
        )
        assert check_tool_input(tools, "search", {"anything": [1, 2]}) is None
        assert check_tool_input(tools, "search", ["not", "an", "object"]) is not None
        assert check_tool_input(tools, "handoff", {}) == (
            "there is no tool named 'handoff' (tools: delegate, ask, search)"
        )


class TestWhatServersReallySend:
    """Shapes seen from servers other than OpenAI's own."""

    @staticmethod
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    def calls(self, chunks: list[dict[str, Any]]) -> list[ToolCallRequest]:
        events = feed_all(ChunkAssembler([ANY]), chunks)
        return [e for e in events if isinstance(e, ToolCallRequest)]

    def test_whole_calls_at_the_same_index_with_new_ids_are_separate_calls(self) -> None:
        """Ollama sends each whole call in its own chunk, every one at index 0."""
        whole = [
            {
                "index": 0,
                "id": f"call_{n}",
                "function": {"name": "note", "arguments": f'{{"n":{n}}}'},
            }
            for n in (1, 2)
        ]
        chunks = [self.chunk({"tool_calls": [call]}) for call in whole]
        chunks.append(self.chunk({}, "stop"))  # and says "stop", not "tool_calls"
        requests = self.calls(chunks)
        assert [(r.tool_call_id, dict(r.arguments)) for r in requests] == [
            ("call_1", {"n": 1}),
            ("call_2", {"n": 2}),
        ]

    def test_calls_without_an_index_and_decoded_arguments(self) -> None:
        """Older servers leave index out; some send the input as an object."""
        chunks = [
            self.chunk(
                {
                    "tool_calls": [
                        {"id": "a", "function": {"name": "note", "arguments": {"x": 1}}},
                        {"id": "b", "function": {"name": "note", "arguments": "{}"}},
                    ]
                },
                "tool_calls",
                usage={"prompt_tokens": 7, "completion_tokens": 2},
            )
        ]
        assembler = ChunkAssembler([ANY])
        events = feed_all(assembler, chunks)
        requests = [e for e in events if isinstance(e, ToolCallRequest)]
        assert [(r.tool_call_id, dict(r.arguments)) for r in requests] == [
            ("a", {"x": 1}),
            ("b", {}),
        ]
        assert events[-1] == UsageReport(
            input_tokens=7, output_tokens=2, finish_reasons=("tool_calls",)
        )

    def test_null_fields_are_absent_fields(self) -> None:
        chunks = [
            self.chunk(
                {
                    "content": "hi",
                    "tool_calls": [{"index": None, "id": "c", "function": {"name": "note"}}],
                },
                error=None,
            ),
            self.chunk({"tool_calls": [{"index": None, "function": {"arguments": "{}"}}]}, "stop"),
        ]
        assert [r.tool_call_id for r in self.calls(chunks)] == ["c"]


class TestFinalAnswer:
    """A ``final_answer`` call's input is the answer text the runtime checks."""

    WRAPPED = OutputRequest(schema={"type": "array"}, strategy="tool")
    OBJECT = OutputRequest(schema={"type": "object"}, strategy="tool")

    @given(strategies.json_values)
    def test_a_wrapped_answer_is_its_answer_property(self, value: Any) -> None:
        call = ToolCallRequest(
            tool_call_id="c", tool_name=FINAL_ANSWER, arguments={"answer": value}
        )
        assert json.loads(final_answer_text(call, self.WRAPPED)) == value

    def test_input_that_could_not_be_read_is_passed_on_as_written(self) -> None:
        """The runtime's check then says what is wrong with it, in the model's own text."""
        for raw, output, answer in [
            ('{"answer": [1', self.WRAPPED, '{"answer": [1'),
            ('{"answer": 3}', self.WRAPPED, "3"),  # did not fit the tool's schema: unwrapped
            ('{"x": 1', self.OBJECT, '{"x": 1'),
        ]:
            call = ToolCallRequest(
                tool_call_id="c",
                tool_name=FINAL_ANSWER,
                arguments={},
                input_error="does not fit",
                raw_input=raw,
            )
            assert final_answer_text(call, output) == answer

    def test_auto_asks_with_the_tool_only_beside_other_tools(self) -> None:
        team = parse_team(
            '[team]\nname = "t"\ncoordinator = "a"\n[agents.a]\nrole = "r"\n'
            'backend = "openai"\nmodel = "m"\noutput_schema = { type = "object" }\n',
            file="t.toml",
        )
        agent = team.agent("a")
        lookup = ToolDefinition(name="lookup", description="", parameters={"type": "object"})
        no_tools = output_request(agent, ())
        with_tools = output_request(agent, (lookup,))
        assert no_tools is not None
        assert with_tools is not None
        assert (no_tools.strategy, with_tools.strategy) == ("response_format", "tool")
        assert output_request(AgentSpec(name="b", role="r"), ()) is None
