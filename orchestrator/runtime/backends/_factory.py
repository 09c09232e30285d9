"""Which backend answers an agent: the factory a run hands to the runtime.

The team file names each agent's backend; :func:`backend_factory` makes the matching one.
Every agent's backend is made once, up front, so a configuration problem (an unset API key,
say) stops the run before its first fact, with a message naming the agent and the setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from orchestrator.core import Backend
from orchestrator.spec import AgentSpec, TeamSpec

from ._openai import OpenAIBackend
from ._scripted import ScriptedBackend

__all__ = ["backend_factory"]


def backend_factory(
    team: TeamSpec, *, client: httpx.AsyncClient, environ: Mapping[str, str] | None = None
) -> Callable[[AgentSpec], Backend]:
    """A factory for ``team``'s agents; :class:`RunError` now if any cannot be made."""

    def make(agent: AgentSpec) -> Backend:
        if agent.backend == "openai":
            return OpenAIBackend(team, agent, client=client, environ=environ)
        return ScriptedBackend(agent)

    made = {agent.name: make(agent) for agent in team.agents}

    def backend_for(agent: AgentSpec) -> Backend:
        return made[agent.name]

    return backend_for
