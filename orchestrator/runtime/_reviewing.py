"""Reviews: a reviewed worker's outcome checked by its reviewer before its delegation ends.

Theory of operation
-------------------
A worker whose agent has a reviewer (spec/_review.py) finished its turn. Each round ``k``:

1. the reviewer's chat (spawned on the first round, by the same tool call as the worker: the
   ``delegate`` call, or the coordinator's ``review`` call) runs a turn on the outcome. Its
   turn's start is recorded with ``team/reviewRequested`` and ``team/reviewStarted`` in one
   batch, so the reviewer chat's ``k``-th turn *is* round ``k``'s request;
2. its answer fits the verdict schema (its ``output_schema``); a reviewer whose turn fails
   (it crashed, timed out, was stopped) gives a ``failed`` verdict with the error;
3. on ``changes_requested`` with rounds left, the worker's next turn gets the fixes. Its start
   is recorded with round ``k``'s ``team/reviewCompleted``, so worker turn ``k + 1`` exists
   exactly when round ``k`` asked for changes. Otherwise the last verdict is recorded with the
   delegation's report (the task's end and the delegate call's result), in one batch.

So, in a delegation reviewed ``always``, round ``k`` reviews the worker's turn ``k``, and what
a stop left is read from the chats' turns alone: after a restart the worker's last turn goes
on (or is its result), then round ``W`` (the worker's turns) runs, taken up where the
reviewer's chat stood if that chat has ``W`` turns already.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import structlog

from orchestrator.ahp.actions import ChatToolCallContentChangedAction
from orchestrator.ahp.state import ToolChatOrigin, ToolResultSubagentContent
from orchestrator.base import compact_dumps
from orchestrator.core import (
    Action,
    MemberJoined,
    ReviewCompleted,
    ReviewRequested,
    ReviewStarted,
    TaskStatus,
    ToolCallRequest,
    is_interrupted,
    tool_call_of,
)
from orchestrator.spec import AgentSpec, verdict_of

from ._context import ChatContext, RunContext, chat_added

__all__: list[str] = []

log = structlog.get_logger("orchestrator.runtime")


@attrs.frozen(kw_only=True)
class WorkerRun:
    """How a chat's turn ended (what :meth:`Delegation._supervise_worker` returns)."""

    status: TaskStatus
    summary: str
    usage: tuple[int, int]
    duration: int
    value: Any = None

    def outcome(self) -> str:
        """The answer as a reviewer reads it: the parsed value as JSON, else the text."""
        return self.summary if self.value is None else compact_dumps(self.value)


#: Runs one turn of a chat behind its error barrier: (ctx, message text, resume, begun facts).
Supervise = Callable[[ChatContext, str, bool, Sequence[tuple[str, Action]]], Awaitable[WorkerRun]]


@attrs.frozen(kw_only=True)
class ReviewEnd:
    """What the reviews of a delegation came to: the worker's last run, the last verdict (to
    record with the delegation's report) and the reviewer's chat, as the call's content."""

    worker: WorkerRun
    verdict: ReviewCompleted | None
    rounds: int
    reviewer: ToolResultSubagentContent | None


def review_id(task: str, round_: int) -> str:
    """A review's id: its task and round (``task-1-review-2``), so a restart names it again."""
    return f"{task}-review-{round_}"


def review_line(verdict: ReviewCompleted, *, reviewer: str, rounds: int, limit: int) -> str:
    """What the coordinator reads of the last verdict, after the worker's outcome."""
    line = f"[review by {reviewer}, {verdict.verdict}, round {rounds} of {limit}]"
    if verdict.summary:
        line += f" {verdict.summary}"
    if verdict.error:
        line += f" {verdict.error}"
    if verdict.fixes:
        line += " Fixes asked: " + "; ".join(verdict.fixes)
    return line


def turn_count(run: RunContext, chat: str | None) -> int:
    """How many turns a chat has begun (ended ones and the active one), a turn a stop cut
    off and its run again (a restart's) counting once."""
    state = run.state.chats.get(chat) if chat is not None else None
    if state is None:
        return 0
    kept = sum(1 for turn in state.turns if not is_interrupted(turn))
    last = state.turns[-1] if state.turns else None
    rerun = state.active_turn is None and last is not None and is_interrupted(last)
    return kept + (1 if state.active_turn is not None or rerun else 0)


def reviewer_chat(run: RunContext, task: str, reviewer: str) -> str | None:
    """The chat reviewing ``task`` (a member of the team working on it as the reviewer)."""
    return next(
        (m.chat for m in run.state.members.values() if m.task == task and m.agent == reviewer),
        None,
    )


class Reviewing:
    """Runs the review rounds of one run's reviewed delegations (see module docstring)."""

    def __init__(self, run: RunContext, supervise: Supervise) -> None:
        self.run = run
        self._supervise = supervise

    async def rounds(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        worker_ctx: ChatContext,
        worker_run: WorkerRun,
        *,
        first_round: int,
        last_round: int,
        resume: bool,
    ) -> ReviewEnd:
        """Review ``worker_run`` (the worker's turn ``first_round``), then each fixed turn,
        until a verdict other than ``changes_requested`` or round ``last_round``.

        Args:
            ctx: The coordinator's chat, whose call (``request``) the reviews belong to.
            request: The ``delegate`` or ``review`` call.
            worker_ctx: The reviewed worker's chat.
            worker_run: The worker's outcome to review first.
            first_round: The round it is.
            last_round: The last round there may be.
            resume: The first round may have begun before a restart: take it up.
        """
        run = self.run
        worker = worker_ctx.agent
        reviewer = run.team.reviewer_of(worker.name)
        assert reviewer is not None, f"{worker.name} has no reviewer"
        task = worker_ctx.task
        title = run.state.tasks[task].title
        chat = reviewer_chat(run, task, reviewer.name)
        content: ToolResultSubagentContent | None = None
        total = (worker_run.usage[0], worker_run.usage[1])
        round_ = first_round
        while True:
            if chat is None:
                chat, content = await self._spawn(ctx, request, reviewer, task, title)
            reviewer_ctx = ChatContext(chat, reviewer, task)
            review = review_id(task, round_)
            # The reviewer's k-th turn is round k: begun before a restart, it is taken up.
            taken_up = resume and turn_count(run, chat) >= round_
            resume = False
            begun: list[tuple[str, Action]] = []
            if not taken_up:
                begun = [
                    (
                        run.session,
                        ReviewRequested(
                            review=review,
                            task=task,
                            worker_chat=worker_ctx.chat,
                            reviewer=reviewer.name,
                            round=round_,
                            requested_by=ctx.chat,
                            tool_call_id=request.tool_call_id,
                        ),
                    ),
                    (run.session, ReviewStarted(review=review, chat=chat)),
                ]
            judged = await self._supervise(
                reviewer_ctx,
                _review_prompt(worker, title, worker_run.outcome(), round_, last_round),
                taken_up,
                begun,
            )
            verdict = _verdict(review, judged)
            log.info(
                "review completed",
                review=review,
                verdict=verdict.verdict,
                worker=worker_ctx.chat,
                reviewer=chat,
            )
            if verdict.verdict != "changes_requested" or round_ >= last_round:
                worker_run = attrs.evolve(worker_run, usage=total)
                return ReviewEnd(
                    worker=worker_run, verdict=verdict, rounds=round_, reviewer=content
                )
            worker_run = await self._supervise(
                worker_ctx,
                _fixes_prompt(reviewer, verdict.fixes),
                False,
                [(run.session, verdict)],
            )
            total = (total[0] + worker_run.usage[0], total[1] + worker_run.usage[1])
            if worker_run.status is not TaskStatus.COMPLETED:
                # The worker failed its fixes: the delegation ends with that, its last verdict
                # already recorded.
                return ReviewEnd(
                    worker=attrs.evolve(worker_run, usage=total),
                    verdict=None,
                    rounds=round_,
                    reviewer=content,
                )
            round_ += 1

    async def _spawn(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        reviewer: AgentSpec,
        task: str,
        title: str,
    ) -> tuple[str, ToolResultSubagentContent]:
        """Add the reviewer's chat, spawned by the coordinator's call as the worker was."""
        run = self.run
        chat = run.ids.chat()
        content = ToolResultSubagentContent(
            resource=chat, title=f"review: {title}", agent_name=reviewer.name
        )
        call = tool_call_of(run.state, ctx.chat, request.tool_call_id)
        before = tuple(
            c
            for c in (getattr(call, "content", None) or ())
            if isinstance(c, ToolResultSubagentContent)
        )
        await run.recorder.record(
            [
                (
                    run.session,
                    chat_added(
                        chat,
                        reviewer,
                        f"review: {title}",
                        ToolChatOrigin(chat=ctx.chat, tool_call_id=request.tool_call_id),
                        run.recorder.clock(),
                    ),
                ),
                (
                    run.session,
                    MemberJoined(chat=chat, agent=reviewer.name, role=reviewer.role, task=task),
                ),
                (
                    ctx.chat,
                    ChatToolCallContentChangedAction(
                        turn_id=ctx.turn_id,
                        tool_call_id=request.tool_call_id,
                        content=(*before, content),
                    ),
                ),
            ]
        )
        return chat, content


def _verdict(review: str, judged: WorkerRun) -> ReviewCompleted:
    """The review's end: the reviewer's verdict, or ``failed`` with why it gave none."""
    if judged.status is TaskStatus.COMPLETED and isinstance(judged.value, dict):
        verdict = verdict_of(judged.value)
        return ReviewCompleted(
            review=review,
            verdict=verdict.verdict,
            summary=verdict.summary,
            fixes=verdict.fixes,
            evidence=verdict.evidence,
        )
    error = judged.summary or f"the reviewer's turn ended {judged.status}"
    return ReviewCompleted(
        review=review, verdict="failed", error=f"the reviewer gave no verdict: {error}"
    )


def _review_prompt(worker: AgentSpec, title: str, outcome: str, round_: int, last: int) -> str:
    return (
        f"Review the work of {worker.name} (round {round_} of at most {last}).\n\n"
        f"Its task: {title}\n\nIts answer:\n{outcome}\n\n"
        "Answer with a verdict: passed, changes_requested (with the fixes to make) or failed, "
        "and your evidence (quotes, tool results, links)."
    )


def _fixes_prompt(reviewer: AgentSpec, fixes: Sequence[str]) -> str:
    asked = "\n".join(f"- {fix}" for fix in fixes) or "- (no fix named: improve the work)"
    return (
        f"Your reviewer ({reviewer.name}) asks for changes:\n{asked}\n\n"
        "Make them, and answer with your whole result again."
    )
