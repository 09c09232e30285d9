"""Editing a stored session's conversation history: undo, truncate, restore.

Each edit is recorded as facts in the session's journal, through the same recorder (and
validation) as a live run: ``chat/truncated`` for undo and truncation, the removed turns'
own facts again for a restore. The journal marks and unmarks the agent-channel history
rows in the same transaction (see :mod:`orchestrator.protocols._agent_messages`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio

from orchestrator.ahp.state import ChatState
from orchestrator.base import RunError
from orchestrator.core import Action, Fact
from orchestrator.runtime import FactBus, Recorder

from ._durability import Durability
from ._interface import Db, open_journal
from ._reader import JournalReader

__all__ = ["Edit", "edit_history", "resolve_chat"]

#: Given the chat and the session's facts, the actions that edit its history.
Edit = Callable[[ChatState, Sequence[Fact]], Sequence[Action]]


def resolve_chat(reader: JournalReader, session: str, wanted: str | None) -> str:
    """The chat a user named (URI or unique beginning of its id); default the coordinator's."""
    state = reader.open(session)
    if wanted is None:
        chat = state.coordinator_chat()
        if chat is None:
            raise RunError(f"{session} has no coordinator chat")
        return chat
    matches = [
        c for c in state.chats if c == wanted or c.removeprefix("ahp-chat:/").startswith(wanted)
    ]
    if len(matches) != 1:
        known = ", ".join(state.chats) or "none"
        what = "no chat" if not matches else "more than one chat"
        raise RunError(f"{session} has {what} matching {wanted!r} (its chats: {known})")
    return matches[0]


async def edit_history(
    path: Db,
    session: str,
    chat: str,
    edit: Edit,
    *,
    durability: Durability = Durability.POWER,
) -> list[Fact]:
    """Record ``edit`` of ``chat``'s history in ``session``; returns the facts recorded.

    Refused (:class:`RunError`) while the session's run is going on: only the process
    running it may append to it (a run a stop left unfinished: resume it first).
    """
    journal = open_journal(path, durability=durability)
    await trio.to_thread.run_sync(journal.open)
    reader = journal.reader
    try:
        info = reader.session(session)
        if info.status == "running":
            raise RunError(
                f"{session} is running (or a stop left it unfinished: orchestrator resume it "
                "first); its history can be edited once the run has ended"
            )
        state = await trio.to_thread.run_sync(reader.open, session)
        facts = await trio.to_thread.run_sync(reader.facts, session)
        actions = edit(state.chats[chat], facts)
    except BaseException:
        journal.close()  # opened, never served: its connection would be left open
        raise
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        recorder = Recorder(state, journal, FactBus())
        recorded = await recorder.record([(chat, action) for action in actions])
        services.cancel_scope.cancel()
    return recorded
