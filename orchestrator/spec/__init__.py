"""What a team file says: the team, agent, tool and MCP server model and its parser (every
problem named by its key path), background schedules, and the tool definitions a model is
offered.

Pure: no trio; its only IO is reading the team file :func:`load_team` is given and the
schema files it names (``parameters_file``).
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._board import *  # noqa: F403
    from ._code_first import *  # noqa: F403
    from ._model import *  # noqa: F403
    from ._output import *  # noqa: F403
    from ._review import *  # noqa: F403
    from ._schedule import *  # noqa: F403
    from ._script import *  # noqa: F403
    from ._teamfile import *  # noqa: F403
    from ._tool_signature import *  # noqa: F403
    from ._tools import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "A2ASettings": "._model",
            "A2A_BACKEND": "._model",
            "Agent": "._code_first",
            "AgentSpec": "._model",
            "Answer": "._output",
            "AnswerProblem": "._output",
            "ApprovedBy": "._model",
            "AskStep": "._script",
            "AssigneeKind": "._board",
            "BOARD_TOOLS": "._board",
            "BUILTIN_BACKENDS": "._model",
            "BackendName": "._model",
            "BackgroundSpec": "._schedule",
            "BoardItemSpec": "._board",
            "BoardSpec": "._board",
            "COMMAND_ENV_PREFIX": "._model",
            "CatchUp": "._schedule",
            "Command": "._code_first",
            "CommandTool": "._model",
            "Cron": "._schedule",
            "DEFAULT_CHUNKS": "._script",
            "DEFAULT_COMMAND_TIMEOUT": "._model",
            "DEFAULT_MAX_REVIEW_ROUNDS": "._review",
            "DEFAULT_MCP_CALL_TIMEOUT": "._model",
            "DEFAULT_MCP_START_TIMEOUT": "._model",
            "DEFAULT_PARALLEL_BUDGET": "._model",
            "DEFAULT_TOOL_RESULT": "._model",
            "Decision": "._schedule",
            "DelegateStep": "._script",
            "Delegation": "._script",
            "EVIDENCE_KINDS": "._review",
            "Every": "._schedule",
            "EvidenceItem": "._review",
            "EvidenceKind": "._review",
            "FailStep": "._script",
            "HandoffStep": "._script",
            "Interactivity": "._model",
            "Item": "._code_first",
            "MCP_PREFIX": "._model",
            "Mcp": "._code_first",
            "McpServer": "._model",
            "McpToolRef": "._model",
            "OpenAISettings": "._model",
            "Overlap": "._schedule",
            "PERSON_PREFIX": "._board",
            "Priority": "._board",
            "PythonTool": "._model",
            "QuestionKind": "._script",
            "REVIEW_MODES": "._review",
            "RestartPolicy": "._model",
            "ReviewMode": "._review",
            "SayStep": "._script",
            "Schedule": "._schedule",
            "ScriptedTurn": "._script",
            "SleepStep": "._script",
            "Step": "._script",
            "StructuredOutput": "._model",
            "TEAM_TOOLS": "._model",
            "Team": "._code_first",
            "TeamSpec": "._model",
            "ThinkStep": "._script",
            "Tool": "._code_first",
            "ToolDefinition": "._tools",
            "ToolStep": "._script",
            "Topology": "._model",
            "UsageStep": "._script",
            "VERDICTS": "._review",
            "VERDICT_SCHEMA": "._review",
            "Verdict": "._review",
            "VerdictKind": "._review",
            "answer_text": "._output",
            "arguments_model": "._tool_signature",
            "arguments_schema": "._tool_signature",
            "check_answer": "._output",
            "check_team": "._teamfile",
            "check_tool_input": "._tools",
            "command_input_problem": "._tools",
            "docstring_summary": "._tool_signature",
            "function_name": "._tools",
            "lint_team": "._teamfile",
            "load_team": "._teamfile",
            "mcp_tool_ref": "._model",
            "missed_wakes": "._schedule",
            "next_wake": "._schedule",
            "on_wake": "._schedule",
            "output_schema_of": "._output",
            "output_schema_problem": "._output",
            "parameter_descriptions": "._tool_signature",
            "parse_cron": "._schedule",
            "parse_duration": "._schedule",
            "parse_team": "._teamfile",
            "parse_zone": "._schedule",
            "retry_prompt": "._output",
            "run_deadline": "._schedule",
            "schema_problem": "._tools",
            "team_from_mapping": "._teamfile",
            "tool": "._code_first",
            "tool_definitions": "._tools",
            "verdict_of": "._review",
            "with_model": "._model",
        },
    )
