"""A scripted turn cut into the model rounds it plays: the steps that apply to the task, cut
after every step that requests tool calls, and one more round after the last such step.
"""

from __future__ import annotations

from orchestrator.spec import (
    AskStep,
)
from tests.support.team_files import parse, with_lead_steps


class TestRounds:
    def test_round_ending_last_step_adds_an_empty_round(self) -> None:
        """A turn ending with a tool step still has a last round, empty, after the tools."""
        lead = parse(with_lead_steps('{ ask = "Which one?" }')).agent("lead")
        assert lead.turns[0].rounds_for("x") == ((AskStep(question="Which one?"),), ())
