"""Lazy package facades: a name is imported from its module when it is first used.

Every layer package's ``__init__`` is a facade that exports the public names of its private
modules. Importing them all eagerly made any import of the package cost the whole package
(and what it imports: trio, networkx, jsonschema, the AHP schema's few hundred classes), so
``orchestrator --help`` took over a second. A facade instead maps each name to the module it
lives in. It hands :func:`lazy_facade`'s ``__getattr__`` (PEP 562) to the package. The first
``from orchestrator.core import build_graph`` imports ``core._graph`` and nothing else of the
package. It caches the name in the facade, so later uses are plain attribute reads.

Each facade also star-imports its private modules under ``typing.TYPE_CHECKING``: type
checkers see every name (a star import re-exports the module's ``__all__``), and the import
contracts (import-linter reads those imports) see the same dependencies as before. The
facades are written by ``scripts/facades`` from the modules' ``__all__``.

Pure: no trio, no IO.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_facade"]


def lazy_facade(
    package: str, module_of: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__all__``, ``__getattr__`` and ``__dir__`` of facade ``package``.

    ``module_of`` maps each name the facade exports to the module it lives in, relative to
    ``package`` (``"._graph"``); ``__all__`` is its names, sorted.
    """
    facade = sys.modules[package]

    def facade_attribute(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(facade, name, value)  # the next use is a plain attribute read
        return value

    def facade_names() -> list[str]:
        return sorted({*vars(facade), *module_of})

    return sorted(module_of), facade_attribute, facade_names
