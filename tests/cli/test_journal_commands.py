"""``orchestrator graph`` (and the journal's other commands), run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.command_line import HANDOFF, orchestrator

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


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
