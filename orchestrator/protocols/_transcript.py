"""A chat's transcript, as the web view shows it when a node of the graph is opened.

Each turn of the chat (the finished ones, then the running one so far) as the agent-channel
events a client of that channel would have been sent. Those are the prompt, reasoning, text,
tool calls and their results, questions, then the turn's end (``result`` or ``error``, and
``done``). One vocabulary for the agent channel's history and the transcript, so a page
renders both with the same code. The transcript has one event more: ``steering``, a
person's message taken into a running turn, where it was taken in, with who sent it.

Pure: a team state in, JSON out.
"""

from __future__ import annotations

from typing import Any

from orchestrator.core import Reviews, TeamState

from ._agent_messages import turn_messages, turn_so_far
from ._agui_state import review_entry

__all__ = ["chat_transcript"]


def chat_transcript(
    state: TeamState, chat: str, reviews: Reviews | None = None
) -> dict[str, Any] | None:
    """``chat``'s transcript in ``state``; None if the session has no such chat.

    ``reviews``: the session's, folded from its facts; the transcript then has a ``reviews``
    lane: the reviews of this chat's work (a worker's) or by it (a reviewer's), by round.
    """
    chat_state = state.chats.get(chat)
    if chat_state is None:
        return None
    member = state.members.get(chat)
    turns: list[dict[str, Any]] = [
        {"id": turn.id, "state": str(turn.state), "events": turn_messages(turn, steering=True)}
        for turn in chat_state.turns
    ]
    if chat_state.active_turn is not None:
        active = chat_state.active_turn
        turns.append(
            {"id": active.id, "state": "running", "events": turn_so_far(active, steering=True)}
        )
    found: dict[str, Any] = {
        "thread": chat,
        "agent": member.agent if member is not None else None,
        "role": member.role if member is not None else None,
        "title": chat_state.title,
        "turns": turns,
    }
    if reviews is not None:
        found["reviews"] = [
            review_entry(r) for r in reviews.records.values() if chat in (r.worker_chat, r.chat)
        ]
    return found
