"""The board at run time: agents' board tools, people's requests, and agents started on items.

Theory of operation
-------------------
:class:`BoardKeeper` is the one door for changes to a team's board. An agent's board tool
call (``board.claim``...), a person's request through the Python API or the daemon, and the
runtime itself each build ``team/boardItem*`` actions attributed to their principal and record
them through the recorder. The recorder checks each batch against the state the batches in
flight leave (:func:`~orchestrator.core.board_refusal`), so of two claims made at once the
second is refused: :class:`BoardRefusedError` says why and who holds the item.

:meth:`BoardKeeper.dispatch` runs beside the coordinator. Whenever the board changes it starts
the assignee agent of each item that is ready (assigned to an agent, not started, its
dependencies done), each in a place of the team's parallel budget. The worker chat joins the
team as a delegated worker would, on a task whose ``requested_by`` is the coordinator's chat
and which no tool call made. When the worker ends, its item is done (it completed) or blocked
(it failed, with the error as the reason), unless the worker settled the item itself. An item
assigned to a person waits for a person's request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import structlog
import trio
import trio.lowlevel

from orchestrator.base import IllegalTransitionError, RunError
from orchestrator.core import (
    Action,
    Board,
    BoardAction,
    BoardItem,
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCommented,
    BoardItemCreated,
    BoardItemDone,
    BoardItemStarted,
    BoardItemUnblocked,
    BoardItemUpdated,
    ItemStatus,
    MemberJoined,
    TaskCreated,
    TaskFinished,
    TaskStatus,
    ToolCallRequest,
    ToolOutcome,
    cut_off,
    tool_result_actions,
)
from orchestrator.spec import PERSON_PREFIX, Priority, TeamSpec

from ._context import ChatContext, RunContext, Slot, chat_added
from ._delegation import Delegation

__all__ = ["BoardKeeper", "BoardRefusedError", "board_created", "board_text"]

log = structlog.get_logger("orchestrator.runtime")

AGENT: Final = "agent"
PERSON: Final = "person"
#: Who created the items a team file declares.
TEAM: Final = "team"
_PRIORITIES: Final = frozenset(p.value for p in Priority)


class BoardRefusedError(RunError):
    """The board refused a change (an item someone else claimed, an illegal move...)."""


def board_created(team: TeamSpec) -> list[BoardItemCreated]:
    """The facts that put a team file's items on its board, in file order."""
    if team.board is None:
        return []
    return [
        BoardItemCreated(
            item=item.id,
            title=item.title,
            description=item.description,
            priority=item.priority.value,
            depends_on=item.depends_on,
            assignee=item.assignee,
            assignee_kind=None if item.assignee_kind is None else item.assignee_kind.value,
            by=team.name,
            by_kind=TEAM,
        )
        for item in team.board.items
    ]


def _who(text: str, team: TeamSpec) -> tuple[str, str]:
    """An assignee or a waited-for principal as written: ``@name`` a person, else an agent."""
    if text.startswith(PERSON_PREFIX) and len(text) > 1:
        return text[1:], PERSON
    if text in team.agent_names:
        return text, AGENT
    raise BoardRefusedError(
        f"{text!r} is not an agent of team {team.name!r} (agents: "
        f"{', '.join(team.agent_names)}); write a person as {PERSON_PREFIX}<principal name>"
    )


class BoardKeeper:
    """The board of one run (see module docstring)."""

    def __init__(self, run: RunContext, delegation: Delegation) -> None:
        self.run = run
        self.delegation = delegation
        self._changed = trio.Event()
        self._starting: set[str] = set()  # items whose agent is being started or runs
        self._idle = trio.Event()  # set while nothing is starting or running

    @property
    def board(self) -> Board:
        """The board as the recorded facts leave it."""
        run = self.run.state.run
        return run.board if run is not None else Board()

    # ── changes ────────────────────────────────────────────────────────────────

    def request_actions(
        self, op: str, item: str, fields: Mapping[str, Any], *, by: str, by_kind: str
    ) -> list[BoardAction]:
        """The actions of one request (``op``: claim, comment, block, unblock, done, assign,
        update, move), by ``by``; :class:`BoardRefusedError` for a request that cannot be."""
        team = self.run.team
        current = self.board.item(item)
        match op:
            case "claim":
                return [BoardItemClaimed(item=item, by=by, by_kind=by_kind)]
            case "comment":
                actions: list[BoardAction] = [
                    BoardItemCommented(item=item, by=by, by_kind=by_kind, text=str(fields["text"]))
                ]
                # A comment by whom a blocked item waits for lifts the block.
                if (
                    current is not None
                    and current.status == ItemStatus.BLOCKED
                    and current.waiting_for == by
                    and current.waiting_for_kind == by_kind
                ):
                    actions.append(BoardItemUnblocked(item=item, by=by, by_kind=by_kind))
                return actions
            case "block":
                waiting_for = waiting_kind = None
                if fields.get("waitingFor"):
                    waiting_for, waiting_kind = _who(str(fields["waitingFor"]), team)
                return [
                    BoardItemBlocked(
                        item=item,
                        by=by,
                        by_kind=by_kind,
                        reason=str(fields["reason"]),
                        waiting_for=waiting_for,
                        waiting_for_kind=waiting_kind,
                    )
                ]
            case "unblock":
                return [BoardItemUnblocked(item=item, by=by, by_kind=by_kind)]
            case "done":
                summary = str(fields.get("summary", ""))
                return [BoardItemDone(item=item, by=by, by_kind=by_kind, summary=summary)]
            case "assign" | "update":
                changes: dict[str, Any] = {}
                for key in ("title", "description"):
                    if key in fields:
                        changes[key] = str(fields[key])
                if "priority" in fields:
                    if fields["priority"] not in _PRIORITIES:
                        raise BoardRefusedError(
                            f"unknown priority {fields['priority']!r}; one of: "
                            + ", ".join(p.value for p in Priority)
                        )
                    changes["priority"] = str(fields["priority"])
                if "assignee" in fields:
                    changes["assignee"], changes["assignee_kind"] = _who(
                        str(fields["assignee"]), team
                    )
                reviewing = bool(fields.get("reviewing", False))
                return [
                    BoardItemUpdated(
                        item=item, by=by, by_kind=by_kind, reviewing=reviewing, **changes
                    )
                ]
            case "move":
                return self._move(item, current, str(fields["status"]), by=by, by_kind=by_kind)
        raise BoardRefusedError(f"unknown board operation {op!r}")

    def _move(
        self, item: str, current: BoardItem | None, status: str, *, by: str, by_kind: str
    ) -> list[BoardAction]:
        """A drag between columns, as the board operation it stands for."""
        if current is not None and current.status == status:
            return []
        match status:
            case ItemStatus.CLAIMED:
                return [BoardItemClaimed(item=item, by=by, by_kind=by_kind)]
            case ItemStatus.REVIEWING:
                return [BoardItemUpdated(item=item, by=by, by_kind=by_kind, reviewing=True)]
            case ItemStatus.DONE:
                return [BoardItemDone(item=item, by=by, by_kind=by_kind)]
            case ItemStatus.BLOCKED:
                reason = f"blocked by {by}"
                return [BoardItemBlocked(item=item, by=by, by_kind=by_kind, reason=reason)]
            case ItemStatus.OPEN if current is not None and current.status == ItemStatus.BLOCKED:
                return [BoardItemUnblocked(item=item, by=by, by_kind=by_kind)]
        was = current.status if current is not None else "unknown"
        raise BoardRefusedError(f"item {item!r} cannot move from {was} to {status!r}")

    async def apply(
        self,
        actions: Sequence[BoardAction],
        *,
        channel_actions: Sequence[tuple[str, Action]] = (),
    ) -> Board:
        """Record ``actions`` (with ``channel_actions``, one batch); the board after them.
        :class:`BoardRefusedError` with the board's reason when it refuses one."""
        if self.run.state.run is None:
            raise BoardRefusedError("the run has not started: there is no board yet")
        batch: list[tuple[str, Action]] = [(self.run.session, a) for a in actions]
        try:
            await self.run.recorder.record([*batch, *channel_actions])
        except IllegalTransitionError as exc:
            raise BoardRefusedError(exc.reason) from None
        self.changed()
        return self.board

    async def request(
        self, op: str, item: str, fields: Mapping[str, Any], *, by: str, by_kind: str = PERSON
    ) -> Board:
        """A person's (or any client's) request, recorded as its board facts."""
        return await self.apply(self.request_actions(op, item, fields, by=by, by_kind=by_kind))

    def changed(self) -> None:
        """Wake the dispatcher: the board changed."""
        self._changed.set()

    # ── agents' board tools ──────────────────────────────────────────────────────

    async def tool_call(self, ctx: ChatContext, request: ToolCallRequest) -> ToolOutcome:
        """Run an agent's board tool; a refusal is the call's failed result, saying why."""
        name = request.tool_name
        arguments = request.arguments
        if name == "board.list":
            await trio.lowlevel.checkpoint()
            return await self.run.complete_tool_call(
                ctx, request, success=True, output=board_text(self.board)
            )
        op = name.removeprefix("board.")
        item = str(arguments.get("item", ""))
        fields = dict(arguments)
        if op == "block" and "waiting_for" in fields:
            fields["waitingFor"] = fields.pop("waiting_for")
        if op == "update" and not fields.keys() - {"item"}:
            return await self.run.complete_tool_call(
                ctx, request, success=False, output="board.update: name something to change"
            )
        try:
            actions = self.request_actions(op, item, fields, by=ctx.agent.name, by_kind=AGENT)
            result = _tool_result(op, item)
            # The board's facts and the call's result in one batch: both or neither.
            batch = tool_result_actions(
                ctx.chat,
                ctx.turn_id,
                request.tool_call_id,
                name,
                success=True,
                output=result,
            )
            await self.apply(actions, channel_actions=batch)
        except BoardRefusedError as exc:
            return await self.run.complete_tool_call(
                ctx, request, success=False, output=f"refused: {exc}"
            )
        return ToolOutcome(
            tool_call_id=request.tool_call_id, tool_name=name, success=True, output=result
        )

    # ── agents started on items ──────────────────────────────────────────────────

    async def take_up(self) -> None:
        """After a restart: the items whose agent the stop cut off are started anew.

        No tool call waits for such a worker, so the recovery that resumes delegations does
        not see it. Here, in one batch for each: its turn is ended as interrupted, its task
        reported killed, and its item blocked and unblocked by the team, which leaves it
        open (see core/_board.py) for the dispatcher to start its agent again.
        """
        run = self.run
        for item in list(self.board.items.values()):
            if item.status != ItemStatus.RUNNING or item.task is None:
                continue
            task = run.state.tasks.get(item.task)
            if task is None or task.status is not TaskStatus.RUNNING:
                continue
            now = run.recorder.clock()
            actions: list[tuple[str, Action]] = []
            if task.chat is not None and run.state.chats[task.chat].active_turn is not None:
                actions += cut_off(run.state, task.chat, now=now)
            reason = "interrupted by a restart"
            actions += [
                (
                    run.session,
                    TaskFinished(
                        task=task.task,
                        status=TaskStatus.KILLED,
                        summary=reason,
                        duration_ms=0,
                        chat=task.chat,
                    ),
                ),
                (
                    run.session,
                    BoardItemBlocked(item=item.id, by=run.team.name, by_kind=TEAM, reason=reason),
                ),
                (run.session, BoardItemUnblocked(item=item.id, by=run.team.name, by_kind=TEAM)),
            ]
            await run.recorder.record(actions)
            log.info("board item taken up", item=item.id, task=task.task)

    async def dispatch(self) -> None:
        """Start the assignee agent of each ready item, whenever the board changes (runs
        until cancelled, beside the coordinator)."""
        async with trio.open_nursery() as nursery:
            while True:
                self._changed = trio.Event()
                for item in self.board.ready_for_agents():
                    if item.id not in self._starting:
                        self._starting.add(item.id)
                        nursery.start_soon(self._run_item, item)
                self._update_idle()
                await self._changed.wait()

    async def wait_settled(self) -> None:
        """Return once no agent is started or running on an item and none is ready (what a
        run that ends with its coordinator's turn waits for; people's items may stay open)."""
        while True:
            await trio.lowlevel.checkpoint()
            self._update_idle()
            if self._idle.is_set() and not self.board.ready_for_agents():
                return
            await self._idle.wait()
            # The dispatcher may start the next items: let it look first.
            await trio.lowlevel.checkpoint()

    def _update_idle(self) -> None:
        if self._starting:
            if self._idle.is_set():
                self._idle = trio.Event()
        else:
            self._idle.set()

    async def _run_item(self, item: BoardItem) -> None:
        run = self.run
        try:
            slot = Slot()
            await run.take_slot(slot)
            try:
                await self._work_on(item, slot)
            finally:
                run.release_slot(slot)
        finally:
            self._starting.discard(item.id)
            self.changed()
            self._update_idle()

    async def _work_on(self, item: BoardItem, slot: Slot) -> None:
        run = self.run
        assert item.assignee is not None
        worker = run.team.agent(item.assignee)
        coordinator = run.state.coordinator_chat()
        chat = run.ids.chat()
        task = run.ids.numbered("task")
        title = f"Board item {item.id}: {item.title}"
        if item.comments:  # started anew after a block: what was said since
            title += "\n\nComments:\n" + "\n".join(f"- {c.by}: {c.text}" for c in item.comments)
        if item.description:
            title += f"\n\n{item.description}"
        actions: list[tuple[str, Action]] = [
            (
                run.session,
                TaskCreated(
                    task=task,
                    title=title,
                    agent=worker.name,
                    requested_by=coordinator,
                    status=TaskStatus.RUNNING,
                ),
            ),
            (run.session, chat_added(chat, worker, title, None, run.recorder.clock())),
            (
                run.session,
                MemberJoined(
                    chat=chat, agent=worker.name, role=worker.role, task=task, starts=True
                ),
            ),
            (run.session, BoardItemStarted(item=item.id, task=task, by=worker.name)),
        ]
        try:
            await run.recorder.record(actions)
        except IllegalTransitionError as exc:
            # Someone claimed or moved it meanwhile: it is theirs now.
            log.info("board item not started", item=item.id, reason=exc.reason)
            return
        log.info("board item started", item=item.id, agent=worker.name, task=task)
        status, summary, usage, duration, value = await self.delegation._supervise_worker(
            ChatContext(chat, worker, task, slot=slot), title, own_task=True
        )
        finished: list[tuple[str, Action]] = [
            (
                run.session,
                TaskFinished(
                    task=task,
                    status=status,
                    summary=summary,
                    duration_ms=duration,
                    input_tokens=usage[0],
                    output_tokens=usage[1],
                    chat=chat,
                    value=value,
                ),
            )
        ]
        now = self.board.item(item.id)
        if now is not None and now.task == task and now.status == ItemStatus.RUNNING:
            settle: BoardAction
            if status is TaskStatus.COMPLETED:
                settle = BoardItemDone(item=item.id, by=worker.name, by_kind=AGENT, summary=summary)
            else:
                settle = BoardItemBlocked(
                    item=item.id, by=worker.name, by_kind=AGENT, reason=f"{status}: {summary}"
                )
            finished.append((run.session, settle))
        await run.recorder.record(finished)


def _tool_result(op: str, item: str) -> str:
    words = {
        "claim": "claimed",
        "update": "updated",
        "comment": "commented on",
        "block": "blocked",
        "done": "marked done",
    }
    return f"{words.get(op, op)} item {item!r}"


def board_text(board: Board) -> str:
    """The board as an agent reads it (``board.list``): one block per item, urgent first."""
    if not board.items:
        return "The board is empty."
    ranks = {p.value: p.rank for p in Priority}
    lines = []
    items = sorted(board.items.values(), key=lambda i: ranks.get(i.priority, 2))
    for item in items:
        who = ""
        if item.assignee is not None:
            who = f", for {PERSON_PREFIX if item.assignee_kind == PERSON else ''}{item.assignee}"
        lines.append(f"- {item.id} [{item.status}, {item.priority}{who}]: {item.title}")
        if item.depends_on:
            lines.append(f"  depends on: {', '.join(item.depends_on)}")
        if item.claimed_by is not None:
            lines.append(f"  claimed by: {item.claimed_by}")
        if item.status == ItemStatus.BLOCKED:
            waits = f" (waiting for {item.waiting_for})" if item.waiting_for else ""
            lines.append(f"  blocked: {item.blocked_reason}{waits}")
        lines.extend(f"  {comment.by}: {comment.text}" for comment in item.comments[-3:])
    return "\n".join(lines)
