"""Chats forked inside a running session, and side chats (AHP ``createChat`` with a source).

Theory of operation
-------------------
A team's chats are its coordinator and the workers it delegates to. A client may also open a
chat from one of them at a turn:

- a **fork** copies the source chat's turns through that (completed) turn into the new chat,
  as its own visible history (:func:`~orchestrator.core.chat_fork_actions`);
- a **side chat** starts empty: the source's conversation through that turn (and the text the
  client selected) is given to its model as context, never shown as its history
  (:func:`~orchestrator.core.side_chat_context`).

Either is recorded in one batch: the chat's ``session/chatAdded`` with its origin
(``{kind: "fork" | "sideChat", chat, turnId}``), its member (the source chat's agent, on the
source's task), and a fork's copied turns. The delegation graph draws a ``forked`` edge from
the source to it.

Such a chat is run by the source's agent, one turn per message a client sends it: its first
message starts its turns in the runtime's nursery for them, and messages sent while it runs
are queued, as a worker's are. It creates no task: the coordinator's run and tasks are not
its business. Its turns end with the run.

Each of its turns can be cancelled alone (:meth:`Turns.run_chat` with ``own_turns``): the
next queued message runs after it. Disposing of the chat (:meth:`ChatForks.dispose`) also
withdraws its queued messages. A restart treats its running turn as a worker's
(:func:`~orchestrator.core.plan_recovery`): parked, it goes on; cut off, it runs again or
stays failed, as ``on_restart`` says (:meth:`ChatForks.take_up`). A side chat's context is
recorded in its ``team/memberJoined`` when it opens, so a restart gives its model the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection

import structlog
import trio

from orchestrator.ahp.actions import ChatPendingMessageRemovedAction
from orchestrator.ahp.state import (
    ForkChatOrigin,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessageKind,
    SideChatOrigin,
    SideChatSelection,
)
from orchestrator.base import RunError
from orchestrator.core import (
    Action,
    MemberJoined,
    chat_fork_actions,
    forked_chats,
    is_forked_chat,
    is_interrupted,
    side_chat_context,
)

from ._context import ChatContext, RunContext, TurnFailedError, chat_added
from ._logging import bound_log_context
from ._turns import Turns

__all__: list[str] = []

log = structlog.get_logger("orchestrator.runtime")


class ChatForks:
    """The forked chats and side chats of one run (see module docstring)."""

    def __init__(self, run: RunContext, turns: Turns) -> None:
        self.run = run
        self._turns = turns
        self._nursery: trio.Nursery | None = None
        # The chats whose turns' task was started and has not begun yet: a dispose then
        # finds no turn to cancel, so it withdraws the message the task would start with.
        self._not_begun: dict[str, bool] = {}  # chat -> its first message was withdrawn

    def running_in(self, nursery: trio.Nursery | None) -> None:
        """The nursery their turns run in while the run goes on (None: it has ended)."""
        self._nursery = nursery

    async def open(
        self,
        chat: str,
        *,
        source: str,
        turn_id: str,
        side: bool = False,
        selection: SideChatSelection | None = None,
    ) -> None:
        """Record ``chat``, forked from ``source`` at ``turn_id`` (``side``: a side chat).

        Args:
            chat: The new chat's URI (the client's choice).
            source: The chat it comes from, in this session.
            turn_id: The source's turn: a completed one for a fork; for a side chat, one that
                ended or the one running now.
            side: A side chat, not a fork.
            selection: The text a side chat is about (side chats only).

        :class:`RunError` names a source or a turn this session does not have.
        """
        state = self.run.state
        if self._nursery is None:
            raise RunError(f"session {self.run.session} is not running: it opens no chats")
        if chat in state.chats:
            raise RunError(f"chat {chat} exists already")
        source_state = state.chats.get(source)
        member = state.members.get(source)
        if source_state is None or member is None:
            raise RunError(f"no chat {source} in session {self.run.session}")
        agent = self.run.team.agent(member.agent)
        now = self.run.recorder.clock()
        copied: tuple[Action, ...] = ()
        context: tuple[tuple[str, str], ...] | None = None
        if side:
            # The turn exists, or RunError. Recorded as given: the source's running turn
            # goes on, and a restart must give the side chat what it was given.
            context = side_chat_context(source_state, turn_id, selection)
            origin: ForkChatOrigin | SideChatOrigin = SideChatOrigin(
                chat=source, turn_id=turn_id, selection=selection
            )
            title = "side chat"
        else:
            copied = chat_fork_actions(source_state, turn_id, now=now)
            origin = ForkChatOrigin(chat=source, turn_id=turn_id)
            title = "fork"
        added = chat_added(chat, agent, title, origin, now)
        batch: list[tuple[str, Action]] = [
            (self.run.session, added),
            (
                self.run.session,
                MemberJoined(
                    chat=chat,
                    agent=agent.name,
                    role=agent.role,
                    task=member.task,
                    context=context,
                ),
            ),
        ]
        batch += [(chat, action) for action in copied]
        await self.run.recorder.record(batch)
        log.info("chat forked", chat=chat, source=source, turn=turn_id, side=side)

    async def prompt(self, chat: str, text: str) -> None:
        """Send ``text`` to a forked chat or side chat: its next turn (queued while it runs).

        :class:`RunError` if ``chat`` is neither, or the run has ended.
        """
        self._check(chat)
        if self._nursery is None:
            raise RunError(f"session {self.run.session} is not running: it takes no messages")
        if self._turns.is_open(chat):
            await self._turns.set_queued(chat, text)
            return
        message = Message(text=text, origin=MessageOrigin(kind=MessageKind.USER))
        self._start(chat, message)

    def take_up(self, interrupted: Collection[str]) -> None:
        """After a restart: start the turns of the forked chats and side chats that have
        one to go on with (``interrupted``: the chats whose turn the recovery cut off).

        A parked turn goes on; a turn the stop cut off (the recovery ended it interrupted)
        runs again, or stays failed, as ``on_restart`` says (see :meth:`Turns.run_chat`);
        messages queued to the chat follow.
        """
        state = self.run.state
        for chat in forked_chats(state):
            chat_state = state.chats[chat]
            last = chat_state.turns[-1] if chat_state.turns else None
            queued = chat_state.queued_messages or ()
            cut_off = chat in interrupted and last is not None and is_interrupted(last)
            if chat_state.active_turn is None and not cut_off and not queued:
                continue
            if chat_state.active_turn is None and not cut_off:
                # Only messages queued before the stop: their turns, in order.
                self._start(chat, None)
                continue
            turn = chat_state.active_turn or last
            assert turn is not None
            self._start(chat, turn.message, resume=True)

    def _check(self, chat: str) -> None:
        if not is_forked_chat(self.run.state, chat):
            raise RunError(f"{chat} is not a forked chat or a side chat of this session")

    def _start(self, chat: str, message: Message | None, *, resume: bool = False) -> None:
        """Start ``chat``'s turns: ``message``'s (``resume``: take the chat up where it
        stood; None: none), then its queued messages'."""
        assert self._nursery is not None
        member = self.run.state.members[chat]
        ctx = ChatContext(chat, self.run.team.agent(member.agent), member.task)
        state = self.run.state.chats[chat]
        if isinstance(state.origin, SideChatOrigin):
            # What it was given when it opened; a journal from before that was recorded
            # has it made again from the source.
            context = member.context
            if context is None:
                source = self.run.state.chats[state.origin.chat]
                context = side_chat_context(source, state.origin.turn_id, state.origin.selection)
            self._turns.side_contexts[chat] = context
        self._turns.mark_open(chat)  # a message sent before its task starts is queued to it
        self._not_begun[chat] = False
        self._nursery.start_soon(self._run, ctx, message, resume)

    async def dispose(self, chat: str) -> None:
        """Dispose of ``chat`` (AHP ``disposeChat``): its queued messages are withdrawn and
        its running turn is cancelled; the chat stays in the record, and takes a message
        again later."""
        self._check(chat)
        state = self.run.state.chats[chat]
        withdrawn: list[tuple[str, Action]] = [
            (chat, ChatPendingMessageRemovedAction(kind=PendingMessageKind.QUEUED, id=m.id))
            for m in state.queued_messages or ()
        ]
        if withdrawn:
            await self.run.recorder.record(withdrawn)
        if chat in self._not_begun:
            # Prompted just now: its turn has not started, and now will not.
            self._not_begun[chat] = True
        with contextlib.suppress(RunError):  # no turn runs: nothing more to do
            self._turns.cancel_turn(chat)
        log.info("forked chat disposed", chat=chat, withdrawn=len(withdrawn))

    async def _run(self, ctx: ChatContext, message: Message | None, resume: bool) -> None:
        """The chat's turns, behind their own error barrier: what fails ends its turn only."""
        withdrawn = self._not_begun.pop(ctx.chat, False)
        if withdrawn and not resume:
            message = None  # disposed of before it began: the messages queued since run
        with bound_log_context(chat=ctx.chat, agent=ctx.agent.name):
            try:
                await self._turns.run_chat(ctx, message, resume=resume, own_turns=True)
            except TurnFailedError as exc:
                log.info("forked chat's turn failed", chat=ctx.chat, error=str(exc))
            except Exception:
                if self.run.recorder.failed is not None:
                    raise
                log.exception("forked chat crashed", chat=ctx.chat)
