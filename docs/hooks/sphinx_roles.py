"""A griffe extension for the Python API page: Sphinx roles in docstrings as code.

The package's docstrings name other objects the Sphinx way (``:class:`TeamSpec```,
``:meth:`~TeamRun.approve```). mkdocstrings reads Markdown, where a role would show as
text; this turns each into a code span of the name (``~`` keeps the last part only).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_code, obj.docstring.value)
