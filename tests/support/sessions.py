"""Facts that open a session, for tests that build one by hand."""

from __future__ import annotations

from orchestrator.ahp.actions import SessionChatAddedAction
from orchestrator.ahp.state import ChatSummary, SessionStatus, UserChatOrigin
from orchestrator.core import Action, MemberJoined, RunStarted


def solo_opening(
    session: str, chat: str, *, prompt: str, at: str, member: bool = True
) -> list[tuple[str, Action]]:
    """The first facts of a run of team ``t`` whose coordinator ``lead`` has ``chat``: the
    run started with ``prompt``, the chat added (idle, modified ``at``) and, unless not
    ``member``, the coordinator joined."""
    summary = ChatSummary(
        resource=chat,
        title="lead",
        status=SessionStatus.IDLE,
        modified_at=at,
        origin=UserChatOrigin(),
    )
    started = RunStarted(
        run="run-1",
        team="t",
        topology="coordinator_team",
        parallel_budget=1,
        coordinator="lead",
        prompt=prompt,
        task="task-1",
    )
    opening: list[tuple[str, Action]] = [
        (session, started),
        (session, SessionChatAddedAction(summary=summary)),
    ]
    if member:
        joined = MemberJoined(chat=chat, agent="lead", role="coordinator", task="task-1")
        opening.append((session, joined))
    return opening
