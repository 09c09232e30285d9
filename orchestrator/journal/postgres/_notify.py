"""Several daemons on one PostgreSQL journal: what a node hears of the others (LISTEN/NOTIFY).

Theory of operation
-------------------
Three channels, each a ``NOTIFY`` sent inside the transaction that wrote what it announces
(PostgreSQL delivers it on commit, never for a transaction rolled back):

* :data:`FACTS_CHANNEL`: a session's facts were committed (the journal's writer, once per
  session per group: :func:`facts_payload`, the session and its last sequence);
* :data:`COMMANDS_CHANNEL`: a command was written for a session's owner (payload: the
  session, see :mod:`._commands`);
* :data:`ANSWERS_CHANNEL`: a command was answered (payload: its id).

A notification is a wake-up call, never the data: whoever hears one reads the table from
its own cursor. So a notification lost (the listening connection dropped, a payload that
cannot be read) only delays: :class:`PostgresListener` tells its owner after every
(re)connection (``on_connected``: read everything again), and the readers poll slowly too.

:class:`PostgresListener` keeps one connection that ``LISTEN``s to the three channels, in a
worker thread. It uses blocking psycopg, ``Connection.notifies`` with a timeout, so the thread
sees a stop within a second. It hands each notification to the trio side. A connection that
drops is opened again with a growing pause (:func:`~.._reconnect.backoff`, as the writer).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Final

import psycopg
import structlog
import trio

from orchestrator.base import OrchestratorError

from .._reconnect import backoff
from ._connection import connect, redacted

__all__ = [
    "ANSWERS_CHANNEL",
    "COMMANDS_CHANNEL",
    "FACTS_CHANNEL",
    "PostgresListener",
    "facts_payload",
    "read_facts_payload",
]

log = structlog.get_logger("orchestrator.journal")

FACTS_CHANNEL: Final = "orchestrator_facts"
COMMANDS_CHANNEL: Final = "orchestrator_commands"
ANSWERS_CHANNEL: Final = "orchestrator_answers"
#: Payloads stay far below PostgreSQL's 8,000 bytes; a longer one says less (see below).
MAX_PAYLOAD: Final = 4000
#: Seconds the listening thread waits for a notification before it looks for a stop.
_WAIT: Final = 0.5


def facts_payload(session: str, sequence: int) -> str:
    """What :data:`FACTS_CHANNEL` carries: the session and its last committed sequence. A
    session URI too long for a payload is left out: followers then read every session."""
    text = json.dumps({"session": session, "sequence": sequence}, ensure_ascii=False)
    if len(text.encode()) > MAX_PAYLOAD:
        return json.dumps({"sequence": sequence})
    return text


def read_facts_payload(payload: str) -> tuple[str | None, int | None]:
    """The session and sequence of a :data:`FACTS_CHANNEL` payload; ``(None, None)`` for
    one that cannot be read (whoever hears it reads every session it follows)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    session, sequence = data.get("session"), data.get("sequence")
    return (
        session if isinstance(session, str) else None,
        sequence if isinstance(sequence, int) and not isinstance(sequence, bool) else None,
    )


class PostgresListener:
    """One connection that listens to the cluster's channels (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.source = redacted(url)
        self.connected = False
        self.reconnections = 0

    async def serve(
        self,
        on_notify: Callable[[str, str], None],
        on_connected: Callable[[], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen until cancelled: ``on_notify(channel, payload)`` for each notification,
        ``on_connected()`` after each (re)connection, both on the trio side. Reports
        started after the first attempt to connect (listening or not)."""
        started = False
        pauses = backoff()
        failures = 0
        token = trio.lowlevel.current_trio_token()

        def connected() -> None:
            nonlocal failures, pauses
            failures = 0
            pauses = backoff()
            self.connected = True
            on_connected()

        while True:
            stop = threading.Event()
            try:
                if not started:
                    started = True
                    task_status.started()
                await trio.to_thread.run_sync(
                    functools.partial(self._listen, stop, token, on_notify, connected),
                    abandon_on_cancel=True,
                )
            except (OrchestratorError, OSError, psycopg.Error) as exc:
                if self.connected or failures == 0:
                    log.warning("not listening to the cluster", error=str(exc), db=self.source)
            finally:
                stop.set()  # an abandoned thread closes its connection within _WAIT
            self.connected = False
            self.reconnections += 1
            await trio.sleep(next(pauses))
            failures += 1

    def _listen(
        self,
        stop: threading.Event,
        token: trio.lowlevel.TrioToken,
        on_notify: Callable[[str, str], None],
        on_connected: Callable[[], None],
    ) -> None:
        connection = connect(self.url, application="orchestrator listener")
        try:
            for channel in (FACTS_CHANNEL, COMMANDS_CHANNEL, ANSWERS_CHANNEL):
                connection.execute(f"LISTEN {channel}")
            trio.from_thread.run_sync(on_connected, trio_token=token)
            while not stop.is_set():
                for notification in connection.notifies(timeout=_WAIT):
                    if stop.is_set():
                        return
                    trio.from_thread.run_sync(
                        on_notify, notification.channel, notification.payload, trio_token=token
                    )
        except trio.RunFinishedError:
            return
        finally:
            connection.close()
