"""Helpers for the Agent UI projection's tests: the envelopes of a hand-built fact log, by
fact or by type, and the agent ids the projection gives; a real team's run, projected."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import trio

from orchestrator.protocols import AgentUiProjector, Envelope, EventType, project_facts
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team
from tests.support.scenarios import SESSION, TEAM, Log


def feed_all(log: Log) -> tuple[list[Envelope], dict[int, list[Envelope]]]:
    """All envelopes, and the envelopes of each fact by the fact's sequence."""
    projector = AgentUiProjector(SESSION)
    by_fact = {fact.sequence: projector.feed(fact) for fact in log.facts}
    return [e for fact in log.facts for e in by_fact[fact.sequence]], by_fact


def types(envelopes: Sequence[Envelope]) -> list[str]:
    return [e.type for e in envelopes]


def described(envelopes: Sequence[Envelope]) -> list[str]:
    """``type`` plus the subject's status, when the payload has one: ``agent.changed:running``."""
    out = []
    for e in envelopes:
        status = (e.payload or {}).get("teamPhase") or (e.payload or {}).get("status")
        out.append(f"{e.type}:{status}" if status else e.type)
    return out


def only(envelopes: Sequence[Envelope], event: str) -> list[Envelope]:
    return [e for e in envelopes if e.type == event]


def agent_id(agent: str, n: int = 1) -> str:
    return f"{agent}@{TEAM}#{n}"


async def run(
    team_text: str, during: Callable[[TeamRuntime], Awaitable[None]] | None = None
) -> list[Envelope]:
    """Run a team to its end (``during`` acts on it meanwhile); its envelopes, projected."""
    log = MemoryFactLog()
    runtime = TeamRuntime(
        parse_team(team_text, file="t.toml"),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True),
    )
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "Ship it")
            if during is not None:
                await during(runtime)
    return project_facts(runtime.session, log.facts)


def of_type(envelopes: list[Envelope], event: EventType) -> list[Envelope]:
    return [e for e in envelopes if e.type == event]


A = TypeVar("A")


async def first(runtime: TeamRuntime, wanted: type[A]) -> tuple[str, A]:
    """The channel and action of the first fact recorded from now on with a ``wanted`` action."""
    subscription = runtime.bus.subscribe("test")
    async for fact in subscription:
        if isinstance(fact.action, wanted):
            runtime.bus.unsubscribe(subscription)
            return fact.channel, fact.action
    raise AssertionError(f"the run ended without a {wanted.__name__}")
