"""Scripted turns: the steps a scripted agent plays, as a team file declares them.

A ``[[agents.<name>.turns]]`` table holds the steps one agent plays for one user turn; the
parser (:mod:`._parse`) validates every step, so the scripted backend never sees a
malformed one: it can pattern-match the step classes and trust every field.
:meth:`ScriptedTurn.rounds_for` cuts a turn into the model rounds it plays.

Pure: frozen attrs models, no trio and no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, TypeAlias

import attrs

__all__ = [
    "DEFAULT_CHUNKS",
    "AskStep",
    "DelegateStep",
    "Delegation",
    "FailStep",
    "HandoffStep",
    "QuestionKind",
    "SayStep",
    "ScriptedTurn",
    "SleepStep",
    "Step",
    "ThinkStep",
    "ToolStep",
    "UsageStep",
]

QuestionKind: TypeAlias = Literal[
    "text", "number", "integer", "boolean", "single-select", "multi-select"
]

DEFAULT_CHUNKS: Final = 3


@attrs.frozen(kw_only=True)
class _StepBase:
    """What every step has: an optional condition on the chat's task."""

    #: Whether the step requests tool calls, which ends its model round.
    ends_round: ClassVar[bool] = False
    #: The step runs only when the chat's task contains this (case-insensitive).
    when_task_contains: str | None = None

    def applies_to(self, task: str) -> bool:
        """Whether this step runs for a chat whose task is ``task`` (case-insensitive)."""
        return self.when_task_contains is None or (
            self.when_task_contains.casefold() in task.casefold()
        )


@attrs.frozen(kw_only=True)
class SayStep(_StepBase):
    """Stream answer text in ``chunks`` nearly equal :class:`TextDelta` pieces.

    ``{task}`` and ``{outcomes}`` in ``text`` are replaced when it is streamed.
    """

    text: str
    chunks: int = DEFAULT_CHUNKS


@attrs.frozen(kw_only=True)
class ThinkStep(_StepBase):
    """Stream reasoning text, chunked and substituted like :class:`SayStep`."""

    text: str
    chunks: int = DEFAULT_CHUNKS


@attrs.frozen(kw_only=True)
class ToolStep(_StepBase):
    """Request one call of a plain tool; ends the round."""

    ends_round: ClassVar[bool] = True
    tool: str
    # JSON-compatible (checked when parsing); treat as read-only.
    input: Mapping[str, Any] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class Delegation:
    """One worker to start: which agent definition, with which task."""

    agent: str
    task: str
    # When this delegation is reviewed (``review = "always"`` or ``"on_request"``); None: as
    # the coordinator's ``review`` says. Given to the delegate call as its ``review`` input.
    review: str | None = None


@attrs.frozen(kw_only=True)
class DelegateStep(_StepBase):
    """Request one ``delegate`` call per delegation, all in one round; ends the round."""

    ends_round: ClassVar[bool] = True
    delegations: tuple[Delegation, ...]


@attrs.frozen(kw_only=True)
class HandoffStep(_StepBase):
    """Request a ``handoff`` call to ``agent``; ``resume`` gets the task back. Ends the round."""

    ends_round: ClassVar[bool] = True
    agent: str
    reason: str
    resume: str


@attrs.frozen(kw_only=True)
class AskStep(_StepBase):
    """Request an ``ask`` call (a question to the user); ends the round.

    Invariant: ``bool(options) == (kind in {"single-select", "multi-select"})``
    """

    ends_round: ClassVar[bool] = True
    question: str
    kind: QuestionKind = "text"
    options: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class FailStep(_StepBase):
    """Make the round raise ``ScriptedFailure(message)``."""

    message: str


@attrs.frozen(kw_only=True)
class SleepStep(_StepBase):
    """Wait ``seconds`` (finite, >= 0) before the next step."""

    seconds: float


@attrs.frozen(kw_only=True)
class UsageStep(_StepBase):
    """Report token usage (both counts >= 0)."""

    input_tokens: int
    output_tokens: int


Step: TypeAlias = (
    SayStep
    | ThinkStep
    | ToolStep
    | DelegateStep
    | HandoffStep
    | AskStep
    | FailStep
    | SleepStep
    | UsageStep
)


@attrs.frozen(kw_only=True)
class ScriptedTurn:
    """The steps one agent plays for one user turn (a worker's only turn is its task)."""

    steps: tuple[Step, ...]
    # Played instead when the turn's answer did not fit the agent's ``output_schema`` and the
    # model is asked again; empty: the turn's last round is played again.
    # Invariant: not any(step.ends_round for step in self.retry)
    retry: tuple[Step, ...] = ()

    def rounds_for(self, task: str) -> tuple[tuple[Step, ...], ...]:
        """The model rounds this turn plays for ``task``.

        Steps whose ``when_task_contains`` does not match are dropped first; the
        rest is cut after every step that requests tool calls. When the last kept
        step requests tool calls, an empty final round follows (the runtime asks
        for one more round after running the tools). There is always >= 1 round.
        """
        rounds: list[tuple[Step, ...]] = []
        current: list[Step] = []
        for step in self.steps:
            if not step.applies_to(task):
                continue
            current.append(step)
            if step.ends_round:
                rounds.append(tuple(current))
                current = []
        rounds.append(tuple(current))
        return tuple(rounds)
