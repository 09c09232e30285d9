"""What an acknowledged fact survives: the journal's one durability setting.

Apart from the journal file's code so that the command line names the choices without loading
SQLite and the schema (see :mod:`._file` for what each choice costs).
"""

from __future__ import annotations

import enum

__all__ = ["Durability"]


class Durability(enum.StrEnum):
    """What an acknowledged fact survives: a power loss, or only a process kill."""

    POWER = "power"
    PROCESS = "process"
