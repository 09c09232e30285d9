"""Lazy facades: a package's name is imported from its module on first use, and only then.

Each test writes a small package to a temporary directory, so what is imported when is
observable in ``sys.modules``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

FACADE = """\
from orchestrator.base import lazy_facade

__all__, __getattr__, __dir__ = lazy_facade(
    __name__, {"heavy": "._heavy", "light": "._light", "Other": "._light"}
)
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``lazypkg``: a facade over ``_heavy`` (``heavy``) and ``_light`` (``light``, ``Other``)."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text(FACADE)
    (root / "_heavy.py").write_text("heavy = 'the heavy value'\n")
    (root / "_light.py").write_text("light = 1\nclass Other: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("lazypkg")
    for name in [n for n in sys.modules if n == "lazypkg" or n.startswith("lazypkg.")]:
        del sys.modules[name]


def test_all_is_the_names_sorted(package: ModuleType) -> None:
    assert package.__all__ == ["Other", "heavy", "light"]


def test_importing_the_facade_imports_no_module_of_it(package: ModuleType) -> None:
    assert "lazypkg._heavy" not in sys.modules
    assert "lazypkg._light" not in sys.modules


def test_a_name_imports_its_own_module_only(package: ModuleType) -> None:
    assert package.light == 1
    assert "lazypkg._light" in sys.modules
    assert "lazypkg._heavy" not in sys.modules


def test_from_import_works(package: ModuleType) -> None:
    from lazypkg import heavy  # type: ignore[import-not-found]

    assert heavy == "the heavy value"


def test_the_first_use_caches_the_name_in_the_facade(package: ModuleType) -> None:
    """Later uses are plain attribute reads: a change in the module is not seen again."""
    assert "heavy" not in vars(package)
    assert package.heavy == "the heavy value"
    assert vars(package)["heavy"] == "the heavy value"
    vars(sys.modules["lazypkg._heavy"])["heavy"] = "changed"
    assert package.heavy == "the heavy value"


def test_an_unknown_name_is_an_attribute_error_naming_it(package: ModuleType) -> None:
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'missing'"):
        _ = package.missing
    with pytest.raises(ImportError):
        from lazypkg import missing  # noqa: F401


def test_dir_lists_every_name_before_any_is_used(package: ModuleType) -> None:
    names = dir(package)
    assert {"heavy", "light", "Other", "__all__"} <= set(names)
    assert "lazypkg._heavy" not in sys.modules
