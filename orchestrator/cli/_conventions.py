"""What every command shares: its exit statuses and where the journal is by default.

Kept apart from the commands so that building the parser (and ``--help``) imports none of
them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__: list[str] = []

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_BAD_INPUT: Final = 2

#: The variable that holds the token of the daemon's operator (or viewer).
TOKEN_ENV: Final = "ORCHESTRATOR_TOKEN"


def default_db() -> Path:
    """The journal's default place: ``$XDG_STATE_HOME/orchestrator/journal.db``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "orchestrator" / "journal.db"
