"""The checksum stored with every fact and snapshot row, and the check of a row read back.

Apart from the row writer (:mod:`._rows`) so that a reader that only lists sessions or reads
facts does not load what writing needs.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable

from orchestrator.base import FactLogError

__all__ = ["fact_checksum"]

#: SQLite's own words for a text value that is not UTF-8 (they go on to quote the whole
#: value, with a replacement character for each bad byte: kilobytes in an error line).
_UNDECODABLE = re.compile(r"Could not decode to UTF-8 column '([^']{1,64})'")


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


def undecodable_column(exc: Exception) -> str | None:
    """The column SQLite's error ``exc`` says holds text that is not UTF-8, or None when it
    is another error."""
    match = _UNDECODABLE.match(str(exc))
    return match.group(1) if match else None


def not_utf8_fact(
    session: str, column: str, rows: Iterable[tuple[int, bytes]], *, source: str
) -> FactLogError:
    """The error for a stored fact whose ``column`` is not UTF-8 text.

    ``rows`` are the sequence and raw bytes of that column of the facts that were being read.
    The first that does not decode is named, with where in it, in a line of bounded length."""
    for sequence, raw in rows:
        try:
            bytes(raw).decode()
        except UnicodeDecodeError as exc:
            return FactLogError(
                f"fact {sequence} of {session} is damaged (its column {column} is not UTF-8 "
                f"text: byte 0x{raw[exc.start]:02x} at offset {exc.start}): it was not applied; "
                "restore the journal from a backup",
                source=source,
            )
    # Not found on a second look: the row changed between the two reads.
    return FactLogError(
        f"a fact of {session} is damaged (its column {column} is not UTF-8 text): it was not "
        "applied; restore the journal from a backup",
        source=source,
    )
