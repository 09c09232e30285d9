"""The test suite's layout: tests mirror the code, share harnesses only through
``tests/support``, and the ``daemon`` marker says which tests start processes or servers.

Each module ``orchestrator/<layer>/_<name>.py`` has its tests in
``tests/<layer>/test_<name>.py``, or is named in :data:`TESTED_THROUGH_OTHERS` with the test
modules that cover it. Two kinds of test module mirror no single module:

- ``tests/e2e/``: end to end through a real daemon or ``orchestrator`` process, across the
  layers (``kill -9`` and resume, the fuzz of every endpoint, systemd's notify protocol, the
  input gate on every endpoint, the web view in a browser, an AHP client's fold of real runs);
- ``tests/`` itself: the repository as a whole (the package's shape, this layout, the docs,
  the installed distribution), and ``test_embed.py`` and ``test_streams.py``, which mirror
  ``orchestrator/_embed.py`` and ``orchestrator/_streams.py``.
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
    "teams/servers/glossary_agent.py": (
        "an example program, started by runtime/backends/test_a2a.py (TestShippedExample)"
    ),
    "core/_model_round.py": (
        "no behaviour of its own (frozen records and the Backend protocol): "
        "runtime/backends/test_openai.py, runtime/backends/test_scripted.py"
    ),
    "runtime/backends/_contract.py": (
        "no code: it names core's model-round types for backend authors; "
        "runtime/backends/test_scripted.py, runtime/backends/test_openai.py implement it"
    ),
    "journal/_durability.py": (
        "an enum of two names: what each sets is in journal/test_sqlite_journal.py, "
        "journal/postgres/test_journal.py"
    ),
    "journal/_sql.py": (
        "a typing Protocol without behaviour, of both databases' connections: "
        "journal/test_interface.py, journal/test_history.py"
    ),
    "sessions/_shared_text.py": (
        "a str with one slot the server's framing fills: server/test_hypercorn_ws.py "
        "(one frame for many clients)"
    ),
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
        "remote": teams.remote({"far": "http://127.0.0.1:8765/"}),
        "artifact_tools": teams.artifact_tools(),
        "remote_approvals": teams.remote_approvals(
            {"deployer": "http://127.0.0.1:8765/", "mailer": "http://127.0.0.1:8766/"}
        ),
        "review_team": teams.review_team(["changes_requested", "passed"], mode="on_request"),
        "side_team": teams.side_team('{ say = "first" }', '{ sleep = 1 }, { say = "second" }'),
    }
    public = {
        name
        for name, value in vars(teams).items()
        if inspect.isfunction(value) and value.__module__ == teams.__name__
    }
    assert public == set(functions), "a new team function: add it here"
    for name, text in (documents | functions).items():
        parse_team(text, file=f"{name}.toml")
