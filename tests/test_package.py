"""The package's shape: layers that import only downwards, pure layers that import no IO, and
a facade per package that names its public parts.

The layers and the purity rule are import-linter contracts in ``pyproject.toml`` (one list,
checked statically by ``lint-imports`` in the README's test command); the tests here check
what a static graph cannot see (a library that loads IO when imported) and that the
contracts bite.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

import orchestrator
from tests.support.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT
PACKAGE = ROOT / "orchestrator"
CONTRACTS = {
    contract["id"]: contract
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}

#: The pure packages and modules, as the import contract names them.
PURE = tuple(CONTRACTS["pure"]["source_modules"])

#: What a pure module may never pull in, directly or through another module of ours.
FORBIDDEN = tuple(CONTRACTS["pure"]["forbidden_modules"])

#: The libraries a pure module may use. Their own imports are theirs: networkx loads the
#: stdlib's socket module as a side effect of its plugin discovery, and croniter subprocess,
#: neither of which does any IO on import.
PURE_LIBRARIES = ("attrs", "cattrs", "croniter", "networkx", "jsonschema", "immutables")

#: Every package below the root, as a dotted name (``orchestrator.core``, ...).
PACKAGES = tuple(
    ".".join(("orchestrator", *init.parent.relative_to(PACKAGE).parts))
    for init in sorted(PACKAGE.rglob("__init__.py"))
    if init.parent != PACKAGE
)


def loaded_after(imports: str) -> set[str]:
    """The FORBIDDEN modules loaded by ``imports`` in a fresh interpreter."""
    code = f"import sys; {imports}; print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(filter(None, done.stdout.strip().split(",")))


def module_all(path: Path) -> list[str]:
    """The names a module's ``__all__`` lists (read, not imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return [ast.literal_eval(element) for element in node.value.elts]  # type: ignore[attr-defined]
    return []


def load_everything(package: str) -> str:
    """Code that imports ``package`` and every name its lazy facade exports."""
    return f"import {package} as p; [getattr(p, name) for name in p.__all__]"


class TestPureLayers:
    def test_all_pure_packages_are_named(self) -> None:
        assert {"orchestrator.base", "orchestrator.ahp", "orchestrator.core"} <= set(PURE)

    @pytest.mark.daemon
    @pytest.mark.parametrize("module", [m for m in PURE if m.count(".") == 1])
    def test_pure_package_loads_no_io(self, module: str) -> None:
        """Importing it alone loads no IO library beyond what its libraries load (what a
        static graph cannot see). The pure modules of impure packages are checked by the
        contract alone: importing one runs its package's __init__ first."""
        libraries = loaded_after("; ".join(f"import {name}" for name in PURE_LIBRARIES))
        added = loaded_after(load_everything(module)) - libraries
        assert added == set(), f"{module} imports {sorted(added)}"

    @pytest.mark.daemon
    def test_the_check_can_fail(self) -> None:
        """The runtime is not pure: the same check sees trio come in."""
        assert "trio" in loaded_after(load_everything("orchestrator.runtime"))


#: ``lint-imports`` run by this interpreter (its console script may not be on PATH).
LINT_IMPORTS = "from importlinter.cli import lint_imports_command; lint_imports_command()"


@pytest.mark.daemon
class TestContracts:
    """The import contracts bite: a copy of the package with one bad import breaks them."""

    @pytest.fixture
    def clone(self, tmp_path: Path) -> Path:
        shutil.copytree(
            PACKAGE, tmp_path / "orchestrator", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
        return tmp_path

    @staticmethod
    def lint(where: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", LINT_IMPORTS, "--no-cache"],
            cwd=where,
            env={"PYTHONPATH": str(where), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=False,
        )

    @staticmethod
    def add_import(module: Path, statement: str) -> None:
        text = module.read_text()
        head, marker, rest = text.partition("from __future__ import annotations\n")
        module.write_text(f"{head}{marker}\n{statement}\n{rest}")

    def test_the_package_keeps_them(self, clone: Path) -> None:
        done = self.lint(clone)
        assert done.returncode == 0, done.stdout + done.stderr

    @pytest.mark.parametrize(
        ("module", "statement", "contract"),
        [
            ("core/_graph.py", "import orchestrator.server  # noqa", "Each layer imports only"),
            ("ahp/_state.py", "import trio  # noqa", "import neither trio nor any IO"),
            ("protocols/_agentui.py", "import sqlite3  # noqa", "import neither trio nor any IO"),
            (
                "server/_app.py",
                "from orchestrator.core._facts import Fact  # noqa",
                "private modules",
            ),
            ("spec/_schedule.py", "from . import _tools  # noqa", "No import circle"),
        ],
    )
    def test_a_bad_import_breaks_one(
        self, clone: Path, module: str, statement: str, contract: str
    ) -> None:
        self.add_import(clone / "orchestrator" / module, statement)
        done = self.lint(clone)
        assert done.returncode != 0
        broken = done.stdout.split("Broken contracts", 1)[-1]
        assert contract in broken.replace("\n", " "), done.stdout


class TestFacades:
    @pytest.mark.daemon
    def test_a_facade_loads_a_module_when_a_name_of_it_is_used(self) -> None:
        """Importing a facade costs nothing; a name loads its own module and no other."""
        code = (
            "import sys; import orchestrator.core as core; before = set(sys.modules); "
            "core.build_graph; after = set(sys.modules) - before; "
            "print(sorted(m for m in after if m.startswith('orchestrator.core.')))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        loaded = ast.literal_eval(done.stdout)
        assert "orchestrator.core._graph" in loaded
        assert "orchestrator.core._recovery" not in loaded

    def test_a_facade_refuses_a_name_it_does_not_export(self) -> None:
        import orchestrator.core

        unexported = "nope"
        with pytest.raises(AttributeError, match=r"'orchestrator\.core' has no attribute 'nope'"):
            getattr(orchestrator.core, unexported)
        assert "build_graph" in dir(orchestrator.core)

    def test_root_all_is_sorted_and_unique(self) -> None:
        assert list(orchestrator.__all__) == sorted(set(orchestrator.__all__))

    def test_root_exports_only_its_all(self) -> None:
        for name in orchestrator.__all__:  # the root facade is lazy: resolve every name
            getattr(orchestrator, name)
        public = {
            name
            for name, value in vars(orchestrator).items()
            if not name.startswith("_") and not isinstance(value, types.ModuleType)
        }
        assert public == set(orchestrator.__all__)

    @pytest.mark.parametrize("package", PACKAGES)
    def test_a_facade_names_every_public_part_of_its_modules(self, package: str) -> None:
        """A package's ``__all__`` is exactly the union of its modules' ``__all__`` (ruff
        keeps it sorted), each name once."""
        facade = importlib.import_module(package)
        folder = PACKAGE.joinpath(*package.split(".")[1:])
        expected = [
            name
            for module in folder.glob("_*.py")
            if not module.name.startswith("__")
            for name in module_all(module)
        ]
        assert len(set(expected)) == len(expected), "two modules export one name"
        assert sorted(facade.__all__) == sorted(expected)

    @pytest.mark.parametrize("package", PACKAGES)
    def test_each_export_is_the_object_its_module_defines(self, package: str) -> None:
        facade = importlib.import_module(package)
        folder = PACKAGE.joinpath(*package.split(".")[1:])
        for module in folder.glob("_*.py"):
            if module.name.startswith("__"):
                continue
            loaded = importlib.import_module(f"{package}.{module.stem}")
            for name in module_all(module):
                assert getattr(facade, name) is getattr(loaded, name), f"{package}.{name}"
