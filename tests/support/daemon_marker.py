"""The ``daemon`` marker: set on the tests that start processes or servers, kept honest.

A test is marked by hand (``pytestmark = pytest.mark.daemon``, or on a class or a test) or
here, by the fixtures it takes: a PostgreSQL server, a journal on PostgreSQL, the AG-UI
client's node packages. A test without the mark runs with sockets that cannot bind or
connect and with no new process, so ``-m "not daemon"`` is the pure part of the suite and
stays fast: a test that starts something unmarked fails and says what to add.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
from typing import Any, NoReturn

import pytest

#: Fixtures that start a server or a process: a test that takes one is a daemon test.
DAEMON_FIXTURES = frozenset(
    {"postgres_server", "own_postgres_server", "postgres_database", "run_mjs"}
)

#: Fixtures parametrized over the journal's databases: their PostgreSQL case is a daemon test.
DATABASE_FIXTURES = frozenset({"journal_db", "new_journal_db"})


class UnmarkedDaemonTestError(Exception):
    """A test without the ``daemon`` marker opened a socket or started a process."""


def is_daemon_test(item: pytest.Item) -> bool:
    """Whether ``item`` starts processes or servers, by its marker or by its fixtures."""
    if item.get_closest_marker("daemon") is not None:
        return True
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & DAEMON_FIXTURES:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    return any(callspec.params.get(name) == "postgresql" for name in fixtures & DATABASE_FIXTURES)


def pytest_sessionstart(session: pytest.Session) -> None:
    """croniter's first import runs ``file`` on the interpreter (``platform.architecture()``,
    to tell a 32-bit build): imported here, before any test, the first test to parse a
    schedule does not start that process, whichever test runs first."""
    importlib.import_module("croniter")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("daemon") is None and is_daemon_test(item):
            item.add_marker(pytest.mark.daemon)


def _refuse(what: str) -> Any:
    def refused(*args: object, **kwargs: object) -> NoReturn:
        if args and isinstance(args[0], socket.socket):
            args[0].close()  # no "unclosed socket" warning later, in another test
        raise UnmarkedDaemonTestError(
            f"a test without the daemon marker {what}: mark it (pytestmark = "
            "pytest.mark.daemon, or @pytest.mark.daemon on its class or itself)"
        )

    return refused


@pytest.fixture(autouse=True)
def _no_process_nor_server_unless_marked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside daemon tests, binding or connecting a socket and starting a process raise."""
    if request.node.get_closest_marker("daemon") is None:
        monkeypatch.setattr(socket.socket, "bind", _refuse("bound a socket"))
        monkeypatch.setattr(socket.socket, "connect", _refuse("connected a socket"))
        monkeypatch.setattr(socket.socket, "connect_ex", _refuse("connected a socket"))
        monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("started a process"))
        for name in ("fork", "posix_spawn", "posix_spawnp"):
            monkeypatch.setattr(os, name, _refuse("started a process"))
