"""The task table (:data:`TASK_TRANSITIONS`): every status has a row, the finished statuses are
its terminal rows.
"""

from __future__ import annotations

from orchestrator.core import (
    FINISHED_TASK_STATUSES,
    TASK_TRANSITIONS,
    TaskStatus,
)


class TestTaskTransitions:
    def test_every_status_has_a_row(self) -> None:
        """The table covers every status, and moves only to statuses."""
        assert set(TASK_TRANSITIONS) == set(TaskStatus)
        for targets in TASK_TRANSITIONS.values():
            assert targets <= set(TaskStatus)

    def test_the_terminal_rows_are_the_finished_statuses(self) -> None:
        """A status with an empty row is one a task finishes in, and only those."""
        terminal = {status for status, targets in TASK_TRANSITIONS.items() if not targets}
        assert terminal == FINISHED_TASK_STATUSES

    def test_an_unfinished_task_may_finish_in_any_finished_status(self) -> None:
        """``team/runFinished`` ends the root task in whatever status the run ended in."""
        for status, targets in TASK_TRANSITIONS.items():
            if status not in FINISHED_TASK_STATUSES:
                assert targets >= FINISHED_TASK_STATUSES
