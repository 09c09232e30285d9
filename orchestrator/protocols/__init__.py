"""The client-facing wire formats, projected from facts: Agent UI envelopes, AG-UI events,
the agent channel and its history, AHP over JSON-RPC, and the teammates channel.

Pure: facts and state in, JSON-ready values out; no trio, no IO.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._agent_channel import *  # noqa: F403
    from ._agent_messages import *  # noqa: F403
    from ._agentui import *  # noqa: F403
    from ._agentui_wire import *  # noqa: F403
    from ._agui_run_input import *  # noqa: F403
    from ._agui_state import *  # noqa: F403
    from ._ahp_rpc import *  # noqa: F403
    from ._board_wire import *  # noqa: F403
    from ._chat_usage import *  # noqa: F403
    from ._project_agentui import *  # noqa: F403
    from ._project_agui import *  # noqa: F403
    from ._project_board import *  # noqa: F403
    from ._project_teammates import *  # noqa: F403
    from ._teammate_channel import *  # noqa: F403
    from ._transcript import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ARTIFACT_EVENT": "._project_agui",
            "Abort": "._agent_channel",
            "ActionType": "._agentui",
            "AgentChannelProjector": "._agent_channel",
            "AgentUiProjector": "._project_agentui",
            "AguiProjector": "._project_agui",
            "AguiRunStatus": "._project_agui",
            "Approve": "._agent_channel",
            "BOARD_OPERATIONS": "._board_wire",
            "BackgroundJobStatus": "._agentui",
            "BoardItemStatus": "._agentui",
            "BoardRequest": "._board_wire",
            "Call": "._ahp_rpc",
            "ChatUsage": "._chat_usage",
            "ClientMessage": "._agent_channel",
            "ClientMessageError": "._agent_channel",
            "Control": "._agentui",
            "ControlTeammate": "._teammate_channel",
            "CoordinatorTeamStatus": "._agentui",
            "End": "._agent_channel",
            "Envelope": "._agentui",
            "Event": "._agui_run_input",
            "EventType": "._agentui",
            "HandoffStatus": "._agentui",
            "ListTeammates": "._teammate_channel",
            "Owner": "._agentui",
            "Persistence": "._agentui",
            "Phase": "._agentui",
            "Prompt": "._agent_channel",
            "QueuedTurnStatus": "._agentui",
            "REMOTE_TASK_EVENT": "._project_agui",
            "Reject": "._agent_channel",
            "RemoteTaskStatus": "._agentui",
            "ResumeDecision": "._agui_run_input",
            "ReviewStatus": "._agentui",
            "RunRequest": "._agui_run_input",
            "RuntimeEntity": "._agentui",
            "Scope": "._agentui",
            "Settings": "._agent_channel",
            "Subscribe": "._teammate_channel",
            "Surface": "._agentui",
            "TURN_ENDS": "._agent_messages",
            "TeamSubscribe": "._agent_channel",
            "TeamView": "._agui_state",
            "TeammateHistory": "._teammate_channel",
            "TeammateRequest": "._teammate_channel",
            "TeammateStatus": "._agentui",
            "ToolResponse": "._agent_channel",
            "Topology": "._agentui",
            "WORK_ITEM_PREFIX": "._project_board",
            "WorkItemStatus": "._agentui",
            "agent_event": "._agent_channel",
            "board_entries": "._agui_state",
            "board_from_json": "._board_wire",
            "board_to_json": "._board_wire",
            "channel_envelopes": "._ahp_rpc",
            "channel_of": "._agent_channel",
            "chat_transcript": "._transcript",
            "chat_usage": "._chat_usage",
            "envelope_from_json_line": "._agentui_wire",
            "envelope_to_json_line": "._agentui_wire",
            "error_frame": "._ahp_rpc",
            "feed_board": "._project_board",
            "json_patch": "._agui_state",
            "model_choice": "._agent_channel",
            "negotiate": "._ahp_rpc",
            "notice_event": "._agent_messages",
            "notification_frame": "._ahp_rpc",
            "parse_board_request": "._board_wire",
            "parse_call": "._ahp_rpc",
            "parse_client_message": "._agent_channel",
            "parse_request": "._teammate_channel",
            "parse_run_input": "._agui_run_input",
            "project_facts": "._project_agentui",
            "replay": "._agent_channel",
            "restore_actions": "._agent_messages",
            "result_frame": "._ahp_rpc",
            "review_entry": "._agui_state",
            "review_ops": "._agui_state",
            "session_snapshot_state": "._ahp_rpc",
            "structure_envelope": "._agentui_wire",
            "team_view": "._agui_state",
            "teammate_envelopes": "._project_teammates",
            "teammates_message": "._teammate_channel",
            "truncate_action": "._agent_messages",
            "turn_from_facts": "._agent_messages",
            "turn_messages": "._agent_messages",
            "undo_action": "._agent_messages",
            "unstructure_envelope": "._agentui_wire",
            "usage_to_json": "._chat_usage",
            "view_update": "._agent_channel",
        },
    )
