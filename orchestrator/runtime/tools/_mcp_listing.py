"""Which tools of an MCP server's listing can be offered to a model, and how.

A listing is a server's word, and a server is a peer we do not control. :func:`offerable`
keeps the tools a model can be offered and a call's input checked against:

- a name the MCP specification allows, listed once;
- an input schema that :func:`~orchestrator.spec.schema_problem` accepts, so
  :func:`~orchestrator.spec.check_tool_input` never meets a schema it cannot use;
- at most :data:`MCP_MAX_TOOLS`, each description cut to :data:`MCP_DESCRIPTION_LIMIT`.

Each tool left out is logged with the server's name, the tool's and why; the rest are offered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import structlog

from orchestrator.base import compact_dumps
from orchestrator.spec import schema_problem

if TYPE_CHECKING:
    import mcp_types

# Private to the runtime: used by ._mcp only.
__all__: list[str] = []

log = structlog.get_logger("orchestrator.mcp")

#: Tools of one server offered: the rest of a longer listing is dropped, with a warning.
MCP_MAX_TOOLS: Final = 1000
#: Characters of a tool's description offered; the rest is dropped.
MCP_DESCRIPTION_LIMIT: Final = 8 * 1024
#: A tool name as the MCP specification (2025-11-25, "Tool names") allows it.
_TOOL_NAME_RE: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")


def offerable(server: str, tools: Sequence[mcp_types.Tool]) -> tuple[mcp_types.Tool, ...]:
    """The tools of a listing that can be offered to a model.

    - A name the MCP specification allows, listed once.
    - An input schema that is a valid JSON Schema of an object (what
      :func:`~orchestrator.spec.check_tool_input` can check input against).
    - At most :data:`MCP_MAX_TOOLS`, descriptions cut to :data:`MCP_DESCRIPTION_LIMIT`.

    Each tool left out is logged, naming the server and the tool."""
    offered: dict[str, mcp_types.Tool] = {}
    for tool in tools:
        name = tool.name
        if len(offered) == MCP_MAX_TOOLS:
            log.warning(
                "mcp tools dropped",
                server=server,
                problem=f"it lists more than {MCP_MAX_TOOLS} tools; the rest are not offered",
            )
            break
        if not _TOOL_NAME_RE.match(name):
            problem: str | None = (
                "a tool name is 1 to 128 letters, digits, '_', '-' or '.' "
                "(the MCP specification's rule)"
            )
        elif name in offered:
            problem = "listed twice: the first is offered"
        else:
            problem = _schema_problem(tool.input_schema)
        if problem is not None:
            shown = name if len(name) <= 80 else f"{name[:80]}… ({len(name)} characters)"
            log.warning("mcp tool dropped", server=server, tool=shown, problem=problem)
            continue
        description = tool.description or ""
        if len(description) > MCP_DESCRIPTION_LIMIT:
            log.warning(
                "mcp tool description cut",
                server=server,
                tool=name,
                characters=len(description),
            )
            cut = f"{description[:MCP_DESCRIPTION_LIMIT]}… (cut: {len(description)} characters)"
            tool = tool.model_copy(update={"description": cut})
        offered[name] = tool
    return tuple(offered.values())


def _schema_problem(schema: Any) -> str | None:
    """Why a listed input schema cannot be offered (None: it can), as plain JSON."""
    try:
        plain = json.loads(compact_dumps(schema))
    except (TypeError, ValueError, RecursionError) as exc:
        return f"its input schema is not plain JSON: {exc}"
    problem = schema_problem(plain) if isinstance(plain, dict) else "not an object"
    return None if problem is None else f"its input schema is {problem}"
