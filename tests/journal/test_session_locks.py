"""One process runs a session of a SQLite journal at a time (``journal/_session_locks``).

The locks themselves: held and let go, refused to a second holder in this process and in
another, freed by the kernel when the process that held them dies however it dies. Then
what they are for: ``orchestrator resume`` of a session a live ``orchestrator run`` holds
is refused (exit 3) and writes nothing; once that process is killed, the same ``resume``
runs the session to its end; and a daemon started on the file leaves the run's session
alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import ApprovalRequested
from orchestrator.journal import Holder, JournalReader, SessionLocks, lock_path
from orchestrator.journal._session_locks import command_of
from tests.support.cli import TEAM, acknowledged, orchestrator, resume
from tests.support.daemon import connect, running_daemon
from tests.support.examples import examples

SESSION = "ahp-session:/0f6c5d1e-0000-4000-8000-000000000001"


def test_a_session_is_held_by_one_holder_until_it_lets_go(tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    first, second = SessionLocks(journal), SessionLocks(journal)
    assert first.acquire(SESSION)
    assert first.acquire(SESSION), "holding it again is holding it"
    assert first.holds(SESSION)
    assert not second.acquire(SESSION)
    assert not second.holds(SESSION)
    first.release(SESSION)
    assert not first.holds(SESSION)
    assert second.acquire(SESSION)
    assert second.held == frozenset({SESSION})
    second.release(SESSION)
    second.release(SESSION)  # twice: nothing held, nothing done
    assert lock_path(journal) == tmp_path / "journal.db-sessions.lock"
    assert lock_path(journal).exists()


def test_a_process_keeps_no_descriptor_of_a_file_it_holds_nothing_of(tmp_path: Path) -> None:
    """A daemon (or a test run) touches many journals over its life: the lock file's
    descriptor is closed once the last session of it is let go, and closing it lets go of
    nothing still held."""
    journal = tmp_path / "journal.db"
    first, second = SessionLocks(journal), SessionLocks(journal)
    before = len(os.listdir("/proc/self/fd"))
    assert first.acquire(SESSION)
    assert second.acquire(SESSION + "-2")
    assert len(os.listdir("/proc/self/fd")) == before + 1, "one descriptor for the file"
    first.release(SESSION)
    assert len(os.listdir("/proc/self/fd")) == before + 1, "the other session still held"
    assert not SessionLocks(journal).acquire(SESSION + "-2"), "and still locked"
    second.release(SESSION + "-2")
    assert len(os.listdir("/proc/self/fd")) == before
    third = SessionLocks(journal)
    assert third.acquire(SESSION)
    third.release(SESSION)


@settings(max_examples=examples(50), deadline=None)
@given(sessions=st.lists(st.text(min_size=1, max_size=40), min_size=2, max_size=8, unique=True))
def test_different_sessions_never_refuse_each_other(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[str]
) -> None:
    """Each session is its own byte: holders of different sessions all hold theirs, and a
    newcomer gets none of them."""
    journal = tmp_path_factory.mktemp("locks") / "journal.db"
    holders = [SessionLocks(journal) for _ in sessions]
    try:
        for holder, session in zip(holders, sessions, strict=True):
            assert holder.acquire(session)
        for holder, session in zip(holders, sessions, strict=True):
            assert holder.held == frozenset({session})
        newcomer = SessionLocks(journal)
        assert not any(newcomer.acquire(session) for session in sessions)
    finally:
        for holder, session in zip(holders, sessions, strict=True):
            holder.release(session)


HOLD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from orchestrator.journal import SessionLocks
    locks = SessionLocks(Path(sys.argv[1]))
    print("held" if locks.acquire(sys.argv[2]) else "refused", flush=True)
    sys.stdin.read()  # until the test closes it, or kills this process
    """
)


@pytest.mark.daemon
def test_another_process_is_refused_and_a_killed_holder_frees_the_session(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "journal.db"
    with subprocess.Popen(
        [sys.executable, "-c", HOLD, str(journal), SESSION],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "held"
            here = SessionLocks(journal)
            assert not here.acquire(SESSION)
            assert here.acquire(SESSION + "-another"), "the other process holds one session"
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=30)
            assert here.acquire(SESSION), "the kernel let go of the dead process's lock"
            here.release(SESSION)
            here.release(SESSION + "-another")
        finally:
            holder.kill()


class TestHolder:
    """Who holds a session: the kernel's word (its pid) and the process's command line."""

    @pytest.mark.daemon
    def test_another_process_is_named_by_its_pid_until_it_dies(self, tmp_path: Path) -> None:
        journal = tmp_path / "journal.db"
        here = SessionLocks(journal)
        assert here.holder(SESSION) is None, "no lock file yet: nobody"
        with subprocess.Popen(
            [sys.executable, "-c", HOLD, str(journal), SESSION],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as holder:
            try:
                assert holder.stdout is not None
                assert holder.stdout.readline().strip() == "held"
                assert here.holder(SESSION) == Holder(pid=holder.pid, program=None)
                assert here.holder(SESSION + "-another") is None
                holder.send_signal(signal.SIGKILL)
                holder.wait(timeout=30)
                assert here.holder(SESSION) is None
            finally:
                holder.kill()

    def test_this_process_is_named_through_another_holder_and_never_through_itself(
        self, tmp_path: Path
    ) -> None:
        journal = tmp_path / "journal.db"
        first, second = SessionLocks(journal), SessionLocks(journal)
        assert first.acquire(SESSION)
        try:
            assert first.holder(SESSION) is None, "its own: not another's"
            found = second.holder(SESSION)
            assert found is not None
            assert found.pid == os.getpid()
        finally:
            first.release(SESSION)
        assert second.holder(SESSION) is None

    @pytest.mark.daemon
    def test_asking_lets_go_of_nothing_this_process_holds(self, tmp_path: Path) -> None:
        """POSIX record locks go when *any* descriptor of their file is closed: asking
        about one session must not free another that this process runs."""
        journal = tmp_path / "journal.db"
        mine, asker = SessionLocks(journal), SessionLocks(journal)
        assert mine.acquire(SESSION)
        try:
            for _ in range(3):
                assert asker.holder(SESSION + "-another") is None
            asked = subprocess.run(
                [sys.executable, "-c", HOLD, str(journal), SESSION],
                input="",
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            assert asked.stdout.strip() == "refused", "still held by this process"
        finally:
            mine.release(SESSION)

    @pytest.mark.parametrize(
        ("argv", "command"),
        [
            (["/v/bin/python", "/v/bin/orchestrator", "run", "t.toml"], "orchestrator run"),
            (["python", "-m", "orchestrator", "-v", "-v", "serve"], "orchestrator serve"),
            (["orchestrator", "resume", "0f6c", "--team", "run.toml"], "orchestrator resume"),
            (["orchestrator", "sessions", "--json"], "orchestrator"),
            (["python", "-c", "...", "run"], None),
            (["/usr/bin/pytest", "tests/orchestrator_test.py"], None),
            ([], None),
        ],
    )  # fmt: skip
    def test_the_command_is_read_from_the_command_line(
        self, argv: list[str], command: str | None
    ) -> None:
        assert command_of(argv) == command

    def test_a_holder_says_what_is_known_of_it(self) -> None:
        assert str(Holder(pid=4242, program="orchestrator run")) == "`orchestrator run`, pid 4242"
        assert str(Holder(pid=4242, program=None)) == "pid 4242"
        assert str(Holder(pid=None, program=None)) == "another process"
        assert Holder(pid=7, program=None).to_json() == {"program": None, "pid": 7}


def parking_run(db: Path, mirror: Path) -> subprocess.Popen[str]:
    """``orchestrator run`` of the delivery team that nobody answers: it parks, alive, on the
    researcher's publish approval (its facts mirrored to ``mirror``)."""
    return orchestrator(
        "run",
        TEAM,
        "Ship the release notes",
        "--db",
        db,
        "--plain",
        "--facts",
        mirror,
        stdin=subprocess.PIPE,
    )


def parked(mirror: Path) -> str:
    """The session of a run that parked on its approval (its ``--facts`` mirror says so)."""
    deadline = time.monotonic() + 60
    while not any(isinstance(f.action, ApprovalRequested) for f in acknowledged(mirror)):
        assert time.monotonic() < deadline, "no approval was asked for"
        time.sleep(0.01)
    return acknowledged(mirror)[0].session


@pytest.mark.daemon
def test_resume_of_a_session_a_live_run_holds_is_refused_then_runs_once_it_is_killed(
    tmp_path: Path,
) -> None:
    """The operator's mistake at 3 a.m.: ``resume`` while the run is still going. Before the
    locks, both ran the session: its tools twice, and one of them failed on the facts'
    unique key."""
    db, mirror = tmp_path / "journal.db", tmp_path / "facts.jsonl"
    run = parking_run(db, mirror)
    try:
        session = parked(mirror)
        before = JournalReader(db).facts(session)

        refused = resume(db, session)
        assert refused.returncode == 3, refused.stderr
        assert "is being run by another process" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert JournalReader(db).facts(session) == before, "the refused resume wrote nothing"
        assert run.poll() is None, "the run goes on"
    finally:
        run.send_signal(signal.SIGKILL)
        run.communicate()

    resumed = resume(db, session)
    assert resumed.returncode == 0, resumed.stderr
    assert "published to" in resumed.stdout


@pytest.mark.daemon
async def test_a_daemon_leaves_alone_a_session_a_live_run_holds(tmp_path: Path) -> None:
    """A daemon started on the journal of a live ``orchestrator run`` does not take its
    session up (before the locks, it did, and ran its turns again): a client asking for it
    follows it (``test_sqlite_following``), and a prompt to it is refused, naming the run;
    the run goes on and is the only writer of its session."""
    db, mirror = tmp_path / "journal.db", tmp_path / "facts.jsonl"
    run = parking_run(db, mirror)
    try:
        session = await trio.to_thread.run_sync(parked, mirror)
        before = JournalReader(db).facts(session)
        async with running_daemon(tmp_path, db=db) as daemon:
            async with connect(daemon, f"session={session}") as client:
                await client.until_type("init")
                await client.send({"channel": "agent", "type": "prompt", "prompt": "and more"})
                refused = await client.until_type("error")
            assert f"is run by `orchestrator run`, pid {run.pid}" in refused["message"]
        assert JournalReader(db).facts(session) == before, "the daemon wrote nothing of it"
        assert run.poll() is None, "the run goes on"
        # The run's own approval: it finishes, alone.
        _, err = await trio.to_thread.run_sync(lambda: run.communicate("y\n", timeout=60))
        assert run.returncode == 0, err
    finally:
        if run.returncode is None:
            run.kill()
            run.communicate()
    (info,) = JournalReader(db).sessions()
    assert info.status == "completed"
