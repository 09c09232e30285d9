"""What ``orchestrator run`` shows a person: a live team tree, or plain progress lines.

The view reads the run's own :class:`TeamState` (the runtime's, after each commit): it
folds nothing itself, so a fact is folded once in the process, not once more for the
screen. On a terminal it draws a tree of the team (who runs, waits, needs approval, is
done) with ``rich.live``. The frame rate is bounded, however fast the facts come: at most
``REFRESH_PER_SECOND``, and only when something changed. Each frame fits the terminal's height:
a large team shows who needs a look first and counts the rest. So a frame costs about the same
with 30 teammates or 3,000. The last frame, left on the screen, draws everyone.
Elsewhere (a pipe, CI, a log file) it prints one line per notable fact, in order. The lines of
the facts that came together are written at once. It names agents from that state, which is as
new as the fact or newer: names are never taken back.
Approvals and questions routed to the user are answered at a prompt (``--approve ask``), or
decided by policy (``auto`` / ``deny``).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TextIO

import trio
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text
from rich.tree import Tree

from orchestrator.ahp.actions import ChatInputRequestedAction
from orchestrator.ahp.state import (
    ChatInputBooleanQuestion,
    ChatInputMultiSelectQuestion,
    ChatInputNumberQuestion,
    ChatInputQuestion,
    ChatInputResponseKind,
    ChatInputSingleSelectQuestion,
    ToolChatOrigin,
)
from orchestrator.base import RunError
from orchestrator.core import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    HandoffRecorded,
    MemberJoined,
    MemberStatus,
    ReviewCompleted,
    ReviewRequested,
    TaskCreated,
    TaskFinished,
    TaskRecord,
    TaskStatus,
    TeamState,
    denied_calls,
    member_name,
    party_name,
)
from orchestrator.runtime import TeamRuntime

from ._approval_mode import ApprovalMode
from ._conventions import Reporter
from ._line_editor import LineBuffer, TerminalKeys, Typed

__all__ = ["TeamConsole", "asker_text", "describe_fact", "render_tree"]


#: How often, at most, the live tree is redrawn: about as often as an eye follows a
#: status view change, and each frame is bounded by the terminal's height (see
#: render_tree), so drawing costs at most a few milliseconds a second, whatever the team's
#: size and however fast its facts come. A frame is drawn only when something changed.
REFRESH_PER_SECOND: Final = 10
#: The most of the process's time the live view may take: a frame that took ``d`` seconds
#: to draw is followed by at least ``d / DRAWING_SHARE`` without one. A frame reads the whole
#: roster (a few µs a teammate), so on a team of thousands the rate falls below
#: REFRESH_PER_SECOND rather than the drawing growing with the team times the run's length.
DRAWING_SHARE: Final = 0.05


_STYLE = {
    MemberStatus.SPAWNING: ("○", "dim"),
    MemberStatus.RUNNING: ("▶", "cyan"),
    MemberStatus.WAITING: ("⏸", "blue"),
    MemberStatus.NEEDS_APPROVAL: ("?", "bold yellow"),
    MemberStatus.NEEDS_INPUT: ("?", "bold yellow"),
    MemberStatus.IDLE: ("·", "white"),
    MemberStatus.COMPLETED: ("✔", "green"),
    MemberStatus.FAILED: ("✘", "red"),
    MemberStatus.KILLED: ("■", "red"),
}


def render_tree(state: TeamState, *, max_lines: int | None = None) -> Tree:
    """The team as a tree: coordinator at the root, each worker under who spawned it.

    ``max_lines`` bounds what is drawn (a live frame fits the terminal). A team taller than
    that shows the teammates that need attention first (asking, then running, then failed),
    each under who spawned it. One line counts the rest by status. So what a frame draws is
    bounded however large the team. The roster is still read once per frame, a few µs a
    teammate. ``None`` draws everyone (the final frame).
    """
    run = state.run
    title = f"team {run.team} — {run.prompt}" if run else "team (starting)"
    tree = Tree(Text(title, style="bold"))
    root = state.coordinator_chat()
    queued = [t for t in state.tasks.values() if t.status is TaskStatus.QUEUED]
    children = _children_by_parent(state)
    if max_lines is not None and 1 + len(state.members) + len(queued) > max_lines:
        return _bounded_tree(tree, state, root, children, queued, max_lines)
    if root is not None:
        _add_member(tree, state, root, children, set())
    for task in queued:
        tree.add(Text(f"… {task.agent}: {task.title} (queued)", style="dim"))
    return tree


#: Which teammates a frame too small for all of them shows first (lower first).
_ATTENTION: Final = {
    MemberStatus.NEEDS_APPROVAL: 0,
    MemberStatus.NEEDS_INPUT: 0,
    MemberStatus.RUNNING: 1,
    MemberStatus.WAITING: 1,
    MemberStatus.SPAWNING: 1,
    MemberStatus.FAILED: 2,
    MemberStatus.KILLED: 2,
    MemberStatus.IDLE: 3,
    MemberStatus.COMPLETED: 4,
}


def _bounded_tree(
    tree: Tree,
    state: TeamState,
    root: str | None,
    children: dict[str, list[str]],
    queued: list[TaskRecord],
    max_lines: int,
) -> Tree:
    """``tree`` with at most ``max_lines`` lines: the title, the members most in need of a
    look with the chats they hang under, and a line counting what is not shown."""
    parent_of = {child: parent for parent, kids in children.items() for child in kids}
    statuses = {chat: state.member_status(chat) for chat in state.members}
    budget = max_lines - 2 - (1 if queued else 0)  # the title, the rest counted, the queue
    shown: set[str] = set()

    def show(chat: str) -> bool:
        """Show ``chat`` and the chats it hangs under, if they fit."""
        path = []
        node: str | None = chat
        while node is not None and node not in shown and node not in path:
            path.append(node)
            node = parent_of.get(node)
        if len(shown) + len(path) > budget:
            return False
        shown.update(path)
        return True

    if root is not None and budget > 0:
        show(root)
    by_rank: list[list[str]] = [[] for _ in range(max(_ATTENTION.values()) + 1)]
    for chat, status in statuses.items():
        by_rank[_ATTENTION[status]].append(chat)
    for ranked in by_rank:
        for chat in ranked:
            if len(shown) >= budget:
                break
            show(chat)
    tops = [c for c in state.members if c in shown and parent_of.get(c) not in shown]
    for chat in tops:
        _add_member(tree, state, chat, children, set(), only=shown)
    hidden: dict[MemberStatus, int] = {}
    for chat, status in statuses.items():
        if chat not in shown:
            hidden[status] = hidden.get(status, 0) + 1
    if hidden:
        counts = ", ".join(
            f"{hidden[s]:,} {s.value.replace('_', ' ')}" for s in _STYLE if s in hidden
        )
        tree.add(Text(f"… {sum(hidden.values()):,} more teammates: {counts}", style="dim"))
    if queued:
        tree.add(Text(f"… {len(queued):,} tasks queued (parallel budget full)", style="dim"))
    return tree


def _children_by_parent(state: TeamState) -> dict[str, list[str]]:
    """Each chat's spawned chats (delegated workers, then specialists), in the order they
    joined: one pass over the members, so a tree of N teammates draws in O(N)."""
    children: dict[str, list[str]] = {}
    for chat in state.members:
        chat_state = state.chats.get(chat)
        origin = chat_state.origin if chat_state is not None else None
        if isinstance(origin, ToolChatOrigin):
            children.setdefault(origin.chat, []).append(chat)
    return children


def _add_member(
    parent: Tree,
    state: TeamState,
    chat: str,
    children: dict[str, list[str]],
    seen: set[str],
    *,
    only: set[str] | None = None,
) -> None:
    seen.add(chat)  # a malformed log could make origins loop: draw each chat once
    member = state.members.get(chat)
    status = state.member_status(chat)
    icon, style = _STYLE[status]
    said = status.value.replace("_", " ")
    if status is MemberStatus.COMPLETED and (denied := denied_calls(state.approvals, chat)):
        # Completed without the calls it was denied: not done in full.
        icon, style = "⚠", "yellow"
        said += f", {_denied(denied)}"
    name = member.agent if member else chat
    task = state.tasks.get(member.task) if member else None
    label = Text(f"{icon} {name}", style=style)
    label.append(f"  {said}", style="italic")
    if task is not None and task.requested_by is not None:
        label.append(f"  — {task.title}", style="dim")
    node = parent.add(label)
    for child in children.get(chat, ()):
        if child not in seen and (only is None or child in only):
            _add_member(node, state, child, children, seen, only=only)


def describe_fact(state: TeamState, fact: Fact) -> str | None:
    """One line for a notable fact (plain output), or None for stream noise and for the
    run's end (which ``orchestrator run`` says itself)."""
    action = fact.action
    name = _agent_namer(state)
    match action:
        case MemberJoined():
            return f"+ {action.agent} joined ({action.role}) as {action.chat}"
        case TaskCreated() if action.status == "queued":
            return f"… {action.agent} queued: {action.title} (parallel budget full)"
        case TaskFinished():
            denied = denied_calls(state.approvals, action.chat) if action.chat else 0
            # A task that completed without the calls it was denied is not done in full.
            mark = "✘" if action.status != "completed" else "⚠" if denied else "✔"
            status = f"{action.status}, {_denied(denied)}" if denied else str(action.status)
            line = f"{mark} {name(action.chat)} {status}"
            return f"{line}: {_first(action.summary)}" if _says_more(action) else line
        case HandoffRecorded():
            return f"⇄ {name(action.from_chat)} handed off to {action.to_agent}: {action.reason}"
        case ReviewRequested():
            return (
                f"◇ {action.reviewer} reviews {name(action.worker_chat)}'s work "
                f"(round {action.round})"
            )
        case ReviewCompleted():
            words = {"passed": "passed", "changes_requested": "changes requested"}
            verdict = words.get(action.verdict, action.verdict)
            fixes = f" Fixes: {'; '.join(action.fixes)}" if action.fixes else ""
            said = action.summary or action.error or ""
            return f"◆ review {verdict}{': ' + _first(said) if said else ''}{fixes}"
        case ApprovalRequested():
            routed = "you" if action.routed_to == USER else party_name(state, action.routed_to)
            return (
                f"? {asker_text(state, action.chat, action.requested_by)} asks to run "
                f"{action.tool_name}({action.summary}) — routed to {routed}"
            )
        case ApprovalResolved():
            decider = (
                "you"
                if action.resolved_by == USER and action.principal is None
                else party_name(state, action.resolved_by, action.principal)
            )
            return f"  {action.approval} {action.decision} by {decider}"
    # The run's end is said by the command that ran it (orchestrator run), once, with the
    # session: not here too.
    return None


def asker_text(state: TeamState, chat: str, fallback: str | None = None) -> str:
    """Who asks, told apart from the others of its name: ``researcher #3 (task: Summarise
    the changelog)``, its number among its agent's chats and the task it works on."""
    name = member_name(state, chat)
    if name is None:
        return fallback or chat
    on = f" (task: {_first(name.task_title, 60)})" if name.task_title else ""
    return f"{name.label}{on}"


def _agent_namer(state: TeamState) -> Callable[[str | None], str]:
    def name(chat: str | None) -> str:
        if chat is None:
            return "?"
        member = state.members.get(chat)
        return member.agent if member else chat

    return name


def _denied(count: int) -> str:
    return f"{count} call{'' if count == 1 else 's'} denied"


def _says_more(finished: TaskFinished) -> bool:
    """Whether a summary adds to the status: older journals record a killed task's summary
    as the bare word ``cancelled``, which would read ``killed: cancelled``."""
    return finished.summary.strip().lower() not in ("", str(finished.status), "cancelled")


def _first(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _answer_hint(question: ChatInputQuestion) -> str:
    """What an answer looks like, shown after the question."""
    match question:
        case ChatInputBooleanQuestion():
            return " [y/n]"
        case ChatInputNumberQuestion():
            return " (a number)"
        case ChatInputSingleSelectQuestion():
            return f" ({' / '.join(o.id for o in question.options)})"
        case ChatInputMultiSelectQuestion():
            return f" (any of {', '.join(o.id for o in question.options)}, comma-separated)"
        case _:
            return ""


class TeamConsole:
    """Shows a run and answers what is routed to the user; one per ``orchestrator run``."""

    def __init__(
        self,
        runtime: TeamRuntime,
        *,
        mode: ApprovalMode,
        stream: TextIO | None = None,
        stdin: TextIO | None = None,
        live: bool | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        self.runtime = runtime
        # Plain lines go through the reporter when there is one, so that they take the
        # logs' format (JSON records when stderr is piped).
        self.reporter = reporter
        self.mode = mode
        self.stream = stream or sys.stderr
        self.stdin = stdin or sys.stdin
        self.console = Console(file=self.stream, highlight=False)
        self.live = self.console.is_terminal if live is None else live
        self._live: Live | None = None
        self._nursery: trio.Nursery | None = None
        # What has been put to the user: a resumed run's waits are taken up from the state
        # and may also arrive as facts; each is asked once.
        self._asked: set[str] = set()
        self._asking = trio.Lock()
        # The question being asked under the live tree, and what was typed so far.
        self._question: str | None = None
        self._typed = LineBuffer()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow the run until the bus closes; answer prompts on the way."""
        # Unbounded: this reader is in-process and answers what is routed to the user, so it
        # must never be dropped for falling behind a burst of facts (the run would wait on it).
        subscription = self.runtime.bus.subscribe("console", buffer_size=math.inf)
        task_status.started()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.live:
                # Drawn from the trio thread at a steady rate, never from rich's own refresh
                # thread: the view is changed by this task and must not be read mid-change.
                self._live = Live(console=self.console, auto_refresh=False, transient=False)
                self._live.start()
                nursery.start_soon(self._redraw)
            try:
                while True:
                    try:
                        batch = await subscription.receive_batch()
                    except trio.EndOfChannel:
                        break
                    if self._live is None:
                        self._print_lines(batch)
                    for fact in batch:
                        self._dispatch(nursery, fact)
            finally:
                if self._live is not None:
                    # The last frame draws everyone, and stays on the screen.
                    self._live.update(render_tree(self.runtime.state), refresh=True)
                    self._live.stop()
                    self._live = None
            nursery.cancel_scope.cancel()

    def _print_lines(self, facts: list[Fact]) -> None:
        """The plain lines of ``facts``, in order, written together (one write, one flush
        for a batch of facts that came while this task waited its turn)."""
        state = self.runtime.state
        lines = [(line, fact) for fact in facts if (line := describe_fact(state, fact))]
        if not lines:
            return
        if self.reporter is not None:
            self.reporter.progress_lines(
                [(line, {"sequence": fact.sequence, "type": fact.type}) for line, fact in lines]
            )
            return
        for line, _ in lines:
            # One fact, one line: no wrapping, whatever the pipe's width.
            self.console.print(line, markup=False, soft_wrap=True)

    def take_up_waits(self) -> None:
        """Ask again what a resumed run still waits on from the user (asked before the stop)."""
        assert self._nursery is not None, "serve() first"
        approvals, questions = self.runtime.waiting_for_user()
        for request in approvals:
            self._ask_once(request.approval, self._decide, request)
        for chat, question in questions:
            action = ChatInputRequestedAction(request=question)
            self._ask_once(f"{chat} {question.id}", self._answer, chat, action)

    async def _redraw(self) -> None:
        """Draw a frame at most :data:`REFRESH_PER_SECOND` times a second (fewer when a frame
        is costly: see :data:`DRAWING_SHARE`), and only when the state, the question or what
        was typed changed since the last one."""
        drawn: tuple[int, str | None, str] | None = None
        while True:
            pause = 1 / REFRESH_PER_SECOND
            now = (self.runtime.state.last_sequence, self._question, self._typed.text)
            if self._live is not None and now != drawn:
                started = time.perf_counter()
                self._live.update(self._drawing(), refresh=True)
                drawn = now
                pause = max(pause, (time.perf_counter() - started) / DRAWING_SHARE)
            await trio.sleep(pause)

    def _drawing(self) -> RenderableType:
        """The tree, as much as the terminal shows, and under it the question being asked
        with what was typed so far."""
        # Leave a line for the question, and one for the cursor.
        height = self.console.size.height - (2 if self._question is not None else 1)
        tree = render_tree(self.runtime.state, max_lines=max(height, 3))
        if self._question is None:
            return tree
        line = Text(self._question, style="bold yellow")
        line.append(self._typed.text + "▌", style="bold")
        return Group(tree, line)

    def _dispatch(self, nursery: trio.Nursery, fact: Fact) -> None:
        action = fact.action
        if isinstance(action, ApprovalRequested) and action.routed_to == USER:
            self._ask_once(action.approval, self._decide, action)
        elif isinstance(action, ChatInputRequestedAction):
            self._ask_once(
                f"{fact.channel} {action.request.id}", self._answer, fact.channel, action
            )

    def _ask_once(self, key: str, ask: Callable[..., Awaitable[None]], *args: Any) -> None:
        if key not in self._asked:
            self._asked.add(key)
            assert self._nursery is not None
            self._nursery.start_soon(ask, *args)

    async def _decide(self, request: ApprovalRequested) -> None:
        if self.mode is ApprovalMode.ASK:
            asked = f"{self._who(request.chat)} wants to run {request.tool_name}({request.summary})"
            reply = await self._prompt(f"{asked}. Approve? [y/N] ", unanswered="treated as no")
            approved = reply is not None and reply.strip().lower() in {"y", "yes"}
            # The question and the decision stay on screen, above the tree.
            self._said(f"? {asked} → {'approved' if approved else 'denied'} by you")
        else:
            approved = self.mode is ApprovalMode.AUTO
        await self.runtime.resolve_approval(request.approval, approved=approved)

    def _who(self, chat: str) -> str:
        """An agent told apart from the others of its name (see :func:`asker_text`)."""
        return asker_text(self.runtime.state, chat)

    def _said(self, line: str) -> None:
        """A line that stays: printed above the live tree (or in order, without one)."""
        if self._live is None and self.reporter is not None:
            self.reporter.progress(line)
        else:
            self.console.print(line, markup=False, soft_wrap=True)

    async def _answer(self, chat: str, action: ChatInputRequestedAction) -> None:
        request = action.request
        if self.mode is not ApprovalMode.ASK:
            await self.runtime.answer_input(
                chat, request.id, "", response=ChatInputResponseKind.DECLINE
            )
            return
        hint = _answer_hint(request.questions[0]) if request.questions else ""
        asked = f"{self._who(chat)} asks: {request.message}"
        while True:
            reply = await self._prompt(f"{asked}{hint} ", unanswered="left unanswered")
            if reply is None:
                await self.runtime.answer_input(
                    chat, request.id, "", response=ChatInputResponseKind.CANCEL
                )
                self._said(f"? {asked} → no answer (input ended)")
                return
            try:
                await self.runtime.answer_input(chat, request.id, reply.strip())
            except RunError as exc:
                self._said(f"  {exc}")  # say what is expected, ask again
            else:
                self._said(f"? {asked} → {reply.strip()}")
                return

    async def _prompt(self, question: str, *, unanswered: str) -> str | None:
        """Ask one question at a time; None when input has ended (EOF), which is said, with
        ``unanswered`` (what that makes of the question) and how to run without asking."""
        async with self._asking:
            if self._live is not None and self.stdin.isatty():
                return await self._prompt_live(question)
            reporter = (
                self.reporter if self.reporter is not None and self.reporter.as_json else None
            )
            if reporter is not None:
                # Stderr speaks one format: with JSON logs the question is a record of its
                # own, not text wrapped between two of them.
                reporter.progress(question.strip(), awaiting="stdin")
            else:
                self.console.print(question, end="", markup=False, soft_wrap=True)
            line: str = await trio.to_thread.run_sync(self.stdin.readline, abandon_on_cancel=True)
            if reporter is None and not self.stdin.isatty():
                self.console.print()  # a terminal echoes the answer's end of line; a pipe not
            if not line:
                ended = (
                    f"no answer, input ended: {unanswered}. To decide without being asked, "
                    "run with --approve auto or --approve deny"
                )
                if reporter is not None:
                    reporter.say(ended, level="warning")
                else:
                    self.console.print(f"({ended})", markup=False, soft_wrap=True)
                return None
            return line

    async def _prompt_live(self, question: str) -> str | None:
        """Ask under the tree, which goes on drawing, with the keys typed shown there."""
        self._question, self._typed = question, LineBuffer()
        try:
            with TerminalKeys(self.stdin.fileno()) as keys:
                while True:
                    typed = self._typed.feed(await keys.read())
                    if self._live is not None:
                        self._live.update(self._drawing(), refresh=True)
                    if typed is Typed.DONE:
                        return self._typed.text
                    if typed is Typed.ENDED:
                        return None
        finally:
            self._question = None
