"""The journal's writer, whatever the database: every fact on disk before anyone sees it.

Theory of operation
-------------------
The journal is the durable :class:`~orchestrator.runtime._factlog.FactLog` of the daemon and of
``orchestrator run --db``. One writer thread owns the only write connection. :meth:`submit`
(on the trio thread) encodes a batch (each fact's text and its checksum). It queues it with an
:class:`EventTicket`. The writer takes everything queued: a *group commit*, up to
:data:`GROUP_LIMIT` facts. It writes it in one transaction with few multi-row statements and
commits. Then it completes the tickets in order through the trio token.

Faults are sorted by whose they are:

* **the file's** (full, read-only, I/O error, damaged: SQLite's codes in
  :data:`~._sqlite_journal._ENVIRONMENT_CODES`, and running out of memory): the
  transaction is rolled back, its batches and every batch queued behind them fail, and
  the journal refuses all later writes (``failed``: ``/healthz`` answers 503 with the
  reason). The file holds exactly the facts that were acknowledged.
* **one item's** (anything else: a constraint such as a duplicate ``(session, sequence)``,
  text that cannot be UTF-8, a bug in the history or snapshot code): the group is rolled
  back and written again item by item, each in a savepoint of the same transaction. The
  item that fails again is left out: a batch fails with an error naming its session, facts
  and the fault, and its *session* is refused from then on (its later batches fail with the
  same error: they were prepared on top of it); a snapshot (only a cache) or a team file is
  logged and skipped. Every other batch commits. What the writer remembers across
  transactions (running turns' facts, the snapshot parts on file) is forgotten on a
  rollback and read back from the file when needed.
* **the connection's** (:meth:`_GroupCommitJournal._transient`: on PostgreSQL the server
  restarted, failed over, or ended the connection; on SQLite another connection holds the
  file's lock, a backup or the ``sqlite3`` shell, past the write connection's
  ``busy_timeout``: SQLITE_BUSY or SQLITE_LOCKED): the group is not lost, it waits. The
  writer connects again (:func:`~._reconnect.reconnect`: 0.1 s doubling to 5 s between
  tries; on SQLite it keeps its connection and tries to take the write lock,
  :meth:`~._sqlite_journal.SqliteJournal._reconnect`) for :attr:`reconnect_for` seconds at
  most since the connection was lost, then reads back what the group's batches left in
  the database
  (:func:`._rows._stored_batches`): the lost transaction rolled back, unless the connection
  died during its ``COMMIT``, where only the server knows (SQLite's ``COMMIT`` can also
  say SQLITE_BUSY: its transaction is then still open, and rolled back before the reading).
  A batch whose facts are stored, each with its checksum, was committed (its ticket
  completes: it is durable); the rest is written again, so no fact is lost or written
  twice. Meanwhile batches queue up behind the group (their runtimes wait
  for their tickets: nothing is published before it is durable), and :attr:`reconnecting`
  says since when (``/healthz``). Past the bound the journal fails as for the file's fault,
  saying the database was unreachable (a file: stayed locked) for so many seconds. The loss
  and the reconnection are logged once each, not each try, in the database's own words
  (:attr:`_GroupCommitJournal._waiting_event`).
* **the writer's own death** (an exception that is not an ``Exception``): the journal fails
  with the reason, and every batch in hand, queued or submitted later fails with it, so no
  one waits forever and a shutdown still returns.

Stopping (:meth:`serve` cancelled) drains what was submitted, for :attr:`drain_limit`
seconds at most; then only the transaction in hand is finished and the rest fails (it was
never acknowledged): a shutdown does not wait for an unbounded backlog.

Snapshots: a snapshot is due after every :data:`SNAPSHOT_EVERY` committed facts of a session.
It is also due only after at least one fact per entry of its state, so that a large fan-out is
not walked and encoded again every few thousand facts (:func:`._snapshot.snapshot_due`). Then
the runtime's committed state is copied (its entries are immutable values, so a shallow copy),
and the writer stores it. So opening a session reads the latest snapshot and folds only the
facts after it. A snapshot is stored in parts: a ``snapshots`` row per session says which
sequence, and ``snapshot_parts`` rows hold the pieces (see :mod:`._snapshot`). The writer
writes again only the parts that changed since its previous snapshot of the session. So a
snapshot costs what changed, not the size of the session.

Two databases:

- the writer, group commit, faults, tickets and snapshots above are
  :class:`_GroupCommitJournal` (this module), whatever the database;
- :class:`~._sqlite_journal.SqliteJournal` says how a SQLite file is opened and begun, and
  which faults are waited for and which are the file's;
- :class:`~.postgres._journal.PostgresJournal` says the same for a PostgreSQL database.

Both write the same rows (:mod:`._rows`), and :mod:`._interface` picks one by what ``--db``
names.

Where the rest lives:

* :mod:`._file`: opening a file (the checks before a byte is written, the write connection)
  and what an acknowledged fact survives (:class:`~._file.Durability`).
* :mod:`._schema`: the tables, the schema versions and the migrations between them.
* :mod:`._rows`: what one transaction writes (facts and their checksums, session rows,
  chats, the agent channel's history, snapshot parts).
* :mod:`._reader`: :class:`~._reader.JournalReader`, reading beside the writer.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
import structlog
import trio

from orchestrator.ahp.state import Turn
from orchestrator.base import FactLogError
from orchestrator.core import Fact, ForkRows, TeamState
from orchestrator.runtime import EventTicket, Ticket, release_free_memory

from ._file import _error
from ._reader import JournalReader
from ._reconnect import ReconnectStoppedError, UnreachableError, reconnect
from ._rows import (
    _AgentHistory,
    _Batch,
    _batch,
    _Describe,
    _Forget,
    _fork_batch,
    _Item,
    _Snapshot,
    _SnapshotWriter,
    _stored_batches,
    _write_group,
)
from ._snapshot import snapshot_due, state_entries

if TYPE_CHECKING:
    from ._ownership import SessionOwnership

__all__ = ["JournalStatistics"]

log = structlog.get_logger("orchestrator.journal")

#: Most facts written in one transaction (a group commit).
GROUP_LIMIT: Final = 20_000
#: Committed facts of a session between two snapshots of it, at least (a session with more
#: entries waits for one fact per entry: :func:`._snapshot.snapshot_due`).
SNAPSHOT_EVERY: Final = 5_000
#: Seconds a stopping journal waits for its backlog before failing what is not written.
DRAIN_LIMIT: Final = 2.0


@attrs.frozen(kw_only=True)
class JournalStatistics:
    """What the journal has written since it opened."""

    facts: int
    batches: int
    transactions: int
    snapshots: int
    queued: int
    failed: bool


class _ConnectionLostError(Exception):
    """The writer's connection was lost in the middle of a group (raised from the lost
    connection's error): the group waits for :meth:`_GroupCommitJournal._recover`."""


class _GroupCommitJournal:
    """The writer thread, group commit, faults and tickets, whatever the database; a
    subclass says how to connect, begin a write transaction and tell the database's own
    faults (:meth:`_environmental`) from one item's, and what to call itself in errors
    (:attr:`source`). The transactions are plain SQL (``BEGIN``, ``SAVEPOINT``,
    ``COMMIT``) that SQLite and PostgreSQL both take; the rows are :mod:`._rows`'."""

    #: Names the journal in errors and logs (a file's path; a URL without its password).
    source: str
    reader: JournalReader
    #: The driver's errors, whose text says enough without their class's name.
    _database_errors: tuple[type[BaseException], ...] = ()
    #: Which sessions this process runs (:mod:`._ownership`): a SQLite file's locks, a
    #: PostgreSQL node's leases (whose epochs fence the writes), or all it asks for.
    ownership: SessionOwnership
    #: What the log says when the writer loses its connection and waits (:meth:`_recover`),
    #: and when it writes again; and the journal's failure once it waited in vain (the last
    #: fault follows, in parentheses).
    _waiting_event = "journal connection lost: reconnecting"
    _back_event = "journal reconnected"
    _waited_too_long = "the database was unreachable for {seconds:.0f} s"

    def __init__(
        self, *, snapshot_every: int, drain_limit: float, reconnect_for: float = 0.0
    ) -> None:
        self.snapshot_every = snapshot_every
        self.drain_limit = drain_limit
        #: Seconds the writer tries to connect again after losing its connection (a
        #: database server's restart) before the journal fails; see the module docstring.
        self.reconnect_for = reconnect_for
        # When the writer lost its connection (time.monotonic(), and the wall clock's),
        # until a transaction commits on a new one (the bound counts from the first loss
        # of a server that comes and goes); None while it has one.
        self._lost_at: float | None = None
        self._lost_since: dt.datetime | None = None
        # _lost_since while the writer has no connection (it is reconnecting): /healthz.
        self._reconnecting: dt.datetime | None = None
        self._stopping = threading.Event()  # cuts a reconnection's pause short
        # Batches and other writes for the writer thread; None tells it to stop.
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._token: trio.lowlevel.TrioToken | None = None
        # Why the journal failed: the writer thread's own (it fails all it takes after), and
        # the trio thread's, set once the failed transaction's tickets are completed: so a
        # submission is refused only after every batch durable before the failure has been
        # reported durable (see _completed).
        self._write_failed: FactLogError | None = None
        self._failed: FactLogError | None = None
        self._failed_event = trio.Event()
        # Sessions one of whose batches could not be stored, and why; the same two sides.
        # Invariant: self._refused.keys() >= self._refused_sessions.keys()
        self._refused: dict[str, FactLogError] = {}
        self._refused_sessions: dict[str, FactLogError] = {}
        # Set when a shutdown stops waiting for the backlog: what is not written fails.
        self._abandoned: FactLogError | None = None
        self._writing: list[_Item] = []  # the writer's group in hand (for _writer_died)
        self._dead = False  # the writer thread ended on an exception it could not contain
        self._closed = False
        self._snapshot_at: dict[str, int] = {}
        self._snapshots = _SnapshotWriter()
        self._history = _AgentHistory()
        self._connection: Any = None
        # Written by the writer thread only; read (racily, as counters) by statistics().
        self._written = {"facts": 0, "batches": 0, "transactions": 0, "snapshots": 0}

    # ── what each database does its own way ────────────────────────────────

    def _connect(self) -> Any:
        """The write connection, the schema checked and brought up to date (blocking)."""
        raise NotImplementedError

    def _begin(self, connection: Any) -> None:
        """Begin a write transaction."""
        connection.execute("BEGIN")

    def _close(self, connection: Any) -> None:
        connection.close()

    def _write_rows(self, connection: Any, group: Sequence[_Item]) -> None:
        """Write ``group``'s rows in the transaction in hand (a subclass may check first
        that it may: the PostgreSQL journal's lease fence)."""
        _write_group(connection, group, self._history)

    def _commit(self, connection: Any, group: Sequence[_Item]) -> None:
        """Commit the transaction in hand, ``group``'s (a subclass may put off what the
        commit would do beyond making it durable, to :meth:`_acknowledged`)."""
        connection.execute("COMMIT")

    def _acknowledged(self, connection: Any) -> None:
        """After a committed group's tickets were completed: what :meth:`_commit` put off."""

    def _refuses_session(self, exc: Exception) -> bool:
        """Whether a batch that failed on ``exc`` refuses its session from then on.

        It does, since its later batches were prepared on top of it. Not so for a batch a lease
        fence kept out: its later batches each meet the fence themselves (see
        postgres/_journal)."""
        return True

    def _transient(self, exc: BaseException, connection: Any) -> bool:
        """Whether ``exc`` is the loss of ``connection`` (connect again and try again),
        rather than a fault of the database or of what one item holds. A file is not lost."""
        return False

    def _environmental(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the database's or the machine's fault (the journal cannot go
        on), rather than that of what one item holds (that item fails, the rest is written)."""
        return isinstance(exc, MemoryError)

    def _retries(self, exc: Exception) -> bool:
        """Whether a try to connect again (:meth:`_reconnect`) that failed on ``exc`` is
        tried again until the bound; if not, it is sorted as a fault of the write path. On
        a server every fault is: one restarting refuses connections for a while."""
        return True

    def _describe(self) -> dict[str, str]:
        """What the "journal open" log line says of the journal."""
        return {"path": self.source}

    # ── the service ────────────────────────────────────────────────────────

    def open(self) -> None:
        """Check, migrate and open the journal for writing (blocking: run it in a thread).

        Raises :class:`FactLogError` naming the journal and the problem; nothing is written
        to one that is refused.
        """
        if self._connection is None:
            self._connection = self._connect()

    def close(self) -> None:
        """Close a journal that was opened but will not be served (``serve`` closes its
        own connection when it stops)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                self._close(connection)

    async def serve(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        """Write until cancelled, then drain what was submitted and close.

        Opens the file first if :meth:`open` was not called; reports the journal itself once
        it takes batches. The drain takes :attr:`drain_limit` seconds at most (and the
        transaction in hand): what is not written by then fails (:meth:`stop_writing`).
        """
        await trio.to_thread.run_sync(self.open)
        assert self._connection is not None
        self._token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def write_until_stopped() -> None:
            try:
                self._write()
            except BaseException as exc:  # reported: see _writer_died
                self._writer_died(exc)
            finally:
                with contextlib.suppress(Exception):
                    self._close(self._connection)  # the last one (see _reconnect)
                self._connection = None
                # What the database and this thread held is free now, but glibc keeps it in
                # this thread's arena, resident: hand it back (see release_free_memory).
                release_free_memory()
                self._token_run(done.set)

        thread = threading.Thread(target=write_until_stopped, name="journal-writer", daemon=True)
        thread.start()
        log.info("journal open", **self._describe())
        task_status.started(self)
        try:
            await trio.sleep_forever()
        finally:
            # Everything submitted before the stop is written (or failed) before we return,
            # within the drain limit: a shutdown must not wait for an unbounded backlog.
            self._closed = True
            self._queue.put(None)
            with trio.CancelScope(shield=True):
                with trio.move_on_after(self.drain_limit):
                    await done.wait()
                if not done.is_set():
                    self.stop_writing()
                    await done.wait()

    def stop_writing(self) -> None:
        """Write nothing more but the transaction in hand: every batch not written yet
        fails (it was never acknowledged), at once. For a shutdown that cannot wait for
        the backlog; the journal stays sound, and the next start recovers the sessions."""
        if self._abandoned is None:
            self._abandoned = _error(
                self.source, "the journal closed before this batch was written"
            )
            self._stopping.set()
            log.warning("journal backlog abandoned", path=self.source, queued=self._queue.qsize())

    def _token_run(self, function: Any, *args: Any) -> None:
        assert self._token is not None
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(function, *args)

    def _write(self) -> None:
        """The writer thread: take what is queued, write it in one transaction, report."""
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                return
            if isinstance(first, _Batch):
                first.ready()
            group = [first]
            size = first.size()
            while size < GROUP_LIMIT:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                if isinstance(item, _Batch):
                    item.ready()
                group.append(item)
                size += item.size()
            self._writing = group
            if self._write_failed is not None:
                self._token_run(self._completed, _tickets(group), self._write_failed)
            elif self._abandoned is not None:
                abandoned = self._abandoned
                self._token_run(self._settled, [(t, abandoned) for t in _tickets(group)], {})
            else:
                self._write_or_wait(group)
            self._writing = []
            # Hold nothing of it while waiting for the next: its snapshot is a session's
            # whole state, which a session put away meanwhile would leave behind.
            group, first, item = [], None, None

    def _write_or_wait(self, group: list[_Item]) -> None:
        """Write ``group``; if the connection is lost meanwhile, wait for a new one and
        write what the lost transaction did not (:meth:`_recover`)."""
        while group:
            connection = self._connection
            try:
                if self._refused and any(item.session in self._refused for item in group):
                    self._write_each(connection, group)
                else:
                    self._write_together(connection, group)
            except _ConnectionLostError as lost:
                group = self._recover(group, lost.__cause__ or lost)
                continue
            if self._lost_at is not None:
                self._lost_at = self._lost_since = None  # a transaction committed again
            return

    def _write_together(self, connection: Any, group: list[_Item]) -> None:
        """The fast path: the whole group in one transaction, its rows in few statements."""
        try:
            self._begin(connection)
            self._write_rows(connection, group)
            self._commit(connection, group)
        except Exception as exc:  # sorted out below: the connection's, the file's, or one item's
            self._rolled_back(connection, group)
            if self._transient(exc, connection):
                raise _ConnectionLostError() from exc
            if self._environmental(exc):
                self._journal_failed(exc, group)
                return
            log.warning(
                "journal transaction failed: writing its batches one by one",
                path=self.source,
                error=_printable(f"{type(exc).__name__}: {exc}"),
            )
            self._write_each(connection, group)
            return
        self._wrote(group)
        # One call into trio for the whole group: each call wakes the trio thread through
        # its wakeup socket, and a syscall per ticket also hands the GIL back and forth.
        tickets = _tickets(group)
        if tickets:
            self._token_run(self._completed, tickets, None)
        self._acknowledged(connection)

    def _write_each(self, connection: Any, group: list[_Item]) -> None:
        """The slow path, after a fault of one item: each item in a savepoint of its own.

        So one batch that cannot be stored fails alone (and its session with it). A snapshot
        that cannot be stored is skipped. All else commits, still in one transaction.
        A fault of the file itself fails the journal as on the fast path."""
        outcomes: list[tuple[EventTicket, FactLogError | None]] = []
        refused: dict[str, FactLogError] = {}
        written: list[_Item] = []
        refused_before = dict(self._refused)  # what a lost connection puts back
        try:
            self._begin(connection)
            for item in group:
                earlier = self._refused.get(item.session)
                if earlier is not None:
                    if isinstance(item, _Batch):  # it follows a batch that failed
                        outcomes.append((item.ticket, earlier))
                    continue
                connection.execute("SAVEPOINT item")
                try:
                    self._write_rows(connection, [item])
                except Exception as exc:
                    connection.execute("ROLLBACK TO item")
                    connection.execute("RELEASE item")
                    self._history.reset()
                    self._snapshots.forget(item.session)
                    if self._transient(exc, connection) or self._environmental(exc):
                        raise
                    problem = self._item_failed(item, exc)
                    if isinstance(item, _Batch) and problem is not None:
                        if self._refuses_session(exc):
                            self._refused[item.session] = refused[item.session] = problem
                        outcomes.append((item.ticket, problem))
                    continue
                connection.execute("RELEASE item")
                written.append(item)
                if isinstance(item, _Batch):
                    outcomes.append((item.ticket, None))
            connection.execute("COMMIT")
        except Exception as exc:  # the connection's (it waits), or the file's: the journal stops
            self._rolled_back(connection, group)
            if self._transient(exc, connection):
                self._refused = refused_before  # the group is written again, whole
                raise _ConnectionLostError() from exc
            self._journal_failed(exc, group)
            return
        self._wrote(written)
        self._token_run(self._settled, outcomes, refused)

    def _recover(self, group: list[_Item], exc: BaseException) -> list[_Item]:
        """The connection was lost while ``group`` was written: connect again (within
        :attr:`reconnect_for` of the loss), complete the tickets of the batches the lost
        transaction committed after all, and return what is left to write. Past the bound,
        or once the journal stops, the group fails (and with the bound, the journal)."""
        if self._lost_at is None:
            self._lost_at = time.monotonic()
            self._lost_since = dt.datetime.now(dt.UTC)
            log.warning(
                self._waiting_event,
                path=self.source,
                error=_printable(" ".join(str(exc).split())),
                within=self.reconnect_for,
            )
        self._reconnecting = self._lost_since
        while True:
            try:
                connection = reconnect(
                    self._reconnect,
                    since=self._lost_at,
                    within=self.reconnect_for,
                    stop=self._stopping,
                    retry=self._retries,
                )
                committed = _stored_batches(connection, group)
            except UnreachableError as unreachable:
                self._lost_at = self._lost_since = self._reconnecting = None
                what = self._waited_too_long.format(seconds=unreachable.seconds)
                if unreachable.last is not None:
                    what += f" ({' '.join(str(unreachable.last).split())})"
                self._journal_failed(unreachable, group, what=what)
                return []
            except ReconnectStoppedError:
                self._reconnecting = None
                abandoned = self._abandoned
                assert abandoned is not None
                self._token_run(self._settled, [(t, abandoned) for t in _tickets(group)], {})
                return []
            except Exception as again:  # lost again while reading back: try again
                if self._transient(again, self._connection):
                    continue
                if not self._environmental(again):
                    raise
                # A fault that is not waited for (_retries), the file's: as on the write path.
                self._lost_at = self._lost_since = self._reconnecting = None
                self._journal_failed(again, group)
                return []
            break
        self._reconnecting = None  # before any ticket of the group completes
        log.info(
            self._back_event,
            path=self.source,
            after=round(time.monotonic() - self._lost_at, 3),
            committed=len(committed),
        )
        if committed:
            # The lost COMMIT went through: its batches are durable, and the rest of the
            # group (snapshots, team files) with them. A batch of the group not stored was
            # one the slow path left out: it is written again, and fails again alone.
            self._wrote(committed)
            self._token_run(self._completed, _tickets(committed), None)
            done = {id(item) for item in committed}
            return [item for item in group if isinstance(item, _Batch) and id(item) not in done]
        return group

    def _reconnect(self) -> Any:
        """A new write connection in place of the lost one (a try of :func:`reconnect`)."""
        with contextlib.suppress(Exception):
            self._connection.close()  # the lost one: its socket only
        self._connection = None
        self._connection = self._connect()
        return self._connection

    @property
    def reconnecting(self) -> dt.datetime | None:
        """Since when the writer has been reconnecting to the database (None: it is not)."""
        return self._reconnecting

    def _item_failed(self, item: _Item, exc: Exception) -> FactLogError | None:
        """Log why ``item`` could not be written; a batch's error, None for what is only a
        cache (a snapshot) or a description (the team file: it is logged)."""
        what = exc.message if isinstance(exc, FactLogError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(item, _Batch):
            log.error(
                "journal skipped a snapshot"
                if isinstance(item, _Snapshot)
                else "journal could not record a session's team file",
                path=self.source,
                session=item.session,
                error=_printable(what),
            )
            return None
        if item.rows:
            first, last = item.rows[0][1], item.rows[-1][1]
        else:
            first, last = item.facts[0].sequence, item.facts[-1].sequence
        problem = _error(
            self.source,
            _printable(
                f"session {item.session} can record nothing more: its facts {first} to {last} "
                f"could not be stored ({what}); the other sessions go on"
            ),
        )
        log.error(
            "journal refused a session",
            path=self.source,
            session=item.session,
            error=problem.message,
        )
        return problem

    def _rolled_back(self, connection: Any, group: Sequence[_Item]) -> None:
        """Roll back, and forget what the writer remembered of the rolled-back writes."""
        with contextlib.suppress(Exception):
            connection.execute("ROLLBACK")
        self._history.reset()
        for item in group:
            if isinstance(item, _Snapshot):
                self._snapshots.forget(item.session)

    def _journal_failed(
        self, exc: BaseException, group: Sequence[_Item], *, what: str | None = None
    ) -> None:
        """The database cannot be written (full, read-only, damaged, gone): nothing more is.
        ``what``: the reason, if not ``exc``'s own text."""
        if what is None:
            plain = isinstance(exc, (*self._database_errors, UnreachableError))
            what = str(exc) if plain else f"{type(exc).__name__}: {exc}"  # their text says enough
        reason = _error(self.source, _printable(f"the journal failed: {what}"))
        self._write_failed = reason
        log.error("journal write failed", path=self.source, error=reason.message)
        self._token_run(self._completed, _tickets(group), reason)

    def _wrote(self, written: Sequence[_Item]) -> None:
        self._count(written)
        for item in written:
            if isinstance(item, _Batch) and item.status is not None:
                # The run ended: keep none of its state alive for later snapshots.
                self._snapshots.forget(item.session)

    def _writer_died(self, exc: BaseException) -> None:
        """The writer thread ends on an exception it could not contain.

        That is a bug, or one that is not an ``Exception``. The journal fails with the reason.
        Every batch in hand, queued or submitted later fails with it, so nobody waits
        forever."""
        reason = _error(
            self.source,
            _printable(f"the journal's writer stopped: {type(exc).__name__}: {exc}"),
        )
        if self._write_failed is None:
            self._write_failed = reason
        log.critical("journal writer died", path=self.source, exc_info=exc)
        self._dead = True
        stranded = self._writing + _drain(self._queue)
        self._token_run(self._completed, _tickets(stranded), self._write_failed)

    def _completed(self, tickets: Sequence[EventTicket], error: FactLogError | None) -> None:
        """On the trio thread: complete one transaction's tickets, in submission order.

        Calls from the writer run in the order it made them, so when a failure becomes
        visible here every batch of an earlier transaction has already been reported
        durable: the runtime never takes a durable batch for a failed one.
        """
        if error is not None and self._failed is None:
            self._failed = error
            self._failed_event.set()
        for ticket in tickets:
            ticket.complete(error)

    def _settled(
        self,
        outcomes: Sequence[tuple[EventTicket, FactLogError | None]],
        refused: Mapping[str, FactLogError],
    ) -> None:
        """On the trio thread: as :meth:`_completed`, each ticket with its own outcome;
        the sessions ``refused`` submit nothing more (after their earlier batches are
        reported, as for the whole journal)."""
        self._refused_sessions.update(refused)
        for ticket, error in outcomes:
            ticket.complete(error)

    def _count(self, group: Sequence[_Item]) -> None:
        self._written["transactions"] += 1
        for item in group:
            if isinstance(item, _Batch):
                self._written["batches"] += 1
                self._written["facts"] += len(item.rows)
            elif isinstance(item, _Snapshot):
                self._written["snapshots"] += 1

    @property
    def failed(self) -> FactLogError | None:
        """Why the journal stopped taking facts (None while it takes them)."""
        return self._failed

    async def wait_failed(self) -> FactLogError:
        """Return once the journal stopped taking facts, with why."""
        await self._failed_event.wait()
        assert self._failed is not None
        return self._failed

    def session_failed(self, session: str) -> FactLogError | None:
        """Why ``session`` may record nothing more (None while it may)."""
        return self._failed or self._refused_sessions.get(session)

    def statistics(self) -> JournalStatistics:
        return JournalStatistics(
            facts=self._written["facts"],
            batches=self._written["batches"],
            transactions=self._written["transactions"],
            snapshots=self._written["snapshots"],
            queued=self._queue.qsize(),
            failed=self._failed is not None,
        )

    # ── the fact log ───────────────────────────────────────────────────────

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self._failed is not None:
            raise self._failed
        if self._refused_sessions:
            refused = self._refused_sessions.get(facts[0].session)
            if refused is not None:
                raise refused
        if self._token is None or self._closed:
            raise _error(self.source, "the journal is not open for writing")
        batch = _batch(facts, ended_turns)
        batch.epoch = self.ownership.epoch(batch.session)
        self._queue.put(batch)
        if self._dead:
            # The writer died after this was checked, perhaps before the put: nobody
            # takes the queue any more, so what is in it fails here.
            error = self._write_failed
            assert error is not None
            for ticket in _tickets(_drain(self._queue)):
                ticket.complete(error)
        return batch.ticket

    def submit_fork(self, fork: ForkRows, *, team: tuple[str, str] | None) -> Ticket:
        """Write a fork (:func:`~orchestrator.core.fork_rows`): its team file (``team``: its
        path and text), then its facts and its source's agent-channel history up to the fork
        point as one batch (one transaction). The ticket is the batch's: once it is done,
        the team file is written too (the queue is written in order)."""
        if self._failed is not None:
            raise self._failed
        if self._token is None or self._closed:
            raise _error(self.source, "the journal is not open for writing")
        if team is not None:
            self.describe(fork.session, team_file=team[0], team_toml=team[1])
        batch = _fork_batch(fork)
        batch.epoch = self.ownership.epoch(batch.session)
        self._queue.put(batch)
        if team is not None:  # again, now that the session's row exists: it names the file
            self.describe(fork.session, team_file=team[0], team_toml=team[1])
        if self._dead:
            error = self._write_failed
            assert error is not None
            for ticket in _tickets(_drain(self._queue)):
                ticket.complete(error)
        return batch.ticket

    def describe(self, session: str, *, team_file: str, team_toml: str) -> None:
        """Remember the team a session runs (queued after the session's first batch)."""
        self._queue.put(_Describe(session, team_file, team_toml))

    def committed(self, state: TeamState) -> None:
        """The runtime committed facts: snapshot the state when enough have accumulated."""
        since = state.last_sequence - self._snapshot_at.get(state.session_uri, 0)
        if since < self.snapshot_every:
            # Never due before ``every`` facts, whatever the entries (snapshot_due): most
            # batches stop here without counting them (this runs for every batch settled).
            return
        due = snapshot_due(since, state_entries(state), every=self.snapshot_every)
        if due and self._failed is None:
            self._snapshot_at[state.session_uri] = state.last_sequence
            self._queue.put(_Snapshot(state.copy(), self._snapshots))

    def forget_session(self, session: str) -> None:
        """``session`` left this process's memory (put away when idle, ended, dropped):
        let go of what the journal keeps for it between batches, the values of its last
        snapshot above all (the whole state it had then). Without this a daemon held every
        session it ever snapshotted. Were it taken up again, its next snapshot is due
        after :attr:`snapshot_every` facts and is written whole."""
        self._snapshot_at.pop(session, None)
        if not self._closed:
            self._queue.put(_Forget(session, self._snapshots, self._history))

    def kept_sessions(self) -> int:
        """The sessions the journal keeps something of between batches (their snapshot's
        values, a running turn's facts): for tests and benchmarks of what the daemon holds."""
        return len(self._snapshot_at.keys() | self._snapshots.sessions() | self._history.sessions())


def _printable(text: str) -> str:
    """``text`` with what cannot be encoded as UTF-8 (a lone surrogate) escaped: a message
    about bad text must not be bad text itself (it goes to logs, clients, /healthz)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _tickets(items: Sequence[_Item]) -> list[EventTicket]:
    return [item.ticket for item in items if isinstance(item, _Batch)]


def _drain(items: queue.SimpleQueue[_Item | None]) -> list[_Item]:
    """What is queued, taken without waiting (the stop marker dropped)."""
    taken: list[_Item] = []
    while True:
        try:
            item = items.get_nowait()
        except queue.Empty:
            return taken
        if item is not None:
            taken.append(item)
