"""The package's shape: a pure core that imports no IO, and one public facade."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

import orchestrator

#: Protocol types, reducers, graph and projections: facts in, state or envelopes out.
PURE_MODULES = (
    "orchestrator.base._errors",
    "orchestrator.base._compact_json",
    "orchestrator.ahp._state",
    "orchestrator.ahp._actions",
    "orchestrator.ahp._wire",
    "orchestrator.ahp._commands",
    "orchestrator.protocols._ahp_rpc",
    "orchestrator.protocols._agentui",
    "orchestrator.protocols._agentui_wire",
    "orchestrator.core._team_actions",
    "orchestrator.core._facts",
    "orchestrator.core._facts_wire",
    "orchestrator.ahp._chat_reducer",
    "orchestrator.ahp._session_reducer",
    "orchestrator.ahp._validate",
    "orchestrator.core._team_records",
    "orchestrator.core._team_reducer",
    "orchestrator.core._team_validate",
    "orchestrator.core._team_state",
    "orchestrator.core._graph",
    "orchestrator.core._graph_export",
    "orchestrator.protocols._project_agentui",
    "orchestrator.protocols._project_agui",
    "orchestrator.spec._teamfile",
    "orchestrator.spec._model",
    "orchestrator.spec._script",
    "orchestrator.spec._parse",
    "orchestrator.spec._checks",
    "orchestrator.spec._wording",
    "orchestrator.spec._schedule",
    "orchestrator.core._reports",
    "orchestrator.core._recovery",
    "orchestrator.protocols._agent_messages",
    "orchestrator.spec._tools",
    "orchestrator.core._model_round",
    "orchestrator.protocols._agent_channel",
    "orchestrator.base._input_gate",
    "orchestrator.protocols._json_frames",
)

#: What a pure module may never pull in, directly or through another module of ours.
FORBIDDEN = ("trio", "sqlite3", "socket", "httpx", "hypercorn", "structlog", "rich")

#: The libraries a pure module may use. Their own imports are theirs: networkx loads the
#: stdlib's socket module as a side effect of its plugin discovery, which does no IO.
PURE_LIBRARIES = ("attrs", "cattrs", "networkx", "jsonschema")


def loaded_after(imports: str) -> set[str]:
    """The FORBIDDEN modules loaded by ``imports`` in a fresh interpreter."""
    code = f"import sys; {imports}; print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(filter(None, done.stdout.strip().split(",")))


class TestPureCore:
    @pytest.mark.parametrize("module", PURE_MODULES)
    def test_pure_module_imports_no_io(self, module: str) -> None:
        """Importing the module alone loads no IO library beyond what its libraries load."""
        libraries = loaded_after("; ".join(f"import {name}" for name in PURE_LIBRARIES))
        added = loaded_after(f"import {module}") - libraries
        assert added == set(), f"{module} imports {sorted(added)}"

    def test_the_check_can_fail(self) -> None:
        """The runtime is not pure: the same check sees trio come in."""
        assert "trio" in loaded_after("import orchestrator.runtime._team_runtime")


class TestFacade:
    def test_all_is_sorted_and_unique(self) -> None:
        assert list(orchestrator.__all__) == sorted(set(orchestrator.__all__))

    @pytest.mark.parametrize("name", orchestrator.__all__)
    def test_every_export_comes_from_a_private_module(self, name: str) -> None:
        value = getattr(orchestrator, name)
        module = getattr(value, "__module__", "")
        private = module.startswith("orchestrator.") and module.rsplit(".", 1)[1].startswith("_")
        assert private, f"{name} is defined in {module!r}"
        assert getattr(importlib.import_module(module), name) is value

    def test_nothing_public_is_left_out(self) -> None:
        public = {
            name
            for name, value in vars(orchestrator).items()
            if not name.startswith("_") and not isinstance(value, types.ModuleType)
        }
        assert public == set(orchestrator.__all__)
