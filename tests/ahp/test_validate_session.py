"""The session validator: an action naming what the session does not have is refused; a setter
is accepted even when it changes nothing.
"""

from __future__ import annotations

import pytest

from orchestrator import IllegalTransitionError
from orchestrator.ahp import (
    validate_session_action,
)
from orchestrator.ahp.actions import (
    SessionChatRemovedAction,
    SessionDefaultChatChangedAction,
    SessionTitleChangedAction,
)
from orchestrator.ahp.state import (
    ChatSummary,
    SessionLifecycle,
    SessionState,
    SessionStatus,
)
from tests.support.ahp_chats import (
    BEFORE,
    CHANNEL,
)


class TestSessionValidation:
    SESSION = SessionState(
        provider="scripted",
        title="Session",
        status=SessionStatus.IDLE,
        lifecycle=SessionLifecycle.READY,
        active_clients=(),
        chats=(
            ChatSummary(
                resource=CHANNEL, title="Chat", status=SessionStatus.IDLE, modified_at=BEFORE
            ),
        ),
    )

    def test_unknown_chat_is_refused(self) -> None:
        """Naming a chat that is not in the catalog is refused."""
        with pytest.raises(IllegalTransitionError, match="no chat 'ahp-chat:/other'") as caught:
            validate_session_action(
                self.SESSION, SessionChatRemovedAction(chat="ahp-chat:/other"), channel="s"
            )
        assert caught.value.state == "session ready"
        with pytest.raises(IllegalTransitionError):
            validate_session_action(
                self.SESSION,
                SessionDefaultChatChangedAction(default_chat="ahp-chat:/other"),
                channel="s",
            )

    def test_setters_are_accepted(self) -> None:
        """A setter is accepted even when it sets the value the session already has."""
        validate_session_action(
            self.SESSION, SessionTitleChangedAction(title="Session"), channel="s"
        )
        validate_session_action(self.SESSION, SessionChatRemovedAction(chat=CHANNEL), channel="s")
