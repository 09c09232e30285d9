"""Which backend answers an agent: the factory a run hands to the runtime.

The team file names each agent's backend; :func:`backend_factory` makes the matching one:
the built-in scripted or OpenAI-compatible backend, or a plugin's
(:mod:`._plugins`: ``module:factory`` or an ``orchestrator.backends`` entry point).
Every agent's backend is made once, up front, so a configuration problem (an unset API key,
say) stops the run before its first fact, with a message naming the agent and the setting.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping

import httpx

from orchestrator.base import RunError
from orchestrator.core import Backend
from orchestrator.spec import A2A_BACKEND, AgentSpec, TeamSpec

from ._openai import OpenAIBackend
from ._plugins import make_plugin_backend
from ._scripted import ScriptedBackend

__all__ = ["backend_factory"]


def backend_factory(
    team: TeamSpec,
    *,
    client: httpx.AsyncClient,
    environ: Mapping[str, str] | None = None,
    agents: Collection[str] | None = None,
) -> Callable[[AgentSpec], Backend]:
    """A factory for ``team``'s agents; :class:`RunError` now if any cannot be made.

    ``agents``: make only these agents' backends (a program gives the others its own).
    """

    def make(agent: AgentSpec) -> Backend:
        if agent.backend == "openai":
            return OpenAIBackend(team, agent, client=client, environ=environ)
        if agent.backend == "scripted":
            return ScriptedBackend(agent)
        if agent.backend == A2A_BACKEND:
            return _a2a_backend(agent, client=client, environ=environ)
        return make_plugin_backend(
            team, agent, client=client, environ=os.environ if environ is None else environ
        )

    made = {
        agent.name: make(agent) for agent in team.agents if agents is None or agent.name in agents
    }

    def backend_for(agent: AgentSpec) -> Backend:
        return made[agent.name]

    return backend_for


def _a2a_backend(
    agent: AgentSpec, *, client: httpx.AsyncClient, environ: Mapping[str, str] | None
) -> Backend:
    """A remote teammate's backend; the A2A SDK is the optional extra ``[a2a]``, imported only
    for a team that has one."""
    try:
        from ._a2a import A2ABackend
    except ImportError as exc:
        raise RunError(
            f"agent {agent.name} is a remote teammate (a2a), which needs the A2A SDK: "
            f"pip install 'team-orchestrator[a2a]' ({exc})"
        ) from exc
    return A2ABackend(agent, client=client, environ=os.environ if environ is None else environ)
