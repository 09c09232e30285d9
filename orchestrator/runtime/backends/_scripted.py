"""The scripted backend: deterministic, offline model rounds read from the team file.

Theory of operation: an agent's ``[[agents.X.turns]]`` are its answers to
successive user turns (a worker's only turn is its task). For one call of
:meth:`ScriptedBackend.stream_round` the backend

1. picks the turn from the chat history (:func:`turn_index_of`);
2. drops the steps whose ``when_task_contains`` does not match the chat's task
   and cuts the rest into rounds after each tool-requesting step
   (:meth:`ScriptedTurn.rounds_for`);
3. plays round ``context.round_index`` (or, for a round that answers again because the
   answer did not fit the agent's ``output_schema``, the turn's ``retry`` steps, else its
   last round once more): text and reasoning are chunked. Tool
   steps become :class:`ToolCallRequest` events with ids derived from the chat,
   turn, round and position. ``sleep`` sleeps and ``fail`` raises. ``{task}``
   and ``{outcomes}`` are replaced in every text a step sends (said, thought,
   tool input strings, delegated tasks, handoff reason, question, failure).

Everything but sleeping is decided by pure functions of (agent, context), so
the same context always streams the same events, whichever round or restart
asks for it: the backend keeps no state between calls.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Final, assert_never

import trio

from orchestrator.base import RunError
from orchestrator.core import (
    Conversation,
    ModelEvent,
    ReasoningDelta,
    RoundContext,
    TextDelta,
    ToolCallRequest,
    ToolOutcome,
    UsageReport,
)
from orchestrator.spec import (
    AgentSpec,
    AskStep,
    DelegateStep,
    FailStep,
    HandoffStep,
    SayStep,
    SleepStep,
    ThinkStep,
    ToolStep,
    UsageStep,
)

__all__ = [
    "ScriptedBackend",
    "ScriptedFailure",
    "chunk_text",
    "render_json",
    "render_text",
    "tool_call_id",
    "turn_index_of",
]

#: Characters per token of the usage a turn reports when its script declares none.
CHARS_PER_TOKEN: Final = 4


class ScriptedFailure(RunError):  # noqa: N818 (named in the team-file docs: a failure on purpose)
    """A ``{ fail = "..." }`` step ran: the scripted model failed on purpose."""

    def __init__(self, message: str, *, agent: str, chat: str) -> None:
        super().__init__(f"agent {agent!r} failed in {chat}: {message}")
        self.message = message
        self.agent = agent
        self.chat = chat


# --------------------------------------------------------------------------- pure helpers


def turn_index_of(context: RoundContext) -> int:
    """Which user turn of the chat is running, counting from 0.

    ``history`` holds the chat's messages including the user message that
    started the current turn, so the current turn is the number of user
    messages minus one (0 for an empty history: a worker started with its task).
    """
    history = context.history
    if isinstance(history, Conversation):
        users = history.users  # counted as the conversation grew: a chat's long history
    else:
        users = sum(1 for role, _ in history if role == "user")
    return max(users - 1, 0)


def chunk_text(text: str, chunks: int) -> list[str]:
    """Split ``text`` into ``min(chunks, len(text))`` pieces whose sizes differ by <= 1.

    The longer pieces come first; ``"".join(result) == text``; no piece is empty.
    """
    if not text:
        return []
    count = min(max(chunks, 1), len(text))
    size, longer = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < longer else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def outcomes_text(outcomes: Sequence[ToolOutcome]) -> str:
    """The previous round's tool outputs, one per line, in request order."""
    return "\n".join(outcome.output for outcome in outcomes)


def render_text(template: str, context: RoundContext) -> str:
    """Substitute ``{task}`` and ``{outcomes}``; other braces are left as written."""
    return template.replace("{task}", context.task).replace(
        "{outcomes}", outcomes_text(context.outcomes)
    )


def short_chat_id(chat: str) -> str:
    """A short, readable stand-in for a chat URI: the first 8 characters of its id."""
    tail = chat.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].replace("-", "")
    return tail[:8] or "chat"


def tool_call_id(context: RoundContext, turn: int, index: int) -> str:
    """The id of the ``index``-th tool call of the round: unique within the chat (a turn
    run again after a restart cut it off gets an ``-a<attempt>`` suffix)."""
    base = f"{short_chat_id(context.chat)}-t{turn}-r{context.round_index}-c{index}"
    return f"{base}-a{context.attempt}" if context.attempt else base


def default_reply(agent: AgentSpec, turn: int) -> str:
    """What an agent without a script for this turn answers."""
    return f"({agent.name} has no scripted reply for turn {turn + 1}.)"


def estimated_usage(context: RoundContext, said: Sequence[str]) -> UsageReport:
    """The usage reported for a turn whose script declares none.

    input: the history's text; output: ``said``, the text of the turn's say
    and think steps with ``{task}`` substituted and ``{outcomes}`` counted as
    empty (earlier rounds' outcomes are not known to a later round).
    """
    if isinstance(context.history, Conversation):
        history = context.history.characters
    else:
        history = sum(len(text) for _, text in context.history)
    output = sum(len(text) for text in said)
    return UsageReport(
        input_tokens=history // CHARS_PER_TOKEN, output_tokens=output // CHARS_PER_TOKEN
    )


def render_json(value: Any, context: RoundContext) -> Any:
    """A fresh copy of a JSON value with :func:`render_text` applied to every string."""
    if isinstance(value, str):
        return render_text(value, context)
    if isinstance(value, Mapping):
        return {key: render_json(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render_json(item, context) for item in value]
    return value


def _requests(
    step: ToolStep | DelegateStep | HandoffStep | AskStep, context: RoundContext, turn: int
) -> list[ToolCallRequest]:
    """The tool calls a round-ending step asks for, in order."""
    match step:
        case ToolStep(tool=tool, input=tool_input):
            # A fresh copy: the runtime owns the arguments, the spec stays untouched.
            calls = [(tool, render_json(tool_input, context))]
        case DelegateStep(delegations=delegations):
            calls = [
                (
                    "delegate",
                    {"agent": d.agent, "task": render_text(d.task, context)}
                    | ({"review": d.review} if d.review is not None else {}),
                )
                for d in delegations
            ]
        case HandoffStep(agent=agent, reason=reason, resume=resume):
            rendered = render_text(reason, context)
            calls = [("handoff", {"agent": agent, "reason": rendered, "resume": resume})]
        case AskStep(question=question, kind=kind, options=options):
            arguments: dict[str, object] = {
                "question": render_text(question, context),
                "kind": kind,
            }
            if options:
                arguments["options"] = list(options)
            calls = [("ask", arguments)]
        case _:
            assert_never(step)
    return [
        ToolCallRequest(
            tool_call_id=tool_call_id(context, turn, index), tool_name=name, arguments=arguments
        )
        for index, (name, arguments) in enumerate(calls)
    ]


# --------------------------------------------------------------------------- the backend


class ScriptedBackend:
    """A :class:`~orchestrator.core._model_round.Backend` playing one agent's scripted turns."""

    def __init__(self, agent: AgentSpec) -> None:
        self.agent = agent

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        """Stream round ``context.round_index`` of the scripted turn the context is in.

        Raises :class:`ScriptedFailure` at a ``fail`` step and :class:`RunError`
        for a round the script does not have (the previous round requested no
        tool call, so the runtime should have ended the turn).
        """
        await trio.lowlevel.checkpoint()
        turn = turn_index_of(context)
        if turn >= len(self.agent.turns):
            if context.round_index != 0:
                raise self._no_round(context, turn, rounds=1)
            text = default_reply(self.agent, turn)
            yield TextDelta(text=text)
            yield estimated_usage(context, [text])
            return

        scripted = self.agent.turns[turn]
        rounds = scripted.rounds_for(context.task)
        if context.output_retry is not None:
            # Asked again for an answer that did not fit the output schema: the turn's retry
            # steps, or (a deterministic model) its last round once more.
            played = tuple(s for s in scripted.retry if s.applies_to(context.task)) or rounds[-1]
            kept = list(played)
        elif context.round_index >= len(rounds):
            raise self._no_round(context, turn, rounds=len(rounds))
        else:
            played = rounds[context.round_index]
            kept = [step for steps in rounds for step in steps]
        for step in played:
            match step:
                case SayStep(text=template, chunks=chunks):
                    for piece in chunk_text(render_text(template, context), chunks):
                        yield TextDelta(text=piece)
                case ThinkStep(text=template, chunks=chunks):
                    for piece in chunk_text(render_text(template, context), chunks):
                        yield ReasoningDelta(text=piece)
                case SleepStep(seconds=seconds):
                    await trio.sleep(seconds)
                case FailStep(message=message):
                    raise ScriptedFailure(
                        render_text(message, context), agent=self.agent.name, chat=context.chat
                    )
                case UsageStep(input_tokens=input_tokens, output_tokens=output_tokens):
                    yield UsageReport(input_tokens=input_tokens, output_tokens=output_tokens)
                case ToolStep() | DelegateStep() | HandoffStep() | AskStep():
                    for request in _requests(step, context, turn):
                        yield request
                case _:
                    assert_never(step)

        is_last = context.output_retry is not None or context.round_index == len(rounds) - 1
        if is_last and not any(isinstance(step, UsageStep) for step in kept):
            said = [
                step.text.replace("{task}", context.task).replace("{outcomes}", "")
                for step in kept
                if isinstance(step, SayStep | ThinkStep)
            ]
            yield estimated_usage(context, said)

    def _no_round(self, context: RoundContext, turn: int, *, rounds: int) -> RunError:
        return RunError(
            f"agent {self.agent.name!r} in {context.chat}: turn {turn} has {rounds} "
            f"round(s) for this task, round {context.round_index} was asked for"
        )
