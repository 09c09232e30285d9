"""The state of one team run: every channel's state, folded from facts.

Theory of operation: the AHP reducers are pure functions of one channel's state
(`reduce_chat`, `reduce_session`). A team run has many channels (the session,
one chat per agent) plus team bookkeeping (members, tasks, approvals) that the
``team/*`` actions describe. :class:`TeamState` holds all of them and folds a
fact by routing it to the reducer of its channel, so the whole run is
``fold(apply, facts)``: live, on recovery, and for an old session alike. The
routing and the team records' reduction are :func:`._team_reducer.reduce_action`,
which never fails; whether an action may be appended is a separate question,
:func:`._team_validate.validate_action`'s.

Changes happen in steps so that the write-ahead rule can hold. A batch of actions is:

1. *prepared*: validated and reduced against an overlay of the state. Nothing is changed. An
   illegal action raises :class:`IllegalTransitionError`, and the batch is refused whole.
2. *pushed* while its facts are written.
3. *committed* once they are durable, in the order they were pushed.

Several batches can be in flight at once. Each is prepared on top of the ones pushed before it.
It reads through a *pending view* that holds the latest value of every entry an in-flight batch
wrote. So a lookup costs O(1) however many batches are in flight.
Readers of the committed state (everything public here) see only durable facts.
If the log fails, :meth:`discard_pending` drops every batch in flight. Applying an
already-recorded fact (replay) is prepare + commit without validation.

A reader's copy of the state need not fold the facts again. A batch prepared with ``record``
notes what each action wrote (:meth:`Transition.changes`). :meth:`follow` stores those values
into the copy, fact by fact (one fold per session: the runtime's reducers run once).

The container is mutable (a dict per kind of entity, replaced entry by entry)
so that one fact costs what its channel's reducer costs, whatever the number
of chats; every entry is an immutable value produced by a pure reducer.
"""

from __future__ import annotations

import collections
import enum
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

from orchestrator.ahp import mirror_summary, reduce_chat, reduce_session, validate_chat_action
from orchestrator.ahp.actions import SessionChatAddedAction, SessionChatUpdatedAction
from orchestrator.ahp.state import ChatState, SessionState, TurnState

from ._facts import Action, Fact
from ._team_actions import FINISHED_TASK_STATUSES, TaskStatus
from ._team_records import (
    ApprovalRecord,
    FactChange,
    Member,
    Overlay,
    RunRecord,
    StoreKind,
    TaskRecord,
    Transition,
)
from ._team_reducer import reduce_action
from ._team_validate import validate_action

__all__ = [
    "MemberStatus",
    "SummaryUpdate",
    "TeamState",
    "summary_updates",
]

#: How many of the latest derived catalog updates a state keeps (:meth:`TeamState.summary_update`):
#: far more than a batch, or a group commit's batches, makes before its facts are delivered.
SUMMARIES_KEPT: Final = 4096

#: A chat's catalog entry brought to its state: ``chatUpdated``, or ``chatAdded`` to clear a field.
SummaryUpdate = SessionChatUpdatedAction | SessionChatAddedAction

#: Team tools whose running call means "this chat waits on a teammate".
WAITING_TOOLS = frozenset({"delegate", "handoff"})


class MemberStatus(enum.StrEnum):
    """A teammate's status as the team roster shows it (Agent UI teammate status values)."""

    SPAWNING = "spawning"
    RUNNING = "running"
    WAITING = "waiting"
    NEEDS_APPROVAL = "needs_approval"
    NEEDS_INPUT = "needs_input"
    IDLE = "idle"
    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"


K = TypeVar("K")
V = TypeVar("V")


class _Pending(Generic[K, V]):
    """The in-flight writes of one store: the latest value per key, and which batch wrote it."""

    def __init__(self) -> None:
        self.values: dict[K, V] = {}
        self.writer: dict[K, int] = {}

    def push(self, writes: dict[K, V], serial: int) -> None:
        self.values.update(writes)
        for key in writes:
            self.writer[key] = serial

    def settle(self, writes: dict[K, V], serial: int) -> None:
        """``serial``'s writes are committed: forget those no later batch overwrote."""
        for key in writes:
            if self.writer.get(key) == serial:
                del self.values[key]
                del self.writer[key]

    def clear(self) -> None:
        self.values.clear()
        self.writer.clear()


class TeamState:
    """Every channel's state of one session, plus the team's members, tasks and approvals."""

    def __init__(self, session: str) -> None:
        self.session_uri = session
        self.session: SessionState | None = None
        self.run: RunRecord | None = None
        self.chats: dict[str, ChatState] = {}
        self.members: dict[str, Member] = {}
        self.tasks: dict[str, TaskRecord] = {}
        self.approvals: dict[str, ApprovalRecord] = {}
        self.last_sequence = 0
        # Batches pushed and not yet committed, oldest first, and what they wrote. A deque:
        # a delegate step has as many batches in flight as it has delegations.
        self._in_flight: collections.deque[Transition] = collections.deque()
        self._pending_chats: _Pending[str, ChatState] = _Pending()
        self._pending_members: _Pending[str, Member] = _Pending()
        self._pending_tasks: _Pending[str, TaskRecord] = _Pending()
        self._pending_approvals: _Pending[str, ApprovalRecord] = _Pending()
        self._serials = 0
        # Counters kept at commit, so that the roster and the projections ask O(1) questions
        # whatever the size of the team.
        # Invariant: self._delegated == Counter(
        #     t.status for t in self.tasks.values() if t.requested_by is not None)
        self._delegated: Counter[TaskStatus] = Counter()
        # Invariant: self._pending_by_chat == Counter(
        #     a.request.chat for a in self.approvals.values() if a.decision is None)
        self._pending_by_chat: Counter[str] = Counter()
        # The derived catalog updates of the latest facts that made one, by sequence (see
        # summary_update), oldest first.
        self._summaries: dict[int, SummaryUpdate] = {}
        # Invariant: every derived update of a fact numbered above this is in _summaries.
        self._summaries_after = 0

    # ── folding ────────────────────────────────────────────────────────────

    def prepare(
        self,
        actions: Sequence[tuple[str, Action]],
        *,
        now: str,
        validate: bool = True,
        record: bool = False,
    ) -> Transition:
        """Reduce ``actions`` (``(channel, action)`` pairs) against an overlay of this state.

        With ``validate``, each action is first put to
        :func:`~orchestrator.core._team_validate.validate_action`: one that the state the
        batch has built refuses raises :class:`IllegalTransitionError` and nothing changes.
        Each chat action that changes its chat also brings the chat's catalog entry to the
        fields its state inlines (derived, not recorded: :attr:`Transition.summaries` notes
        each such update by the action's position). With
        ``record``, it also notes what each action wrote (:meth:`Transition.changes`, for
        readers that follow this state); the recorder asks only when someone follows.
        """
        latest = self._in_flight[-1] if self._in_flight else None
        # With record: every write, in order (tr.changes()).
        log: list[tuple[StoreKind, Any, Any]] | None = [] if record else None
        tr = Transition(
            actions=list(actions),
            session=latest.session if latest is not None else self.session,
            run=latest.run if latest is not None else self.run,
            chats=Overlay(self.chats, self._pending_chats.values, kind="chat", log=log),
            members=Overlay(self.members, self._pending_members.values, kind="member", log=log),
            tasks=Overlay(self.tasks, self._pending_tasks.values, kind="task", log=log),
            approvals=Overlay(
                self.approvals, self._pending_approvals.values, kind="approval", log=log
            ),
        )
        chats = tr.chats
        for index, (channel, action) in enumerate(actions):
            reduced_chat = None
            chat = chats.get(channel) if action.type.startswith("chat/") else None
            if chat is not None:
                # A chat action on a chat of the run (most facts): reduced once, checked
                # against that reduction (what validate_action does with it, without its
                # routing; the property tests hold this path to the reference).
                reduced_chat = reduce_chat(chat, action, now=now)  # type: ignore[arg-type]
                if validate:
                    validate_chat_action(chat, action, channel=channel, reduced=reduced_chat)  # type: ignore[arg-type]
            elif validate:
                reduced_chat = validate_action(
                    tr, channel, action, session_uri=self.session_uri, now=now
                )
            ended = reduce_action(
                tr,
                channel,
                action,
                session_uri=self.session_uri,
                now=now,
                reduced_chat=reduced_chat,
            )
            if ended is not None:
                tr.ended_turns[index] = ended
            if chat is not None and reduced_chat is not chat and tr.session is not None:
                # The chat's catalog entry follows its state (derived, not recorded).
                session, update = mirror_summary(tr.session, channel, reduced_chat)  # type: ignore[arg-type]
                if update is not None:
                    tr.session = session
                    tr.summaries[index] = update
            if record:
                tr.step()
        return tr

    def push(self, tr: Transition) -> None:
        """``tr``'s facts are being written: batches prepared from now on build on it."""
        self._serials += 1
        serial = tr.serial = self._serials
        self._in_flight.append(tr)
        # Most batches write chats only: a store the batch did not write is skipped.
        if tr.chats.writes:
            self._pending_chats.push(tr.chats.writes, serial)
        if tr.members.writes:
            self._pending_members.push(tr.members.writes, serial)
        if tr.tasks.writes:
            self._pending_tasks.push(tr.tasks.writes, serial)
        if tr.approvals.writes:
            self._pending_approvals.push(tr.approvals.writes, serial)

    def discard_pending(self) -> None:
        """Forget every batch in flight: their facts did not become durable."""
        self._in_flight.clear()
        for pending in (
            self._pending_chats,
            self._pending_members,
            self._pending_tasks,
            self._pending_approvals,
        ):
            pending.clear()

    def in_flight(self) -> int:
        """How many pushed batches are not committed yet."""
        return len(self._in_flight)

    def latest_chat(self, chat_uri: str) -> ChatState | None:
        """A chat as the batches in flight leave it (what the next batch is prepared on)."""
        pending = self._pending_chats.values.get(chat_uri)
        return pending if pending is not None else self.chats.get(chat_uri)

    def commit(self, tr: Transition, last_sequence: int) -> None:
        """Make a prepared transition the current state (its facts are durable now).

        A pushed transition must be the oldest in flight; one never pushed may be committed
        only while nothing is in flight (replay).
        """
        if tr.serial is not None:
            assert self._in_flight, "nothing in flight to commit"
            assert self._in_flight[0] is tr, "commit in push order"
            self._in_flight.popleft()
        else:
            assert not self._in_flight, "an unpushed batch cannot overtake those in flight"
        self.session = tr.session
        self.run = tr.run
        if tr.summaries:
            first = last_sequence - len(tr.actions) + 1
            for index, update in tr.summaries.items():
                self._keep_summary(first + index, update)
        serial = tr.serial
        # A store the batch did not write is skipped (most batches write chats only).
        chats, members, tasks, approvals = (
            tr.chats.writes,
            tr.members.writes,
            tr.tasks.writes,
            tr.approvals.writes,
        )
        if chats:
            self.chats.update(chats)
            if serial is not None:
                self._pending_chats.settle(chats, serial)
        if members:
            self.members.update(members)
            if serial is not None:
                self._pending_members.settle(members, serial)
        if tasks:
            for task_id, task in tasks.items():
                self._count_task(self.tasks.get(task_id), task)
            self.tasks.update(tasks)
            if serial is not None:
                self._pending_tasks.settle(tasks, serial)
        if approvals:
            for approval_id, record in approvals.items():
                self._count_approval(self.approvals.get(approval_id), record)
            self.approvals.update(approvals)
            if serial is not None:
                self._pending_approvals.settle(approvals, serial)
        self.last_sequence = last_sequence

    def _keep_summary(self, sequence: int, update: SummaryUpdate) -> None:
        summaries = self._summaries
        summaries[sequence] = update
        if len(summaries) > SUMMARIES_KEPT:
            oldest = next(iter(summaries))
            del summaries[oldest]
            self._summaries_after = oldest

    def summary_update(self, sequence: int) -> SummaryUpdate | None:
        """The session action that the fact numbered ``sequence`` made of its chat's catalog
        entry, when it changed it: derived by the fold, never recorded.

        Kept for the latest :data:`SUMMARIES_KEPT` such facts folded here (what is delivered
        live); :func:`summary_updates` derives them for any facts.
        """
        return self._summaries.get(sequence)

    def summary_updates_after(self, sequence: int) -> Mapping[int, SummaryUpdate] | None:
        """Every derived catalog update of the facts after ``sequence`` (up to the state's
        last), by sequence; ``None`` when this state no longer knows them all (a replay then
        derives them with :func:`summary_updates`)."""
        if sequence < self._summaries_after:
            return None
        return self._summaries

    def _count_task(self, before: TaskRecord | None, after: TaskRecord) -> None:
        if before is not None and before.requested_by is not None:
            self._delegated[before.status] -= 1
        if after.requested_by is not None:
            self._delegated[after.status] += 1

    def _count_approval(self, before: ApprovalRecord | None, after: ApprovalRecord) -> None:
        if before is not None and before.decision is None:
            self._pending_by_chat[before.request.chat] -= 1
        if after.decision is None:
            self._pending_by_chat[after.request.chat] += 1

    def follow(self, change: FactChange, sequence: int) -> None:
        """Advance this state past the fact numbered ``sequence``, by what the runtime's
        reduction of that fact wrote (a reader's view of the runtime's state: see
        :meth:`Transition.changes`). The same state as :meth:`apply` of the fact, without
        running a reducer: the values are taken, not computed again."""
        assert not self._in_flight, "a followed state prepares nothing of its own"
        self.session = change.session
        self.run = change.run
        for kind, key, value in change.writes:
            if kind == "chat":
                self.chats[key] = value
            elif kind == "member":
                self.members[key] = value
            elif kind == "task":
                self._count_task(self.tasks.get(key), value)
                self.tasks[key] = value
            else:
                self._count_approval(self.approvals.get(key), value)
                self.approvals[key] = value
        self.last_sequence = sequence

    def apply(self, fact: Fact) -> None:
        """Fold one recorded fact (replay: no validation); its derived catalog update, if
        any, is kept as :meth:`summary_update` of its sequence."""
        action = fact.action
        if not self._in_flight:
            # Fast paths for the facts a run is mostly made of (a fan-out worker: 9 chat
            # actions of its 13 facts), with nothing in flight (a reader's state, replay).
            # They change one entry that no counter depends on, so they write it in place:
            # the same outcome as prepare + commit below, whose transition and overlays cost
            # a third of such a fact. A reducer that raises leaves the state untouched here
            # too.
            if action.type.startswith("chat/"):
                chat = self.chats.get(fact.channel)
                if chat is not None:
                    reduced = reduce_chat(
                        chat,
                        action,  # type: ignore[arg-type]
                        now=fact.at,
                    )
                    self.chats[fact.channel] = reduced
                    if reduced is not chat and self.session is not None:
                        session, update = mirror_summary(self.session, fact.channel, reduced)
                        if update is not None:
                            self.session = session
                            self._keep_summary(fact.sequence, update)
                self.last_sequence = fact.sequence
                return
            if isinstance(action, SessionChatUpdatedAction):
                # Recorded by journals before issue 35 (now derived): a no-op once the chat
                # action before it has updated the entry, kept for what it says otherwise.
                if self.session is not None and fact.channel == self.session_uri:
                    self.session = reduce_session(self.session, action, now=fact.at)
                self.last_sequence = fact.sequence
                return
        tr = self.prepare([(fact.channel, action)], now=fact.at, validate=False)
        self.commit(tr, fact.sequence)

    @classmethod
    def fold(
        cls, session: str, facts: Iterable[Fact], *, start: TeamState | None = None
    ) -> TeamState:
        """The state after ``facts``, folded onto ``start`` (a snapshot) or an empty state."""
        state = cls(session) if start is None else start
        for fact in facts:
            state.apply(fact)
        return state

    @classmethod
    def restore(
        cls,
        session_uri: str,
        *,
        last_sequence: int,
        session: SessionState | None,
        run: RunRecord | None,
        chats: dict[str, ChatState],
        members: dict[str, Member],
        tasks: dict[str, TaskRecord],
        approvals: dict[str, ApprovalRecord],
    ) -> TeamState:
        """A state from its parts (a snapshot); the counters are derived again."""
        state = cls(session_uri)
        state.session, state.run, state.last_sequence = session, run, last_sequence
        state._summaries_after = last_sequence  # what came before is not known here
        state.chats, state.members, state.tasks, state.approvals = chats, members, tasks, approvals
        state._delegated.update(t.status for t in tasks.values() if t.requested_by is not None)
        state._pending_by_chat.update(
            a.request.chat for a in approvals.values() if a.decision is None
        )
        return state

    def copy(self) -> TeamState:
        """The committed state in new containers (its values are immutable, so shared)."""
        return TeamState.restore(
            self.session_uri,
            last_sequence=self.last_sequence,
            session=self.session,
            run=self.run,
            chats=dict(self.chats),
            members=dict(self.members),
            tasks=dict(self.tasks),
            approvals=dict(self.approvals),
        )

    # ── queries (used by the runtime, the tree and the projections) ──────────

    def member_status(self, chat_uri: str) -> MemberStatus:
        """The roster status of a chat, derived from its state, its task and its approvals.

        A member that owns a task (a delegated worker, or the coordinator and its root task)
        reports the task's end once it is recorded. From the end of its turn until then, it
        reports ``running``: the runtime is reporting the result, nothing has been decided
        yet.

        A conversation's coordinator whose prompt's root task has ended while the run goes
        on is ``idle``: it waits for the next message (each prompt is its own root task, see
        :class:`~orchestrator.core._team_actions.TaskCreated`). A CLI run's root task ends
        with the run, so its coordinator goes from ``running`` to the run's end.
        """
        member = self.members.get(chat_uri)
        task = self.tasks.get(member.task) if member else None
        owns_task = task is not None and (
            task.chat == chat_uri
            or (task.requested_by is None and chat_uri == self.coordinator_chat())
        )
        if owns_task and task is not None and task.status in FINISHED_TASK_STATUSES:
            run = self.run
            if task.requested_by is None and run is not None and run.status is None:
                return MemberStatus.IDLE
            return MemberStatus(task.status.value)
        chat = self.chats.get(chat_uri)
        if chat is None:
            return MemberStatus.SPAWNING
        active = chat.active_turn
        if active is None:
            if not chat.turns:
                return MemberStatus.SPAWNING
            if owns_task:
                return MemberStatus.RUNNING
            after = _AFTER_TURN.get(chat.turns[-1].state, MemberStatus.IDLE)
            # A chat that helps with another's delegated task (a reviewer) has nothing more
            # to do once that task ended: it is done, not waiting for a message.
            if (
                after is MemberStatus.IDLE
                and task is not None
                and task.requested_by is not None
                and task.status in FINISHED_TASK_STATUSES
            ):
                return MemberStatus.COMPLETED
            return after
        # What the turn waits for, from the tally its parts keep (no scan of the parts):
        # a confirmation first, then an answer, then a teammate.
        tally = active.response_parts.tally
        if any(key[0] == "tool" and key[1] == "pending-confirmation" for key in tally):
            return MemberStatus.NEEDS_APPROVAL
        if ("input",) in tally:
            return MemberStatus.NEEDS_INPUT
        if any(
            key[0] == "tool" and key[1] == "running" and key[2] in WAITING_TOOLS for key in tally
        ):
            return MemberStatus.WAITING
        return MemberStatus.RUNNING

    def queued_count(self) -> int:
        """Delegated tasks waiting for a slot in the parallel budget."""
        # ``get``: a Counter's missing key goes through a Python-level ``__missing__``.
        return self._delegated.get(TaskStatus.QUEUED, 0)

    def active_count(self) -> int:
        """Delegated tasks running now."""
        return self._delegated.get(TaskStatus.RUNNING, 0)

    def unfinished_count(self) -> int:
        """Delegated tasks queued or running."""
        return self.queued_count() + self.active_count()

    def delegated_count(self) -> int:
        """Every task delegated in this run, finished or not."""
        return sum(self._delegated.values())

    def pending_approvals(self) -> Iterator[ApprovalRecord]:
        return (a for a in self.approvals.values() if a.decision is None)

    def has_pending_approval(self, chat_uri: str | None = None) -> bool:
        """Whether an approval (of ``chat_uri``, or of anyone) waits for a decision."""
        if chat_uri is None:
            return any(n > 0 for n in self._pending_by_chat.values())
        return self._pending_by_chat.get(chat_uri, 0) > 0

    def coordinator_chat(self) -> str | None:
        return None if self.run is None else self.run.coordinator_chat


#: The status of a member that owns no open task, by how its last turn ended.
_AFTER_TURN: Final = {
    TurnState.ERROR: MemberStatus.FAILED,
    TurnState.CANCELLED: MemberStatus.KILLED,
}


def summary_updates(session: str, facts: Iterable[Fact]) -> dict[int, SummaryUpdate]:
    """The derived catalog updates of ``facts`` (a session's, from its first), by the
    sequence of the fact that made each: what :meth:`TeamState.summary_update` answers live,
    for a replay from the journal."""
    state = TeamState(session)
    updates: dict[int, SummaryUpdate] = {}
    for fact in facts:
        state.apply(fact)
        update = state._summaries.pop(fact.sequence, None)
        if update is not None:
            updates[fact.sequence] = update
    return updates
