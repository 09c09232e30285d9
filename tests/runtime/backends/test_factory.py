"""Which backend answers each agent: the scripted one, the OpenAI-compatible one, or a
plugin's, each made once and up front, so a configuration problem stops the run before its
first fact, naming the agent and the setting."""

from __future__ import annotations

import pytest

from orchestrator.base import RunError
from orchestrator.runtime.backends import (
    OpenAIBackend,
    ScriptedBackend,
    backend_factory,
    http_client,
)
from orchestrator.spec import TeamSpec, parse_team

#: A scripted coordinator and a worker on the hosted API, whose key is in ``MODEL_KEY``.
MIXED = """
[team]
name = "mixed"
coordinator = "lead"
[openai]
model = "m"
api_key_env = "MODEL_KEY"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ {{ say = "hi" }} ]
[agents.worker]
role = "researcher"
backend = "{worker}"
"""


def team(worker: str = "openai") -> TeamSpec:
    return parse_team(MIXED.format(worker=worker), file="mixed.toml")


async def test_each_agent_gets_its_backend_the_same_one_each_time() -> None:
    mixed = team()
    async with http_client() as client:
        backend_for = backend_factory(mixed, client=client, environ={"MODEL_KEY": "k"})
        lead, worker = mixed.agent("lead"), mixed.agent("worker")
        assert isinstance(backend_for(lead), ScriptedBackend)
        assert isinstance(backend_for(worker), OpenAIBackend)
        assert backend_for(lead) is backend_for(lead)
        assert backend_for(worker) is backend_for(worker)


async def test_a_missing_key_stops_the_factory_naming_the_agent_and_the_setting() -> None:
    async with http_client() as client:
        with pytest.raises(RunError) as caught:
            backend_factory(team(), client=client, environ={})
    message = str(caught.value)
    assert "'worker'" in message
    assert "MODEL_KEY (api_key_env in mixed.toml) is not set" in message


async def test_only_the_agents_named_are_made() -> None:
    """A program gives the other agents its own backends: theirs are not made, nor checked."""
    mixed = team()
    async with http_client() as client:
        backend_for = backend_factory(mixed, client=client, environ={}, agents=["lead"])
        assert isinstance(backend_for(mixed.agent("lead")), ScriptedBackend)


async def test_any_other_name_is_a_plugin_s() -> None:
    async with http_client() as client:
        with pytest.raises(RunError) as caught:
            backend_factory(team("nobody"), client=client, environ={})
    assert str(caught.value).startswith("mixed.toml: agents.worker.backend: unknown backend")
