"""The checksum stored with every fact and snapshot row, and the check of a row read back.

Apart from the row writer (:mod:`._rows`) so that a reader that only lists sessions or reads
facts does not load what writing needs.
"""

from __future__ import annotations

import zlib

from orchestrator.base import FactLogError

__all__ = ["fact_checksum"]


def fact_checksum(text: str) -> int:
    """The checksum stored with a fact: CRC32 of its text as UTF-8.

    It finds a damaged row (a flipped bit, a torn sector that SQLite's page format still
    accepts), not a forged one: anyone who can write the file can write a matching sum.
    """
    return zlib.crc32(text.encode())


def checked_fact_text(session: str, sequence: int, text: str, checksum: int, *, source: str) -> str:
    """``text``, the stored fact ``sequence`` of ``session``, if it matches its checksum."""
    if fact_checksum(text) != checksum:
        raise FactLogError(
            f"fact {sequence} of {session} is damaged (its checksum does not match): it was "
            "not applied; restore the journal from a backup",
            source=source,
        )
    return text
