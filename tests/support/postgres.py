"""A throwaway PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` on a temporary
directory, listening on a loopback port, torn down when the test session ends.

One cluster per pytest process (``postgres_server`` is session-scoped, and each xdist worker
is a process of its own, with its own port and directory), so workers never share or wait
for one another; each test that wants a journal gets a database of its own
(``postgres_database``), made from ``template1`` in a few milliseconds.

The binaries are looked up on ``PATH``, then in ``/usr/lib/postgresql/*/bin`` (Debian's
``postgresql`` package, newest version first). Without them the tests that need a server
skip, except under CI (``CI`` set), where they fail: a green CI must have run them.

PostgreSQL refuses to run as root, and the tests run as root here and in CI: then the
cluster's directory is given to ``nobody`` and ``initdb``, ``pg_ctl`` and the server run
as that user (``subprocess``'s ``user=``/``group=``, no ``su`` needed).

Tests that stop or restart the server (the journal reconnecting) take a cluster of their
own, ``own_postgres_server`` (one per test, a second or two to make), so that the other
tests' cluster never goes away under them.

``fsync=off`` (and ``full_page_writes=off``): what the tests check is the journal's
side of durability, that a batch is acknowledged only after PostgreSQL answered its
COMMIT; whether PostgreSQL then reaches the platter is PostgreSQL's business, and a
throwaway cluster on two shared cores would otherwise spend the tests' time in fsync.
Nothing survives the test session anyway.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

__all__ = [
    "ENGINES",
    "PostgresServer",
    "direct_sql",
    "find_postgres_binaries",
    "journal_db",
    "new_journal_db",
    "own_postgres_server",
    "postgres_database",
    "postgres_server",
]

#: The superuser of the throwaway cluster, and the user of every test URL (trust auth).
SUPERUSER = "orchestrator"


def find_postgres_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    on_path = shutil.which("pg_ctl")
    candidates = [Path(on_path).parent] if on_path else []
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += [Path(p) for p in sorted(versions, key=lambda p: _version_of(p), reverse=True)]
    for directory in candidates:
        if all((directory / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return directory
    return None


def _version_of(path: str) -> int:
    try:
        return int(Path(path).parent.name.split(".")[0])
    except ValueError:
        return 0


@attrs.define
class PostgresServer:
    """A running throwaway cluster: its port, and databases made on demand."""

    bin: Path
    directory: Path
    port: int
    as_user: dict[str, Any]  # subprocess's user=/group= when run as root, else empty
    options: str = ""  # the server's command line options (pg_ctl -o)
    _databases: Iterator[int] = attrs.field(factory=lambda: itertools.count(1))

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._databases)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run(
            [self.bin / "pg_ctl", "stop", "-w", "-D", self.directory / "data", "-m", mode],
            capture_output=True,
            check=False,
            **self.as_user,
        )

    def start(self) -> None:
        """Start a stopped server again, on the same port, with the same options."""
        self._ctl("start", "-o", self.options)

    def restart(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: every connection ended, as an administrator's
        restart or a failover does) and start it again on the same port."""
        self._ctl("restart", "-m", mode)

    def _ctl(self, command: str, *options: str) -> None:
        data = self.directory / "data"
        arguments: list[Any] = [self.bin / "pg_ctl", command, "-w", "-t", "60", "-D", data]
        arguments += [*options, "-l", self.directory / "server.log"]
        done = subprocess.run(
            arguments,
            capture_output=True,
            text=True,
            check=False,
            **self.as_user,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {command} failed: {done.stderr}{done.stdout}")


def _unprivileged() -> dict[str, Any]:
    """``user=``/``group=`` for the server's processes: nobody's when we are root."""
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_postgres(
    bin_dir: Path, *, fsync: bool = False, max_connections: int = 60
) -> PostgresServer:
    """initdb a cluster in a new temporary directory and start it on a free loopback port.

    ``fsync``: the benchmarks' choice (``bench/``: a server that flushes its WAL, as one in
    production does); the tests keep it off (see the module docstring)."""
    as_user = _unprivileged()
    # In the system's temporary directory, not pytest's (0700 and root's: nobody could not
    # reach a directory under it).
    directory = Path(tempfile.mkdtemp(prefix="orchestrator-pg-"))
    if as_user:
        os.chown(directory, as_user["user"], as_user["group"])
    data = directory / "data"
    subprocess.run(
        [
            bin_dir / "initdb",
            "-D",
            data,
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--no-sync",
            "--encoding=UTF8",
            "--locale=C",
        ],
        capture_output=True,
        check=True,
        **as_user,
    )
    problem = ""
    for _ in range(5):  # another process may take the port between our probe and the start
        port = _free_port()
        options = " ".join(
            [
                f"-p {port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={directory}",
                f"-c fsync={'on' if fsync else 'off'}",
                f"-c full_page_writes={'on' if fsync else 'off'}",
                "-c synchronous_commit=on",
                "-c shared_buffers=32MB",
                f"-c max_connections={max_connections}",
            ]
        )
        started = subprocess.run(
            [
                bin_dir / "pg_ctl",
                "start",
                "-w",
                "-t",
                "60",
                "-D",
                data,
                "-l",
                directory / "server.log",
                "-o",
                options,
            ],
            capture_output=True,
            text=True,
            check=False,
            **as_user,
        )
        if started.returncode == 0:
            return PostgresServer(
                bin=bin_dir, directory=directory, port=port, as_user=as_user, options=options
            )
        log = directory / "server.log"
        problem = started.stderr + (log.read_text(errors="replace")[-2000:] if log.exists() else "")
    shutil.rmtree(directory, ignore_errors=True)
    raise RuntimeError(f"PostgreSQL did not start: {problem}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster for this test process (see the module docstring)."""
    bin_dir = find_postgres_binaries()
    if bin_dir is None:
        message = (
            "PostgreSQL's binaries (initdb, pg_ctl, postgres) are not on PATH nor in "
            "/usr/lib/postgresql/*/bin: apt-get install postgresql"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = start_postgres(bin_dir)
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(server.directory)


@pytest.fixture
def own_postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster for this test alone, which it may stop, restart and
    start (see the module docstring)."""
    bin_dir = find_postgres_binaries()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL's binaries are missing: apt-get install postgresql")
        pytest.skip("PostgreSQL's binaries are missing: apt-get install postgresql")
    server = start_postgres(bin_dir)
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(server.directory)


@pytest.fixture
def postgres_database(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the throwaway cluster."""
    return postgres_server.create_database()


#: The databases a journal test runs against (``journal_db``).
ENGINES = ("sqlite", "postgresql")


@pytest.fixture(params=ENGINES)
def journal_db(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """What ``--db`` names for a new journal: a SQLite file, or a new PostgreSQL database
    (the server is started only for the tests that take this parameter)."""
    if request.param == "sqlite":
        return tmp_path / "journal.db"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database()


@contextlib.contextmanager
def direct_sql(db: Path | str) -> Iterator[Any]:
    """A connection to the journal ``db`` for a test's own statements (``?`` parameters on
    both databases), committed when the block ends."""
    if isinstance(db, Path):
        import sqlite3

        connection = sqlite3.connect(db)
        try:
            yield connection
            connection.commit()
        finally:
            connection.close()
        return
    import psycopg

    from orchestrator.journal.postgres._connection import PgConnection

    raw = psycopg.connect(db, autocommit=True)
    try:
        yield PgConnection(raw)
    finally:
        raw.close()


@pytest.fixture(params=ENGINES)
def new_journal_db(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Path | str]:
    """Makes what ``--db`` names for a new journal each time it is called, on one database
    kind per parameter (as ``journal_db``, for tests that need several journals)."""
    numbers = itertools.count()
    if request.param == "sqlite":
        return lambda: tmp_path / f"journal-{next(numbers)}.db"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database


def end_connections(db: str, application: str) -> None:
    """End the server processes of ``db``'s connections of ``application`` (as an
    administrator would), and wait until they are gone."""
    with direct_sql(db) as connection:
        connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = ? AND datname = current_database()",
            (application,),
        )
        deadline = time.monotonic() + 10
        while connection.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE application_name = ? AND datname = current_database()",
            (application,),
        ).fetchone()[0]:
            assert time.monotonic() < deadline, f"{application} still connected"
            time.sleep(0.01)
