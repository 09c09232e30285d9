"""The team's facts and what follows from them: facts and their wire form, team and
teammate actions, state and reducers, queries over state, recovery planning, reports, the
model-round contract, and the delegation graph with its renderers.

Pure: state and facts in, state, facts or text out; no trio, no IO.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._diff import *  # noqa: F403
    from ._facts import *  # noqa: F403
    from ._facts_wire import *  # noqa: F403
    from ._fork import *  # noqa: F403
    from ._graph import *  # noqa: F403
    from ._graph_check import *  # noqa: F403
    from ._graph_export import *  # noqa: F403
    from ._graph_schema import *  # noqa: F403
    from ._model_round import *  # noqa: F403
    from ._queries import *  # noqa: F403
    from ._recovery import *  # noqa: F403
    from ._remote_tasks import *  # noqa: F403
    from ._replay import *  # noqa: F403
    from ._reports import *  # noqa: F403
    from ._spans import *  # noqa: F403
    from ._task_lifecycle import *  # noqa: F403
    from ._team_actions import *  # noqa: F403
    from ._team_records import *  # noqa: F403
    from ._team_reducer import *  # noqa: F403
    from ._team_state import *  # noqa: F403
    from ._team_validate import *  # noqa: F403
    from ._teammate_actions import *  # noqa: F403
    from ._teammate_state import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ARTIFACT_META": "._remote_tasks",
            "ASKED_BY_META": "._queries",
            "Action": "._facts",
            "ApprovalDecision": "._team_actions",
            "ApprovalRecord": "._team_records",
            "ApprovalRequested": "._team_actions",
            "ApprovalResolved": "._team_actions",
            "Backend": "._model_round",
            "BackgroundJobStatus": "._teammate_state",
            "CANCELLED": "._spans",
            "ChatDiff": "._diff",
            "ChatSpans": "._spans",
            "Conversation": "._queries",
            "Conversations": "._queries",
            "DelegationGraph": "._graph",
            "EdgeKind": "._graph_schema",
            "FINISHED_TASK_STATUSES": "._team_actions",
            "Fact": "._facts",
            "FactChange": "._team_records",
            "Fork": "._fork",
            "ForkRows": "._fork",
            "ForkedFrom": "._team_records",
            "GraphStatistics": "._graph",
            "HandoffRecorded": "._team_actions",
            "INTERRUPTED": "._queries",
            "INTERRUPTED_SUMMARY": "._recovery",
            "Member": "._team_records",
            "MemberJoined": "._team_actions",
            "MemberName": "._queries",
            "MemberStatus": "._team_state",
            "ModelEvent": "._model_round",
            "NodeKind": "._graph_schema",
            "Notice": "._model_round",
            "OUTPUT_RETRY_META": "._reports",
            "REMOTE_STATES": "._remote_tasks",
            "REMOTE_TASK_META": "._remote_tasks",
            "ROUND_META": "._queries",
            "RUNS_KEPT": "._teammate_state",
            "ReasoningDelta": "._model_round",
            "RecordedChat": "._replay",
            "RecordedRound": "._replay",
            "RecoveryPlan": "._recovery",
            "RemoteBackend": "._model_round",
            "ReplayExhaustedError": "._replay",
            "ReplayMismatchError": "._replay",
            "ReplayScript": "._replay",
            "ResumePoint": "._recovery",
            "RoundContext": "._model_round",
            "RunFinished": "._team_actions",
            "RunRecord": "._team_records",
            "RunResumed": "._team_actions",
            "RunStarted": "._team_actions",
            "RunStatus": "._team_actions",
            "SEMCONV_VERSION": "._spans",
            "STEERING_META": "._reports",
            "SessionDiff": "._diff",
            "SessionForked": "._team_actions",
            "SpanEvent": "._spans",
            "SpanFold": "._spans",
            "SpanIds": "._spans",
            "SpanLink": "._spans",
            "SpanRecord": "._spans",
            "StoredFact": "._fork",
            "TASK_TRANSITIONS": "._task_lifecycle",
            "TERMINAL_REMOTE_STATES": "._remote_tasks",
            "TaskCreated": "._team_actions",
            "TaskFinished": "._team_actions",
            "TaskRecord": "._team_records",
            "TaskStarted": "._team_actions",
            "TaskStatus": "._team_actions",
            "TeamAction": "._team_actions",
            "TeamState": "._team_state",
            "TeammateAction": "._teammate_actions",
            "TeammatePaused": "._teammate_actions",
            "TeammateResumed": "._teammate_actions",
            "TeammateRun": "._teammate_state",
            "TeammateRunFinished": "._teammate_actions",
            "TeammateRunOutcome": "._teammate_actions",
            "TeammateRunStarted": "._teammate_actions",
            "TeammateSlept": "._teammate_actions",
            "TeammateState": "._teammate_state",
            "TeammateWoke": "._teammate_actions",
            "TextDelta": "._model_round",
            "ToolCallInputDelta": "._model_round",
            "ToolCallRequest": "._model_round",
            "ToolCallStarted": "._model_round",
            "ToolOutcome": "._model_round",
            "TraceParent": "._spans",
            "Transition": "._team_records",
            "USER": "._team_actions",
            "USER_NODE": "._graph_schema",
            "UsageReport": "._model_round",
            "ViewUpdated": "._team_actions",
            "Violation": "._graph_check",
            "ViolationKind": "._graph_check",
            "Wake": "._teammate_state",
            "WakeDecision": "._teammate_actions",
            "WakeReason": "._teammate_actions",
            "answer_text": "._queries",
            "artifact_of": "._remote_tasks",
            "before_run_end": "._fork",
            "build_graph": "._graph",
            "cancel_removed": "._recovery",
            "chat_fork_actions": "._fork",
            "chat_spans": "._spans",
            "conversation": "._queries",
            "cut_off": "._recovery",
            "decode_fact": "._facts_wire",
            "delegation_output": "._reports",
            "delegation_report": "._reports",
            "denied_calls": "._reports",
            "diff_sessions": "._diff",
            "encode_fact": "._facts_wire",
            "fact_from_json": "._facts_wire",
            "fact_to_json": "._facts_wire",
            "first_line": "._reports",
            "fold_teammate": "._teammate_state",
            "fork_facts": "._fork",
            "fork_point": "._fork",
            "fork_rows": "._fork",
            "fork_sequence": "._fork",
            "has_open_input": "._queries",
            "input_request_id": "._queries",
            "interrupted_turns": "._queries",
            "is_interrupted": "._queries",
            "member_name": "._queries",
            "new_session_state": "._team_reducer",
            "open_questions": "._queries",
            "outcome_of": "._queries",
            "output_retry": "._reports",
            "parse_traceparent": "._spans",
            "party_name": "._queries",
            "pending_approval_of": "._queries",
            "plan_recovery": "._recovery",
            "prompt_title": "._team_reducer",
            "recorded_rounds": "._replay",
            "reduce_action": "._team_reducer",
            "reduce_team_action": "._team_reducer",
            "remote_state": "._remote_tasks",
            "remote_task_node": "._graph_schema",
            "remote_task_of": "._remote_tasks",
            "resume_point": "._recovery",
            "round_of": "._queries",
            "side_chat_context": "._fork",
            "span_id_of": "._spans",
            "steering_injected": "._reports",
            "subagent_of": "._queries",
            "task_of_call": "._queries",
            "teammate_uri": "._teammate_actions",
            "to_dot": "._graph_export",
            "to_graphml": "._graph_export",
            "to_json": "._graph_export",
            "to_mermaid": "._graph_export",
            "tool_call_node": "._graph_schema",
            "tool_call_of": "._queries",
            "tool_result_actions": "._reports",
            "trace_id_of": "._spans",
            "turn_text": "._queries",
            "validate_action": "._team_validate",
            "validate_team_action": "._team_validate",
        },
    )
