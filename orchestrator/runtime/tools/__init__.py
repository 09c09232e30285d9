"""The tools a team's agents call.

- Command tools: a program run as a process group, with its environment and the daemon's
  callback.
- Python tools: a function of an importable module, in a worker thread.
- MCP tool servers: stdio or streamable HTTP, shared by a team's sessions.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._command_tool import *  # noqa: F403
    from ._mcp import *  # noqa: F403
    from ._mcp_results import *  # noqa: F403
    from ._python_tool import *  # noqa: F403
    from ._tool_environment import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "BACKOFF_FIRST": "._mcp",
            "BACKOFF_MAX": "._mcp",
            "BASE_VARIABLES": "._tool_environment",
            "CALLBACK_TOKEN_VAR": "._command_tool",
            "CALLBACK_URL_VAR": "._command_tool",
            "CommandResult": "._command_tool",
            "GROUP_ID_VAR": "._command_tool",
            "INTERPRETER_BIN": "._tool_environment",
            "KILL_GRACE": "._command_tool",
            "MCP_OUTPUT_LIMIT": "._mcp_results",
            "McpListing": "._mcp",
            "McpResult": "._mcp_results",
            "McpServers": "._mcp",
            "PYTHON_TOOL_THREADS": "._python_tool",
            "REDACTED_TOKEN": "._command_tool",
            "ResolvedPythonTool": "._python_tool",
            "STDERR_TAIL": "._command_tool",
            "TOOL_CALL_ID_VAR": "._command_tool",
            "TRACEPARENT_VAR": "._command_tool",
            "ToolCallback": "._command_tool",
            "call_result": "._mcp_results",
            "callback_url": "._command_tool",
            "command_environment": "._command_tool",
            "failed_result": "._mcp_results",
            "group_id": "._command_tool",
            "list_server_tools": "._mcp",
            "python_tool_problems": "._python_tool",
            "resolve_python_tool": "._python_tool",
            "resolve_python_tools": "._python_tool",
            "run_command": "._command_tool",
            "run_python_tool": "._python_tool",
            "tool_environment": "._tool_environment",
        },
    )
