"""Agent UI event envelope: the team-level projection's wire types.

Spec: ``shared/spec/agent-ui-flow-and-taxonomy.txt`` ("Event envelope" and the taxonomy
tables). Upstream schema: limecloud/agentui ``docs/public/schemas/agentui-event.schema.json``.

The seven taxonomy dimensions (owner, scope, phase, surface, persistence, control, topology)
are closed: the spec says each is "one of the ... values below". The upstream schema does not
mention them at all (it only allows additional properties), so it does not declare them open
strings either; the spec's tables are the authority and the converter rejects unknown values.

The event ``type`` is an open string: the spec says "the event class list is open to
extension", so :class:`EventType` names the classes we know and :attr:`Envelope.type` is a
plain ``str``. (The upstream schema carries a ``type`` enum, but it lacks the team classes
this project exists to emit, such as ``agent.spawned``; we follow the spec's prose.)

The status enums at the bottom are payload vocabulary (the spec's "Task and multi-agent
taxonomy" and team workbench contract): projections use them to fill ``payload``; the
converter does not police payload contents, which are producer-owned.

This module is pure: models only. Wire names and JSON live in ``_agentui_wire``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

import attrs

# Agent UI's background-job statuses are decided by a teammate's state (core), so the enum
# lives there; it is part of this vocabulary all the same.
from orchestrator.core import BackgroundJobStatus

__all__ = [
    "ActionType",
    "BackgroundJobStatus",
    "BoardItemStatus",
    "Control",
    "CoordinatorTeamStatus",
    "Envelope",
    "EventType",
    "HandoffStatus",
    "Owner",
    "Persistence",
    "Phase",
    "QueuedTurnStatus",
    "RemoteTaskStatus",
    "ReviewStatus",
    "RuntimeEntity",
    "Scope",
    "Surface",
    "TeammateStatus",
    "Topology",
    "WorkItemStatus",
]


class Owner(StrEnum):
    """Who writes the fact; a UI may render it but never becomes its writer."""

    RUNTIME = "runtime"
    MODEL = "model"
    TOOL = "tool"
    ACTION = "action"
    ARTIFACT = "artifact"
    EVIDENCE = "evidence"
    CONTEXT = "context"
    POLICY = "policy"
    TASK = "task"
    AGENT = "agent"
    SESSION = "session"
    DIAGNOSTICS = "diagnostics"
    UI_PROJECTION = "ui_projection"


class Scope(StrEnum):
    """The smallest stable entity the fact affects (its blast radius)."""

    APPLICATION = "application"
    WORKSPACE = "workspace"
    TEAM = "team"
    SESSION = "session"
    THREAD = "thread"
    RUN = "run"
    TURN = "turn"
    MESSAGE = "message"
    PART = "part"
    TASK = "task"
    AGENT = "agent"
    TOOL_CALL = "tool_call"
    ACTION_REQUEST = "action_request"
    ARTIFACT = "artifact"
    EVIDENCE = "evidence"


class Phase(StrEnum):
    """Where the fact belongs in the run lifecycle."""

    DRAFT = "draft"
    SUBMITTED = "submitted"
    ACCEPTED = "accepted"
    ROUTING = "routing"
    PREPARING = "preparing"
    PLANNING = "planning"
    REASONING = "reasoning"
    ACTING = "acting"
    WAITING = "waiting"
    REVIEWING = "reviewing"
    PRODUCING = "producing"
    RECONCILING = "reconciling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    ARCHIVED = "archived"
    HYDRATING = "hydrating"


class Surface(StrEnum):
    """The primary intended rendering destination: a hint, not an owner."""

    COMPOSER = "composer"
    CONVERSATION = "conversation"
    INLINE_PROCESS = "inline_process"
    RUNTIME_STATUS = "runtime_status"
    TOOL_UI = "tool_ui"
    HITL = "hitl"
    TASK_CAPSULE = "task_capsule"
    ARTIFACT_WORKSPACE = "artifact_workspace"
    TIMELINE_EVIDENCE = "timeline_evidence"
    SESSION_TABS = "session_tabs"
    DIAGNOSTICS = "diagnostics"
    TEAM_ROSTER = "team_roster"
    WORK_BOARD = "work_board"
    DELEGATION_GRAPH = "delegation_graph"
    HANDOFF_LANE = "handoff_lane"
    WORKER_NOTIFICATIONS = "worker_notifications"
    REVIEW_LANE = "review_lane"
    TEAMMATE_TRANSCRIPT = "teammate_transcript"
    BACKGROUND_TEAMMATE = "background_teammate"
    REMOTE_TEAMMATE = "remote_teammate"
    TEAM_POLICY = "team_policy"


class Persistence(StrEnum):
    """How long, and where, the fact is kept: a hydration and retention hint."""

    EPHEMERAL_LIVE = "ephemeral_live"
    TRANSCRIPT = "transcript"
    SNAPSHOT = "snapshot"
    ARCHIVE = "archive"
    ARTIFACT_STORE = "artifact_store"
    EVIDENCE_PACK = "evidence_pack"
    DIAGNOSTICS_LOG = "diagnostics_log"
    UI_LOCAL = "ui_local"


class Control(StrEnum):
    """The user action connected to the fact; it names the write boundary to call."""

    SEND = "send"
    QUEUE = "queue"
    STEER = "steer"
    INTERRUPT = "interrupt"
    DELEGATE = "delegate"
    ASSIGN = "assign"
    CONTINUE_AGENT = "continue_agent"
    WAIT = "wait"
    STOP = "stop"
    CLOSE = "close"
    REQUEST_REVIEW = "request_review"
    # The spec's table has one row "approve / reject"; they are two values.
    APPROVE = "approve"
    REJECT = "reject"
    ANSWER = "answer"
    EDIT = "edit"
    RETRY = "retry"
    ROLLBACK = "rollback"
    EXPORT = "export"
    OPEN_DETAIL = "open_detail"


class Topology(StrEnum):
    """How the work that produced the fact is organized (team metadata)."""

    SOLO_RUN = "solo_run"
    COORDINATOR_TEAM = "coordinator_team"
    PARALLEL_WORKERS = "parallel_workers"
    SPECIALIST_HANDOFF = "specialist_handoff"
    REVIEW_TEAM = "review_team"
    HUMAN_AGENT_BOARD = "human_agent_board"
    BACKGROUND_TEAMMATE = "background_teammate"
    REMOTE_TEAMMATE = "remote_teammate"


class EventType(StrEnum):
    """The spec's standard event classes.

    The first block is what this project emits; the rest are known so that decoded events
    can be compared against names rather than string literals. The class list is open:
    :attr:`Envelope.type` accepts any non-empty string.
    """

    # Emitted by the orchestrator.
    RUN_STARTED = "run.started"
    RUN_STATUS = "run.status"
    RUN_FINISHED = "run.finished"
    RUN_FAILED = "run.failed"
    AGENT_SPAWNED = "agent.spawned"
    AGENT_CHANGED = "agent.changed"
    AGENT_COMPLETED = "agent.completed"
    AGENT_HANDOFF = "agent.handoff"
    TEAM_CHANGED = "team.changed"
    TASK_CHANGED = "task.changed"
    WORKER_NOTIFICATION = "worker.notification"
    ACTION_REQUIRED = "action.required"
    ACTION_RESOLVED = "action.resolved"
    # The rest of the portable baseline.
    SESSION_OPENED = "session.opened"
    SESSION_HYDRATED = "session.hydrated"
    SESSION_UPDATED = "session.updated"
    SESSION_CLOSED = "session.closed"
    PLAN_DELTA = "plan.delta"
    PLAN_FINAL = "plan.final"
    TEXT_DELTA = "text.delta"
    TEXT_FINAL = "text.final"
    REASONING_DELTA = "reasoning.delta"
    REASONING_SUMMARY = "reasoning.summary"
    TOOL_STARTED = "tool.started"
    TOOL_ARGS = "tool.args"
    TOOL_PROGRESS = "tool.progress"
    TOOL_OUTPUT_DELTA = "tool.output.delta"
    TOOL_RESULT = "tool.result"
    TOOL_FAILED = "tool.failed"
    QUEUE_CHANGED = "queue.changed"
    REVIEW_REQUESTED = "review.requested"
    REVIEW_COMPLETED = "review.completed"
    CONTEXT_CHANGED = "context.changed"
    CONTEXT_COMPACTION_STARTED = "context.compaction.started"
    CONTEXT_COMPACTION_COMPLETED = "context.compaction.completed"
    PERMISSION_CHANGED = "permission.changed"
    ARTIFACT_CREATED = "artifact.created"
    ARTIFACT_UPDATED = "artifact.updated"
    ARTIFACT_PREVIEW_READY = "artifact.preview.ready"
    ARTIFACT_VERSION_CREATED = "artifact.version.created"
    ARTIFACT_DIFF_READY = "artifact.diff.ready"
    ARTIFACT_EXPORT_STARTED = "artifact.export.started"
    ARTIFACT_EXPORT_COMPLETED = "artifact.export.completed"
    ARTIFACT_FAILED = "artifact.failed"
    ARTIFACT_DELETED = "artifact.deleted"
    ARTIFACT_CHANGED = "artifact.changed"
    EVIDENCE_CHANGED = "evidence.changed"
    STATE_SNAPSHOT = "state.snapshot"
    STATE_DELTA = "state.delta"
    MESSAGES_SNAPSHOT = "messages.snapshot"
    DIAGNOSTIC_CHANGED = "diagnostic.changed"
    METRIC_CHANGED = "metric.changed"


def _id_field() -> Any:
    # The upstream schema gives every id ``minLength: 1``; an empty id would silently merge
    # unrelated entities in a client's projection, so we refuse to build one. Checked once
    # per envelope by ``Envelope.__attrs_post_init__`` rather than by a validator per field:
    # the projector builds ten envelopes per worker, and 14 validator calls each were ~10%
    # of the projection.
    return attrs.field(default=None)


#: The envelope's id fields (``_id_field``), in declaration order.
_ID_FIELDS: Final = (
    "session_id",
    "thread_id",
    "run_id",
    "turn_id",
    "message_id",
    "part_id",
    "task_id",
    "agent_id",
    "parent_session_id",
    "parent_thread_id",
    "tool_call_id",
    "action_id",
    "artifact_id",
    "evidence_id",
)


@attrs.frozen(kw_only=True)
class Envelope:
    """One Agent UI event: a classified runtime fact for a workbench projection.

    Attributes follow the spec's envelope table in order (the wire names are their
    camelCase forms). Only ``type`` is required. ``payload`` is the producer-owned fact body
    (a JSON object); ``refs`` is an array or a map of ids/refs. ``extra`` holds wire fields
    the spec does not name: envelopes allow them, and they are written back at top level.
    """

    type: str = attrs.field(validator=attrs.validators.min_len(1))
    sequence: int | None = None
    timestamp: str | None = None
    session_id: str | None = _id_field()
    thread_id: str | None = _id_field()
    run_id: str | None = _id_field()
    turn_id: str | None = _id_field()
    message_id: str | None = _id_field()
    part_id: str | None = _id_field()
    task_id: str | None = _id_field()
    agent_id: str | None = _id_field()
    parent_session_id: str | None = _id_field()
    parent_thread_id: str | None = _id_field()
    tool_call_id: str | None = _id_field()
    action_id: str | None = _id_field()
    artifact_id: str | None = _id_field()
    evidence_id: str | None = _id_field()
    owner: Owner | None = None
    scope: Scope | None = None
    phase: Phase | None = None
    surface: Surface | None = None
    persistence: Persistence | None = None
    control: Control | None = None
    topology: Topology | None = None
    payload: dict[str, Any] | None = None
    refs: list[Any] | dict[str, Any] | None = None
    raw_event_ref: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        # The ids' minLength 1 (see _id_field), with attrs.validators.min_len's message. A
        # tuple of the values and one pass over it: the common case (no empty id) stays cheap.
        ids = (
            self.session_id,
            self.thread_id,
            self.run_id,
            self.turn_id,
            self.message_id,
            self.part_id,
            self.task_id,
            self.agent_id,
            self.parent_session_id,
            self.parent_thread_id,
            self.tool_call_id,
            self.action_id,
            self.artifact_id,
            self.evidence_id,
        )
        for name, value in zip(_ID_FIELDS, ids, strict=True):
            if value is not None and len(value) < 1:
                raise ValueError(f"Length of '{name}' must be >= 1: {len(value)}")

    @classmethod
    def from_values(cls, values: tuple[Any, ...]) -> Envelope:
        """``Envelope(...)`` of ``values``, one per field in declaration order (as
        ``attrs.fields(Envelope)`` lists them), at less than half its cost: what the
        projector builds, ten envelopes per worker.

        The same envelope, and the same checks: an empty id (or type) is refused with the
        error ``Envelope(...)`` raises, by building it so. The common case (none empty) is
        one scan of the ids, then the slots are written directly, as ``__init__`` writes
        them, without its keyword arguments, validator call and second scan.
        """
        if values[0] == "" or "" in values[_IDS]:
            return cls(**dict(zip(_FIELD_NAMES, values, strict=True)))
        envelope = object.__new__(cls)
        for set_field, value in zip(_SLOT_SETTERS, values, strict=True):
            set_field(envelope, value)
        return envelope


#: Envelope's field names, in declaration order, and where the ids are among them.
_FIELD_NAMES: Final = tuple(field.name for field in attrs.fields(Envelope))
_IDS: Final = slice(_FIELD_NAMES.index(_ID_FIELDS[0]), _FIELD_NAMES.index(_ID_FIELDS[-1]) + 1)
assert _FIELD_NAMES[_IDS] == _ID_FIELDS

#: The slot descriptors' setters of Envelope's fields, in declaration order (a frozen
#: class's fields are written through them, as attrs' ``__init__`` does).
_SLOT_SETTERS: Final[tuple[Any, ...]] = tuple(
    getattr(Envelope, name).__set__ for name in _FIELD_NAMES
)


# Payload vocabulary: status values from the spec's "Task and multi-agent taxonomy".


class QueuedTurnStatus(StrEnum):
    """Status of a queued turn (scope ``task``, surface ``task_capsule``)."""

    QUEUED = "queued"
    PROMOTED = "promoted"
    REMOVED = "removed"
    STARTED = "started"


class WorkItemStatus(StrEnum):
    """Status of a work item (scope ``task``, surface ``work_board``)."""

    OPEN = "open"
    CLAIMED = "claimed"
    RUNNING = "running"
    BLOCKED = "blocked"
    REVIEWING = "reviewing"
    DONE = "done"


class TeammateStatus(StrEnum):
    """Status of a teammate or subagent (scope ``agent``)."""

    SPAWNING = "spawning"
    RUNNING = "running"
    WAITING = "waiting"
    NEEDS_INPUT = "needs_input"
    PLAN_READY = "plan_ready"
    IDLE = "idle"
    FAILED = "failed"
    COMPLETED = "completed"
    KILLED = "killed"
    CLOSED = "closed"
    # Not in the taxonomy table, but the team workbench contract lists it among the
    # teammate statuses to show "when available".
    SHUTDOWN_REQUESTED = "shutdown_requested"


class CoordinatorTeamStatus(StrEnum):
    """Status of a coordinator team as a whole."""

    FORMING = "forming"
    ACTIVE = "active"
    WAITING = "waiting"
    MERGING = "merging"
    DONE = "done"


class HandoffStatus(StrEnum):
    """Status of a specialist handoff."""

    HANDOFF_REQUESTED = "handoff_requested"
    ACCEPTED = "accepted"
    ACTIVE = "active"
    RETURNED = "returned"
    RESUMED = "resumed"


class ReviewStatus(StrEnum):
    """Status of a review teammate's work."""

    REQUESTED = "requested"
    REVIEWING = "reviewing"
    PASSED = "passed"
    CHANGES_REQUESTED = "changes_requested"
    FAILED = "failed"


class BoardItemStatus(StrEnum):
    """Status of an item on a human/agent board."""

    ASSIGNED = "assigned"
    CLAIMED = "claimed"
    BLOCKED = "blocked"
    COMMENTED = "commented"
    DONE = "done"


class RemoteTaskStatus(StrEnum):
    """Status of a remote teammate's task."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    AUTH_REQUIRED = "auth_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"  # sic: the spec spells the remote status with one "l"
    REJECTED = "rejected"


class RuntimeEntity(StrEnum):
    """The ``runtimeEntity`` payload value: which runtime entity a task/agent fact maps."""

    AGENT_TURN = "agent_turn"
    SUBAGENT_TURN = "subagent_turn"
    AUTOMATION_JOB = "automation_job"
    EXTERNAL_TASK = "external_task"
    WORK_ITEM = "work_item"


class ActionType(StrEnum):
    """Human-in-the-loop action types, carried in ``action.required`` payloads."""

    TOOL_APPROVAL = "tool_approval"
    PLAN_DECISION = "plan_decision"
    TEAMMATE_PLAN_DECISION = "teammate_plan_decision"
    STRUCTURED_INPUT = "structured_input"
    CLARIFICATION = "clarification"
    PERMISSION_GRANT = "permission_grant"
    DELEGATED_PERMISSION = "delegated_permission"
    CREDENTIAL_REQUEST = "credential_request"
    ARTIFACT_REVIEW = "artifact_review"
