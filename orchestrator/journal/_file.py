"""Opening a journal file: the checks before a byte is written, and the write connection.

The file is created readable by its owner only (0600; SQLite gives ``-wal`` and ``-shm``
the same mode). A file of an older schema is migrated (:mod:`._schema`); a newer one, a
foreign SQLite file, or a file that is not SQLite at all is refused before anything is
written to it, as is a damaged one (``PRAGMA quick_check``).

What survives what (``durability``):

* ``power`` (the default; ``PRAGMA synchronous=FULL``): a batch is acknowledged after its
  transaction is fsync'd to the WAL. It survives the process being killed *and* the machine
  losing power, on storage that honours flushes.
* ``process`` (``synchronous=NORMAL``): a batch is acknowledged once the WAL write reached the
  operating system. It survives the process being killed (kill -9, OOM, a crash); on power
  loss the transactions since the last checkpoint may roll back (the file is never corrupt).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Final

from orchestrator.base import FactLogError

from ._checksum import undecodable_column
from ._durability import Durability
from ._schema import APPLICATION_ID, SCHEMA_VERSION, _migrate

__all__: list[str] = []


_SYNCHRONOUS: Final = {Durability.POWER: "FULL", Durability.PROCESS: "NORMAL"}
#: Seconds a statement of the write connection waits for a lock another connection holds
#: (SQLite's busy handler) before it fails with SQLITE_BUSY (see ``_journal``: the writer
#: then waits on, for its ``reconnect_for``); ``sqlite3.connect``'s own default.
BUSY_TIMEOUT: Final = 5.0


def _error(path: Path | str, message: str) -> FactLogError:
    return FactLogError(message, source=str(path))


#: Most of SQLite's own message an error quotes.
_SQLITE_SAID: Final = 300


def _from_sqlite(path: Path, exc: sqlite3.Error, doing: str) -> FactLogError:
    """A SQLite error as our error: what we were doing, and what SQLite said (bounded: a
    decode error quotes the whole value it could not decode)."""
    column = undecodable_column(exc)
    if column is not None:
        said = f"a value of its column {column} is not UTF-8 text (the journal is damaged)"
    else:
        said = str(exc)
        if len(said) > _SQLITE_SAID:
            said = said[: _SQLITE_SAID - 1] + "…"
    return _error(path, f"cannot {doing}: {said}")


def _read_only_filesystem(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _read_uri(path: Path) -> str:
    """A read-only URI for ``path``. On a read-only filesystem SQLite cannot create the WAL
    index a reader needs, but nothing can change the file either, so it is read immutable."""
    return f"file:{path}?mode=ro" + ("&immutable=1" if _read_only_filesystem(path) else "")


def _unwritable(path: Path) -> str | None:
    """Why the journal at ``path`` could not be written, before trying: a read-only
    filesystem, or a file or directory this user may not write."""
    directory = path.parent if path.parent.exists() else None
    if directory is None:
        return None  # created on open (or that fails with its own reason)
    if _read_only_filesystem(path):
        return f"it is on a read-only filesystem ({directory})"
    if not os.access(directory, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "this user may not write it or its directory"
    return None


def _check_file(path: Path) -> int:
    """The schema version of the journal at ``path`` (0: an empty new file).

    Refuses, without writing a byte, a file that is not SQLite, a SQLite file that is not
    ours, a journal written by a newer orchestrator, and a damaged one.
    """
    if not path.exists():
        return 0
    if path.is_dir():
        raise _error(path, "this is a directory: --db takes a journal file's path (or a URL)")
    try:
        connection = sqlite3.connect(_read_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise _from_sqlite(path, exc, "open the journal") from exc
    try:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id != APPLICATION_ID and (version or tables):
            raise _error(
                path,
                "this SQLite file is not an orchestrator journal; pass another --db path",
            )
        if version > SCHEMA_VERSION:
            raise _error(
                path,
                f"this journal was written by a newer orchestrator (schema {version}; this one "
                f"reads up to {SCHEMA_VERSION}); upgrade the orchestrator or use another --db",
            )
        problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise _error(
                path,
                f"the journal is damaged ({'; '.join(problems[:3])}); it was left untouched: "
                "restore it from a backup, or recover what can be read with sqlite3's .recover",
            )
        return int(version)
    except sqlite3.DatabaseError as exc:
        raise _error(path, _unreadable(exc)) from exc
    finally:
        connection.close()


#: SQLite's primary result codes of a lock another connection holds.
_LOCKED_CODES: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def locked(exc: BaseException) -> bool:
    """Whether ``exc`` says another connection holds a lock this one needs (after waiting
    its ``busy_timeout``): the file is sound, and the statement can be tried again later."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in _LOCKED_CODES
    return False


def _unreadable(exc: sqlite3.DatabaseError) -> str:
    """Why a journal could not be checked, by what SQLite said.

    Only a file that is not a database, or a damaged one, is called so. A full disk, or a
    directory this user may not write, is not a reason to restore a healthy journal from a
    backup."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_CANTOPEN:
        return (
            f"cannot open the journal ({exc}): a reader needs to make its -shm file beside it, "
            "so this user must be able to write its directory; it was left untouched"
        )
    if code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL):
        return (
            f"cannot read the journal ({exc}): is its disk full or failing? It was left untouched"
        )
    if locked(exc):
        return f"the journal is locked by another process ({exc}): try again"
    return (
        f"this file is not an orchestrator journal, or it is damaged ({exc}); it was left untouched"
    )


def _connect(
    path: Path,
    *,
    durability: Durability,
    max_bytes: int | None,
    busy_timeout: float = BUSY_TIMEOUT,
) -> sqlite3.Connection:
    """The write connection: the schema brought up to :data:`SCHEMA_VERSION`, WAL on; its
    statements wait ``busy_timeout`` seconds for a lock another connection holds."""
    problem = _unwritable(path)
    if problem is not None:
        raise _error(
            path, f"cannot write the journal: {problem}; pass another --db or make it writable"
        )
    version = _check_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _create_private(path)
        # Room for every statement the writer makes (the multi-row INSERTs' texts:
        # _rows._insert_rows), so that none is compiled again.
        connection = sqlite3.connect(
            path,
            isolation_level=None,
            check_same_thread=False,
            cached_statements=256,
            timeout=busy_timeout,
        )
    except (OSError, sqlite3.Error) as exc:
        raise _error(path, f"cannot create the journal: {exc}") from exc
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={_SYNCHRONOUS[durability]}")
        if max_bytes is not None:
            page_size = connection.execute("PRAGMA page_size").fetchone()[0]
            connection.execute(f"PRAGMA max_page_count={max(max_bytes // page_size, 1)}")
        if version < SCHEMA_VERSION:
            _migrate(connection, version)
            if version:
                import structlog  # here: reading a journal loads no logging library

                structlog.get_logger("orchestrator.journal").info(
                    "journal migrated", path=str(path), old=version, new=SCHEMA_VERSION
                )
    except sqlite3.Error as exc:
        connection.close()
        raise _from_sqlite(path, exc, "prepare the journal for writing") from exc
    return connection


def _create_private(path: Path) -> None:
    """Create the journal file readable by its owner only (an empty file is an empty SQLite
    database), unless it exists: it holds every prompt and answer of every session. SQLite
    gives the ``-wal`` and ``-shm`` files it creates beside it the database file's mode."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
