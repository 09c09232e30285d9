"""A team runtime on a memory log, and helpers to read back what it recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import attrs
import pytest
import trio
import trio.testing

from orchestrator.ahp import summary_of
from orchestrator.core import Backend, Fact, TaskStarted, TeamState, build_graph, task_started
from orchestrator.runtime import DEFAULT_DELTA_WINDOW, Ids, MemoryFactLog, RunOutcome, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, TeamSpec, parse_team
from tests.support.teams import fanout as fanout_toml


def fanout(
    *, budget: int = 3, worker_steps: str = '{ say = "did {task}" }', worker_extra: str = ""
) -> TeamSpec:
    return parse_team(
        fanout_toml(budget=budget, worker_steps=worker_steps, worker_extra=worker_extra),
        file="fanout.toml",
    )


A = TypeVar("A")


@attrs.frozen
class Recorded(Generic[A]):
    """A recorded fact whose action is known to be an ``A``."""

    sequence: int
    channel: str
    action: A


HARNESSES: list[Harness] = []


class Harness:
    """A runtime on a memory log, with helpers to read back what it recorded."""

    def __init__(
        self,
        team: TeamSpec,
        *,
        backends: Callable[[AgentSpec], Backend] = ScriptedBackend,
        conversation: bool = False,
        delta_window: float = DEFAULT_DELTA_WINDOW,
    ) -> None:
        HARNESSES.append(self)
        self.log = MemoryFactLog()
        self.runtime = TeamRuntime(
            team,
            backends=backends,
            factlog=self.log,
            ids=Ids(deterministic=True),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            conversation=conversation,
            delta_window=delta_window,
        )

    @property
    def facts(self) -> list[Fact]:
        return self.log.facts

    def actions(self, cls: type[A]) -> list[A]:
        """The actions of type ``cls``; for :class:`TaskStarted`, each task's start, whether
        its own fact or the ``team/memberJoined`` that starts it (issue 35)."""
        return [a.action for a in self.facts_of(cls)]

    def facts_of(self, cls: type[A]) -> list[Recorded[A]]:
        if cls is TaskStarted:
            return [
                Recorded(f.sequence, f.channel, started)  # type: ignore[arg-type]
                for f in self.facts
                if (started := task_started(f.action)) is not None
            ]
        return [
            Recorded(f.sequence, f.channel, f.action)
            for f in self.facts
            if isinstance(f.action, cls)
        ]

    def worker_chats(self) -> list[str]:
        return [a.chat for a in self.actions(TaskStarted)]

    def finished(self) -> TeamState:
        """Checks that hold after every scenario; returns a fresh fold of the log."""
        sequences = [f.sequence for f in self.facts]
        assert sequences == list(range(1, len(sequences) + 1)), "sequence must have no gaps"
        violations = build_graph(self.facts).check()
        assert violations == [], violations
        folded = TeamState.fold(self.runtime.session, self.facts)
        assert folded.chats == self.runtime.state.chats, "live state must equal a fold of the log"
        if not self.facts:
            return folded  # the run was refused before it recorded anything
        assert folded.session is not None
        for chat, state in folded.chats.items():
            entry = next(c for c in folded.session.chats if c.resource == chat)
            assert entry == summary_of(state), f"summary of {chat} drifted from its state"
        return folded


async def run_to_end(harness: Harness, prompt: str = "Ship it") -> RunOutcome:
    with trio.fail_after(600):
        return await harness.runtime.run(prompt)


async def wait_for(harness: Harness, predicate: Callable[[Fact], bool]) -> Fact:
    """Wait until a recorded fact satisfies ``predicate`` (polling at checkpoints)."""
    with trio.fail_after(600):
        while True:
            for fact in harness.facts:
                if predicate(fact):
                    return fact
            await trio.sleep(0.01)


@pytest.fixture
def every_scenario_is_checked() -> Iterator[None]:
    """After the test, each run it made passes :meth:`Harness.finished`: no sequence gaps,
    the delegation graph's consistency rules, live state equal to a fold of the log."""
    HARNESSES.clear()
    yield
    for harness in HARNESSES:
        harness.finished()
