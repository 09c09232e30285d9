"""Running a team under trio: the recorder and fact log (write-ahead), the bus that tells
subscribers, the team runtime (turns, tools, delegation, approvals), command tools,
logging (the CLI's, and the library's default) and process settings. The model backends
are in :mod:`orchestrator.runtime.backends`; the tools (command, Python and MCP tools) in
:mod:`orchestrator.runtime.tools`, whose public names are exported here too.
"""

# Re-exports: tools

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._approvals import *  # noqa: F403
    from ._board import *  # noqa: F403
    from ._bus import *  # noqa: F403
    from ._factlog import *  # noqa: F403
    from ._ids import *  # noqa: F403
    from ._library_logging import *  # noqa: F403
    from ._logging import *  # noqa: F403
    from ._process import *  # noqa: F403
    from ._recorder import *  # noqa: F403
    from ._stream_writer import *  # noqa: F403
    from ._team_runtime import *  # noqa: F403
    from ._tracing import *  # noqa: F403
    from ._turns import *  # noqa: F403
    from .tools import BACKOFF_FIRST as BACKOFF_FIRST
    from .tools import BACKOFF_MAX as BACKOFF_MAX
    from .tools import BASE_VARIABLES as BASE_VARIABLES
    from .tools import CALLBACK_TOKEN_VAR as CALLBACK_TOKEN_VAR
    from .tools import CALLBACK_URL_VAR as CALLBACK_URL_VAR
    from .tools import GROUP_ID_VAR as GROUP_ID_VAR
    from .tools import INTERPRETER_BIN as INTERPRETER_BIN
    from .tools import KILL_GRACE as KILL_GRACE
    from .tools import MCP_OUTPUT_LIMIT as MCP_OUTPUT_LIMIT
    from .tools import PYTHON_TOOL_THREADS as PYTHON_TOOL_THREADS
    from .tools import REDACTED_TOKEN as REDACTED_TOKEN
    from .tools import STDERR_TAIL as STDERR_TAIL
    from .tools import TOOL_CALL_ID_VAR as TOOL_CALL_ID_VAR
    from .tools import TRACEPARENT_VAR as TRACEPARENT_VAR
    from .tools import CommandResult as CommandResult
    from .tools import McpListing as McpListing
    from .tools import McpResult as McpResult
    from .tools import McpServers as McpServers
    from .tools import ResolvedPythonTool as ResolvedPythonTool
    from .tools import ToolCallback as ToolCallback
    from .tools import call_result as call_result
    from .tools import callback_url as callback_url
    from .tools import command_environment as command_environment
    from .tools import failed_result as failed_result
    from .tools import group_id as group_id
    from .tools import list_server_tools as list_server_tools
    from .tools import python_tool_problems as python_tool_problems
    from .tools import resolve_python_tool as resolve_python_tool
    from .tools import resolve_python_tools as resolve_python_tools
    from .tools import run_command as run_command
    from .tools import run_python_tool as run_python_tool
    from .tools import tool_environment as tool_environment
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "BACKOFF_FIRST": ".tools",
            "BACKOFF_MAX": ".tools",
            "BASE_VARIABLES": ".tools",
            "BackendFactory": "._turns",
            "BoardKeeper": "._board",
            "BoardRefusedError": "._board",
            "BusStatistics": "._bus",
            "CALLBACK_TOKEN_VAR": ".tools",
            "CALLBACK_URL_VAR": ".tools",
            "CAPTURE_CONTENT_ENV": "._tracing",
            "CommandResult": ".tools",
            "DEFAULT_DELTA_WINDOW": "._stream_writer",
            "DoneTicket": "._factlog",
            "EXPORTERS": "._tracing",
            "EventTicket": "._factlog",
            "FactBus": "._bus",
            "FactLog": "._factlog",
            "GROUP_ID_VAR": ".tools",
            "INTERPRETER_BIN": ".tools",
            "Ids": "._ids",
            "JsonlFactLog": "._factlog",
            "KILL_GRACE": ".tools",
            "MAX_EVENT_CHARS": "._logging",
            "MAX_FRAMES": "._logging",
            "MAX_TRACEBACK_CHARS": "._logging",
            "MAX_VALUE_CHARS": "._logging",
            "MCP_OUTPUT_LIMIT": ".tools",
            "McpListing": ".tools",
            "McpResult": ".tools",
            "McpServers": ".tools",
            "MemoryFactLog": "._factlog",
            "PYTHON_TOOL_THREADS": ".tools",
            "REDACTED_TOKEN": ".tools",
            "REPEAT_LIMIT": "._logging",
            "REPEAT_WINDOW": "._logging",
            "Recorder": "._recorder",
            "RepeatKey": "._logging",
            "RepeatLimiter": "._logging",
            "ResolvedPythonTool": ".tools",
            "RunOutcome": "._team_runtime",
            "SAMPLERS": "._tracing",
            "STDERR_TAIL": ".tools",
            "StreamFlusher": "._stream_writer",
            "StreamWriter": "._stream_writer",
            "Subscription": "._bus",
            "TOOL_CALL_ID_VAR": ".tools",
            "TRACEPARENT_VAR": ".tools",
            "TeamRuntime": "._team_runtime",
            "Ticket": "._factlog",
            "ToolCallback": ".tools",
            "Tracing": "._tracing",
            "TracingSettings": "._tracing",
            "add_trace_ids": "._tracing",
            "answer_text": "._approvals",
            "board_created": "._board",
            "board_text": "._board",
            "bound_log_context": "._logging",
            "call_result": ".tools",
            "callback_url": ".tools",
            "command_environment": ".tools",
            "configure_logging": "._logging",
            "failed_result": ".tools",
            "group_id": ".tools",
            "in_span": "._tracing",
            "install_tracing": "._tracing",
            "installed_tracing": "._tracing",
            "library_logging": "._library_logging",
            "list_server_tools": ".tools",
            "open_stream_writer": "._stream_writer",
            "parse_answer": "._approvals",
            "prompt_traceparent": "._tracing",
            "prompted_from": "._tracing",
            "python_tool_problems": ".tools",
            "ratio": "._tracing",
            "read_facts": "._factlog",
            "release_free_memory": "._process",
            "require_prompt": "._team_runtime",
            "resolve_python_tool": ".tools",
            "resolve_python_tools": ".tools",
            "run_command": ".tools",
            "run_python_tool": ".tools",
            "tool_environment": ".tools",
            "traced": "._tracing",
            "traceparent_headers": "._tracing",
            "tune_gc": "._process",
        },
    )
