"""The docs a newcomer reads: the README's size and commands, and the generated reference
pages (docs/hooks/reference.py) against the code they are generated from."""

from __future__ import annotations

import importlib
import importlib.util
import re
from types import ModuleType
from typing import Any

import pytest

from orchestrator.cli._main import build_parser
from orchestrator.spec import _parse, _parse_tools
from tests.support.paths import PROJECT_ROOT


def _load_hook() -> ModuleType:
    path = PROJECT_ROOT / "docs" / "hooks" / "reference.py"
    spec = importlib.util.spec_from_file_location("docs_reference_hook", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load_hook()


def _key_table(name: str) -> Any:
    """A key table of the team-file parser, from whichever of its modules defines it."""
    for module_name in ("_parse", "_parse_tools", "_parse_script", "_parse_board"):
        try:
            module = importlib.import_module(f"orchestrator.spec.{module_name}")
        except ModuleNotFoundError:
            continue
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError(f"no module of orchestrator.spec defines {name}")


def _page_keys(page: str) -> dict[str, list[str]]:
    """Each ``## heading`` of a generated page and the keys of its table rows."""
    keys: dict[str, list[str]] = {}
    heading = ""
    for line in page.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            keys[heading] = []
        elif match := re.match(r"\| `([\w]+)` \|", line):
            keys[heading].append(match.group(1))
    return keys


class TestTeamFileReference:
    def test_the_page_lists_every_key_the_parser_accepts(self) -> None:
        """Table by table, the page's keys are the parser's own key tables, in their order."""
        steps = {
            f"a step: {action}": [*keys, *_key_table("_STEP_COMMON_KEYS")]
            for action, keys in _key_table("_STEP_KEYS").items()
        }
        expected = {
            "top level": list(_key_table("_TOP_KEYS")),
            "[team]": list(_key_table("_TEAM_KEYS")),
            "[openai]": list(_key_table("_OPENAI_KEYS")),
            "[agents.NAME]": list(_key_table("_AGENT_KEYS")),
            "[[agents.NAME.turns]]": list(_key_table("_TURN_KEYS")),
            **steps,
            "a delegate step's entry": list(_key_table("_DELEGATION_KEYS")),
            "[tools.NAME] (a command)": list(_key_table("_COMMAND_KEYS")),
            "[tools.NAME] (a Python function)": list(_key_table("_PYTHON_KEYS")),
            "[mcp.NAME]": list(_key_table("_MCP_KEYS")),
            "[[background]]": list(_key_table("_BACKGROUND_KEYS")),
            "[board]": list(_key_table("_BOARD_KEYS")),
            "[[board.items]]": list(_key_table("_ITEM_KEYS")),
        }
        assert _page_keys(reference.team_file_page()) == expected

    def test_a_key_the_parser_gains_without_a_description_fails_the_page(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_parse, "_TEAM_KEYS", (*_parse._TEAM_KEYS, "colour"))
        with pytest.raises(RuntimeError, match=r"undocumented \[team\]: colour"):
            reference.team_file_page()

    def test_a_key_the_parser_drops_fails_the_page_as_stale(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        kept = tuple(k for k in _parse_tools._MCP_KEYS if k != "headers")
        monkeypatch.setattr(_parse_tools, "_MCP_KEYS", kept)
        with pytest.raises(RuntimeError, match=r"stale \[mcp.NAME\]: headers"):
            reference.team_file_page()


class TestCliReference:
    def test_every_command_has_its_help_on_the_page(self) -> None:
        page = reference.cli_page()
        headings = re.findall(r"^## `(orchestrator[\w -]*)`$", page, flags=re.MULTILINE)
        parser = build_parser()
        [commands] = [a for a in parser._actions if a.dest == "command"]
        assert commands.choices is not None
        for name in commands.choices:
            assert f"orchestrator {name}" in headings
        assert "orchestrator teams check" in headings
        # The help of a machine, not of whoever built the page.
        assert str(PROJECT_ROOT) not in page
        assert "~/.local/state/orchestrator/journal.db" in page


class TestReadme:
    readme = (PROJECT_ROOT / "README.md").read_text()

    def test_it_is_short(self) -> None:
        assert len(self.readme.splitlines()) <= 250

    def test_it_gives_the_two_commands_ci_and_the_demo_run(self) -> None:
        assert "\n./scripts/demo\n" in self.readme
        assert "\n./scripts/test\n" in self.readme
        assert (PROJECT_ROOT / ".ci" / "run").read_text().rstrip().endswith("exec ./scripts/test")

    def test_its_links_into_the_repository_exist(self) -> None:
        targets = re.findall(r"\]\((?!https?://)([^)#]+)", self.readme)
        assert targets
        for target in targets:
            assert (PROJECT_ROOT / target).exists(), target
