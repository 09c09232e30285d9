"""``orchestrator sessions`` and ``prune``'s input (``cli/_sessions_command``), and how every
command finds the session a user names, on a real SQLite journal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from orchestrator.base import ConfigError, FactLogError
from orchestrator.cli._main import build_parser
from orchestrator.cli._sessions_command import _one_line, prune, resolve_session, sessions
from orchestrator.journal import open_reader
from orchestrator.spec import load_team
from tests.support.journal import HANDOFF, a_run_and_its_fork, run_team


@pytest.fixture
async def two_sessions(tmp_path: Path) -> tuple[Path, list[str]]:
    """A journal file with two finished runs of the handoff team, oldest first."""
    db = tmp_path / "j.db"
    found = []
    for _ in range(2):
        outcome, _, _ = await run_team(db, load_team(HANDOFF))
        found.append(outcome.session)
    return db, found


def listed(*argv: str) -> str:
    out = io.StringIO()
    assert sessions(build_parser().parse_args(["sessions", *argv]), out) == 0
    return out.getvalue()


class TestResolveSession:
    async def test_a_uri_or_a_unique_start_of_an_id_names_its_session(
        self, two_sessions: tuple[Path, list[str]]
    ) -> None:
        db, (first, second) = two_sessions
        reader = open_reader(db)
        assert resolve_session(reader, second).session == second
        whole_id = first.removeprefix("ahp-session:/")
        assert resolve_session(reader, whole_id).session == first
        shortest = next(
            whole_id[:n]
            for n in range(1, len(whole_id))
            if not second.removeprefix("ahp-session:/").startswith(whole_id[:n])
        )
        assert resolve_session(reader, shortest).session == first
        assert resolve_session(reader, "ahp-session:/" + shortest).session == first

    async def test_no_such_session_is_said_with_where_to_look(
        self, two_sessions: tuple[Path, list[str]]
    ) -> None:
        db, _ = two_sessions
        with pytest.raises(FactLogError) as missing:
            resolve_session(open_reader(db), "nothing-like-it")
        assert str(missing.value) == (
            f"{db}: no session 'nothing-like-it' (orchestrator sessions lists them)"
        )

    async def test_a_start_of_several_ids_asks_for_more(
        self, two_sessions: tuple[Path, list[str]]
    ) -> None:
        db, (first, second) = two_sessions
        with pytest.raises(FactLogError) as ambiguous:
            resolve_session(open_reader(db), "ahp-session:/")
        said = str(ambiguous.value)
        assert "'ahp-session:/' names 2 sessions (" in said
        assert first in said
        assert second in said
        assert said.endswith("...); give more of the id")


class TestSessions:
    async def test_a_table_oldest_first_and_json_alike(
        self, two_sessions: tuple[Path, list[str]]
    ) -> None:
        db, found = two_sessions
        header, *lines = listed("--db", str(db)).splitlines()
        assert header.split() == ["SESSION", "STATUS", "CREATED", "FACTS", "TEAM", "TITLE"]
        assert [line.split()[:2] for line in lines] == [[s, "completed"] for s in found]
        assert header.index("STATUS") == lines[0].index("completed"), "columns line up"
        as_json = json.loads(listed("--db", str(db), "--json"))
        assert [(s["session"], s["status"], s["team"]) for s in as_json] == [
            (s, "completed", "support") for s in found
        ]
        latest = json.loads(listed("--db", str(db), "--json", "--limit", "1"))
        assert [s["session"] for s in latest] == found[1:]

    async def test_none_found_is_said_with_the_filters_and_the_journal(
        self, two_sessions: tuple[Path, list[str]]
    ) -> None:
        db, _ = two_sessions
        said = listed("--db", str(db), "--status", "failed", "--team", "nope")
        assert said == f"no sessions (status failed, team nope) in {db}\n"
        assert json.loads(listed("--db", str(db), "--team", "nope", "--json")) == []

    async def test_forks_say_where_they_came_from_and_stand_under_it_in_a_tree(
        self, tmp_path: Path
    ) -> None:
        """A fork's row names its source's id and the fact it was forked at; ``--tree``
        lists each fork under its source, indented, its source's other forks after it."""
        db = tmp_path / "j.db"
        source, fork, sequence = await a_run_and_its_fork(db)
        other, _, _ = await a_run_and_its_fork(db)  # a second family, after the first
        header, *lines = listed("--db", str(db)).splitlines()
        assert header.split()[:7] == [
            "SESSION",
            "STATUS",
            "CREATED",
            "FACTS",
            "TEAM",
            "FORKED",
            "FROM",
        ]
        column = header.index("FORKED FROM")
        by_session = {line.split()[0]: line for line in lines}
        assert by_session[source][column:].startswith("- ")
        short = source.removeprefix("ahp-session:/")[:8]
        assert by_session[fork][column:].startswith(f"{short} fact {sequence} ")
        _, *tree = listed("--db", str(db), "--tree").splitlines()
        names = [line.split()[0] if not line.startswith("└") else line.split()[1] for line in tree]
        assert names[:2] == [source, fork]
        assert names[2] == other
        assert tree[1].startswith("└ " + fork)
        assert not tree[0].startswith("└")
        # A fork whose source a filter leaves out stands on its own.
        _, *newest = listed("--db", str(db), "--tree", "--limit", "1").splitlines()
        assert len(newest) == 1
        assert not newest[0].startswith("└")

    def test_a_title_is_one_line_of_at_most_sixty_characters(self) -> None:
        assert _one_line("Ship\n  the   notes\t") == "Ship the notes"
        long = _one_line("word " * 30)
        assert len(long) == 60
        assert long.endswith("…")
        assert _one_line("x" * 60) == "x" * 60


def test_prune_s_age_that_is_no_duration_is_bad_input(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["prune", "--db", str(tmp_path / "j.db"), "--older-than", "soon"]
    )
    with pytest.raises(ConfigError) as refused:
        prune(args, io.StringIO())
    assert str(refused.value).startswith("--older-than: invalid duration 'soon'")
    assert not (tmp_path / "j.db").exists()
