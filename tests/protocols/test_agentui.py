"""Agent UI envelopes: the taxonomy enums and the model (the converter: ``test_agentui_wire.py``).

Spec: ``shared/spec/agent-ui-flow-and-taxonomy.txt``. The expected values below are copied
from the spec's tables, in table order, so a drift in either place fails here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import attrs
import pytest

from orchestrator.protocols import (
    Control,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    TeammateStatus,
    Topology,
    unstructure_envelope,
)

SPEC_TAXONOMIES: list[tuple[type[StrEnum], list[str]]] = [
    (
        Owner,
        [
            "runtime",
            "model",
            "tool",
            "action",
            "artifact",
            "evidence",
            "context",
            "policy",
            "task",
            "agent",
            "session",
            "diagnostics",
            "ui_projection",
        ],
    ),
    (
        Scope,
        [
            "application",
            "workspace",
            "team",
            "session",
            "thread",
            "run",
            "turn",
            "message",
            "part",
            "task",
            "agent",
            "tool_call",
            "action_request",
            "artifact",
            "evidence",
        ],
    ),
    (
        Phase,
        [
            "draft",
            "submitted",
            "accepted",
            "routing",
            "preparing",
            "planning",
            "reasoning",
            "acting",
            "waiting",
            "reviewing",
            "producing",
            "reconciling",
            "completed",
            "failed",
            "cancelled",
            "interrupted",
            "archived",
            "hydrating",
        ],
    ),
    (
        Surface,
        [
            "composer",
            "conversation",
            "inline_process",
            "runtime_status",
            "tool_ui",
            "hitl",
            "task_capsule",
            "artifact_workspace",
            "timeline_evidence",
            "session_tabs",
            "diagnostics",
            "team_roster",
            "work_board",
            "delegation_graph",
            "handoff_lane",
            "worker_notifications",
            "review_lane",
            "teammate_transcript",
            "background_teammate",
            "remote_teammate",
            "team_policy",
        ],
    ),
    (
        Persistence,
        [
            "ephemeral_live",
            "transcript",
            "snapshot",
            "archive",
            "artifact_store",
            "evidence_pack",
            "diagnostics_log",
            "ui_local",
        ],
    ),
    (
        Control,
        [
            "send",
            "queue",
            "steer",
            "interrupt",
            "delegate",
            "assign",
            "continue_agent",
            "wait",
            "stop",
            "close",
            "request_review",
            "approve",
            "reject",
            "answer",
            "edit",
            "retry",
            "rollback",
            "export",
            "open_detail",
        ],
    ),
    (
        Topology,
        [
            "solo_run",
            "coordinator_team",
            "parallel_workers",
            "specialist_handoff",
            "review_team",
            "human_agent_board",
            "background_teammate",
            "remote_teammate",
        ],
    ),
]

# The spec's "Standard event classes" table, with "a / b" rows split.
SPEC_EVENT_CLASSES = [
    "session.opened",
    "session.hydrated",
    "session.updated",
    "session.closed",
    "run.started",
    "run.status",
    "run.finished",
    "run.failed",
    "plan.delta",
    "plan.final",
    "text.delta",
    "text.final",
    "reasoning.delta",
    "reasoning.summary",
    "tool.started",
    "tool.args",
    "tool.progress",
    "tool.output.delta",
    "tool.result",
    "tool.failed",
    "action.required",
    "action.resolved",
    "queue.changed",
    "task.changed",
    "agent.changed",
    "agent.spawned",
    "agent.completed",
    "agent.handoff",
    "team.changed",
    "worker.notification",
    "review.requested",
    "review.completed",
    "context.changed",
    "context.compaction.started",
    "context.compaction.completed",
    "permission.changed",
    "artifact.created",
    "artifact.updated",
    "artifact.preview.ready",
    "artifact.version.created",
    "artifact.diff.ready",
    "artifact.export.started",
    "artifact.export.completed",
    "artifact.failed",
    "artifact.deleted",
    "artifact.changed",
    "evidence.changed",
    "state.snapshot",
    "state.delta",
    "messages.snapshot",
    "diagnostic.changed",
    "metric.changed",
]

# What the orchestrator emits (DESIGN.md, "Agent UI envelopes").
EMITTED_EVENT_CLASSES = [
    "run.started",
    "run.status",
    "run.finished",
    "run.failed",
    "agent.spawned",
    "agent.changed",
    "agent.completed",
    "agent.handoff",
    "team.changed",
    "task.changed",
    "worker.notification",
    "action.required",
    "action.resolved",
]


class TestTaxonomies:
    @pytest.mark.parametrize(
        ("enum", "values"), SPEC_TAXONOMIES, ids=[e.__name__ for e, _ in SPEC_TAXONOMIES]
    )
    def test_holds_exactly_the_spec_values(self, enum: type[StrEnum], values: list[str]) -> None:
        """Each taxonomy enum holds the spec table's values, in table order, nothing more."""
        assert [member.value for member in enum] == values

    def test_event_type_holds_the_standard_classes(self) -> None:
        """EventType names every standard event class of the spec, and only those."""
        assert sorted(member.value for member in EventType) == sorted(SPEC_EVENT_CLASSES)

    def test_event_type_covers_what_we_emit(self) -> None:
        """Every class the orchestrator emits is an EventType member."""
        assert set(EMITTED_EVENT_CLASSES) <= {member.value for member in EventType}

    def test_teammate_status_includes_the_workbench_extras(self) -> None:
        """Teammate statuses: the taxonomy table plus the workbench's shutdown_requested."""
        assert [member.value for member in TeammateStatus] == [
            "spawning",
            "running",
            "waiting",
            "needs_input",
            "plan_ready",
            "idle",
            "failed",
            "completed",
            "killed",
            "closed",
            "shutdown_requested",
        ]


class TestEnvelopeModel:
    def test_only_type_is_required(self) -> None:
        """An envelope needs a type; every other field defaults to absent."""
        env = Envelope(type="run.started")

        assert env.sequence is None
        assert env.payload is None
        assert env.extra == {}
        assert unstructure_envelope(env) == {"type": "run.started"}

    def test_empty_type_is_refused(self) -> None:
        """An empty event class selects no reducer; the model refuses it."""
        with pytest.raises(ValueError, match="type"):
            Envelope(type="")

    def test_empty_id_is_refused(self) -> None:
        """Ids are non-empty (schema minLength 1): an empty one would merge entities."""
        with pytest.raises(ValueError, match="agent_id"):
            Envelope(type="agent.changed", agent_id="")

    @pytest.mark.parametrize(
        "name", [f.name for f in attrs.fields(Envelope) if f.name.endswith("_id")]
    )
    def test_every_empty_id_is_refused(self, name: str) -> None:
        """Each id field (one post-init check, not a validator per field) refuses "" by name
        and accepts a non-empty id."""
        empty: dict[str, Any] = {name: ""}
        given_id: dict[str, Any] = {name: "x"}
        with pytest.raises(ValueError, match=f"Length of '{name}' must be >= 1: 0"):
            Envelope(type="agent.changed", **empty)
        assert getattr(Envelope(type="agent.changed", **given_id), name) == "x"

    def test_is_frozen(self) -> None:
        """Envelopes are immutable facts."""
        env = Envelope(type="run.started")
        with pytest.raises(AttributeError):
            env.type = "run.failed"  # type: ignore[misc]
