"""The fact: one entry of the log that every state, graph and projection folds.

A fact is an action (an AHP ``chat/*`` or ``session/*`` action, or a ``team/*`` action)
scoped to the channel it applies to. It is stamped with the session's monotonic ``sequence``
and the time it was recorded. When a client's dispatched action is what it carries out, it is
also stamped with that client's ``origin`` (``{clientId, clientSeq}``; None: the host did it on
its own). Its shape mirrors the AHP ``ActionEnvelope`` (``channel`` + ``action`` + a server
sequence). So a fact can be sent to an AHP subscriber as it is. It is also the shape the
durable journal stores.

On the wire (JSON Lines, one fact per line)::

    {"sequence": 7, "session": "ahp-session:/...", "channel": "ahp-chat:/...",
     "at": "2026-11-22T21:00:00.000Z", "action": {"type": "chat/delta", ...}}

A fact that carries a client's action also has ``"origin": {"clientId": ..., "clientSeq": ...}``
after its action; one without (every fact of a journal written before origins were kept) has
none, so old logs read as they always did. The origin travels with the fact, so every
subscriber of its channel, and a replay from the journal, sees the same origin.

Invariant: within one session, ``sequence`` starts at 1 and increases by exactly
one per fact, in append order.
"""

from __future__ import annotations

import attrs

from orchestrator.ahp.actions import ActionOrigin, StateAction

from ._board_actions import BoardAction
from ._review_actions import ReviewAction
from ._team_actions import TeamAction
from ._teammate_actions import TeammateAction

__all__ = ["Action", "Fact"]

Action = StateAction | TeamAction | TeammateAction | BoardAction | ReviewAction


@attrs.frozen(kw_only=True)
class Fact:
    """One recorded action, in order."""

    sequence: int
    session: str
    channel: str
    at: str
    action: Action
    origin: ActionOrigin | None = None

    @property
    def type(self) -> str:
        """The action's wire ``type`` (``chat/turnStarted``, ``team/taskFinished``...)."""
        return self.action.type
