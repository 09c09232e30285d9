"""The Agent Host Protocol (AHP): the chat, session and root reducers (total: they never
fail), the validator that says whether an action may be applied, and the JSON wire form.

The schema mirror is in public modules, one per schema: :mod:`orchestrator.ahp.state` (the
channels' state types), :mod:`orchestrator.ahp.actions` (the actions and their envelope) and
:mod:`orchestrator.ahp.commands` (JSON-RPC messages, the host's commands and notifications).
Import their types from there: ``from orchestrator.ahp.state import SessionState``.

Pure: no trio, no IO.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._chat_reducer import *  # noqa: F403
    from ._root_reducer import *  # noqa: F403
    from ._session_reducer import *  # noqa: F403
    from ._tool_call_builders import *  # noqa: F403
    from ._tool_call_lifecycle import *  # noqa: F403
    from ._unknown import *  # noqa: F403
    from ._validate import *  # noqa: F403
    from ._validate_session import *  # noqa: F403
    from ._wire import *  # noqa: F403
    from ._wire_encode import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "BLOCKING_TOOL_CALL_STATUSES": "._tool_call_lifecycle",
            "EVENTS_THAT_REFRESH_STATUS": "._tool_call_lifecycle",
            "IDEMPOTENT_CHAT_ACTIONS": "._validate",
            "IDEMPOTENT_SESSION_ACTIONS": "._validate_session",
            "NO_UNKNOWN_FIELDS": "._unknown",
            "OpenStrEnum": "._unknown",
            "TOOL_CALL_BUILDERS": "._tool_call_builders",
            "TOOL_CALL_TRANSITIONS": "._tool_call_lifecycle",
            "TURN_ENDS": "._chat_reducer",
            "TURN_TRANSITIONS": "._validate",
            "ToolCallAction": "._tool_call_lifecycle",
            "ToolCallEvent": "._tool_call_lifecycle",
            "ToolCallStatus": "._tool_call_lifecycle",
            "TurnPhase": "._validate",
            "UnknownVariant": "._unknown",
            "WireObject": "._unknown",
            "answer_problem": "._validate",
            "chat_summary_action": "._session_reducer",
            "describe_chat_state": "._validate",
            "describe_session_state": "._validate_session",
            "find_part": "._chat_reducer",
            "force_cancel": "._tool_call_builders",
            "json_type": "._wire",
            "mirror_summary": "._session_reducer",
            "next_tool_call_status": "._tool_call_lifecycle",
            "part_id": "._chat_reducer",
            "reduce_chat": "._chat_reducer",
            "reduce_root": "._root_reducer",
            "reduce_session": "._session_reducer",
            "session_status": "._session_reducer",
            "structure": "._wire",
            "structure_action": "._wire",
            "structure_as": "._wire",
            "structure_chat_action": "._wire",
            "structure_chat_state": "._wire",
            "structure_envelope": "._wire",
            "structure_session_action": "._wire",
            "structure_session_state": "._wire",
            "summary_action": "._session_reducer",
            "summary_changes": "._session_reducer",
            "summary_of": "._session_reducer",
            "summary_status": "._chat_reducer",
            "tool_call_event": "._tool_call_lifecycle",
            "tool_call_guard": "._tool_call_lifecycle",
            "tool_call_status": "._tool_call_lifecycle",
            "unstructure": "._wire_encode",
            "validate_chat_action": "._validate",
            "validate_session_action": "._validate_session",
            "wire_name": "._wire",
        },
    )
