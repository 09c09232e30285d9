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
            ("sessions/_teams.py", "import orchestrator.server  # noqa", "Each layer imports only"),
            ("ahp/state.py", "import trio  # noqa", "import neither trio nor any IO"),
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
        """A package's ``__all__`` is the union of its modules' ``__all__`` (ruff keeps it
        sorted), each name once, and may re-export names of its subpackages' facades
        (``orchestrator.journal`` those of ``orchestrator.journal.postgres``): nothing else."""
        facade = importlib.import_module(package)
        folder = PACKAGE.joinpath(*package.split(".")[1:])
        expected = [
            name
            for module in folder.glob("_*.py")
            if not module.name.startswith("__")
            for name in module_all(module)
        ]
        assert len(set(expected)) == len(expected), "two modules export one name"
        reexported = set(facade.__all__) - set(expected)
        assert sorted(set(facade.__all__) - reexported) == sorted(expected)
        assert len(facade.__all__) == len(set(facade.__all__)), "a name listed twice"
        for name in reexported:
            subpackages = [
                importlib.import_module(f"{package}.{init.parent.name}")
                for init in folder.glob("*/__init__.py")
            ]
            assert any(name in sub.__all__ for sub in subpackages), (
                f"{package}.{name} is neither its modules' nor a subpackage's"
            )
            assert getattr(facade, name) is not None

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


#: The script that writes the facades, run by this interpreter.
FACADES_SCRIPT = ROOT / "scripts" / "facades"


def run_facades(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, FACADES_SCRIPT, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.daemon  # runs scripts/facades in a process
class TestFacadesScript:
    """Every facade is what ``scripts/facades`` writes from its private modules' ``__all__``."""

    def test_each_facade_is_what_the_script_writes(self) -> None:
        done = run_facades("--check")
        assert done.returncode == 0, (
            "a facade differs from what scripts/facades writes: run "
            f"`.venv/bin/python scripts/facades`\n{done.stdout}{done.stderr}"
        )

    @pytest.fixture
    def clone(self, tmp_path: Path) -> Path:
        """A copy of the package (the script writes into it, never into the repository)."""
        shutil.copytree(
            PACKAGE, tmp_path / "orchestrator", ignore=shutil.ignore_patterns("__pycache__")
        )
        return tmp_path / "orchestrator"

    @staticmethod
    def add_to_all(module: Path, name: str) -> None:
        """Define ``name`` in ``module`` and list it in its ``__all__``."""
        text = module.read_text().replace("__all__ = [", f'__all__ = [\n    "{name}",', 1)
        module.write_text(f"{text}\n\n{name} = 'added'\n")

    def test_check_shows_a_name_missing_from_a_facade_and_writing_adds_it(
        self, clone: Path
    ) -> None:
        self.add_to_all(clone / "cli" / "_console.py", "added_name")
        before = (clone / "cli" / "__init__.py").read_text()

        checked = run_facades("--check", "--root", clone)
        assert checked.returncode == 1
        assert '+            "added_name": "._console",' in checked.stdout
        assert "orchestrator/cli/__init__.py" in checked.stdout
        assert "Run `.venv/bin/python scripts/facades`" in checked.stderr
        assert (clone / "cli" / "__init__.py").read_text() == before, "--check wrote"

        written = run_facades("--root", clone)
        assert (written.returncode, written.stdout) == (0, "wrote orchestrator/cli/__init__.py\n")
        assert run_facades("--check", "--root", clone).returncode == 0
        after = (clone / "cli" / "__init__.py").read_text()
        docstring = before.split('"""')[1]
        assert after.startswith(f'"""{docstring}"""\n')  # the hand-written docstring stays
        loaded = subprocess.run(
            [sys.executable, "-c", "import orchestrator.cli as c; print(c.added_name)"],
            cwd=clone.parent,
            capture_output=True,
            text=True,
            check=True,
        )
        assert loaded.stdout == "added\n"

    def test_a_new_package_and_subpackage_get_facades(self, clone: Path) -> None:
        """Packages are found on disk: one made after the script was written gets its facade,
        and so does a package inside it."""
        inner = clone / "fresh" / "inner"
        inner.mkdir(parents=True)
        (clone / "fresh" / "__init__.py").write_text('"""A package the script never heard of."""\n')
        (clone / "fresh" / "_thing.py").write_text(
            '__all__ = ["Thing"]\n\n\nclass Thing:\n    pass\n'
        )
        (inner / "__init__.py").write_text('"""Inside it."""\n')
        (inner / "_deep.py").write_text(
            '__all__ = ["deep"]\n\n\ndef deep() -> int:\n    return 1\n'
        )
        (inner / "public.py").write_text('__all__ = ["not_in_the_facade"]\nnot_in_the_facade = 1\n')

        assert run_facades("--check", "--root", clone).returncode == 1
        assert run_facades("--root", clone).returncode == 0
        code = (
            "import sys, orchestrator.fresh as f, orchestrator.fresh.inner as i; "
            "print(f.__all__, i.__all__, 'orchestrator.fresh.inner._deep' in sys.modules, "
            "i.deep(), f.Thing.__name__)"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=clone.parent, capture_output=True, text=True
        )
        assert done.stdout == "['Thing'] ['deep'] False 1 Thing\n", done.stderr

    def test_a_subpackage_named_under_re_exports_has_its_names_in_the_parent(
        self, clone: Path
    ) -> None:
        """``journal/postgres/``'s names are ``orchestrator.journal``'s too (its facade says
        ``# Re-exports: postgres``); a name added there reaches the parent, lazily, and one
        the directive names but that is no subpackage is refused."""
        self.add_to_all(clone / "journal" / "postgres" / "_journal.py", "added_pg_name")
        assert run_facades("--root", clone).returncode == 0
        parent = (clone / "journal" / "__init__.py").read_text()
        assert '"added_pg_name": ".postgres",' in parent
        assert "    from .postgres import added_pg_name as added_pg_name\n" in parent
        code = (
            "import sys, orchestrator.journal as j; "
            "print(j.added_pg_name, 'orchestrator.journal.postgres._journal' in sys.modules)"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=clone.parent, capture_output=True, text=True
        )
        assert done.stdout == "added True\n", done.stderr

        runtime = clone / "runtime" / "__init__.py"
        runtime.write_text(runtime.read_text().replace("# Re-exports: tools", "# Re-exports: nope"))
        refused = run_facades("--check", "--root", clone)
        assert refused.returncode == 2
        assert "names 'nope', which is no subpackage" in refused.stderr

    def test_lines_above_the_marker_are_kept(self, clone: Path) -> None:
        facade = clone / "cli" / "__init__.py"
        head, marker, rest = facade.read_text().partition("# Below: written by scripts/facades")
        facade.write_text(f"{head}# Kept: a hand-written note.\n\n{marker}{rest}junk = 1\n")

        assert run_facades("--root", clone).returncode == 0
        text = facade.read_text()
        assert "# Kept: a hand-written note.\n" in text
        assert "junk" not in text

    def test_a_name_in_two_modules_is_refused(self, clone: Path) -> None:
        self.add_to_all(clone / "cli" / "_main.py", "render_tree")
        done = run_facades("--check", "--root", clone)
        assert done.returncode == 2
        assert "'render_tree' is in the __all__ of both ._console and ._main" in done.stderr
