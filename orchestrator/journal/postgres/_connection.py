"""Connecting to a PostgreSQL journal: the URL checked, the errors named, the SQL adapted.

``--db postgresql://USER@HOST:PORT/DB`` (or ``postgres://``; a password in the URL or in
``~/.pgpass``/``PGPASSWORD`` as libpq reads them). What can go wrong before a byte is
written, and what the command line does with it (README, "Exit status"):

* a URL that does not parse (no host, a port that is not a number, libpq refuses it):
  :class:`FactLogError`, exit 2, naming what is wrong;
* a server that is not there, or does not answer in :data:`CONNECT_TIMEOUT` seconds:
  :class:`UnavailableError`, exit 3 (try again later);
* a database that does not exist, a user the server refuses: :class:`FactLogError`,
  exit 2, saying so.

Errors and logs name the journal by its URL without the password (:func:`redacted`).

A connection that is lost later (the server restarted, failed over, or an administrator
ended it) is *transient* (:func:`transient`). Whoever holds it connects again with
:func:`~.._reconnect.reconnect`: 0.1 s, doubling to 5 s between tries, for a bound of its
caller's. Then it tries again what it was doing. A fault of what was sent (a constraint, a
lease fence, a full disk) is not: reconnecting would not cure it.

The writer's rows (:mod:`.._rows`) and the reader's queries (:mod:`.._reader`) are written
with SQLite's ``?`` parameters; :class:`PgConnection` turns them into psycopg's ``%s``
(the statements hold no ``%``), so both journals run the same statements.
"""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from orchestrator.base import FactLogError, UnavailableError

if TYPE_CHECKING:
    import psycopg

__all__ = ["is_postgres_url"]

#: Seconds to wait for the server to answer a connection (unless the URL says otherwise).
CONNECT_TIMEOUT: Final = 10
#: Seconds a journal tries to reconnect to a server it lost before it fails (about a lease's
#: TTL: a node cut off longer than that has lost its sessions to others anyway).
RECONNECT_FOR: Final = 15.0
#: The SQLSTATEs of a server going away (besides class 08, the connection's): shut down by
#: an administrator or a restart, crashed, still starting.
_SERVER_GOING: Final = frozenset({"57P01", "57P02", "57P03"})

_T = TypeVar("_T")
_SCHEMES: Final = ("postgresql://", "postgres://")


def is_postgres_url(db: object) -> bool:
    """Whether ``--db`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(_SCHEMES)


#: Parameters of a URL's query that libpq takes as a password.
_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})


def redacted(url: str) -> str:
    """``url`` without its password (``user:***@host``, ``?password=***``), to name the
    journal in errors and logs."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url.split("@")[-1] if "@" in url else url
    if parts.password is not None:
        user = parts.username or ""
        host = parts.netloc.rsplit("@", 1)[-1]
        parts = parts._replace(netloc=f"{user}:***@{host}")
    if parts.query:
        # Each parameter as written (its escapes kept), its value hidden when it is secret.
        query = "&".join(
            f"{name}=***"
            if (name := pair.partition("=")[0]).lower() in _SECRET_PARAMETERS
            else pair
            for pair in parts.query.split("&")
        )
        parts = parts._replace(query=query)
    return urllib.parse.urlunsplit(parts)


def checked_url(url: str) -> str:
    """``url`` if it names a PostgreSQL database this journal can use, else why not."""
    source = redacted(url)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError when it is not a number in range
    except ValueError as exc:
        raise FactLogError(f"this PostgreSQL URL does not parse: {exc}", source=source) from exc
    if not parts.hostname and "host=" not in parts.query:
        raise FactLogError(
            "this PostgreSQL URL names no server: postgresql://USER@HOST:PORT/DATABASE",
            source=source,
        )
    if not parts.path.strip("/"):
        raise FactLogError(
            "this PostgreSQL URL names no database: postgresql://USER@HOST:PORT/DATABASE",
            source=source,
        )
    del port
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except Exception as exc:  # psycopg.ProgrammingError: libpq's reason
        raise FactLogError(f"this PostgreSQL URL does not parse: {exc}", source=source) from exc
    return url


def connect(url: str, *, application: str, **options: Any) -> psycopg.Connection[Any]:
    """A connection in autocommit mode (the journal says ``BEGIN`` and ``COMMIT`` itself),
    or a clear error: see the module docstring."""
    import psycopg

    checked_url(url)
    source = redacted(url)
    try:
        return psycopg.connect(
            url,
            autocommit=True,
            application_name=application,
            connect_timeout=_timeout(url),
            **options,
        )
    except psycopg.Error as exc:
        raise connect_error(source, exc) from exc


def _timeout(url: str) -> int:
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url).get("connect_timeout")
    return int(given) if given else CONNECT_TIMEOUT


def connect_error(source: str, exc: Exception) -> FactLogError | UnavailableError:
    """What a failed connection means to whoever gave the URL."""
    text = " ".join(str(exc).split())
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate == "3D000" or ("database" in text and "does not exist" in text):
        return FactLogError(
            f"no such database on the server ({text}); create it (createdb) or name another",
            source=source,
        )
    if (sqlstate or "").startswith("28") or "authentication failed" in text or "role" in text:
        return FactLogError(f"the server refused this user ({text})", source=source)
    return UnavailableError(f"{source}: cannot reach the PostgreSQL server ({text})")


class PgConnection:
    """A psycopg connection that runs the journal's SQLite-style statements (``?``)."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.raw = connection

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        # Always with parameters, none or some: psycopg then reads the statement's %% as
        # the % it was (see _pg_sql).
        return self.raw.execute(_pg_sql(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        rows = list(parameters)
        if rows:
            with self.raw.cursor() as cursor:
                cursor.executemany(_pg_sql(sql), rows)

    def copy_rows(self, head: str, rows: Sequence[Sequence[Any]]) -> None:
        """``head`` (``INSERT INTO table (columns)``) for ``rows``, as one ``COPY``: the
        same rows, and the same errors (a duplicate key fails it whole), at a fraction of
        the cost of multi-row ``INSERT``s (see :func:`._rows._insert_rows`)."""
        if not rows:
            return
        table_and_columns = head.removeprefix("INSERT INTO ").strip()
        statement = _pg_sql(f"COPY {table_and_columns} FROM STDIN")
        with self.raw.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    def close(self) -> None:
        self.raw.close()

    def transient(self, exc: BaseException) -> bool:
        """Whether ``exc`` (raised by a statement on this connection) is its loss."""
        return transient(exc, self.raw)


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> Any:
    from psycopg import sql as pg_sql

    # psycopg takes a literal string or a Composable; the statement is ours, not input.
    return pg_sql.SQL(sql.replace("%", "%%").replace("?", "%s"))


def environmental(exc: BaseException) -> bool:
    """Whether ``exc`` is the database's or the connection's fault.

    Then the journal cannot go on: the server is gone or shutting down, the disk is full, the
    database is read-only, or this user may not write. The other kind is the fault of what one
    item holds (a duplicate key, text the server refuses): that item fails, the rest is
    written."""
    import psycopg

    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, psycopg.InternalError)):
        return True
    if isinstance(exc, psycopg.Error):
        sqlstate = exc.sqlstate or ""
        return sqlstate in ("42501", "25006") or sqlstate[:2] in ("08", "53", "57", "58", "XX")
    return False


def transient(exc: BaseException, connection: psycopg.Connection[Any] | None = None) -> bool:
    """Whether ``exc`` is the loss of the connection (the server restarted, failed over, shut
    down or ended it; the network between is cut): connecting again and trying again may
    succeed. Not so a fault of what was sent (a constraint, text the server refuses, a
    lease fence), nor of the server's state (a full disk, a read-only database, no
    privilege), which a new connection meets again. ``connection``: the one ``exc`` came
    from, when known (one found broken was lost, whatever the error says)."""
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return False
    if connection is not None and connection.broken:
        return True
    sqlstate = exc.sqlstate
    if sqlstate is None:
        # No answer from the server: the socket closed, the connection found closed.
        return isinstance(exc, psycopg.OperationalError)
    return sqlstate.startswith("08") or sqlstate in _SERVER_GOING
