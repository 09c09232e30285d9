"""How the OpenAI-compatible servers differ on the wire, as fakes of each.

A :class:`Dialect` says where one server (OpenAI, Azure OpenAI, Ollama, vLLM, llama.cpp,
Anthropic, Gemini) differs from the others: where the key goes, whether the URL needs a query
parameter, whether ``stream_options`` is refused, how a tool call streams (in fragments, or
whole in one chunk, with or without an ``index``), where the token counts come (a chunk of
their own, on the finishing chunk, or not at all), the field reasoning arrives in, the
``finish_reason`` of a response that called tools, and whether a ``response_format`` is
honoured. :func:`dialect_answer` plays a coordinator delegating one task to a worker in that
dialect, :func:`structured_answer` an agent asked for JSON; :func:`dialect_gate` refuses a
request the real server would refuse, with the status and words it uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from tests.support.fake_openai import Answer, Chunk, Gatepost, Refusal, Stream, rounds_done

ToolCallShape = Literal["fragments", "whole", "whole-without-index"]
UsagePlace = Literal["own-chunk", "finishing-chunk", "none"]

#: What the worker is asked, what it answers, and what the coordinator says at the end.
TASK = {"agent": "writer", "task": "Write the release note"}
WORKER_ANSWER = "The note: version 2.4 is out."
FINAL_ANSWER = "Done. The note: version 2.4 is out."
THOUGHT = "The writer should do this."


@attrs.frozen(kw_only=True)
class Dialect:
    """One server's ways, where they differ from the hosted API's."""

    name: str
    prefix: str = "/v1"  # the path base_url ends in
    key_header: str = "authorization"  # "authorization": Bearer <key>; else the key alone
    required_query: Mapping[str, str] = attrs.field(factory=dict)
    refuses_stream_options: bool = False
    tool_calls: ToolCallShape = "fragments"
    usage: UsagePlace = "own-chunk"
    usage_needs_option: bool = True  # counts sent only when stream_options asks
    reasoning_field: str | None = None
    tool_finish_reason: str = "tool_calls"
    role_chunk: bool = True  # a first chunk with the role and empty content
    # A response_format's JSON Schema constrains the answer; False: the server ignores it
    # (the model answers as it likes, and the runtime's one retry asks again).
    response_format: bool = True
    extra: Mapping[str, Any] = attrs.field(factory=dict)  # fields of each chunk nobody reads


DIALECTS: dict[str, Dialect] = {
    dialect.name: dialect
    for dialect in (
        Dialect(name="OpenAI"),
        Dialect(
            name="Azure OpenAI",
            prefix="/openai/v1",
            key_header="api-key",
            extra={"prompt_filter_results": [], "system_fingerprint": "fp_azure"},
        ),
        Dialect(
            name="Azure OpenAI, per deployment",
            prefix="/openai/deployments/my-gpt-4-1-deployment",
            key_header="api-key",
            required_query={"api-version": "2024-10-21"},
        ),
        Dialect(
            name="Azure OpenAI, 2024-06-01",
            prefix="/openai/deployments/my-gpt-4-1-deployment",
            key_header="api-key",
            required_query={"api-version": "2024-06-01"},
            refuses_stream_options=True,
        ),
        Dialect(
            name="Ollama",
            key_header="",
            tool_calls="whole",
            reasoning_field="reasoning",
            tool_finish_reason="stop",
            role_chunk=False,
        ),
        Dialect(name="vLLM", key_header="", reasoning_field="reasoning_content"),
        Dialect(
            name="llama.cpp's server",
            key_header="",
            usage="finishing-chunk",
            reasoning_field="reasoning_content",
            extra={"timings": {"predicted_ms": 12.5}},
        ),
        Dialect(name="Anthropic", response_format=False),
        Dialect(
            name="Google Gemini",
            prefix="/v1beta/openai",
            tool_calls="whole-without-index",
            usage="finishing-chunk",
            role_chunk=False,
        ),
    )
}


def dialect_gate(dialect: Dialect, key: str) -> Callable[[Gatepost], Refusal | None]:
    """What the server refuses before reading a request: a key in the wrong header, a
    missing query parameter."""

    def gate(request: Gatepost) -> Refusal | None:
        if dialect.key_header:
            sent = request.headers.get(dialect.key_header, "")
            wanted = f"Bearer {key}" if dialect.key_header == "authorization" else key
            if sent != wanted:
                return Refusal(401, f"Access denied: no valid key in {dialect.key_header}")
        for name, value in dialect.required_query.items():
            if request.query.get(name) != value:
                return Refusal(404, "Resource not found")
        return None

    return gate


def dialect_answer(
    dialect: Dialect, agent_of: Callable[[dict[str, Any]], str]
) -> Callable[[dict[str, Any]], Answer]:
    """The server's answers to a coordinator that delegates one task, and to its worker."""

    def answer(request: dict[str, Any]) -> Answer:
        if dialect.refuses_stream_options and "stream_options" in request:
            return Refusal(400, "Unrecognized request argument supplied: stream_options")
        with_usage = "stream_options" in request or not dialect.usage_needs_option
        agent = agent_of(request)
        if agent == "writer":
            return Stream(_response(dialect, text=WORKER_ANSWER, usage=with_usage))
        if rounds_done(request) == 0:
            return Stream(_response(dialect, text="", thought=THOUGHT, call=TASK, usage=with_usage))
        return Stream(_response(dialect, text=FINAL_ANSWER, usage=with_usage))

    return answer


#: What an agent asked for a verdict answers when nothing constrains it, and when the schema
#: does (or it is asked again).
PROSE_VERDICT = "Ship it: the notes are ready."
VERDICT = {"ship": True}


def structured_answer(dialect: Dialect) -> Callable[[dict[str, Any]], Answer]:
    """The server's answers to an agent whose output_schema asks for ``{"ship": bool}``:
    JSON when the request's response_format constrains the model, prose when the server
    ignores it, then JSON when the model is asked again."""

    def answer(request: dict[str, Any]) -> Answer:
        with_usage = "stream_options" in request or not dialect.usage_needs_option
        constrained = dialect.response_format and "response_format" in request
        asked_again = any(m["role"] == "assistant" for m in request["messages"])
        text = json.dumps(VERDICT) if constrained or asked_again else PROSE_VERDICT
        return Stream(_response(dialect, text=text, usage=with_usage))

    return answer


def _response(
    dialect: Dialect,
    *,
    text: str,
    thought: str = "",
    call: Mapping[str, Any] | None = None,
    usage: bool,
) -> list[Chunk]:
    """One response's chunks in ``dialect``: thinking, text, a delegate call, the finish."""

    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> Chunk:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": finish}
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]} | dict(
            dialect.extra
        )

    chunks = [chunk({"role": "assistant", "content": ""})] if dialect.role_chunk else []
    if thought and dialect.reasoning_field is not None:
        chunks += [chunk({dialect.reasoning_field: piece}) for piece in _halves(thought)]
    chunks += [chunk({"content": piece}) for piece in _halves(text)]
    if call is not None:
        arguments = json.dumps(call)
        first: dict[str, Any] = {"id": "call_1", "type": "function"}
        if dialect.tool_calls != "whole-without-index":
            first["index"] = 0
        if dialect.tool_calls == "fragments":
            chunks.append(chunk({"tool_calls": [{**first, "function": {"name": "delegate"}}]}))
            chunks += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in _halves(arguments)
            ]
        else:
            whole = {**first, "function": {"name": "delegate", "arguments": arguments}}
            chunks.append(chunk({"tool_calls": [whole]}))
    finish = chunk({}, dialect.tool_finish_reason if call is not None else "stop")
    counts = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
    if usage and dialect.usage == "finishing-chunk":
        finish["usage"] = counts
    chunks.append(finish)
    if usage and dialect.usage == "own-chunk":
        chunks.append(
            {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": counts}
        )
    return chunks


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [piece for piece in (text[:middle], text[middle:]) if piece]
