"""How ``orchestrator run`` decides approvals routed to the user.

Apart from the console that uses it, so that the parser names the modes without loading the
console (rich, trio, the AHP model).
"""

from __future__ import annotations

import enum

__all__ = ["ApprovalMode"]


class ApprovalMode(enum.StrEnum):
    """How ``orchestrator run`` decides approvals routed to the user."""

    ASK = "ask"
    AUTO = "auto"
    DENY = "deny"
