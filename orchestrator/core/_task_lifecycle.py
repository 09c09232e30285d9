"""A delegated task's lifecycle, as one table the team reducer and validator both read.

The team side's counterpart of the chat side's tool-call table
(:mod:`orchestrator.ahp._tool_call_lifecycle`): :data:`TASK_TRANSITIONS` says, for each
status a task can be in, the statuses it may move to. The validator
(:mod:`._team_validate`) refuses a ``team/taskStarted`` or ``team/taskFinished`` the table does
not allow; the reducer (:mod:`._team_reducer`) reads it to decide whether the end of the run
also ends its root task.

Pure: no trio, no IO.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

from ._team_actions import TaskStatus

__all__ = ["TASK_TRANSITIONS"]

_T = TaskStatus


TASK_TRANSITIONS: Final[Mapping[TaskStatus, frozenset[TaskStatus]]] = types.MappingProxyType(
    {
        # A delegation waits here while the parallel budget is spent; it can also end
        # before a worker takes it up (killed or failed while queued).
        _T.QUEUED: frozenset({_T.RUNNING, _T.COMPLETED, _T.FAILED, _T.KILLED}),
        _T.RUNNING: frozenset({_T.COMPLETED, _T.FAILED, _T.KILLED}),
        _T.COMPLETED: frozenset(),
        _T.FAILED: frozenset(),
        _T.KILLED: frozenset(),
    }
)
"""``{status: the statuses a task in it may move to}``; a status whose row is empty is terminal.

``team/taskStarted`` moves a task to ``running``, ``team/taskFinished`` to the status it
names, and ``team/runFinished`` the root task to the status the run ended in. The terminal
statuses are :data:`~orchestrator.core._team_actions.FINISHED_TASK_STATUSES`.
"""
