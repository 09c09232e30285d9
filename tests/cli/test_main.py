"""The ``orchestrator`` command, run as a user runs it: a subprocess, real files, real stdin."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.protocols import project_facts, structure_envelope, unstructure_envelope
from orchestrator.runtime import read_facts
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

DELIVERY = str(PROJECT_ROOT / "teams" / "delivery.toml")
HANDOFF = str(PROJECT_ROOT / "teams" / "handoff.toml")


def orchestrator(
    *args: str, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PROJECT_ROOT,
        check=False,
    )


@pytest.fixture(scope="module")
def delivery_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One auto-approved run of the delivery team, shared by the tests that read its files."""
    out = tmp_path_factory.mktemp("run")
    done = orchestrator(
        "run",
        DELIVERY,
        "Ship the release notes",
        "--approve",
        "auto",
        "--events",
        str(out / "run.jsonl"),
        "--facts",
        str(out / "run.facts.jsonl"),
    )
    return done, out


class TestRun:
    def test_delivery_completes_and_prints_the_final_answer(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        """Exit 0, the coordinator's answer alone on stdout, progress lines on stderr."""
        done, _ = delivery_run
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("Here is what the team found:")
        assert "The release notes are ready." in done.stdout
        assert (
            "researcher #3 (task: Publish the release notes to the release page) asks to run "
            "publish(target=release page)"
        ) in done.stderr
        assert "approved by you" in done.stderr
        assert "the run completed (session ahp-session:/" in done.stderr

    def test_events_file_holds_agent_ui_envelopes_in_sequence(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        """--events writes JSON Lines envelopes, sequence 1..n, with the team event classes."""
        _, out = delivery_run
        lines = (out / "run.jsonl").read_text().splitlines()
        envelopes = [structure_envelope(json.loads(line)) for line in lines]
        assert [e.sequence for e in envelopes] == list(range(1, len(envelopes) + 1))
        types = [e.type for e in envelopes]
        assert types[0] == "run.started"
        assert types[-1] == "run.finished"
        assert types.count("agent.spawned") == 4  # coordinator + three researchers
        assert types.count("worker.notification") == 3
        assert types.index("action.required") < types.index("action.resolved")

    def test_events_equal_a_projection_of_the_fact_log(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        """What --events wrote live equals, as JSON objects, a projection of --facts."""
        _, out = delivery_run
        facts = list(read_facts(out / "run.facts.jsonl"))
        live = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
        replayed = [unstructure_envelope(e) for e in project_facts(facts[0].session, facts)]
        assert live == replayed

    def test_graph_of_the_run_checks_clean_and_draws(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        _, out = delivery_run
        facts = str(out / "run.facts.jsonl")
        checked = orchestrator("graph", "--facts", facts, "--check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "is consistent" in checked.stdout
        mermaid = orchestrator("graph", "--facts", facts, "--format", "mermaid")
        assert mermaid.returncode == 0
        assert mermaid.stdout.startswith("flowchart TD")
        assert mermaid.stdout.count("spawned") >= 3
        for fmt, marker in (("json", '"nodes"'), ("dot", "digraph"), ("graphml", "<graphml")):
            drawn = orchestrator("graph", "--facts", facts, "--format", fmt)
            assert drawn.returncode == 0
            assert marker in drawn.stdout

    def test_approval_answered_at_the_prompt(self) -> None:
        """--approve ask reads the answer from stdin: 'y' approves."""
        done = orchestrator("run", DELIVERY, "Ship the release notes", stdin="y\n")
        assert done.returncode == 0, done.stderr
        assert "Approve? [y/N]" in done.stderr
        assert "published to https://example.invalid" in done.stdout

    def test_end_of_input_at_the_prompt_denies(self) -> None:
        """No answer (stdin closed) is a no: the publish call is denied, the run completes."""
        done = orchestrator("run", DELIVERY, "Ship the release notes", stdin="")
        assert done.returncode == 0, done.stderr
        assert "denied by you" in done.stderr
        assert "publish was denied by user" in done.stdout

    def test_deny_policy(self) -> None:
        done = orchestrator("run", DELIVERY, "Ship the release notes", "--approve", "deny")
        assert done.returncode == 0, done.stderr
        assert "publish was denied by user" in done.stdout

    def test_handoff_team(self, tmp_path: Path) -> None:
        facts = tmp_path / "h.jsonl"
        done = orchestrator("run", HANDOFF, "I was charged twice", "--facts", str(facts))
        assert done.returncode == 0, done.stderr
        assert "handed off to billing" in done.stderr
        assert orchestrator("graph", "--facts", str(facts), "--check").returncode == 0

    def test_nightly_team_runs_its_background_prompt_offline(self, tmp_path: Path) -> None:
        """The example background teammate's turn, run by hand: it delegates and reports."""
        facts = tmp_path / "n.jsonl"
        done = orchestrator(
            "run",
            str(PROJECT_ROOT / "teams" / "nightly.toml"),
            "Audit the lock file and report new advisories",
            "--facts",
            str(facts),
        )
        assert done.returncode == 0, done.stderr
        assert "0 new advisories since the last audit" in done.stdout
        assert orchestrator("graph", "--facts", str(facts), "--check").returncode == 0

    def test_a_journal_that_refuses_the_first_facts_fails_the_run_in_one_line(
        self, tmp_path: Path
    ) -> None:
        """The journal's failure at the run's first facts (here its facts table is gone) is
        the run's failure: exit 1, one line naming the file and the cause, ``--json`` says
        so too; no traceback. The other sessions of the file are left as they were."""
        db = tmp_path / "j.db"
        first = orchestrator("run", DELIVERY, "Ship", "--approve", "auto", "--db", str(db))
        assert first.returncode == 0, first.stderr
        with sqlite3.connect(db) as connection:
            connection.execute("DROP TABLE facts")
        done = orchestrator(
            "run", DELIVERY, "Ship again", "--approve", "auto", "--db", str(db), "--json"
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        failed = [json.loads(line) for line in done.stderr.splitlines() if "the run failed" in line]
        assert len(failed) == 1, done.stderr
        assert failed[0]["status"] == "failed"
        assert "no such table: facts" in failed[0]["event"]
        assert f"{db}:" in failed[0]["event"]
        said = json.loads(done.stdout)
        assert said["status"] == "failed"
        assert said["session"] == failed[0]["session"]
        assert "no such table: facts" in said["error"]


def test_the_status_choices_are_the_journal_s() -> None:
    """The parser keeps its own copy (``--help`` loads no journal module): the same."""
    from orchestrator.cli._main import SESSION_STATUSES as PARSED
    from orchestrator.journal import SESSION_STATUSES

    assert PARSED == SESSION_STATUSES


class TestBadInput:
    def test_an_invalid_team_file_names_file_and_key(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text('[team]\nname = "x"\ncoordinator = "lead"\nparalel_budget = 2\n')
        done = orchestrator("run", str(bad), "hello")
        assert done.returncode == 2
        assert str(bad) in done.stderr
        assert "paralel_budget" in done.stderr
        assert "parallel_budget" in done.stderr

    def test_serve_without_team_files_says_what_to_do(self, tmp_path: Path) -> None:
        """In a directory without ``teams/`` (or with an empty one): exit 2, said once, with
        the way out (``--teams DIR`` or ``orchestrator init``), before anything listens."""
        serve = [sys.executable, "-m", "orchestrator", "serve", "--log-format", "console"]
        done = subprocess.run(
            [*serve, "--db", str(tmp_path / "j.db"), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "orchestrator: teams: not a directory of team files: name the directory of your "
            "team files with --teams DIR (or `teams =` in the config file), or run "
            "`orchestrator init` to write starter teams there\n"
        )
        (tmp_path / "empty").mkdir()
        done = subprocess.run(
            [*serve, "--db", str(tmp_path / "j.db"), "--port", "0", "--teams", "empty"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "orchestrator: empty: teams: no team files (*.toml) here: run "
            "`orchestrator init empty` to write starter teams\n"
        )

    def test_an_empty_prompt_is_bad_input(self) -> None:
        done = orchestrator("run", DELIVERY, "  ")
        assert done.returncode == 2
        assert "prompt is empty" in done.stderr

    def test_an_unwritable_events_file_is_bad_input(self, tmp_path: Path) -> None:
        """Named, exit 2, and before anything ran: no traceback."""
        target = tmp_path / "missing" / "run.jsonl"
        done = orchestrator("run", DELIVERY, "Ship it", "--events", str(target))
        assert done.returncode == 2
        assert f"{target}: cannot open for writing" in done.stderr
        assert "Traceback" not in done.stderr

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


class TestSecretsInErrorLines:
    """A command that fails quotes what it was given (a journal's URL): its line on stderr
    goes through the logs' redactor, and a password in the URL never shows."""

    SECRET = "hunter2-not-for-your-eyes"

    @pytest.mark.parametrize(
        "db",
        [
            # Port 1: nothing listens, the connection is refused at once.
            f"postgresql://alice@127.0.0.1:1/journal?password={SECRET}",
            f"postgresql://alice:{SECRET}@127.0.0.1:1/journal",
        ],
    )
    @pytest.mark.parametrize(
        "command",
        [
            ["sessions"],
            ["events", "ahp-session:/0"],
            ["prune", "--older-than", "30d"],
            ["run", HANDOFF, "refund"],
            ["serve", "--port", "0", "--teams", str(PROJECT_ROOT / "teams")],
        ],
        ids=["sessions", "events", "prune", "run", "serve"],
    )
    @pytest.mark.parametrize("log_format", ["json", "console"])
    def test_a_password_in_the_journal_s_url_is_never_printed(
        self, command: list[str], db: str, log_format: str
    ) -> None:
        done = orchestrator(*command, "--db", db, "--log-format", log_format, timeout=60)
        assert done.returncode == 3, done.stderr
        assert "cannot reach the PostgreSQL server" in done.stderr
        assert "alice" in done.stderr  # the URL is named, its password is not
        assert self.SECRET not in done.stderr + done.stdout


class TestTeamsCheck:
    def test_shipped_team_files_are_valid(self) -> None:
        done = orchestrator("teams", "check", DELIVERY, HANDOFF)
        assert done.returncode == 0, done.stdout
        assert done.stdout.count("ok:") == 2

    def test_every_shipped_team_file_is_valid(self) -> None:
        """`orchestrator teams check` with no path checks teams/*.toml, nightly.toml too."""
        done = orchestrator("teams", "check")
        assert done.returncode == 0, done.stdout
        assert "ok: teams/nightly.toml" in done.stdout.splitlines()

    def test_a_bad_background_entry_exits_1(self, tmp_path: Path) -> None:
        """A bad [[background]] value is named by file and key path, saying what is expected."""
        bad = tmp_path / "nightly.toml"
        text = (PROJECT_ROOT / "teams" / "nightly.toml").read_text(encoding="utf-8")
        bad.write_text(text.replace('schedule = "0 3 * * *"', 'schedule = "0 25 * * *"'))
        done = orchestrator("teams", "check", str(bad))
        assert done.returncode == 1
        assert done.stdout.startswith(
            f"{bad}: background[0].schedule: invalid cron expression '0 25 * * *'"
        )
        assert "expected 5 fields (minute hour day-of-month month day-of-week)" in done.stdout

    def test_a_bad_team_file_exits_1_as_a_graph_check_does(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text("[team\n")
        done = orchestrator("teams", "check", str(bad))
        assert done.returncode == 1
        assert str(bad) in done.stdout

    def test_a_directory_is_checked_file_by_file(self, tmp_path: Path) -> None:
        """A directory means its *.toml; each file's result, good and bad, in name order."""
        (tmp_path / "a.toml").write_text((PROJECT_ROOT / "teams" / "handoff.toml").read_text())
        (tmp_path / "b.toml").write_text("[team\n")
        (tmp_path / "notes.txt").write_text("not a team")
        done = orchestrator("teams", "check", str(tmp_path))
        assert done.returncode == 1
        lines = done.stdout.splitlines()
        assert lines[0] == f"ok: {tmp_path / 'a.toml'}"
        assert lines[1].startswith(f"{tmp_path / 'b.toml'}: invalid TOML")
        assert len(lines) == 2

    def test_json_lists_every_file(self, tmp_path: Path) -> None:
        (tmp_path / "b.toml").write_text("[team\n")
        done = orchestrator("teams", "check", HANDOFF, str(tmp_path / "b.toml"), "--json")
        assert done.returncode == 1
        report = json.loads(done.stdout)
        assert [(r["file"], r["ok"]) for r in report] == [
            (HANDOFF, True),
            (str(tmp_path / "b.toml"), False),
        ]
        assert report[0]["problems"] == []
        assert "invalid TOML" in report[1]["problems"][0]

    @pytest.mark.parametrize("where", ["hosted", "local"])
    def test_an_agent_that_cannot_run_here_is_a_warning(self, where: str) -> None:
        """The file is fine (exit 0); the hosted API with no key set is said, per agent; a
        local server (OPENAI_BASE_URL) needs no key, so nothing is said (``--offline``: the
        server is not probed, see tests/runtime/backends/test_probe.py)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        if where == "local":
            env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
        shipped = str(PROJECT_ROOT / "teams" / "openai-delivery.toml")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "teams",
                "check",
                shipped,
                "--json",
                "--offline",
            ],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (report,) = json.loads(done.stdout)
        assert report["ok"] is True
        if where == "local":
            assert report["warnings"] == []
        else:
            assert [w.split("'")[1] for w in report["warnings"]] == ["lead", "researcher"]
            assert all("OPENAI_API_KEY" in w for w in report["warnings"])

    def test_a_path_that_is_not_there_is_bad_input(self, tmp_path: Path) -> None:
        done = orchestrator("teams", "check", str(tmp_path / "nope.toml"))
        assert done.returncode == 2
        assert "nope.toml: no such file or directory" in done.stderr


class TestParser:
    """The parser names its choices without loading the commands; they must agree."""

    def test_every_graph_format_has_a_renderer(self) -> None:
        from orchestrator.cli._journal_commands import _PAGE_FORMAT, _RENDERERS
        from orchestrator.cli._main import GRAPH_FORMATS

        assert sorted([*_RENDERERS, _PAGE_FORMAT]) == sorted(GRAPH_FORMATS)

    def test_every_command_names_a_handler_that_exists(self) -> None:
        import argparse
        import importlib

        from orchestrator.cli._main import build_parser

        def handlers(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
            found = []
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    for sub in action.choices.values():
                        found += handlers(sub) or [sub.get_default("handler")]
            return found

        named = handlers(build_parser())
        assert len(named) >= 15
        for module, name in named:
            assert callable(getattr(importlib.import_module(module, "orchestrator.cli"), name))

    def test_the_parser_s_default_port_is_the_daemon_s(self) -> None:
        from orchestrator.cli._conventions import DEFAULT_PORT
        from orchestrator.server import DEFAULT_PORT as DAEMON_PORT

        assert DEFAULT_PORT == DAEMON_PORT

    @pytest.mark.parametrize(
        "command",
        [["teams", "check", "teams/handoff.toml"], ["sessions", "--db", "{db}"]],
        ids=["teams check", "sessions"],
    )
    def test_the_light_commands_load_no_logging_library_nor_model(
        self, command: list[str], tmp_path: Path
    ) -> None:
        """What makes them start fast: no structlog (nor rich), trio or AHP model loaded."""
        argv = [part.format(db=tmp_path / "none.db") for part in command]
        code = (
            "import sys\nfrom orchestrator.cli import main\n"
            f"main({argv!r})\n"
            "print(sorted(m for m in ('structlog', 'rich', 'trio', 'networkx', "
            "'orchestrator.ahp.state') if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT
        )
        assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr

    def test_help_loads_no_command(self) -> None:
        """``--help`` imports the parser only: no trio, no journal, no daemon."""
        code = (
            "import sys\nfrom orchestrator.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('trio', 'sqlite3', 'networkx', 'rich', 'structlog', "
            "'orchestrator.ahp.state', 'orchestrator.server._app') if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip().splitlines()[-1] == "[]"


FAILING_TEAM = """
[team]
name = "failing"
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [{ delegate = [{ agent = "worker", task = "do it" }] }, { fail = "gave up" }]

[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [{ fail = "the disk is full" }]
"""


class TestCommandLine:
    """What every command shares: logging options, one stderr format, exit statuses."""

    @pytest.mark.parametrize(
        "flags",
        [["-v", "teams", "check", HANDOFF], ["teams", "check", HANDOFF, "-vv"]],
    )
    def test_verbose_goes_before_or_after_the_subcommand(self, flags: list[str]) -> None:
        done = orchestrator(*flags, "--log-level", "debug")
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"ok: {HANDOFF}\n"

    def test_help_lists_the_exit_statuses(self) -> None:
        for command in ([], ["sessions"], ["teams", "check"]):
            done = orchestrator(*command, "--help")
            assert "3 the daemon or a service it needs cannot be reached" in " ".join(
                done.stdout.split()
            )

    def test_a_failed_run_says_so_once_on_stderr_in_one_format(self, tmp_path: Path) -> None:
        """Piped stderr is JSON records only; the failure is said once, with its session,
        which is also the session the run announced when it started."""
        team = tmp_path / "failing.toml"
        team.write_text(FAILING_TEAM)
        done = orchestrator("run", str(team), "go", "--db", str(tmp_path / "j.db"), "--plain")
        assert done.returncode == 1
        records = [json.loads(line) for line in done.stderr.splitlines()]
        started, *_, ended = records
        assert started["event"] == f"session {started['session']}"
        assert ended["level"] == "error"
        assert ended["session"] == started["session"]
        assert ended["status"] == "failed"
        assert "gave up" in ended["event"]
        assert sum("gave up" in r["event"] for r in records) == 1

    def test_console_format_has_no_json(self, tmp_path: Path) -> None:
        team = tmp_path / "failing.toml"
        team.write_text(FAILING_TEAM)
        done = orchestrator(
            "run", str(team), "go", "--db", str(tmp_path / "j.db"), "--log-format", "console"
        )
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert lines[0].startswith("orchestrator: session ahp-session:/")
        assert lines[-1].startswith("orchestrator: the run failed: ")
        assert not any(line.startswith("{") for line in lines)

    def test_run_json_is_the_outcome(self, tmp_path: Path) -> None:
        done = orchestrator(
            "run", HANDOFF, "refund", "--db", str(tmp_path / "j.db"), "--json", "--plain"
        )
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        assert outcome["status"] == "completed"
        assert outcome["error"] is None
        assert outcome["result"]
        listed = orchestrator("sessions", "--json", "--db", str(tmp_path / "j.db"))
        assert [s["session"] for s in json.loads(listed.stdout)] == [outcome["session"]]

    @pytest.mark.parametrize("how", ["stdin", "file"])
    def test_the_prompt_comes_from_stdin_or_a_file(self, tmp_path: Path, how: str) -> None:
        prompt = "Refund order 42,\nplease: it came broken.\n"
        facts = tmp_path / "facts.jsonl"
        if how == "stdin":
            done = orchestrator("run", HANDOFF, "-", "--facts", str(facts), "--plain", stdin=prompt)
        else:
            (tmp_path / "prompt.txt").write_text(prompt)
            done = orchestrator(
                "run",
                HANDOFF,
                "--prompt-file",
                str(tmp_path / "prompt.txt"),
                "--facts",
                str(facts),
                "--plain",
            )
        assert done.returncode == 0, done.stderr
        first_turn = next(f for f in read_facts(facts) if f.action.type == "chat/turnStarted")
        assert first_turn.action.message.text == prompt  # type: ignore[union-attr]

    def test_no_prompt_is_bad_input(self) -> None:
        done = orchestrator("run", HANDOFF)
        assert done.returncode == 2
        assert "give a prompt" in done.stderr

    def test_a_model_for_a_team_without_such_agents_is_bad_input(self) -> None:
        done = orchestrator("run", HANDOFF, "refund", "--model", "tiny-1")
        assert done.returncode == 2
        assert "no agent of" in done.stderr

    def test_a_closed_pipe_ends_quietly(self, delivery_run: tuple[object, Path]) -> None:
        """``orchestrator graph ... | head``: the reader is gone before the first line is
        written; the command stops without a BrokenPipeError traceback."""
        _, out = delivery_run
        command = [sys.executable, "-m", "orchestrator", "graph", "--facts"]
        with subprocess.Popen(
            [*command, str(out / "run.facts.jsonl")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=PROJECT_ROOT,
        ) as reader:
            assert reader.stdout is not None
            assert reader.stderr is not None
            reader.stdout.close()  # like `head` that has read enough
            stderr = reader.stderr.read().decode()
            assert reader.wait(timeout=60) == 0, stderr
        assert stderr == ""


class TestCompletion:
    def test_bash_completes_commands_options_and_files(self, tmp_path: Path) -> None:
        """The script bash gets completes subcommands and a run's team file: it is sourced
        in a real bash and asked, as a user pressing Tab would."""
        done = orchestrator("completion", "bash")
        assert done.returncode == 0, done.stderr
        script = tmp_path / "orchestrator.bash"
        script.write_text(done.stdout)
        (tmp_path / "team.toml").write_text("")

        def complete(*words: str) -> list[str]:
            line = " ".join(("orchestrator", *words))
            probe = (
                f"source {script}\n"
                f"COMP_WORDS=({line})\nCOMP_CWORD={len(words)}\n"
                f'COMP_LINE="{line}"\nCOMP_POINT=${{#COMP_LINE}}\n'
                "_shtab_orchestrator\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
            )
            shell = subprocess.run(
                ["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True
            )
            return shell.stdout.split()

        assert {"run", "sessions", "prune", "teams", "completion"} <= set(complete("''"))
        assert complete("sessions", "--st") == ["--status"]
        assert "team.toml" in complete("run", "te")

    @pytest.mark.parametrize("shell", ["zsh", "tcsh"])
    def test_other_shells_get_a_script(self, shell: str) -> None:
        done = orchestrator("completion", shell)
        assert done.returncode == 0
        assert "prune" in done.stdout


#: A module defining a team in Python, for the commands that take ``module:attr``.
PYTHON_TEAM = '''
from orchestrator import Agent, Team, tool

@tool(needs_approval=True)
def shout(text: str) -> str:
    """Say a text louder."""
    return text.upper() + "!"

lead = Agent(
    "lead",
    role="coordinator",
    tools=[shout],
    turns=[{"steps": [{"tool": shout, "input": {"text": "{task}"}}, {"say": "{outcomes}"}]}],
)
loud = Team("loud", coordinator=lead)
broken = Team.__name__
'''


def in_directory(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line run in ``directory`` (its modules import from there)."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=directory,
        check=False,
    )


class TestTeamsInPython:
    """`module:attr` names a team defined in Python wherever a team file is taken."""

    def test_teams_check_takes_module_attr(self, tmp_path: Path) -> None:
        (tmp_path / "loudteam.py").write_text(PYTHON_TEAM, encoding="utf-8")
        done = in_directory(tmp_path, "teams", "check", "--offline", "--tools", "loudteam:loud")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: loudteam:loud" in done.stdout.splitlines()
        assert "shout" in done.stdout

    def test_teams_check_names_what_is_not_a_team(self, tmp_path: Path) -> None:
        (tmp_path / "loudteam.py").write_text(PYTHON_TEAM, encoding="utf-8")
        done = in_directory(tmp_path, "teams", "check", "--offline", "loudteam:broken")
        assert done.returncode == 1
        assert (
            "loudteam:broken: broken is str, not a team: name an orchestrator.Team (or a TeamSpec)"
            in done.stdout + done.stderr
        )
        missing = in_directory(tmp_path, "teams", "check", "--offline", "quiet:loud")
        assert missing.returncode == 1
        assert "quiet:loud: no module 'quiet' here" in missing.stdout + missing.stderr

    def test_run_takes_module_attr_and_calls_the_function(self, tmp_path: Path) -> None:
        (tmp_path / "loudteam.py").write_text(PYTHON_TEAM, encoding="utf-8")
        done = in_directory(
            tmp_path, "run", "loudteam:loud", "hello", "--approve", "auto", "--db", "runs.db"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "HELLO!"
