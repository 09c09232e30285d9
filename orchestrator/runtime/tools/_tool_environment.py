"""The environment a tool's program gets: an allow-list, never the orchestrator's whole one.

The daemon's environment holds its secrets (``OPENAI_API_KEY``, ``ORCHESTRATOR_TOKEN``, a
cloud provider's credentials...). A command tool or a stdio MCP server is a program the
team file names, fed input a model wrote. It gets only what it needs to run, in this order, so
the table's own values win:

- :data:`BASE_VARIABLES`, those of them that are set;
- the variables its table passes on by name (``env_passthrough``);
- the values its table sets (``env``).

The directory of the orchestrator's own interpreter comes first on ``PATH``, as if its
environment were activated. So ``python`` in a team file is the Python the orchestrator runs
on. A server installed beside it (``mcp-server-time``, ``python -m mcp_server_time``) is found
however the daemon was started (a systemd unit's ``PATH`` does not name a virtual
environment). A table's own ``PATH`` in ``env`` is taken as it is.

The runtime's per-call ``ORCHESTRATOR_*`` variables are added by the caller (see
:mod:`._command_tool`); the orchestrator's own ``ORCHESTRATOR_*`` variables are not passed
on (``ORCHESTRATOR_TOKEN`` is one of them).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["BASE_VARIABLES", "INTERPRETER_BIN", "tool_environment"]

#: What every tool's program gets from the orchestrator's environment, when set: enough to
#: find programs, a home, the locale and the time zone, and a place for temporary files.
BASE_VARIABLES: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
)


#: Where the orchestrator's interpreter (and what is installed beside it) lives.
INTERPRETER_BIN: Final = os.path.dirname(sys.executable)


def tool_environment(
    base: Mapping[str, str],
    env: Mapping[str, str],
    passthrough: Iterable[str] = (),
    *,
    first_on_path: str | None = INTERPRETER_BIN,
) -> dict[str, str]:
    """The environment of a tool's program: ``base``'s :data:`BASE_VARIABLES` and
    ``passthrough`` variables (those set), ``first_on_path`` put first on ``PATH``, then
    ``env``."""
    allowed = {name: base[name] for name in (*BASE_VARIABLES, *passthrough) if name in base}
    if first_on_path:
        rest = [d for d in allowed.get("PATH", os.defpath).split(os.pathsep) if d]
        if rest[:1] != [first_on_path]:
            allowed["PATH"] = os.pathsep.join([first_on_path, *rest])
    return {**allowed, **env}
