"""A remote teammate's rounds replayed without a network: the notices an A2A exchange makes
(as ``runtime/backends/_a2a.py`` records them), for the pure tests of what reads them (the
Agent UI projection, the graph). The real exchange is tested against real peers in
tests/runtime/backends/test_a2a.py."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from orchestrator.core import (
    ARTIFACT_META,
    REMOTE_TASK_META,
    Backend,
    ModelEvent,
    Notice,
    RoundContext,
    TextDelta,
)
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec

__all__ = ["ReplayedRemote", "replayed_backends"]

CARD = {"name": "far agent", "version": "2.0", "skills": ["paint"]}


class ReplayedRemote:
    """Plays ``states`` of remote task ``task_id``, an artifact in ``chunks`` after the
    second state, then answers ``answer`` (a task that ends completed)."""

    def __init__(
        self,
        agent: AgentSpec,
        *,
        task_id: str = "rt-1",
        states: Sequence[str] = ("submitted", "working", "completed"),
        chunks: Sequence[str] = ("alpha ", "beta"),
        answer: str = "painted",
    ) -> None:
        assert agent.a2a is not None
        self.agent = agent
        self.url = agent.a2a.url
        self.task_id = task_id
        self.states = states
        self.chunks = chunks
        self.answer = answer

    def _state(self, state: str, task_id: str) -> Notice:
        meta = {
            "agent": self.agent.name,
            "url": self.url,
            "remoteTaskId": task_id,
            "contextId": "ctx-1",
            "state": state,
            "rawState": "TASK_STATE_" + state.upper() if task_id else "",
            "card": CARD,
            "message": "",
        }
        return Notice(text=f"task {task_id} {state}", meta={REMOTE_TASK_META: meta})

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        yield self._state("sending", "")
        for index, state in enumerate(self.states):
            yield self._state(state, self.task_id)
            if index == 1:
                for n, chunk in enumerate(self.chunks):
                    meta = {
                        "remoteTaskId": self.task_id,
                        "artifactId": "art-1",
                        "name": "out.md",
                        "mediaType": "text/markdown",
                        "append": n > 0,
                        "lastChunk": n == len(self.chunks) - 1,
                        "parts": [{"text": chunk}],
                    }
                    yield Notice(text=f"artifact out.md: {chunk}", meta={ARTIFACT_META: meta})
        yield TextDelta(text=self.answer)


def replayed_backends(agent: AgentSpec) -> Backend:
    """Remote teammates replayed, every other agent scripted."""
    if agent.a2a is not None:
        return ReplayedRemote(agent)
    return ScriptedBackend(agent)
