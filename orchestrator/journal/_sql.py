"""What the journal's SQL is run on: a ``sqlite3`` connection, or the PostgreSQL journal's
(:mod:`.postgres._connection`), which takes the same ``?`` parameters.

The statements the writer (:mod:`._rows`) and the reader (:mod:`._reader`) share are the
SQL both databases take: ``ON CONFLICT`` rather than ``INSERT OR ...``, no ``rowid``, no
SQLite functions. Apart from both so that a reader does not load what writing needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

__all__: list[str] = []


class _Connection(Protocol):
    """A connection the journal's statements run on (``sqlite3.Connection`` is one)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...
