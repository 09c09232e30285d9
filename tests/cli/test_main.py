"""The ``orchestrator`` command line (``cli/_main``), run as a user runs it: the parser and
its choices, the logging options, one error line, a closed pipe. Each command's own tests
are beside it (``tests/cli/test_<command>_command.py``)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.command_line import HANDOFF, orchestrator, run_delivery_team
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


@pytest.fixture(scope="module")
def delivery_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One auto-approved run of the delivery team, shared by the tests that read its files."""
    out = tmp_path_factory.mktemp("run")
    return run_delivery_team(out), out


def test_the_status_choices_are_the_journal_s() -> None:
    """The parser keeps its own copy (``--help`` loads no journal module): the same."""
    from orchestrator.cli._main import SESSION_STATUSES as PARSED
    from orchestrator.journal import SESSION_STATUSES

    assert PARSED == SESSION_STATUSES


def test_the_delta_window_the_help_gives_is_the_runtime_s() -> None:
    """``--help`` names the default without importing the runtime (it would load trio)."""
    from orchestrator.cli._main import build_parser
    from orchestrator.runtime import DEFAULT_DELTA_WINDOW

    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    run = commands.choices["run"]
    [action] = [a for a in run._actions if a.dest == "delta_window"]
    assert f"default {DEFAULT_DELTA_WINDOW:g};" in (action.help or "")


@pytest.mark.parametrize("value", ["-1", "2", "soon", "nan"])
def test_a_delta_window_that_is_no_duration_is_refused(value: str) -> None:
    done = orchestrator("run", HANDOFF, "go", "--delta-window", value)
    assert done.returncode == 2
    assert "--delta-window: expected a number of seconds from 0 to 1" in done.stderr


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
