"""The tools a team's agents call: command tools (a program run as a process group, with
its environment and the daemon's callback), Python tools (a function of an importable
module, in a worker thread) and MCP tool servers (stdio or streamable HTTP, shared by a
team's sessions).
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._command_tool import (
        CALLBACK_TOKEN_VAR,
        CALLBACK_URL_VAR,
        GROUP_ID_VAR,
        KILL_GRACE,
        REDACTED_TOKEN,
        STDERR_TAIL,
        TOOL_CALL_ID_VAR,
        CommandResult,
        ToolCallback,
        callback_url,
        command_environment,
        group_id,
        run_command,
    )
    from ._mcp import (
        BACKOFF_FIRST,
        BACKOFF_MAX,
        MCP_OUTPUT_LIMIT,
        McpListing,
        McpResult,
        McpServers,
        list_server_tools,
    )
    from ._python_tool import (
        PYTHON_TOOL_THREADS,
        ResolvedPythonTool,
        python_tool_problems,
        resolve_python_tool,
        resolve_python_tools,
        run_python_tool,
    )
    from ._tool_environment import BASE_VARIABLES, INTERPRETER_BIN, tool_environment

__all__ = [
    "BACKOFF_FIRST",
    "BACKOFF_MAX",
    "BASE_VARIABLES",
    "CALLBACK_TOKEN_VAR",
    "CALLBACK_URL_VAR",
    "GROUP_ID_VAR",
    "INTERPRETER_BIN",
    "KILL_GRACE",
    "MCP_OUTPUT_LIMIT",
    "PYTHON_TOOL_THREADS",
    "REDACTED_TOKEN",
    "STDERR_TAIL",
    "TOOL_CALL_ID_VAR",
    "CommandResult",
    "McpListing",
    "McpResult",
    "McpServers",
    "ResolvedPythonTool",
    "ToolCallback",
    "callback_url",
    "command_environment",
    "group_id",
    "list_server_tools",
    "python_tool_problems",
    "resolve_python_tool",
    "resolve_python_tools",
    "run_command",
    "run_python_tool",
    "tool_environment",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._command_tool": (
                "CALLBACK_TOKEN_VAR",
                "CALLBACK_URL_VAR",
                "CommandResult",
                "GROUP_ID_VAR",
                "KILL_GRACE",
                "REDACTED_TOKEN",
                "STDERR_TAIL",
                "TOOL_CALL_ID_VAR",
                "ToolCallback",
                "callback_url",
                "command_environment",
                "group_id",
                "run_command",
            ),
            "._mcp": (
                "BACKOFF_FIRST",
                "BACKOFF_MAX",
                "MCP_OUTPUT_LIMIT",
                "McpListing",
                "McpResult",
                "McpServers",
                "list_server_tools",
            ),
            "._python_tool": (
                "PYTHON_TOOL_THREADS",
                "ResolvedPythonTool",
                "python_tool_problems",
                "resolve_python_tool",
                "resolve_python_tools",
                "run_python_tool",
            ),
            "._tool_environment": ("BASE_VARIABLES", "INTERPRETER_BIN", "tool_environment"),
        },
    )
