"""The test suite's layout: tests mirror the code, share harnesses only through
``tests/support``, and the ``daemon`` marker says which tests start processes or servers.

Each module ``orchestrator/<layer>/_<name>.py`` has its tests in
``tests/<layer>/test_<name>.py``, or is named in :data:`TESTED_THROUGH_OTHERS` with the test
modules that cover it. Two kinds of test module mirror no single module:

- ``tests/e2e/``: end to end through a real daemon or ``orchestrator`` process, across the
  layers (``kill -9`` and resume, the fuzz of every endpoint, systemd's notify protocol, the
  input gate on every endpoint, the web view in a browser, an AHP client's fold of real runs);
- ``tests/`` itself: the repository as a whole (the package's shape, this layout, the docs,
  the installed distribution), and ``test_embed.py``, which mirrors ``orchestrator/_embed.py``.
"""

from __future__ import annotations

import ast
import inspect
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.spec import parse_team
from tests.support import teams
from tests.support.daemon_marker import UnmarkedDaemonTestError, is_daemon_test
from tests.support.paths import PROJECT_ROOT

CODE = PROJECT_ROOT / "orchestrator"
TESTS = PROJECT_ROOT / "tests"

END_TO_END = TESTS / "e2e"
"""Tests across the layers, through a real daemon or process: they mirror no package."""

TESTED_THROUGH_OTHERS: dict[str, str] = {
    "__main__.py": "cli/test_main.py (python -m orchestrator)",
    "ahp/actions.py": "ahp/test_schema.py, ahp/test_properties.py, the reducers' tests",
    "ahp/commands.py": "ahp/test_schema.py, ahp/test_properties.py, ahp/test_wire.py",
    "ahp/state.py": "ahp/test_schema.py, ahp/test_properties.py, the reducers' tests",
    "ahp/_validate_session.py": "ahp/test_session_reducer.py, ahp/test_reducer_fixtures.py",
    "core/_graph_check.py": "core/test_graph.py (DelegationGraph.check)",
    "core/_graph_schema.py": "core/test_graph.py",
    "protocols/_agentui_requests.py": "protocols/test_project_agentui.py (approvals, questions)",
    "protocols/_agui_events.py": "protocols/test_project_agui.py, protocols/test_agui_state.py",
    "runtime/_tool_calls.py": (
        "runtime/test_turns.py, runtime/test_approvals.py, runtime/tools/test_mcp_team.py"
    ),
    "spec/_parse_script.py": "spec/test_teamfile.py (scripted turns and steps)",
    "ahp/_tool_call_builders.py": "ahp/test_chat_reducer.py, ahp/test_chat_reducer_properties.py",
    "ahp/_tool_call_lifecycle.py": "ahp/test_chat_reducer.py, ahp/test_chat_reducer_properties.py",
    "ahp/_unknown.py": "ahp/test_forward_compat.py",
    "ahp/_validate.py": "ahp/test_chat_reducer_properties.py, ahp/test_reducer_fixtures.py",
    "ahp/_wire_encode.py": "ahp/test_wire.py, ahp/test_properties.py",
    "base/_errors.py": "spec/test_teamfile.py (the errors a bad team file gets)",
    "base/_lazy.py": "test_package.py (every facade's lazy names)",
    "base/_redact.py": "runtime/test_logging.py (secrets redacted)",
    "cli/_approval_mode.py": "cli/test_main.py, cli/test_console.py",
    "cli/_completion_command.py": "cli/test_main.py",
    "cli/_conventions.py": "cli/test_main.py",
    "cli/_end_command.py": "cli/test_main.py",
    "cli/_init_command.py": "cli/test_main.py",
    "cli/_journal_commands.py": "cli/test_main.py, journal/test_prune.py, journal/test_journal.py",
    "cli/_run_command.py": "cli/test_main.py, e2e/test_crash.py, journal/test_session_locks.py",
    "cli/_serve_command.py": "e2e/test_serve_process.py, e2e/test_systemd.py",
    "cli/_sessions_command.py": "cli/test_main.py",
    "cli/_teammates_client.py": "server/test_teammates_socket.py, runtime/test_logging.py",
    "cli/_teams_command.py": "cli/test_main.py",
    "cli/_version.py": "cli/test_main.py, test_distribution.py",
    "core/_facts.py": "core/test_facts_wire.py, core/test_team_state.py",
    "core/_graph_export.py": "core/test_graph.py (the DOT export)",
    "core/_model_round.py": "runtime/backends/test_openai.py, runtime/backends/test_openai_wire.py",
    "core/_reports.py": "runtime/backends/test_openai_wire.py, runtime/test_team_runtime.py",
    "core/_task_lifecycle.py": "core/test_team_state.py, core/test_team_validate.py",
    "core/_team_actions.py": "core/test_team_state.py, core/test_facts_wire.py",
    "core/_team_records.py": "core/test_team_state.py",
    "core/_team_reducer.py": "core/test_team_state.py, core/test_team_validate.py",
    "core/_teammate_actions.py": "core/test_teammate_state.py",
    "protocols/_agent_messages.py": "protocols/test_agent_channel.py, journal/test_history.py",
    "protocols/_agentui_envelopes.py": "protocols/test_agentui.py",
    "protocols/_agentui_wire.py": "protocols/test_agentui.py, protocols/test_agentui_properties.py",
    "protocols/_agui_run_input.py": "protocols/test_project_agui.py, server/test_agui_endpoint.py",
    "protocols/_ahp_rpc.py": "server/test_ahp_socket.py, server/test_ahp_frames.py",
    "protocols/_json_frames.py": "server/test_ahp_frames.py, e2e/test_fuzz.py",
    "protocols/_project_teammates.py": (
        "core/test_teammate_state.py, server/test_teammates_socket.py"
    ),
    "protocols/_teammate_channel.py": (
        "core/test_teammate_state.py, server/test_teammates_socket.py"
    ),
    "protocols/_transcript.py": "protocols/test_agent_channel.py, runtime/backends/test_openai.py",
    "runtime/_context.py": "runtime/test_team_runtime.py",
    "runtime/_library_logging.py": "runtime/test_logging.py",
    "runtime/backends/_contract.py": (
        "runtime/backends/test_scripted.py, runtime/backends/test_openai.py"
    ),
    "runtime/backends/_factory.py": "runtime/backends/test_plugins.py",
    "runtime/backends/_transcript.py": "runtime/backends/test_openai_wire.py",
    "spec/_checks.py": "spec/test_teamfile.py",
    "spec/_model.py": "spec/test_teamfile.py",
    "spec/_parse.py": "spec/test_teamfile.py",
    "spec/_parse_tools.py": (
        "spec/test_teamfile_mcp.py, runtime/tools/test_python_tool.py, "
        "runtime/tools/test_command_tool.py"
    ),
    "spec/_script.py": "spec/test_teamfile.py, runtime/backends/test_scripted.py",
    "spec/_tools.py": "spec/test_teamfile_mcp.py, runtime/tools/test_python_tool.py",
    "spec/_wording.py": "spec/test_teamfile.py (did-you-mean suggestions)",
    "journal/_durability.py": "journal/test_journal.py, sessions/test_teammates_restart.py",
    "journal/_file.py": "journal/test_journal.py (versions, damage, unreadable files)",
    "journal/_interface.py": "journal/test_journal.py (both databases through journal_db)",
    "journal/_reader.py": "journal/test_journal.py, journal/test_history.py",
    "journal/_reconnect.py": "journal/postgres/test_connection.py, journal/test_group_commit.py",
    "journal/_rows.py": (
        "journal/test_journal.py, journal/test_history.py, journal/test_group_commit.py"
    ),
    "journal/_schema.py": "journal/test_journal.py (versions, migrations), journal/test_history.py",
    "journal/_sql.py": "journal/test_journal.py, journal/test_history.py (both databases)",
    "journal/_sqlite_journal.py": "journal/test_journal.py, journal/test_group_commit.py",
    "journal/postgres/_commands.py": "sessions/test_forwarding.py (the command table)",
    "journal/postgres/_journal.py": "journal/test_journal.py, journal/postgres/test_connection.py",
    "journal/postgres/_notify.py": "sessions/test_forwarding.py, sessions/test_cluster.py",
    "journal/postgres/_prune.py": "journal/test_prune.py (both databases)",
    "journal/postgres/_reader.py": "journal/test_journal.py, journal/test_history.py",
    "journal/postgres/_schema.py": "journal/test_journal.py (versions)",
    "runtime/tools/_mcp_results.py": "runtime/tools/test_mcp.py, runtime/tools/test_mcp_hostile.py",
    "runtime/tools/_mcp_listing.py": "runtime/tools/test_mcp.py, runtime/tools/test_mcp_hostile.py",
    "runtime/tools/_mcp_stdio.py": "runtime/tools/test_mcp.py, runtime/tools/test_mcp_hostile.py",
    "runtime/tools/_tool_environment.py": (
        "runtime/tools/test_command_tool.py, runtime/tools/test_python_tool.py"
    ),
    "server/_agent_socket.py": "server/test_app.py (/ws), server/test_load.py",
    "server/_ahp_dispatch.py": "server/test_ahp_socket.py, e2e/test_ahp_fold.py",
    "server/_auth.py": "server/test_app.py (TestAuth), server/test_web.py, server/test_config.py",
    "server/_client_frames.py": "server/test_load.py (bursts past the rate limit)",
    "server/_metrics.py": "server/test_app.py (TestHealthAndMetrics)",
    "server/_outbox.py": "server/test_hypercorn_ws.py (both paths), server/test_load.py",
    "server/_principals.py": "server/test_web.py (sign-in, origins), server/test_app.py",
    "server/_sd_notify.py": "e2e/test_systemd.py (READY, STATUS, WATCHDOG, STOPPING)",
    "server/_web_assets.py": "server/test_web.py, e2e/test_web_ui.py",
    "sessions/_expected_action.py": "sessions/test_forwarding.py",
    "sessions/_finding.py": "journal/test_session_locks.py, journal/test_ownership.py",
    "sessions/_following.py": "sessions/test_followed.py, sessions/test_sqlite_following.py",
    "sessions/_following_for.py": "sessions/test_cluster.py, sessions/test_sqlite_following.py",
    "sessions/_limits.py": "sessions/test_daemon.py, server/test_config.py",
    "sessions/_live_session.py": "sessions/test_conversation.py, server/test_ahp_socket.py",
    "sessions/_opening.py": "sessions/test_daemon.py, journal/test_ownership.py",
    "sessions/_runs.py": "server/test_agui_endpoint.py, test_embed.py, server/test_app.py",
    "sessions/_session_folds.py": "server/test_web.py, sessions/test_team_log.py",
    "sessions/_shared_text.py": "server/test_hypercorn_ws.py (one frame for many clients)",
    "sessions/_team_runtimes.py": "runtime/tools/test_mcp_team.py, server/test_app.py",
    "sessions/_teams.py": "server/test_app.py (TestTeamNames), test_distribution.py",
    "teams/servers/notes.py": (
        "runtime/tools/test_mcp_team.py, test_distribution.py (the shipped MCP server)"
    ),
}
"""Modules without a test module of their own, and the test modules that cover them."""


def code_modules() -> list[str]:
    """Every module of the package, as a path under ``orchestrator/`` (facades left out)."""
    return sorted(
        path.relative_to(CODE).as_posix()
        for path in CODE.rglob("*.py")
        if path.name != "__init__.py"
    )


def mirrored_test(module: str) -> Path:
    """Where the tests of ``module`` (``layer/_name.py``) live: ``tests/layer/test_name.py``."""
    path = Path(module)
    return TESTS / path.parent / f"test_{path.stem.lstrip('_')}.py"


class TestMirror:
    def test_every_module_has_its_test_module_or_is_tested_through_others(self) -> None:
        missing = [
            module
            for module in code_modules()
            if module not in TESTED_THROUGH_OTHERS and not mirrored_test(module).exists()
        ]
        assert missing == [], (
            "modules without tests/<layer>/test_<module>.py: write one, or name the module "
            f"in TESTED_THROUGH_OTHERS with the tests that cover it: {missing}"
        )

    def test_the_list_of_modules_tested_through_others_has_no_stale_entry(self) -> None:
        modules = set(code_modules())
        gone = sorted(set(TESTED_THROUGH_OTHERS) - modules)
        assert gone == [], f"TESTED_THROUGH_OTHERS names modules that do not exist: {gone}"
        tested = sorted(m for m in TESTED_THROUGH_OTHERS if mirrored_test(m).exists())
        assert tested == [], f"these now have their own test module, take them off: {tested}"

    def test_the_tests_named_as_covering_a_module_exist(self) -> None:
        """A test module moved or renamed takes its name in TESTED_THROUGH_OTHERS along."""
        named = {
            (module, test)
            for module, tests in TESTED_THROUGH_OTHERS.items()
            for test in re.findall(r"[\w/]*test_\w+\.py", tests)
        }
        missing = sorted(
            f"{module}: {test}" for module, test in named if not (TESTS / test).exists()
        )
        assert missing == [], (
            f"TESTED_THROUGH_OTHERS names test modules that do not exist: {missing}"
        )

    def test_a_mirrored_test_module_names_a_module_of_its_layer(self) -> None:
        """A test module in tests/<layer>/ whose name is not a module's is fine (the
        properties, the fixtures); a test directory with no code directory is not, but for
        tests/e2e/."""
        layers = {path.parent for path in TESTS.rglob("test_*.py")} - {TESTS}
        layers = {
            layer
            for layer in layers
            if not {TESTS / "support", END_TO_END} & {layer, *layer.parents}
        }
        orphans = sorted(
            layer.relative_to(TESTS).as_posix()
            for layer in layers
            if not (CODE / layer.relative_to(TESTS)).is_dir()
        )
        assert orphans == [], f"test directories that mirror no package: {orphans}"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """The modules ``path`` imports, with their lines; relative imports as ``.name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.module is None or node.level:
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            else:
                found += [(node.lineno, module)]
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_no_test_module_imports_another_nor_conftest() -> None:
    """Shared code lives in tests/support; a test module imported by another runs its
    tests' module-level code twice and hides which harness a test depends on."""
    offences = []
    for path in sorted(TESTS.rglob("*.py")):
        if TESTS / "protocols" in path.parents and not path.name.startswith("test_"):
            continue
        for line, module in imported_modules(path):
            last = module.rsplit(".", 1)[-1]
            if module.startswith(".") or (
                module.startswith("tests") and (last.startswith("test_") or last == "conftest")
            ):
                offences.append(f"{path.relative_to(PROJECT_ROOT)}:{line}: {module}")
    assert offences == [], offences


class TestDaemonMarker:
    def test_an_unmarked_test_cannot_bind_a_socket(self) -> None:
        with socket.socket() as sock, pytest.raises(UnmarkedDaemonTestError, match="bound"):
            sock.bind(("127.0.0.1", 0))

    def test_an_unmarked_test_cannot_connect_a_socket(self) -> None:
        with socket.socket() as sock, pytest.raises(UnmarkedDaemonTestError, match="connected"):
            sock.connect(("127.0.0.1", 9))

    def test_an_unmarked_test_cannot_start_a_process(self) -> None:
        with pytest.raises(UnmarkedDaemonTestError, match="started a process"):
            subprocess.run([sys.executable, "-c", "pass"], check=False)

    @pytest.mark.daemon
    def test_a_daemon_test_binds_and_starts_processes(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
        done = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, check=True)
        assert done.stdout == b"1\n"

    @pytest.mark.parametrize(
        ("fixtures", "params", "marked"),
        [
            (["tmp_path"], {}, False),
            (["journal_db", "tmp_path"], {"journal_db": "sqlite"}, False),
            (["journal_db", "tmp_path"], {"journal_db": "postgresql"}, True),
            (["new_journal_db"], {"new_journal_db": "postgresql"}, True),
            (["postgres_server"], {}, True),
            (["run_mjs"], {}, True),
        ],
    )
    def test_the_fixtures_a_test_takes_mark_it(
        self, fixtures: list[str], params: dict[str, str], marked: bool
    ) -> None:
        """The PostgreSQL case of a journal test starts a server; its SQLite case does not."""

        class Callspec:
            def __init__(self) -> None:
                self.params = params

        class Item:
            fixturenames = fixtures
            callspec = Callspec()

            def get_closest_marker(self, name: str) -> None:
                return None

        assert is_daemon_test(Item()) is marked  # type: ignore[arg-type]


def test_every_named_team_document_is_a_team_the_parser_takes() -> None:
    """tests/support/teams.py: each constant, and each function with its defaults."""
    documents = {
        name: value
        for name, value in vars(teams).items()
        if name.isupper() and isinstance(value, str)
    }
    functions = {
        "fanout": teams.fanout(),
        "approvals": teams.approvals(),
        "slow_delegation": teams.slow_delegation(),
        "slow_answer": teams.slow_answer(seconds=1, answer="done"),
        "fan_team": teams.fan_team(2),
        "structured": teams.structured(answer="'{}'"),
    }
    public = {
        name
        for name, value in vars(teams).items()
        if inspect.isfunction(value) and value.__module__ == teams.__name__
    }
    assert public == set(functions), "a new team function: add it here"
    for name, text in (documents | functions).items():
        parse_team(text, file=f"{name}.toml")
