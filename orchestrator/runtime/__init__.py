"""Running a team under trio: the recorder and fact log (write-ahead), the bus that tells
subscribers, the team runtime (turns, tools, delegation, approvals), command tools,
logging (the CLI's, and the library's default) and process settings. The model backends
are in :mod:`orchestrator.runtime.backends`.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._approvals import *  # noqa: F403
    from ._bus import *  # noqa: F403
    from ._command_tool import *  # noqa: F403
    from ._factlog import *  # noqa: F403
    from ._ids import *  # noqa: F403
    from ._library_logging import *  # noqa: F403
    from ._logging import *  # noqa: F403
    from ._mcp import *  # noqa: F403
    from ._process import *  # noqa: F403
    from ._python_tool import *  # noqa: F403
    from ._recorder import *  # noqa: F403
    from ._team_runtime import *  # noqa: F403
    from ._tool_environment import *  # noqa: F403
    from ._turns import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "BACKOFF_FIRST": "._mcp",
            "BACKOFF_MAX": "._mcp",
            "BASE_VARIABLES": "._tool_environment",
            "BackendFactory": "._turns",
            "BusStatistics": "._bus",
            "CALLBACK_TOKEN_VAR": "._command_tool",
            "CALLBACK_URL_VAR": "._command_tool",
            "CommandResult": "._command_tool",
            "DoneTicket": "._factlog",
            "EventTicket": "._factlog",
            "FactBus": "._bus",
            "FactLog": "._factlog",
            "GROUP_ID_VAR": "._command_tool",
            "INTERPRETER_BIN": "._tool_environment",
            "Ids": "._ids",
            "JsonlFactLog": "._factlog",
            "KILL_GRACE": "._command_tool",
            "MAX_EVENT_CHARS": "._logging",
            "MAX_FRAMES": "._logging",
            "MAX_TRACEBACK_CHARS": "._logging",
            "MAX_VALUE_CHARS": "._logging",
            "MCP_OUTPUT_LIMIT": "._mcp",
            "McpListing": "._mcp",
            "McpResult": "._mcp",
            "McpServers": "._mcp",
            "MemoryFactLog": "._factlog",
            "PYTHON_TOOL_THREADS": "._python_tool",
            "REDACTED_TOKEN": "._command_tool",
            "REPEAT_LIMIT": "._logging",
            "REPEAT_WINDOW": "._logging",
            "Recorder": "._recorder",
            "RepeatKey": "._logging",
            "RepeatLimiter": "._logging",
            "ResolvedPythonTool": "._python_tool",
            "RunOutcome": "._team_runtime",
            "STDERR_TAIL": "._command_tool",
            "Subscription": "._bus",
            "TOOL_CALL_ID_VAR": "._command_tool",
            "TeamRuntime": "._team_runtime",
            "Ticket": "._factlog",
            "ToolCallback": "._command_tool",
            "answer_text": "._approvals",
            "bound_log_context": "._logging",
            "callback_url": "._command_tool",
            "command_environment": "._command_tool",
            "configure_logging": "._logging",
            "group_id": "._command_tool",
            "library_logging": "._library_logging",
            "list_server_tools": "._mcp",
            "parse_answer": "._approvals",
            "python_tool_problems": "._python_tool",
            "read_facts": "._factlog",
            "release_free_memory": "._process",
            "require_prompt": "._team_runtime",
            "resolve_python_tool": "._python_tool",
            "resolve_python_tools": "._python_tool",
            "run_command": "._command_tool",
            "run_python_tool": "._python_tool",
            "tool_environment": "._tool_environment",
            "tune_gc": "._process",
        },
    )
