"""Running a team under trio: the recorder and fact log (write-ahead), the bus that tells
subscribers, the team runtime (turns, tools, delegation, approvals), command tools,
logging (the CLI's, and the library's default) and process settings. The model backends
are in :mod:`orchestrator.runtime.backends`.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._approvals import answer_text, parse_answer
    from ._bus import BusStatistics, FactBus, Subscription
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
    from ._factlog import (
        DoneTicket,
        EventTicket,
        FactLog,
        JsonlFactLog,
        MemoryFactLog,
        Ticket,
        read_facts,
    )
    from ._ids import Ids
    from ._library_logging import library_logging
    from ._logging import (
        MAX_EVENT_CHARS,
        MAX_FRAMES,
        MAX_TRACEBACK_CHARS,
        MAX_VALUE_CHARS,
        REPEAT_LIMIT,
        REPEAT_WINDOW,
        RepeatKey,
        RepeatLimiter,
        bound_log_context,
        configure_logging,
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
    from ._process import release_free_memory, tune_gc
    from ._python_tool import (
        PYTHON_TOOL_THREADS,
        ResolvedPythonTool,
        python_tool_problems,
        resolve_python_tool,
        resolve_python_tools,
        run_python_tool,
    )
    from ._recorder import Recorder
    from ._team_runtime import RunOutcome, TeamRuntime, require_prompt
    from ._tool_environment import BASE_VARIABLES, INTERPRETER_BIN, tool_environment
    from ._turns import BackendFactory

__all__ = [
    "BACKOFF_FIRST",
    "BACKOFF_MAX",
    "BASE_VARIABLES",
    "CALLBACK_TOKEN_VAR",
    "CALLBACK_URL_VAR",
    "GROUP_ID_VAR",
    "INTERPRETER_BIN",
    "KILL_GRACE",
    "MAX_EVENT_CHARS",
    "MAX_FRAMES",
    "MAX_TRACEBACK_CHARS",
    "MAX_VALUE_CHARS",
    "MCP_OUTPUT_LIMIT",
    "PYTHON_TOOL_THREADS",
    "REDACTED_TOKEN",
    "REPEAT_LIMIT",
    "REPEAT_WINDOW",
    "STDERR_TAIL",
    "TOOL_CALL_ID_VAR",
    "BackendFactory",
    "BusStatistics",
    "CommandResult",
    "DoneTicket",
    "EventTicket",
    "FactBus",
    "FactLog",
    "Ids",
    "JsonlFactLog",
    "McpListing",
    "McpResult",
    "McpServers",
    "MemoryFactLog",
    "Recorder",
    "RepeatKey",
    "RepeatLimiter",
    "ResolvedPythonTool",
    "RunOutcome",
    "Subscription",
    "TeamRuntime",
    "Ticket",
    "ToolCallback",
    "answer_text",
    "bound_log_context",
    "callback_url",
    "command_environment",
    "configure_logging",
    "group_id",
    "library_logging",
    "list_server_tools",
    "parse_answer",
    "python_tool_problems",
    "read_facts",
    "release_free_memory",
    "require_prompt",
    "resolve_python_tool",
    "resolve_python_tools",
    "run_command",
    "run_python_tool",
    "tool_environment",
    "tune_gc",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._approvals": ("answer_text", "parse_answer"),
            "._bus": ("BusStatistics", "FactBus", "Subscription"),
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
            "._factlog": (
                "DoneTicket",
                "EventTicket",
                "FactLog",
                "JsonlFactLog",
                "MemoryFactLog",
                "Ticket",
                "read_facts",
            ),
            "._ids": ("Ids",),
            "._library_logging": ("library_logging",),
            "._logging": (
                "MAX_EVENT_CHARS",
                "MAX_FRAMES",
                "MAX_TRACEBACK_CHARS",
                "MAX_VALUE_CHARS",
                "REPEAT_LIMIT",
                "REPEAT_WINDOW",
                "RepeatKey",
                "RepeatLimiter",
                "bound_log_context",
                "configure_logging",
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
            "._process": ("release_free_memory", "tune_gc"),
            "._python_tool": (
                "PYTHON_TOOL_THREADS",
                "ResolvedPythonTool",
                "python_tool_problems",
                "resolve_python_tool",
                "resolve_python_tools",
                "run_python_tool",
            ),
            "._recorder": ("Recorder",),
            "._team_runtime": ("RunOutcome", "TeamRuntime", "require_prompt"),
            "._tool_environment": ("BASE_VARIABLES", "INTERPRETER_BIN", "tool_environment"),
            "._turns": ("BackendFactory",),
        },
    )
