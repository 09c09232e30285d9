"""The probe ``teams check`` sends to each model server a team uses.

The probe is ``GET {base_url}/models`` with the agents' key, the way the official clients list
models. In a couple of seconds, without paying for a completion, it says whether the server is
there, whether it takes the key, and whether it serves the models the team file names. All
probes run at once; what one finds is a warning (``teams check`` exits 0 for it), since the
server may well be there when the team runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs
import httpx
import trio

from orchestrator.spec import TeamSpec

from ._openai import base_url_of, key_headers, missing_key
from ._openai_wire import provider_message, served_models, serves_model
from ._reachability import host_port, why_unreachable

__all__ = ["PROBE_TIMEOUT", "ModelServer", "model_servers", "probe_model_servers"]

#: Seconds a probe waits for each step (connect, send, answer).
PROBE_TIMEOUT: Final = 2.0
#: The most of a models list read (the hosted API's is about 10 KiB).
MAX_LIST_BYTES: Final = 1 << 20
#: Models named in a warning that the wanted one is not served.
LISTED_MODELS: Final = 8


@attrs.frozen(kw_only=True)
class ModelServer:
    """One server a team's agents ask, with what they need of it."""

    base_url: str
    #: The environment variable the key was read from ("" sent no key).
    key_env: str
    key: str = attrs.field(repr=False)
    #: The headers that carry the key, and the query parameters every request has.
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, hash=False)
    query: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    #: The models the agents ask of it, in the order the team file names them.
    models: tuple[str, ...]
    #: The agents that ask it, in the team file's order.
    agents: tuple[str, ...]


def model_servers(team: TeamSpec, environ: Mapping[str, str]) -> list[ModelServer]:
    """The servers ``team``'s OpenAI-compatible agents ask here, one per URL and key.

    An agent that cannot run here for want of a key is left out: that is said already.
    """
    grouped: dict[tuple[str, str, str, tuple[tuple[str, str], ...]], ModelServer] = {}
    for agent in team.agents:
        settings = agent.openai
        if settings is None or missing_key(team, agent, environ) is not None:
            continue
        url, key_env = base_url_of(settings, environ), settings.api_key_env
        how = (url, key_env, settings.api_key_header, tuple(sorted(settings.query.items())))
        key = environ.get(key_env, "")
        server = grouped.get(how) or ModelServer(
            base_url=url,
            key_env=key_env,
            key=key,
            headers=key_headers(settings, key),
            query=settings.query,
            models=(),
            agents=(),
        )
        grouped[how] = attrs.evolve(
            server,
            models=server.models
            if settings.model in server.models
            else (*server.models, settings.model),
            agents=(*server.agents, agent.name),
        )
    return list(grouped.values())


@attrs.frozen
class _Unreachable:
    reason: str


@attrs.frozen
class _Answered:
    status: int
    reason: str
    body: bytes
    location: str | None


async def probe_model_servers(
    servers: Sequence[ModelServer], *, seconds: float = PROBE_TIMEOUT
) -> list[str | None]:
    """For each of ``servers``, what stands in its agents' way (None: nothing found).

    Each distinct URL and key is asked once, all at once; ``seconds`` bounds each step of a
    probe (connect, send, answer).
    """
    answers: dict[ModelServer, _Unreachable | _Answered] = {}

    async def ask(client: httpx.AsyncClient, server: ModelServer) -> None:
        answers[server] = await _ask(client, server, seconds)

    async with (
        httpx.AsyncClient(
            timeout=httpx.Timeout(seconds), headers={"user-agent": "team-orchestrator"}
        ) as client,
        trio.open_nursery() as nursery,
    ):
        for server in servers:
            nursery.start_soon(ask, client, server)
    return [_warning(server, answers[server]) for server in servers]


async def _ask(
    client: httpx.AsyncClient, server: ModelServer, seconds: float
) -> _Unreachable | _Answered:
    url = f"{server.base_url}/models"
    # httpx's timeout bounds each step; this bounds the whole (a server dripping bytes).
    with trio.move_on_after(2 * seconds):
        try:
            async with client.stream(
                "GET", url, params=server.query, headers=server.headers
            ) as response:
                body = b""
                async for piece in response.aiter_bytes():
                    body += piece
                    if len(body) > MAX_LIST_BYTES:
                        break
                return _Answered(
                    status=response.status_code,
                    reason=response.reason_phrase
                    or httpx.codes.get_reason_phrase(response.status_code),
                    body=body,
                    location=response.headers.get("location"),
                )
        except httpx.TransportError as exc:
            return _Unreachable(why_unreachable(url, exc, timeout=seconds))
    return _Unreachable(f"{host_port(url)} did not finish its answer within {2 * seconds:g} s")


def _warning(server: ModelServer, answer: _Unreachable | _Answered) -> str | None:
    who = f"model server {server.base_url} ({', '.join(server.agents)})"
    if isinstance(answer, _Unreachable):
        return f"{who}: {answer.reason}"
    url = f"{server.base_url}/models"
    if 200 <= answer.status < 300:
        served = served_models(answer.body)
        if served is None:
            return None  # it answers, in words of its own: the run will tell
        missing = [model for model in server.models if not serves_model(served, model)]
        if not missing:
            return None
        listed = ", ".join(served[:LISTED_MODELS]) + (", …" if len(served) > LISTED_MODELS else "")
        names = ", ".join(repr(model) for model in missing)
        return f"{who}: it does not list model {names} (it lists {listed or 'none'})"
    message = provider_message(answer.status, answer.reason, answer.body)
    if server.key:
        message = message.replace(server.key, "[api key]")
    if answer.status in (401, 403):
        if server.key:
            return f"{who}: the key in {server.key_env} is refused ({message})"
        return f"{who}: it asks for a key ({message}): set {server.key_env}"
    if 300 <= answer.status < 400:
        return f"{who}: GET {url}: {message} (redirects to {answer.location or '?'}; fix base_url)"
    if answer.status == 404:
        return f"{who}: GET {url}: {message} (is base_url right? it often ends in /v1)"
    return f"{who}: GET {url}: {message}"
