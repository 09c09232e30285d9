"""The OpenAI chat-completions wire format: the request a round sends, the chunks it reads back.

Theory of operation: :func:`request_body` renders a round as one streaming request: the
agent's system prompt, the chat's :func:`~orchestrator.runtime.backends._transcript.transcript`
(steering messages included, where they were injected) and the agent's tools. The server answers
with ``chat.completion.chunk`` objects; a :class:`ChunkAssembler` turns each into
:data:`~orchestrator.core._model_round.ModelEvent` values as it arrives:

* ``delta.content`` → :class:`TextDelta`; ``delta.reasoning_content`` (vLLM, llama.cpp,
  DeepSeek) or ``delta.reasoning`` (Ollama, OpenRouter) → :class:`ReasoningDelta`;
* ``delta.tool_calls[]``, keyed by ``index``: the first fragment of an index (id and name)
  → :class:`ToolCallStarted`, every piece of ``function.arguments`` →
  :class:`ToolCallInputDelta`;
* ``usage`` (the last chunk, with ``stream_options.include_usage``) → :class:`UsageReport`.

A tool call is complete only when the response is. :meth:`ChunkAssembler.finish` runs once
the server said ``[DONE]``. It refuses a response that never gave a ``finish_reason`` (a stream
cut in the middle). So a half-streamed call is never handed over to run. Each
complete call is decoded and checked against the tool definition the model was offered;
input that does not fit becomes the call's ``input_error`` (the model reads why next round).

An agent with an ``output_schema`` asks for an answer that fits it (:func:`output_request`):
with the request's ``response_format`` (``json_schema``), or with a :data:`FINAL_ANSWER` tool
whose input is the answer, which the backend turns back into the round's text
(:func:`final_answer_text`). Either way the runtime checks the answer text.

Pure: no trio and no IO.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from orchestrator.base import ModelStreamError, PeerProtocolError, compact_dumps, parse_json
from orchestrator.core import (
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    UsageReport,
)
from orchestrator.spec import (
    AgentSpec,
    OpenAISettings,
    TeamSpec,
    ToolDefinition,
    check_tool_input,
    function_name,
)

from ._transcript import AssistantMessage, ToolMessage, TranscriptMessage, UserMessage

__all__ = [
    "FINAL_ANSWER",
    "ChunkAssembler",
    "OutputRequest",
    "final_answer_text",
    "output_request",
    "provider_message",
    "request_body",
    "retry_after_seconds",
    "served_models",
    "serves_model",
]

#: The longest provider error text kept in a turn's error message.
MESSAGE_LIMIT: Final = 500
#: The tool a model answers with when an agent's output_schema is asked for as a tool.
FINAL_ANSWER: Final = "final_answer"


@attrs.frozen(kw_only=True)
class OutputRequest:
    """How one round asks for an answer that fits the agent's output_schema.

    ``strategy`` is ``response_format`` (the request's ``response_format`` carries the schema)
    or ``tool`` (a :data:`FINAL_ANSWER` tool whose input is the answer). A tool's input is an
    object, so a schema of another type is wrapped as the property ``answer`` (``wrapped``).
    """

    schema: Mapping[str, Any] = attrs.field(hash=False)
    strategy: Literal["response_format", "tool"]

    @property
    def wrapped(self) -> bool:
        return self.schema.get("type") != "object"

    @property
    def tool(self) -> ToolDefinition:
        """The :data:`FINAL_ANSWER` tool of the ``tool`` strategy."""
        parameters: Mapping[str, Any] = self.schema
        if self.wrapped:
            parameters = {
                "type": "object",
                "properties": {"answer": dict(self.schema)},
                "required": ["answer"],
                "additionalProperties": False,
            }
        return ToolDefinition(
            name=FINAL_ANSWER,
            description=(
                "Give your final answer: call this once you are done, with the answer as its "
                "input, instead of answering in text."
            ),
            parameters=parameters,
        )

    @property
    def instructions(self) -> str:
        """The system prompt's line about the answer."""
        if self.strategy == "tool":
            return (
                f"When you are done, call the {FINAL_ANSWER} tool with your final answer; "
                "its input must fit the tool's schema."
            )
        return "Your final answer is one JSON value that fits the response format's schema."


def output_request(agent: AgentSpec, tools: Sequence[ToolDefinition]) -> OutputRequest | None:
    """How a round of ``agent`` offered ``tools`` asks for a structured answer (None: the
    agent has no output_schema).

    ``auto`` asks with the response format when no tool is offered: a server constraining
    its output to a schema may then not call a tool (vLLM's and llama.cpp's grammars,
    Ollama's format), so an agent with tools answers through the tool instead.
    """
    schema = agent.output_schema
    settings = agent.openai
    if schema is None or settings is None:
        return None
    strategy: Literal["response_format", "tool"]
    match settings.structured_output:
        case "auto":
            strategy = "tool" if tools else "response_format"
        case "response_format" | "tool" as chosen:
            strategy = chosen
    return OutputRequest(schema=schema, strategy=strategy)


def final_answer_text(request: ToolCallRequest, output: OutputRequest) -> str:
    """The answer a :data:`FINAL_ANSWER` call gives, as text the runtime checks like any
    final answer: the input (or its ``answer``, when wrapped) as compact JSON; input that
    could not be read is passed on as the model wrote it, so the check says what is wrong."""
    if request.input_error is None:
        value: Any = request.arguments
        if output.wrapped:
            value = request.arguments.get("answer")
        return compact_dumps(value)
    raw = request.raw_input or ""
    if output.wrapped:
        try:
            decoded = parse_json(raw, protocol="tool input", bad_text="replace")
        except PeerProtocolError:
            return raw
        if isinstance(decoded, dict) and "answer" in decoded:
            return compact_dumps(decoded["answer"])
    return raw


def system_prompt(team: TeamSpec, agent: AgentSpec) -> str:
    """Who the agent is in its team, then its instructions from the team file."""
    lines = [f"You are {agent.name}, the {agent.role}, in the team {team.name!r}."]
    if team.description:
        lines.append(f"The team: {team.description}")
    if agent.name != team.coordinator:
        lines.append(
            "The user message is a task delegated to you; your final answer is your report "
            "to the agent that delegated it."
        )
    if agent.instructions:
        lines.append(agent.instructions)
    return "\n".join(lines)


def request_body(
    settings: OpenAISettings,
    *,
    system: str,
    messages: Sequence[TranscriptMessage],
    tools: Sequence[ToolDefinition] = (),
    output: OutputRequest | None = None,
) -> dict[str, Any]:
    """The JSON body of one streaming ``POST /chat/completions``; ``output``: how it asks
    for an answer that fits the agent's output_schema."""
    if output is not None:
        system = f"{system}\n{output.instructions}"
        if output.strategy == "tool":
            tools = (*tools, output.tool)
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}]
    wire.extend(_message(m) for m in messages)
    body: dict[str, Any] = {
        "model": settings.model,
        "messages": wire,
        "stream": True,
    }
    if settings.stream_usage:
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.function_name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in tools
        ]
        body["parallel_tool_calls"] = True
    if output is not None and output.strategy == "response_format":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": FINAL_ANSWER, "schema": dict(output.schema)},
        }
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body


def _message(message: TranscriptMessage) -> dict[str, Any]:
    match message:
        case UserMessage(text=text):
            return {"role": "user", "content": text}
        case AssistantMessage(text=text, tool_calls=calls):
            wire: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                wire["tool_calls"] = [
                    {
                        "id": c.tool_call_id,
                        "type": "function",
                        # The model knows a tool by its function name, not the team file's.
                        "function": {"name": function_name(c.tool_name), "arguments": c.arguments},
                    }
                    for c in calls
                ]
            return wire
        case ToolMessage(tool_call_id=tool_call_id, content=content):
            return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


@attrs.define
class _Call:
    """A tool call being assembled from its fragments."""

    tool_call_id: str
    wire_id: str  # the id the server gave it ("" if none)
    name: str = ""
    arguments: list[str] = attrs.Factory(list)
    started: bool = False


class ChunkAssembler:
    """Reads one response's chunks; hands out events as they come, and the calls at the end.

    ``taken_ids``: tool call ids the chat already holds. A call whose id is missing, taken or
    repeated (local servers number calls ``call_0``... per response) gets
    ``<id_prefix>-<n>`` instead; the model reads its calls back under those ids.

    Fragments belong to the call of their ``index``, as OpenAI streams them. A fragment that
    brings a new id starts a new call even at an index already used (Ollama sends each whole
    call at index 0). A fragment without an index is a new call when it has an id, else the
    last call's continuation.
    """

    def __init__(
        self,
        tools: Sequence[ToolDefinition],
        *,
        taken_ids: Collection[str] = (),
        id_prefix: str = "call",
    ) -> None:
        self._tools = tools
        # A model calls a tool by the function name it was offered; facts use the team's.
        self._team_names = {t.function_name: t.name for t in tools}
        self._taken = set(taken_ids)
        self._id_prefix = id_prefix
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self.finish_reason: str | None = None
        self.usage: UsageReport | None = None
        self.model: str | None = None  # the model that answered (each chunk names it)

    def feed(self, chunk: object) -> list[ModelEvent]:
        """The events of one decoded chunk; :class:`ModelStreamError` if it is not one."""
        if not isinstance(chunk, dict):
            raise ModelStreamError(f"expected a chunk object, got {_kind(chunk)}")
        if chunk.get("error"):
            raise ModelStreamError(f"the server reported an error mid-stream: {_error(chunk)}")
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self.model = model
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = UsageReport(
                input_tokens=_count(usage.get("prompt_tokens")),
                output_tokens=_count(usage.get("completion_tokens")),
            )
        events: list[ModelEvent] = []
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise ModelStreamError(f"$.choices: expected an array, got {_kind(choices)}")
        for choice in choices:
            # n = 1 is all a round asks for; other choices would be other answers.
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise ModelStreamError(
                    f"$.choices[0].delta: expected an object, got {_kind(delta)}"
                )
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                events.append(ReasoningDelta(text=reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(TextDelta(text=content))
            for position, fragment in enumerate(delta.get("tool_calls") or ()):
                events.extend(self._tool_call(position, fragment))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        return events

    def _tool_call(self, position: int, fragment: object) -> list[ModelEvent]:
        if not isinstance(fragment, dict):
            raise ModelStreamError(f"$.choices[0].delta.tool_calls: got {_kind(fragment)}")
        index = fragment.get("index")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise ModelStreamError(f"tool_calls[].index: expected an integer, got {_kind(index)}")
        raw_id = fragment.get("id")
        wire_id = raw_id if isinstance(raw_id, str) else ""
        call = self._by_index.get(index) if index is not None else self._last()
        if call is None or (wire_id and wire_id != call.wire_id):
            call = _Call(tool_call_id=self._new_id(wire_id, len(self._calls)), wire_id=wire_id)
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
        function = fragment.get("function") or {}
        if not isinstance(function, dict):
            raise ModelStreamError(f"tool_calls[{position}].function: got {_kind(function)}")
        events: list[ModelEvent] = []
        name = function.get("name")
        if isinstance(name, str) and name and not call.started:
            call.name += name
        if call.name and not call.started:
            call.name = self._team_names.get(call.name, call.name)
            call.started = True
            events.append(ToolCallStarted(tool_call_id=call.tool_call_id, tool_name=call.name))
            # Fragments that came before the name was known.
            events.extend(
                ToolCallInputDelta(tool_call_id=call.tool_call_id, text=text)
                for text in call.arguments
            )
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the input decoded
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)
            if call.started:
                events.append(ToolCallInputDelta(tool_call_id=call.tool_call_id, text=arguments))
        return events

    def _last(self) -> _Call | None:
        return self._calls[-1] if self._calls else None

    def _new_id(self, wanted: str, number: int) -> str:
        tool_call_id = wanted
        if not tool_call_id or tool_call_id in self._taken:
            tool_call_id = f"{self._id_prefix}-{number}"
        self._taken.add(tool_call_id)
        return tool_call_id

    def finish(self) -> list[ModelEvent]:
        """The complete tool calls, then usage; the response must have finished."""
        if self.finish_reason is None:
            raise ModelStreamError(
                "the stream ended before the model finished its response (no finish_reason)"
            )
        if self.finish_reason == "length" and self._calls:
            raise ModelStreamError(
                "the model reached its output limit while writing a tool call "
                "(finish_reason 'length'); the call was not run"
            )
        events: list[ModelEvent] = [self._request(call) for call in self._calls]
        if self.usage is not None:
            reasons = () if self.finish_reason is None else (self.finish_reason,)
            events.append(attrs.evolve(self.usage, model=self.model, finish_reasons=reasons))
        return events

    def _request(self, call: _Call) -> ToolCallRequest:
        raw = "".join(call.arguments)
        error: str | None
        try:
            # The model's text: a lone surrogate in it is made U+FFFD, as in its stream.
            decoded = (
                parse_json(raw, protocol="tool input", bad_text="replace") if raw.strip() else {}
            )
        except PeerProtocolError as exc:
            where = "" if exc.path == "$" else f"{exc.path}: "
            decoded, error = {}, f"the input of {call.name} is not valid JSON: {where}{exc.message}"
        else:
            error = check_tool_input(self._tools, call.name, decoded)
        if error is not None or not isinstance(decoded, dict):
            return ToolCallRequest(
                tool_call_id=call.tool_call_id,
                tool_name=call.name,
                arguments={},
                input_error=error or f"the input of {call.name} must be a JSON object",
                raw_input=raw,
            )
        return ToolCallRequest(
            tool_call_id=call.tool_call_id, tool_name=call.name, arguments=decoded
        )


def provider_message(status: int, reason: str, body: bytes) -> str:
    """The server's own words for a refused request: ``error.message`` when it sent JSON."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = parse_json(text, protocol="chat completions", bad_text="replace")
    except PeerProtocolError:
        detail = text
    else:
        detail = _error(data) if isinstance(data, dict) and "error" in data else text
    detail = detail if len(detail) <= MESSAGE_LIMIT else detail[: MESSAGE_LIMIT - 1] + "…"
    return f"{status} {reason}".strip() + (f": {detail}" if detail else "")


def served_models(body: bytes) -> list[str] | None:
    """The model ids a ``GET /models`` answer lists (``{"data": [{"id": ...}, ...]}``), or
    None when the body is not such a list (a server that answers something else is not
    said to lack a model)."""
    try:
        data = parse_json(body, protocol="models list", bad_text="replace")
    except PeerProtocolError:
        return None
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return None
    return [
        entry["id"]
        for entry in listed
        if isinstance(entry, dict) and isinstance(entry.get("id"), str)
    ]


def serves_model(served: Collection[str], model: str) -> bool:
    """Whether ``model`` is among ``served``: Ollama answers a name without a tag with its
    ``:latest``, so ``qwen2.5`` is served when ``qwen2.5:latest`` is listed."""
    return model in served or (":" not in model and f"{model}:latest" in served)


def retry_after_seconds(headers: Mapping[str, str], now: datetime.datetime) -> float | None:
    """How long the server asked to wait: ``retry-after-ms``, else ``retry-after`` in seconds
    or as an HTTP date; None when it did not say (or said something unreadable)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        seconds = _number(milliseconds)
        if seconds is not None:
            return seconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - now).total_seconds())


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _error(data: Mapping[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code") or error.get("type")
        text = str(message) if message else json.dumps(error, ensure_ascii=False)
        return f"{text} ({code})" if isinstance(code, str) and code else text
    return str(error)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _kind(value: object) -> str:
    return type(value).__name__ if not isinstance(value, str) else f"string {value[:40]!r}"
