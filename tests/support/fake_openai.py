"""A fake OpenAI-compatible chat-completions server on loopback, for the backend's tests.

It speaks the real wire format over real HTTP (hypercorn on a port of 127.0.0.1): each
``POST {prefix}/chat/completions`` (``prefix`` is ``/v1`` unless the test says, as Azure's
``/openai/v1`` or Gemini's ``/v1beta/openai``) is recorded with its headers and query, and
answered by the test's ``answer`` function,
which sees the decoded request body and returns a :class:`Stream` (server-sent
``chat.completion.chunk`` events, optionally cut, stalled or left unfinished) or a
:class:`Refusal` (an error status with a JSON body and headers). ``GET /v1/models`` lists
``models`` (or answers with it, a :class:`Refusal`), and is recorded in ``model_requests``.
``gate``, when given, sees each request's path, query and headers first and may refuse it
(a server that wants its key in another header, or a query parameter).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
import trio.testing
from hypercorn.config import Config
from hypercorn.trio import serve

Chunk = dict[str, Any]


@attrs.frozen
class Stream:
    """A 200 streaming answer.

    ``cut_after``: send that many chunks, then drop the connection mid-body.
    ``stall_after``: send that many chunks, then send nothing until the client goes away.
    ``done``: end with ``data: [DONE]`` (a server that just stops does not).
    ``pace``: seconds before each chunk, as a model's tokens arrive.
    """

    chunks: Sequence[Chunk | str | bytes]  # str / bytes: sent as they are (a broken server)
    cut_after: int | None = None
    stall_after: int | None = None
    done: bool = True
    pace: float = 0.0


@attrs.frozen
class Refusal:
    """An error answer: ``status`` with an OpenAI-style error body."""

    status: int
    message: str = "refused"
    headers: Mapping[str, str] = attrs.field(factory=dict)


Answer = Stream | Refusal


@attrs.frozen(kw_only=True)
class Gatepost:
    """What a request looks like before its body is read: where it goes, and how."""

    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]


class _CutError(Exception):
    """Raised inside the app to make hypercorn drop the connection mid-body."""


@attrs.define
class FakeOpenAI:
    """The server's state: what it was asked, and how to answer."""

    answer: Callable[[dict[str, Any]], Answer]
    models: Sequence[str] | Refusal = ("fake-model",)
    prefix: str = "/v1"
    gate: Callable[[Gatepost], Refusal | None] | None = None
    url: str = ""
    #: The headers of each ``GET {prefix}/models``.
    model_requests: list[dict[str, str]] = attrs.Factory(list)
    requests: list[dict[str, Any]] = attrs.Factory(list)
    headers: list[dict[str, str]] = attrs.Factory(list)
    #: The query parameters of each request, completions and model lists alike.
    queries: list[dict[str, str]] = attrs.Factory(list)
    stalled: trio.Event = attrs.Factory(trio.Event)
    disconnected: trio.Event = attrs.Factory(trio.Event)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        query = dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
        self.queries.append(query)
        if self.gate is not None:
            refusal = self.gate(Gatepost(path=scope["path"], query=query, headers=headers))
            if refusal is not None:
                await _refuse(send, refusal)
                return
        if scope["method"] == "GET" and scope["path"] == f"{self.prefix}/models":
            self.model_requests.append(headers)
            if isinstance(self.models, Refusal):
                await _refuse(send, self.models)
            else:
                listed = [{"id": model, "object": "model"} for model in self.models]
                await _send_json(send, 200, {"object": "list", "data": listed})
            return
        if scope["path"] != f"{self.prefix}/chat/completions":
            await _send_json(send, 404, {"error": {"message": f"no route {scope['path']}"}})
            return
        request = json.loads(body)
        self.requests.append(request)
        self.headers.append(headers)
        answer = self.answer(request)
        if isinstance(answer, Refusal):
            await _refuse(send, answer)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for index, chunk in enumerate(answer.chunks):
            if answer.pace:
                await trio.sleep(answer.pace)
            if index == answer.cut_after:
                raise _CutError
            if index == answer.stall_after:
                self.stalled.set()
                while (await receive())["type"] != "http.disconnect":
                    pass
                self.disconnected.set()
                return
            if isinstance(chunk, dict):
                chunk = json.dumps(chunk)
            if isinstance(chunk, str):
                chunk = chunk.encode()
            data = b"data: " + chunk + b"\n\n"
            await send({"type": "http.response.body", "body": data, "more_body": True})
        tail = b"data: [DONE]\n\n" if answer.done else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})


async def _refuse(send: Any, refusal: Refusal) -> None:
    error = {"error": {"message": refusal.message, "type": "fake_error"}}
    await _send_json(send, refusal.status, error, refusal.headers)


async def _send_json(
    send: Any, status: int, data: object, headers: Mapping[str, str] | None = None
) -> None:
    raw = [(b"content-type", b"application/json")]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": json.dumps(data).encode()})


@asynccontextmanager
async def fake_openai(
    answer: Callable[[dict[str, Any]], Answer],
    *,
    models: Sequence[str] | Refusal = ("fake-model",),
    prefix: str = "/v1",
    gate: Callable[[Gatepost], Refusal | None] | None = None,
) -> AsyncIterator[FakeOpenAI]:
    """Serve a :class:`FakeOpenAI` on a free port of 127.0.0.1 for the block's duration."""
    server = FakeOpenAI(answer, models, prefix, gate)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None  # the cut answers raise on purpose
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, server, config)
        server.url = binds[0].rstrip("/") + prefix
        yield server
        nursery.cancel_scope.cancel()


# ─── chunk builders ──────────────────────────────────────────────────────────


def _chunk(delta: Mapping[str, Any], finish: str | None = None) -> Chunk:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "model": "fake-model",
        "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}],
    }


def text(*pieces: str, finish: str = "stop") -> list[Chunk]:
    """An answer streamed as ``pieces``."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": piece}) for piece in pieces]
    chunks.append(_chunk({}, finish))
    return chunks


def reasoning(*pieces: str) -> list[Chunk]:
    """Reasoning deltas (``reasoning_content``, as vLLM and llama.cpp send them)."""
    return [_chunk({"reasoning_content": piece}) for piece in pieces]


def tool_calls(*calls: tuple[str, str, Mapping[str, Any]], fragments: int = 3) -> list[Chunk]:
    """Tool calls ``(id, name, arguments)``, all in one response, each one's arguments
    streamed in ``fragments`` pieces, interleaved the way parallel calls arrive."""
    chunks: list[Chunk] = []
    encoded = [json.dumps(arguments) for _, _, arguments in calls]
    for index, (call_id, name, _) in enumerate(calls):
        first = {"index": index, "id": call_id, "type": "function"}
        chunks.append(_chunk({"tool_calls": [{**first, "function": {"name": name}}]}))
    for step in range(fragments):
        for index, arguments in enumerate(encoded):
            size = -(-len(arguments) // fragments)
            piece = arguments[step * size : (step + 1) * size]
            if piece:
                call = {"index": index, "function": {"arguments": piece}}
                chunks.append(_chunk({"tool_calls": [call]}))
    chunks.append(_chunk({}, "tool_calls"))
    return chunks


def usage(prompt: int, completion: int) -> Chunk:
    """The last chunk when ``stream_options.include_usage`` is set."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
    }


def rounds_done(request: Mapping[str, Any]) -> int:
    """How many rounds of the current turn the model already had (assistant messages since
    the last user message)."""
    count = 0
    for message in reversed(request["messages"]):
        if message["role"] == "user":
            break
        count += message["role"] == "assistant"
    return count


def tool_results(request: Mapping[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]
