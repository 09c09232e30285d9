"""What the parts of a team runtime share: the run's context, and a running chat's.

A :class:`~orchestrator.runtime._team_runtime.TeamRuntime` is one :class:`RunContext`. The
context holds the team, the session, its ids, its recorder and state, the cancel scope of
every running chat, and the parallel budget. It is shared by the collaborators that do the
work:

- the turn loop (:mod:`orchestrator.runtime._turns`);
- approvals and questions (:mod:`orchestrator.runtime._approvals`);
- delegation and handoff (:mod:`orchestrator.runtime._delegation`).

None of them keeps a copy of the run's state: they read :attr:`RunContext.state` and change it
only through :attr:`RunContext.recorder`.

A :class:`ChatContext` is what the tool calls of one running chat need to know about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import trio

from orchestrator.ahp.actions import ChatResponsePartAction, SessionChatAddedAction
from orchestrator.ahp.state import (
    ChatInteractivity,
    ChatSummary,
    ForkChatOrigin,
    SessionStatus,
    SideChatOrigin,
    ToolChatOrigin,
    ToolResultSubagentContent,
    UserChatOrigin,
)
from orchestrator.base import RunError
from orchestrator.core import (
    Action,
    SpanFold,
    TeamState,
    ToolCallRequest,
    ToolOutcome,
    first_line,
    tool_artifact_part,
    tool_result_actions,
)
from orchestrator.spec import AgentSpec, TeamSpec

from ._bus import FactBus
from ._ids import Ids
from ._recorder import Recorder
from ._stream_writer import StreamFlusher
from .tools import McpServers, ToolCallback

__all__: list[str] = []


CANCELLED = "cancelled"
# Why a task ended ``killed``, in words that add to the status rather than repeat it.
STOPPED_ON_REQUEST = "stopped at a client's request"
ENDED_FROM_ABOVE = "the run, or the task that delegated it, ended first"
STOPPED = "stopped with the process: the run resumes at the next start"


@attrs.define(eq=False)
class RunContext:
    """The run the collaborators of a runtime share (see module docstring)."""

    team: TeamSpec
    ids: Ids
    session: str
    state: TeamState
    bus: FactBus
    recorder: Recorder
    # Where the team's command tools post view updates (see _command_tool); None outside a daemon.
    callback: ToolCallback | None
    limiter: trio.CapacityLimiter  # the team's parallel budget (see Slot)
    # Seconds a chat's streamed chunks gather for before they are written (see StreamWriter).
    delta_window: float
    # The team's MCP tool servers; None when its file declares none.
    tool_servers: McpServers | None = None
    # The cancel scope of every running chat, by chat: the coordinator's is the session's.
    scopes: dict[str, trio.CancelScope] = attrs.field(factory=dict)
    # stop(): cancellations record nothing, so the journal holds what a crash would.
    stopping: bool = False
    # The session's trace, folded from its facts while tracing is on (see _tracing); None: off.
    spans: SpanFold | None = None
    # Writes what the chats' rounds gather of their streams, every chat's in one batch; the
    # runtime runs it beside the run's chats (see _stream_writer).
    text_flusher: StreamFlusher = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.text_flusher = StreamFlusher(
            self.recorder, window=self.delta_window, stopping=lambda: self.stopping
        )

    async def record_cancelled(self, actions: Sequence[tuple[str, Action]]) -> None:
        """Record what a cancellation ended, shielded (the batch must land while the
        cancellation is on its way), unless the runtime is stopping (see ``stopping``)."""
        if self.stopping:
            return
        with trio.CancelScope(shield=True):
            await self.recorder.record(actions)

    async def complete_tool_call(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        *,
        success: bool,
        output: str,
        extra: Sequence[tuple[str, Action]] = (),
        content_before: Sequence[ToolResultSubagentContent] = (),
        structured: Any = None,
    ) -> ToolOutcome:
        """Record a tool call's result (with ``extra`` facts, in one batch); its outcome.

        A successful call of a tool the agent lists in ``artifacts`` records its result as
        an artifact too, in the same batch (``structured``: an MCP result's structured
        content, its data)."""
        if success and ctx.agent.records_artifact(request.tool_name):
            part = tool_artifact_part(
                request.tool_call_id, request.tool_name, output, structured=structured
            )
            extra = [*extra, (ctx.chat, ChatResponsePartAction(turn_id=ctx.turn_id, part=part))]
        await self.recorder.record(
            tool_result_actions(
                ctx.chat,
                ctx.turn_id,
                request.tool_call_id,
                request.tool_name,
                success=success,
                output=output,
                extra=extra,
                content_before=content_before,
            )
        )
        return ToolOutcome(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            success=success,
            output=output,
        )

    async def take_slot(self, slot: Slot | None) -> None:
        """Wait for a place in the parallel budget, for ``slot``."""
        assert slot is not None
        assert not slot.held
        await self.limiter.acquire_on_behalf_of(slot)
        slot.held = True

    def release_slot(self, slot: Slot | None) -> None:
        """Give back the place ``slot`` holds, if it holds one."""
        if slot is not None and slot.held:
            self.limiter.release_on_behalf_of(slot)
            slot.held = False


@attrs.define(eq=False)
class Slot:
    """A worker's place in the team's parallel budget (the limiter's borrower).

    A worker that delegates hands its place back while it waits for its own workers (a
    tree deeper than the budget would otherwise wait on itself forever) and takes one again
    before its next model round.
    """

    held: bool = False


@attrs.define
class ChatContext:
    """What a running chat's tool calls need to know about it."""

    chat: str
    agent: AgentSpec
    task: str
    turn_id: str = ""
    round_index: int = 0  # the model round of the turn running now (recorded on tool calls)
    slot: Slot | None = None  # a delegated worker's place in the parallel budget
    steering: list[str] = attrs.field(factory=list)  # injected into the current turn


@attrs.frozen
class TurnResult:
    """What a chat's last turn gave: its answer and the tokens it used."""

    text: str
    input_tokens: int
    output_tokens: int
    # The answer's parsed JSON value when the agent has an output_schema (None otherwise).
    value: Any = None


class TurnFailedError(RunError):
    """A chat's turn ended in error (recorded as ``chat/error``)."""


def is_cancellation(exc: BaseException) -> bool:
    """True for ``trio.Cancelled``, or a group (from a nursery) holding only cancellations."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(is_cancellation(inner) for inner in exc.exceptions)
    return False


def chat_added(
    chat: str,
    agent: AgentSpec,
    title: str,
    origin: ToolChatOrigin | ForkChatOrigin | SideChatOrigin | None,
    now: str,
) -> SessionChatAddedAction:
    """The action that adds ``agent``'s chat to the session (``origin``: None for the
    coordinator's, the delegating tool call for a worker's, the source chat's turn for a
    forked chat or a side chat)."""
    return SessionChatAddedAction(
        summary=ChatSummary(
            resource=chat,
            title=f"{agent.name}: {first_line(title)}",
            status=SessionStatus.IDLE,
            modified_at=now,
            origin=origin or UserChatOrigin(),
            interactivity=ChatInteractivity(agent.interactivity),
        )
    )
