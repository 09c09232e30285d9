"""The OpenAI-compatible backend: model rounds streamed from a chat-completions server.

Theory of operation: one :meth:`OpenAIBackend.stream_round` is one streaming
``POST {base_url}/chat/completions``. Its body comes from
:func:`~orchestrator.runtime.backends._openai_wire.request_body`: the conversation is derived
from the chat's state each round, never kept here. Opening the stream is retried by stamina,
with exponential backoff and jitter. A 429 or 5xx answer, or a server that could not be
reached, is tried again up to ``max_retries`` times. It waits what the server asked
(``Retry-After``) when it said. Each retry is one warning naming the attempt, the wait and the
failure (stamina's own line is dropped by the logging configuration). Any other 4xx ends the turn
with the provider's message, and so does a server that cannot be there: a loopback address that
refuses the connection, or a name that does not resolve
(:func:`~orchestrator.runtime.backends._reachability.worth_retrying`). Once the server streams,
nothing is retried (the events already went out). A stream that breaks off, stalls past
``read_timeout`` or makes no sense ends the turn in error. A tool call whose input was still
streaming is never run (:class:`~orchestrator.runtime.backends._openai_wire.ChunkAssembler`). The
runtime closes the round's generator however the round ends, which closes the HTTP response:
cancelling a turn closes its stream.

An agent with an ``output_schema`` asks for it as the round's response format, or offers a
``final_answer`` tool (see :func:`~orchestrator.runtime.backends._openai_wire.output_request`);
a ``final_answer`` call is streamed on as the round's answer text, never run as a tool.

The API key is read from the environment when the backend is made (the team file names the
variable) and goes only into its header (``Authorization: Bearer``, or the one
``api_key_header`` names, as Azure OpenAI's ``api-key``): never into facts, logs or errors.
Ollama, vLLM, llama.cpp's server and LM Studio speak the same format; for a server that is
not the hosted API the key may be unset (no header is sent).
"""

from __future__ import annotations

import datetime
import os
import random
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Final

import attrs
import httpx
import httpx_sse
import stamina
import structlog
import trio

from orchestrator.base import (
    ModelRequestError,
    ModelStreamError,
    PeerProtocolError,
    RunError,
    parse_json_counted,
    register_secret,
)
from orchestrator.core import (
    ModelEvent,
    RoundContext,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    UsageReport,
)
from orchestrator.spec import AgentSpec, OpenAISettings, TeamSpec

from .._tracing import traceparent_headers
from ._openai_wire import (
    FINAL_ANSWER,
    ChunkAssembler,
    final_answer_text,
    output_request,
    provider_message,
    request_body,
    retry_after_seconds,
    system_prompt,
)
from ._reachability import why_unreachable, worth_retrying
from ._transcript import tool_call_ids, transcript

__all__ = [
    "HOSTED_API",
    "OpenAIBackend",
    "base_url_of",
    "http_client",
    "key_headers",
    "missing_key",
]

log = structlog.get_logger("orchestrator.backend.openai")

#: Where requests go when neither the team file nor ``OPENAI_BASE_URL`` says.
HOSTED_API: Final = "https://api.openai.com/v1"
BASE_URL_ENV: Final = "OPENAI_BASE_URL"

CONNECT_TIMEOUT: Final = 10.0
WRITE_TIMEOUT: Final = 30.0
POOL_TIMEOUT: Final = 30.0
#: Backoff between retries when the server does not say how long to wait (seconds).
WAIT_INITIAL: Final = 1.0
WAIT_MAX: Final = 30.0
#: Up to this much is added to each backoff at random, so clients do not retry in step.
WAIT_JITTER: Final = 1.0
#: The longest ``Retry-After`` honoured; a server asking more is not retried (a turn does
#: not sit silent for an hour: the error says what the server asked).
RETRY_AFTER_MAX: Final = 120.0
#: How long closing a response may take when the round was cancelled.
CLOSE_TIMEOUT: Final = 5.0


def http_client() -> httpx.AsyncClient:
    """The client a run shares among its agents (one connection pool per server).

    While tracing is on, each request it sends carries the span of the task that sends it
    as ``traceparent`` (a model round's, for every backend on this client, plugins too)."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(CONNECT_TIMEOUT, write=WRITE_TIMEOUT, pool=POOL_TIMEOUT),
        headers={"user-agent": "team-orchestrator"},
        event_hooks={"request": [_with_traceparent]},
    )


async def _with_traceparent(request: httpx.Request) -> None:
    """An httpx request hook: the current span's ``traceparent``, unless the request has
    one (it runs in the sending task, so the span is the round's)."""
    if "traceparent" not in request.headers:
        request.headers.update(traceparent_headers())


def base_url_of(settings: OpenAISettings, environ: Mapping[str, str]) -> str:
    """The team file's ``base_url``, else ``$OPENAI_BASE_URL``, else the hosted API."""
    url = settings.base_url or environ.get(BASE_URL_ENV) or HOSTED_API
    return url.rstrip("/")


def key_headers(settings: OpenAISettings, key: str) -> dict[str, str]:
    """The header that carries ``key`` to the server (none without a key)."""
    if not key:
        return {}
    if settings.api_key_header == "authorization":
        return {"authorization": f"Bearer {key}"}
    return {settings.api_key_header: key}


def missing_key(team: TeamSpec, agent: AgentSpec, environ: Mapping[str, str]) -> str | None:
    """Why ``agent`` cannot reach its model here, if it cannot: it asks the hosted API and
    its key's environment variable is not set (a local server needs no key)."""
    settings = agent.openai
    if settings is None or environ.get(settings.api_key_env):
        return None
    if not base_url_of(settings, environ).startswith(HOSTED_API):
        return None
    return (
        f"agent {agent.name!r} uses {HOSTED_API} but the environment variable "
        f"{settings.api_key_env} (api_key_env in {team.file}) is not set"
    )


class OpenAIBackend:
    """Model rounds of one agent, streamed from an OpenAI-compatible server.

    Making one checks the configuration (a :class:`RunError` names what is missing), so a
    run can make every agent's backend before it starts and fail before its first fact.
    """

    def __init__(
        self,
        team: TeamSpec,
        agent: AgentSpec,
        *,
        client: httpx.AsyncClient,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if agent.openai is None:
            raise RunError(f"agent {agent.name!r} does not use the openai backend")
        environ = os.environ if environ is None else environ
        self.agent = agent
        self.settings = agent.openai
        self.url = f"{base_url_of(self.settings, environ)}/chat/completions"
        missing = missing_key(team, agent, environ)
        if missing is not None:
            raise RunError(missing)
        key = environ.get(self.settings.api_key_env, "")
        register_secret(key)  # whatever logs it (a traceback, a library), a line shows [redacted]
        self._key = key
        self._headers = key_headers(self.settings, key)
        self._client = client
        self._system = system_prompt(team, agent)
        self._timeout = httpx.Timeout(
            CONNECT_TIMEOUT, read=self.settings.read_timeout, write=WRITE_TIMEOUT, pool=POOL_TIMEOUT
        )

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        """One streaming request; see the module docstring for what is retried."""
        chat = context.chat_state
        if chat is None:
            raise RunError(f"{context.chat}: the openai backend needs the chat's state")
        messages = transcript(chat)
        output = output_request(self.agent, context.tools)
        body = request_body(
            self.settings,
            system=self._system,
            messages=messages,  # steering injected into the turn is in there, in its place
            tools=context.tools,
            output=output,
        )
        turn = chat.active_turn.id if chat.active_turn is not None else "turn"
        offered = context.tools
        if output is not None and output.strategy == "tool":
            offered = (*offered, output.tool)
        assembler = ChunkAssembler(
            offered,
            taken_ids=tool_call_ids(chat),
            id_prefix=f"call-{turn}-r{context.round_index}-a{context.attempt}",
        )
        # The final_answer calls of this round: their input is the answer, not a call to run.
        answers: set[str] = set()
        response = await self._open(body)
        try:
            async with aclosing(self._events(response, assembler)) as events:
                async for event in events:
                    if output is None or output.strategy != "tool":
                        yield event
                        continue
                    match event:
                        case ToolCallStarted(tool_name=name) if name == FINAL_ANSWER:
                            answers.add(event.tool_call_id)
                        case ToolCallInputDelta(tool_call_id=call) if call in answers:
                            pass
                        case ToolCallRequest(tool_name=name) if name == FINAL_ANSWER:
                            yield TextDelta(text=final_answer_text(event, output))
                        case _:
                            yield event
        finally:
            with trio.move_on_after(CLOSE_TIMEOUT) as closing:
                closing.shield = True
                await response.aclose()

    async def _open(self, body: Mapping[str, object]) -> httpx.Response:
        """Send the request until the server starts a stream; the response, still unread.

        stamina runs the attempts; the hook it asks after each failure decides whether to send
        again and how long to wait first (the wait it returns is the one stamina sleeps), and
        logs the retry in our words.
        """
        attempts = self.settings.max_retries + 1
        failed = 0

        def wait_before_retry(exc: Exception) -> bool | float:
            """The seconds to wait before the next attempt, or False: ``exc`` is final."""
            nonlocal failed
            failed += 1
            wait: float | None
            if isinstance(exc, ModelRequestError):
                failure, wait = exc, _wait_after(exc, failed)
            elif isinstance(exc, httpx.TransportError) and worth_retrying(self.url, exc):
                failure, wait = self._unreachable(exc), _backoff(failed)
            else:  # a read timeout, cancellation, a bug: not sent again
                return False
            # stamina asks after the last attempt too (before it checks ``attempts``).
            if wait is None or failed >= attempts:
                return False
            log.warning(
                f"model request failed, retrying in {wait:.1f} s "
                f"(attempt {failed + 1} of {attempts}): {failure}",
                agent=self.agent.name,
            )
            return wait

        try:
            # The hook always names the wait, so stamina's own backoff settings never apply.
            async for attempt in stamina.retry_context(
                on=wait_before_retry, attempts=attempts, timeout=None
            ):
                with attempt:
                    request = self._client.build_request(
                        "POST",
                        self.url,
                        json=body,
                        params=self.settings.query,
                        headers=self._headers,
                        timeout=self._timeout,
                    )
                    response = await self._client.send(request, stream=True)
                    if response.is_success:
                        return response
                    raise await self._refused(response)
        except ModelRequestError as exc:
            raise _gave_up(exc, failed, attempts) from exc
        except httpx.ReadTimeout as exc:
            raise ModelRequestError(
                f"POST {self.url}: no answer within {self.settings.read_timeout:g} s (read_timeout)"
            ) from exc
        except httpx.TransportError as exc:
            raise _gave_up(self._unreachable(exc), failed, attempts) from exc
        raise AssertionError("unreachable: stamina returns or raises")  # pragma: no cover

    def _unreachable(self, exc: httpx.TransportError) -> ModelRequestError:
        """The error for a request that did not reach the server, with the likely cause."""
        why = why_unreachable(self.url, exc, timeout=CONNECT_TIMEOUT)
        return ModelRequestError(f"could not reach {self.url}: {why}")

    async def _refused(self, response: httpx.Response) -> ModelRequestError:
        """The error for a non-2xx answer (its body read and the response closed): the URL,
        the provider's words (any echo of the key blanked) and, for a redirect, where to."""
        try:
            body = await response.aread()
        finally:
            await response.aclose()
        status = response.status_code
        message = provider_message(
            status, response.reason_phrase or httpx.codes.get_reason_phrase(status), body
        )
        if response.is_redirect:
            message += f" (redirects to {response.headers.get('location', '?')}; fix base_url)"
        elif status == 400 and "stream_options" in message and self.settings.stream_usage:
            message += " (this server refuses stream_options: set stream_usage = false)"
        now = datetime.datetime.now(datetime.UTC)
        return ModelRequestError(
            self._redact(f"POST {self.url}: {message}"),
            status=status,
            retry_after=retry_after_seconds(response.headers, now),
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[api key]") if self._key else text

    async def _events(
        self, response: httpx.Response, assembler: ChunkAssembler
    ) -> AsyncGenerator[ModelEvent, None]:
        done = False
        replaced = 0  # lone surrogates in the model's strings, each made U+FFFD
        try:
            async for sse in httpx_sse.EventSource(response).aiter_sse():
                if sse.data.strip() == "[DONE]":
                    done = True  # whatever follows (a proxy keeping the body open) is not read
                    break
                if not sse.data.strip():
                    continue
                try:
                    chunk, count = parse_json_counted(
                        sse.data, protocol="chat completions", bad_text="replace"
                    )
                except PeerProtocolError as exc:
                    raise ModelStreamError(
                        f"{self.url} sent a chunk that is not JSON the daemon takes "
                        f"({exc.path}: {exc.message}): {sse.data[:80]!r}"
                    ) from exc
                replaced += count
                try:
                    events = assembler.feed(chunk)
                except ModelStreamError as exc:
                    raise ModelStreamError(self._redact(str(exc))) from exc
                for event in events:
                    yield event
        except httpx_sse.SSEError as exc:
            raise ModelStreamError(f"{self.url} did not stream server-sent events: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise ModelStreamError(
                f"{self.url} sent nothing for {self.settings.read_timeout:g} s (read_timeout)"
            ) from exc
        except httpx.TransportError as exc:
            raise ModelStreamError(
                f"the stream from {self.url} broke off: {_describe(exc)}"
            ) from exc
        finally:
            if replaced:
                # What the model sent could not be stored or shown as it was: the facts hold
                # U+FFFD in its place, and the log says so.
                log.warning("model text replaced", url=self.url, characters=replaced)
        if not done and assembler.finish_reason is None:
            raise ModelStreamError(
                f"the stream from {self.url} ended before the model finished its response"
            )
        for event in assembler.finish():
            yield attrs.evolve(event, server=self.url) if isinstance(event, UsageReport) else event


def _wait_after(refusal: ModelRequestError, attempt: int) -> float | None:
    """Seconds to wait before sending a refused request again; None: it is not sent again."""
    status = refusal.status or 0
    if status != 429 and status < 500:
        return None
    if refusal.retry_after is None:
        return _backoff(attempt)
    return refusal.retry_after if refusal.retry_after <= RETRY_AFTER_MAX else None


def _backoff(attempt: int) -> float:
    """Exponential backoff after failed attempt ``attempt`` (1-based), with jitter."""
    return min(WAIT_MAX, WAIT_INITIAL * 2.0 ** (attempt - 1) + random.uniform(0, WAIT_JITTER))


def _gave_up(exc: ModelRequestError, tried: int, attempts: int) -> ModelRequestError:
    message = str(exc)
    if exc.retry_after is not None and exc.retry_after > RETRY_AFTER_MAX:
        message += (
            f" (the server asks to wait {exc.retry_after:g} s, longer than the "
            f"{RETRY_AFTER_MAX:g} s a turn waits)"
        )
    elif tried >= attempts:
        message += _after(tried)
    return ModelRequestError(message, status=exc.status, retry_after=exc.retry_after)


def _after(tried: int) -> str:
    return f" (gave up after {tried} attempts)" if tried > 1 else ""


def _describe(exc: httpx.TransportError) -> str:
    return str(exc) or type(exc).__name__
