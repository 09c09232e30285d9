"""The journal's commands (``cli/_journal_commands``): ``events`` and ``graph`` in process on a
real SQLite journal, and ``graph``'s bad input as a user meets it (a subprocess)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from orchestrator.base import FactLogError
from orchestrator.cli._journal_commands import events, graph
from orchestrator.cli._main import build_parser
from orchestrator.core import decode_fact
from orchestrator.journal import open_reader
from orchestrator.protocols import envelope_to_json_line, project_facts
from orchestrator.spec import load_team
from tests.support.command_line import HANDOFF, orchestrator
from tests.support.journal import HANDOFF as HANDOFF_FILE
from tests.support.journal import run_team


@pytest.mark.daemon
class TestBadInput:
    def test_a_missing_fact_file_is_bad_input(self, tmp_path: Path) -> None:
        done = orchestrator("graph", "--facts", str(tmp_path / "nope.jsonl"))
        assert done.returncode == 2
        assert "nope.jsonl" in done.stderr

    def test_a_corrupt_fact_line_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "f.jsonl"
        path.write_text(
            '{"sequence": 1, "session": "s", "channel": "s", "at": "t", "action": {}}\n'
        )
        done = orchestrator("graph", "--facts", str(path), "--check")
        assert done.returncode == 2
        assert f"{path}:1" in done.stderr
        assert "$.action.type" in done.stderr

    def test_a_fact_file_that_is_not_utf_8_is_named_not_a_traceback(self, tmp_path: Path) -> None:
        """A journal given as ``--facts`` by mistake, or a damaged copy: exit 2, the file and
        the line."""
        path = tmp_path / "f.jsonl"
        good = '{"sequence": 1, "session": "s", "channel": "s", "at": "t", "action": {}}'
        path.write_bytes(b"\n" + b"SQLite format 3\x00\xff\xfe" + good.encode() + b"\n")
        done = orchestrator("graph", "--facts", str(path))
        assert done.returncode == 2, done.stderr
        assert f"{path}:2" in done.stderr
        assert "byte 17 of the line is not UTF-8" in done.stderr
        assert "Traceback" not in done.stderr

    def test_graph_check_reports_violations(self, tmp_path: Path) -> None:
        """A log whose worker origin has no subagent content in the parent fails the check."""
        source = tmp_path / "ok.jsonl"
        assert orchestrator("run", HANDOFF, "refund", "--facts", str(source)).returncode == 0
        kept: list[str] = []
        for line in source.read_text().splitlines():
            fact = json.loads(line)
            action = fact["action"]
            # The parent's side of the spawn: the content update and the result content.
            if action["type"] == "chat/toolCallContentChanged":
                continue
            if action["type"] == "chat/toolCallComplete":
                content = action["result"]["content"]
                action["result"]["content"] = [c for c in content if c["type"] != "subagent"]
            fact["sequence"] = len(kept) + 1
            kept.append(json.dumps(fact))
        tampered = tmp_path / "tampered.jsonl"
        tampered.write_text("\n".join(kept) + "\n")
        done = orchestrator("graph", "--facts", str(tampered), "--check")
        assert done.returncode == 1
        assert "origin-without-subagent: worker ahp-chat:/" in done.stdout
        assert "1 violation(s)" in done.stdout
        as_json = orchestrator("graph", "--facts", str(tampered), "--check", "--json")
        assert as_json.returncode == 1
        report = json.loads(as_json.stdout)
        assert report["ok"] is False
        assert [v["kind"] for v in report["violations"]] == ["origin-without-subagent"]
        assert report["violations"][0]["nodes"]


@pytest.fixture
async def handoff_session(tmp_path: Path) -> tuple[Path, str]:
    """A journal file holding one finished run of the handoff team; its session."""
    db = tmp_path / "j.db"
    outcome, _, _ = await run_team(db, load_team(HANDOFF_FILE))
    return db, outcome.session


def command(*argv: str) -> tuple[int, str]:
    """Run a journal command in process: its exit status and what it printed."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    handler = {"events": events, "graph": graph}[argv[0]]
    return handler(args, out), out.getvalue()


class TestEvents:
    async def test_facts_as_json_lines_are_the_journal_s(
        self, handoff_session: tuple[Path, str]
    ) -> None:
        db, session = handoff_session
        status, said = command("events", session, "--db", str(db), "--json")
        assert status == 0
        facts = open_reader(db).facts(session)
        assert [decode_fact(json.loads(line)) for line in said.splitlines()] == list(facts)

    async def test_facts_for_a_person_say_who_did_what_in_order(
        self, handoff_session: tuple[Path, str]
    ) -> None:
        db, session = handoff_session
        short = session.removeprefix("ahp-session:/")[:8]
        _, said = command("events", short, "--db", str(db))
        lines = said.splitlines()
        facts = open_reader(db).facts(session)
        assert len(lines) == len(facts)
        assert [int(line.split()[0]) for line in lines] == [f.sequence for f in facts]
        assert [line.split()[3] for line in lines] == [f.type for f in facts]
        assert lines[0].split()[2] == "session"

    async def test_envelopes_are_the_projection_of_the_facts(
        self, handoff_session: tuple[Path, str]
    ) -> None:
        db, session = handoff_session
        _, said = command("events", session, "--db", str(db), "--format", "agent-ui", "--json")
        projected = project_facts(session, open_reader(db).facts(session))
        assert said.splitlines() == [envelope_to_json_line(e) for e in projected]
        _, for_a_person = command("events", session, "--db", str(db), "--format", "agent-ui")
        assert [line.split()[-1] for line in for_a_person.splitlines()] == [
            e.type for e in projected
        ]


class TestGraph:
    async def test_a_session_s_graph_checks_clean_as_text_and_json(
        self, handoff_session: tuple[Path, str]
    ) -> None:
        db, session = handoff_session
        assert command("graph", session, "--db", str(db), "--check") == (
            0,
            f"ok: {session} is consistent\n",
        )
        status, said = command("graph", session, "--db", str(db), "--check", "--json")
        assert status == 0
        assert json.loads(said) == {"source": session, "ok": True, "violations": []}

    @pytest.mark.parametrize(
        ("fmt", "starts"),
        [("mermaid", "flowchart TD"), ("dot", "digraph"), ("graphml", "<graphml"), ("json", "{")],
    )
    async def test_every_format_draws_the_session(
        self, handoff_session: tuple[Path, str], fmt: str, starts: str
    ) -> None:
        db, session = handoff_session
        status, drawn = command("graph", session, "--db", str(db), "--format", fmt)
        assert status == 0
        assert drawn.lstrip().startswith(starts)
        assert drawn.endswith("\n")

    async def test_the_html_page_carries_the_session_s_envelopes(
        self, handoff_session: tuple[Path, str]
    ) -> None:
        db, session = handoff_session
        _, page = command("graph", session, "--db", str(db), "--format", "html")
        data = re.search(r'id="orchestrator-data">(.*?)</script>', page, re.S)
        assert data is not None
        carried = json.loads(data.group(1))
        assert carried["session"]["uri"] == session
        projected = project_facts(session, open_reader(db).facts(session))
        assert len(carried["envelopes"]) == len(projected)

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (["graph", "s", "--facts", "f"], "graph: give a SESSION or --facts FILE, not both"),
            (["graph"], "graph: name a SESSION (orchestrator sessions lists them)"),
        ],
    )
    def test_one_source_is_needed(self, argv: list[str], message: str) -> None:
        with pytest.raises(FactLogError) as refused:
            command(*argv)
        assert str(refused.value) == message
