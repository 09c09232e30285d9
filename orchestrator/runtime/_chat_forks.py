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
its business. Its turns end with the run; a restart cuts its running turn off, as any.
"""

from __future__ import annotations

import structlog
import trio

from orchestrator.ahp.state import (
    ForkChatOrigin,
    Message,
    MessageKind,
    MessageOrigin,
    SideChatOrigin,
    SideChatSelection,
)
from orchestrator.base import RunError
from orchestrator.core import Action, MemberJoined, chat_fork_actions, side_chat_context

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
        if side:
            side_chat_context(source_state, turn_id, selection)  # the turn exists, or RunError
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
                MemberJoined(chat=chat, agent=agent.name, role=agent.role, task=member.task),
            ),
        ]
        batch += [(chat, action) for action in copied]
        await self.run.recorder.record(batch)
        log.info("chat forked", chat=chat, source=source, turn=turn_id, side=side)

    async def prompt(self, chat: str, text: str) -> None:
        """Send ``text`` to a forked chat or side chat: its next turn (queued while it runs).

        :class:`RunError` if ``chat`` is neither, or the run has ended.
        """
        state = self.run.state.chats.get(chat)
        if state is None or not isinstance(state.origin, ForkChatOrigin | SideChatOrigin):
            raise RunError(f"{chat} is not a forked chat or a side chat of this session")
        if self._nursery is None:
            raise RunError(f"session {self.run.session} is not running: it takes no messages")
        if self._turns.is_open(chat):
            await self._turns.set_queued(chat, text)
            return
        member = self.run.state.members[chat]
        ctx = ChatContext(chat, self.run.team.agent(member.agent), member.task)
        if isinstance(state.origin, SideChatOrigin):
            source = self.run.state.chats[state.origin.chat]
            self._turns.side_contexts[chat] = side_chat_context(
                source, state.origin.turn_id, state.origin.selection
            )
        message = Message(text=text, origin=MessageOrigin(kind=MessageKind.USER))
        self._turns.mark_open(chat)  # a message sent before its task starts is queued to it
        self._nursery.start_soon(self._run, ctx, message)

    async def _run(self, ctx: ChatContext, message: Message) -> None:
        """The chat's turns, behind their own error barrier: what fails ends its turn only."""
        with bound_log_context(chat=ctx.chat, agent=ctx.agent.name):
            try:
                await self._turns.run_chat(ctx, message)
            except TurnFailedError as exc:
                log.info("forked chat's turn failed", chat=ctx.chat, error=str(exc))
            except Exception:
                if self.run.recorder.failed is not None:
                    raise
                log.exception("forked chat crashed", chat=ctx.chat)
