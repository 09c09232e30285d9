"""Lazy package facades: a name is imported from its module when it is first used.

Every layer package's ``__init__`` is a facade that exports the public names of its private
modules. Importing them all eagerly made any import of the package cost the whole package
(and what it imports: trio, networkx, jsonschema, the AHP schema's few hundred classes), so
``orchestrator --help`` took over a second. A facade instead lists where each name lives and
hands :func:`lazy_facade`'s ``__getattr__`` (PEP 562) to the module: the first
``from orchestrator.core import build_graph`` imports ``core._graph`` and nothing else of the
package, and caches the name in the facade so later uses are plain attribute reads.

Each facade also imports its names under ``typing.TYPE_CHECKING``: type checkers and the
import contracts (import-linter reads those imports) see the same dependencies as before.

Pure: no trio, no IO.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_facade"]


def lazy_facade(
    package: str, sources: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of facade ``package``.

    ``sources`` maps each private module (relative, e.g. ``"._graph"``) to the names it
    exports through the facade.
    """
    module_of = {name: module for module, names in sources.items() for name in names}
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

    return facade_attribute, facade_names
