"""A round's tool calls: recorded as the model asks for them, checked, and run.

Theory of operation
-------------------
The turn loop (:mod:`orchestrator.runtime._turns`) streams a model round into facts; each tool
call the round asks for comes here twice. As it is requested, :meth:`ToolCalls.checked` checks
its input against its tool's schema. :meth:`ToolCalls.submit_ready` submits it up to
``running`` or ``pending-confirmation``. A call whose input does not fit fails without asking
anyone's approval. Once the round's stream ends, :meth:`ToolCalls.run_round` runs the round's
calls in parallel in a nursery owned by the turn. A call is dispatched by name:

- gated calls wait for their approval, and ``ask`` for its answer
  (:mod:`orchestrator.runtime._approvals`);
- ``delegate`` and ``handoff`` run another agent's chat (:mod:`orchestrator.runtime._delegation`);
- command tools run their program;
- Python tools run their function (:mod:`orchestrator.runtime.tools._python_tool`);
- an MCP server's tool (``mcp.<server>/<tool>``) is called on its server;
- every other tool answers its scripted result.

The tools a model is offered (:meth:`ToolCalls.offered`) are made once per agent, and again when
an MCP server's listing changes (:attr:`McpServers.version
<orchestrator.runtime.tools._mcp.McpServers.version>`).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from contextlib import ExitStack

import structlog
import trio

from orchestrator.ahp.actions import ChatToolCallReadyAction, ChatToolCallStartAction
from orchestrator.ahp.state import (
    ToolCallConfirmationReason,
    ToolCallPendingConfirmationState,
    ToolCallRunningState,
)
from orchestrator.base import RunError, evolve
from orchestrator.core import (
    ASKED_BY_META,
    INTERRUPTED_SUMMARY,
    ROUND_META,
    Action,
    ResumePoint,
    ToolCallRequest,
    ToolOutcome,
    member_name,
    pending_approval_of,
    subagent_of,
    task_of_call,
    tool_call_of,
)
from orchestrator.spec import (
    BOARD_TOOLS,
    AgentSpec,
    ToolDefinition,
    check_tool_input,
    command_input_problem,
    mcp_tool_ref,
    tool_definitions,
)

from ._approvals import Approvals, summary
from ._board import BoardKeeper
from ._context import ChatContext, RunContext
from ._delegation import Delegation, Turnstile
from ._recorder import PendingBatch
from ._tracing import in_span
from .tools import (
    REDACTED_TOKEN,
    ResolvedPythonTool,
    command_environment,
    run_command,
    run_python_tool,
)

__all__: list[str] = []


class ToolCalls:
    """The tool calls of one run's chats: the tools each agent is offered, each call's
    record as the model asks for it, and the dispatch of a round's calls."""

    def __init__(
        self,
        run: RunContext,
        approvals: Approvals,
        delegation: Delegation,
        *,
        python_tools: Mapping[str, ResolvedPythonTool] | None = None,
    ) -> None:
        self.run = run
        self.approvals = approvals
        self.delegation = delegation
        self._python_tools = dict(python_tools or {})
        # The team's board, whose keeper runs the board tools (set by the runtime; None: none).
        self.board: BoardKeeper | None = None
        # The tools whose definitions are known only now (see spec tool_definitions).
        self._discovered: dict[str, ToolDefinition] = {
            name: tool.definition for name, tool in self._python_tools.items()
        }
        # The tools offered to each agent, made for the servers' listing of this version.
        self._tool_cache: dict[str, tuple[ToolDefinition, ...]] = {}
        self._tools_version = 0

    def offered(self, agent: AgentSpec) -> tuple[ToolDefinition, ...]:
        """The tools ``agent``'s model is offered, made again when a server's listing changed."""
        servers = self.run.tool_servers
        if servers is not None and servers.version != self._tools_version:
            self._tool_cache.clear()
            self._tools_version = servers.version
        tools = self._tool_cache.get(agent.name)
        if tools is None:
            discovered = dict(self._discovered)  # the Python tools'
            if servers is not None:
                discovered.update(servers.definitions())
            tools = tool_definitions(self.run.team, agent, discovered)
            self._tool_cache[agent.name] = tools
        return tools

    def start_action(
        self,
        ctx: ChatContext,
        tool_call_id: str,
        tool_name: str,
        request: ToolCallRequest | None = None,
    ) -> ChatToolCallStartAction:
        """The start of a call (``request`` is None while its input is streaming)."""
        return ChatToolCallStartAction(
            turn_id=ctx.turn_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            display_name=_display_name(tool_name, request),
            # Which model round asked for it: a turn resumed after a restart goes on from
            # the round after its last one.
            meta={ROUND_META: ctx.round_index},
        )

    def submit_ready(
        self, ctx: ChatContext, request: ToolCallRequest, *, started: bool
    ) -> PendingBatch:
        """Submit a requested tool call up to ``running`` or ``pending-confirmation``.

        ``started``: the backend streamed the call's input (``chat/toolCallStart`` and its
        deltas are recorded); otherwise the start goes in the same batch as the ready.
        A call whose input cannot run needs no approval: it will not run.
        """
        if request.input_error is not None:
            tool_input = (
                request.raw_input
                if request.raw_input is not None
                else json.dumps(request.arguments, sort_keys=True, ensure_ascii=False)
            )
            needs_approval = False
        else:
            tool_input = json.dumps(request.arguments, sort_keys=True, ensure_ascii=False)
            needs_approval = ctx.agent.needs_approval_for(request.tool_name)
        meta = None
        asker = (
            member_name(self.run.state, ctx.chat)
            if needs_approval or (request.tool_name == "ask" and request.input_error is None)
            else None
        )
        if asker is not None:
            # Put to a person: say who asks, and for what task (the ready's _meta replaces
            # the start's, so the round goes too).
            meta = {ROUND_META: ctx.round_index, ASKED_BY_META: asker.meta()}
        ready = ChatToolCallReadyAction(
            turn_id=ctx.turn_id,
            tool_call_id=request.tool_call_id,
            meta=meta,
            invocation_message=_invocation(request),
            tool_input=tool_input,
            confirmation_title=f"Run {request.tool_name}" if needs_approval else None,
            confirmed=None if needs_approval else ToolCallConfirmationReason.NOT_NEEDED,
        )
        batch: list[tuple[str, Action]] = [(ctx.chat, ready)]
        if not started:
            start = self.start_action(ctx, request.tool_call_id, request.tool_name, request)
            batch.insert(0, (ctx.chat, start))
        return self.run.recorder.submit(batch)

    def checked(self, ctx: ChatContext, request: ToolCallRequest) -> ToolCallRequest:
        """``request``, with its ``input_error`` set when its input does not fit its tool's
        schema.

        It is checked before the call is recorded. So a call that cannot run is never put to a
        person for approval. A backend's own check (an OpenAI model's) comes first.

        Command, Python and MCP tools declare schemas; the team's tools (``delegate``,
        ``handoff``, ``ask``) are checked as they run, and a plain tool takes any object.
        """
        name = request.tool_name
        if request.input_error is not None or not ctx.agent.may_call(name):
            return request  # already refused, or refused with its own message as it runs
        problem: str | None = None
        python = self._python_tools.get(name)
        command = self.run.team.command_tool(name)
        if python is not None:
            problem = check_tool_input((python.definition,), name, request.arguments)
        elif command is not None:
            problem = command_input_problem(command, request.arguments)
        elif mcp_tool_ref(name) is not None and self.run.tool_servers is not None:
            offered = self.offered(ctx.agent)
            # A tool the server does not list (now) is left to its call: the answer says why.
            if any(t.name == name for t in offered):
                problem = check_tool_input(offered, name, request.arguments)
        return request if problem is None else evolve(request, input_error=problem)

    async def run_round(
        self,
        ctx: ChatContext,
        requests: Sequence[ToolCallRequest],
        *,
        resumed: ResumePoint | None = None,
    ) -> tuple[ToolOutcome, ...]:
        """Run one round's tool calls in parallel; their outcomes in request order.

        ``resumed``: the round was parked when the process stopped; the calls it had done
        keep their outcomes, the others are taken up where they stood.
        """
        done = resumed.done if resumed is not None else {}
        requests = [r for r in requests if r.tool_call_id not in done] if done else requests
        delegations = sum(1 for r in requests if r.tool_name == "delegate")
        turnstile = Turnstile(delegations)
        results: list[ToolOutcome | None] = [None] * len(requests)
        # While its own workers run, a delegated worker waits: its place in the budget is
        # theirs to use (see Slot).
        lending = ctx.slot is not None and ctx.slot.held and delegations > 0
        if lending:
            self.run.release_slot(ctx.slot)
        async with trio.open_nursery() as nursery:
            order = itertools.count()
            for index, request in enumerate(requests):
                position = next(order) if request.tool_name == "delegate" else None
                nursery.start_soon(
                    self._run_tool,
                    ctx,
                    request,
                    results,
                    index,
                    turnstile,
                    position,
                    resumed is not None,
                )
        if lending:
            await self.run.take_slot(ctx.slot)
        if resumed is not None:
            outcomes = {r.tool_call_id: r for r in results if r is not None} | dict(done)
            return tuple(
                outcomes[r.tool_call_id] for r in resumed.requests if r.tool_call_id in outcomes
            )
        return tuple(r for r in results if r is not None)

    async def _run_tool(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        results: list[ToolOutcome | None],
        index: int,
        turnstile: Turnstile,
        position: int | None,
        resumed: bool = False,
    ) -> None:
        """:meth:`_run_call` in the call's span (see :func:`~._tracing.in_span`)."""
        with in_span(self.run.spans, ctx.chat, "tool", ctx.chat, request.tool_call_id):
            await self._run_call(ctx, request, results, index, turnstile, position, resumed)

    async def _run_call(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        results: list[ToolOutcome | None],
        index: int,
        turnstile: Turnstile,
        position: int | None,
        resumed: bool = False,
    ) -> None:
        """Run one tool call to completion, recording its result; never raises but Cancelled.

        ``position`` is the call's place among the round's delegations (None for other tools).
        ``resumed``: the call was recorded before a restart; it goes on from where it stood.
        """
        tool = request.tool_name
        if request.input_error is not None:
            results[index] = await self.run.complete_tool_call(
                ctx, request, success=False, output=request.input_error
            )
            if position is not None:
                turnstile.passed(position)
            return
        gated = ctx.agent.needs_approval_for(tool)
        was_running = False
        call = tool_call_of(self.run.state, ctx.chat, request.tool_call_id) if resumed else None
        if resumed:
            gated = isinstance(call, ToolCallPendingConfirmationState)
            was_running = isinstance(call, ToolCallRunningState)
        try:
            if not ctx.agent.may_call(tool):
                raise RunError(f"agent {ctx.agent.name!r} has no tool {tool!r}")
            if gated:
                if position is not None:
                    turnstile.passed(position)  # a gated delegation keeps no one waiting
                pending = (
                    pending_approval_of(self.run.state, ctx.chat, request.tool_call_id)
                    if resumed
                    else None
                )
                approved, reason = await self.approvals.await_approval(
                    ctx, request, pending=pending
                )
                if not approved:
                    results[index] = ToolOutcome(
                        tool_call_id=request.tool_call_id,
                        tool_name=tool,
                        success=False,
                        output=reason,
                    )
                    return
            if tool == "delegate":
                assert position is not None
                task = (
                    task_of_call(self.run.state, ctx.chat, request.tool_call_id)
                    if resumed
                    else None
                )
                outcome = await self.delegation.delegate(
                    ctx, request, turnstile, position, task=task
                )
            elif tool == "handoff":
                specialist = subagent_of(call) if call is not None else None
                outcome = await self.delegation.handoff(ctx, request, specialist=specialist)
            elif tool == "ask":
                outcome = await self.approvals.ask(ctx, request, resumed=resumed)
            elif tool in BOARD_TOOLS and self.board is not None and not was_running:
                outcome = await self.board.tool_call(ctx, request)
            elif tool == "review":
                outcome = await self.delegation.review(ctx, request, resumed=resumed)
            elif was_running:
                # It may or may not have run before the stop: never run a tool twice.
                outcome = await self.run.complete_tool_call(
                    ctx, request, success=False, output=f"{tool} was {INTERRUPTED_SUMMARY}"
                )
            else:
                outcome = await self._plain_tool(ctx, request)
        except RunError as exc:
            # A refused call (unknown agent, tool not allowed...) ends as a failed tool call.
            outcome = await self.run.complete_tool_call(
                ctx, request, success=False, output=str(exc)
            )
        finally:
            if position is not None:
                turnstile.passed(position)
        results[index] = outcome

    async def _plain_tool(self, ctx: ChatContext, request: ToolCallRequest) -> ToolOutcome:
        """A command tool runs its program, a Python tool its function, an MCP tool is called
        on its server; any other plain tool answers its scripted result."""
        if mcp_tool_ref(request.tool_name) is not None:
            return await self._mcp_tool(ctx, request)
        python = self._python_tools.get(request.tool_name)
        if python is not None:
            # It checks the input against its schema first, as below for a command tool.
            with structlog.contextvars.bound_contextvars(tool_call=request.tool_call_id):
                called = await run_python_tool(python, request.arguments)
            return await self.run.complete_tool_call(
                ctx, request, success=called.success, output=called.output
            )
        command = self.run.team.command_tool(request.tool_name)
        if command is None:
            await trio.lowlevel.checkpoint()
            return await self.run.complete_tool_call(
                ctx, request, success=True, output=ctx.agent.tool_result(request.tool_name)
            )
        problem = command_input_problem(command, request.arguments)
        if problem is not None:
            # The program never sees input its schema refuses: the call fails, and the
            # model reads why in its next round (as a delegate with bad input does).
            await trio.lowlevel.checkpoint()
            return await self.run.complete_tool_call(ctx, request, success=False, output=problem)
        callback = self.run.callback
        with ExitStack() as call:
            # Under a daemon, the call's own token: good for this session, until the call ends.
            token = (
                None
                if callback is None
                else call.enter_context(callback.call_token(self.run.session))
            )
            env = command_environment(
                os.environ,
                command,
                session=self.run.session,
                tool_call_id=request.tool_call_id,
                callback=callback,
                token=token,
            )
            with structlog.contextvars.bound_contextvars(tool_call=request.tool_call_id):
                result = await run_command(command, request.arguments, env)
        output = result.output
        if token is not None:  # a program that prints its environment shows it
            output = output.replace(token, REDACTED_TOKEN)
        return await self.run.complete_tool_call(
            ctx, request, success=result.success, output=output
        )

    async def _mcp_tool(self, ctx: ChatContext, request: ToolCallRequest) -> ToolOutcome:
        """Call an MCP server's tool, its input first checked against the server's schema."""
        servers = self.run.tool_servers
        name = request.tool_name
        if servers is None:  # the parser refuses an MCP tool without its server
            raise RunError(f"{name}: this team declares no MCP servers")
        offered = self.offered(ctx.agent)
        # A tool the server does not list (now) is left to its call: the answer says why.
        if any(t.name == name for t in offered):
            problem = check_tool_input(offered, name, request.arguments)
            if problem is not None:
                await trio.lowlevel.checkpoint()
                return await self.run.complete_tool_call(
                    ctx, request, success=False, output=problem
                )
        with structlog.contextvars.bound_contextvars(tool_call=request.tool_call_id):
            result = await servers.call(name, request.arguments)
        return await self.run.complete_tool_call(
            ctx, request, success=result.success, output=result.output, structured=result.structured
        )


def _display_name(tool_name: str, request: ToolCallRequest | None) -> str:
    """How a UI names a call; ``request`` is None while the call's input is streaming."""
    if tool_name == "delegate":
        return f"Delegate to {request.arguments.get('agent', '?')}" if request else "Delegate"
    if tool_name == "handoff":
        return f"Hand off to {request.arguments.get('agent', '?')}" if request else "Hand off"
    if tool_name == "ask":
        return "Ask the user"
    ref = mcp_tool_ref(tool_name)
    if ref is not None:
        return f"{ref.tool.replace('_', ' ').capitalize()} ({ref.server})"
    return tool_name.replace("_", " ").capitalize()


def _invocation(request: ToolCallRequest) -> str:
    if request.tool_name == "delegate":
        return f"{request.arguments.get('agent', '?')}: {request.arguments.get('task', '')}"
    if request.tool_name == "ask":
        return str(request.arguments.get("question", ""))
    return f"{request.tool_name}({summary(request)})"
