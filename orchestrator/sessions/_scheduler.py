"""The daemon's background teammates: wake them on schedule, run, record, sleep.

Theory of operation. Each ``[[background]]`` teammate of each team the daemon serves gets
one task (:meth:`Teammate.serve`) that sleeps until its next wake, wakes, and decides with
:func:`orchestrator.spec._schedule.on_wake` what the wake does. Everything it decides is a fact
(:mod:`orchestrator.core._teammate_actions`) in the teammate's own stream in the journal, recorded
(durable)
*before* it acts on it; its state is the fold of that stream
(:mod:`orchestrator.core._teammate_state`).
So a restart knows, from the journal alone:

* which scheduled wakes were handled: every one before the last ``teammateSlept``'s
  ``nextWake``. The ones after it that came due while the daemon was down are missed
  wakes, and ``catch_up`` says which of them run;
* whether a run is going, and in which session. A run's ``teammateRunStarted`` (with the
  session URI it will use) is recorded before the session's first fact, in the same
  append as its wake, so a wake never runs twice: after a restart the run is followed
  where it is (the daemon took its session up), read back from the journal if it ended
  meanwhile, or started under that same URI if its session never began;
* whether the teammate is paused.

Each run is a session of the team (its agent as the coordinator, the wake's prompt as the
first message) that ends with that turn; clients attach to it like to any session (watch
it, approve its workers' calls). ``max_runtime`` is counted from the run's recorded
start, so it holds across restarts too.

Time: schedules are computed from ``clock()`` (wall-clock UTC); sleeps are trio sleeps of
at most ``poll`` seconds, after which the clock is read again, so a wall clock that jumps
(NTP, a suspended machine) is followed within ``poll``. Tests drive days of schedules by
passing a clock made from trio's (autojump) clock.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Final

import attrs
import structlog
import trio

from orchestrator.base import (
    FactLogError,
    OrchestratorError,
    RunError,
    parse_timestamp,
    timestamp,
    utc_now,
)
from orchestrator.core import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    RunStatus,
    TeammateAction,
    TeammatePaused,
    TeammateResumed,
    TeammateRun,
    TeammateRunFinished,
    TeammateRunOutcome,
    TeammateRunStarted,
    TeammateSlept,
    TeammateState,
    TeammateWoke,
    TeamState,
    Wake,
    WakeDecision,
    WakeReason,
    fold_teammate,
    open_questions,
    teammate_uri,
)
from orchestrator.protocols import Envelope, teammate_envelopes
from orchestrator.spec import (
    BackgroundSpec,
    Cron,
    Decision,
    Every,
    missed_wakes,
    next_wake,
    on_wake,
    run_deadline,
)

if TYPE_CHECKING:
    from ._daemon import Daemon
    from ._live_session import LiveSession

__all__ = [
    "Scheduler",
    "Teammate",
    "Watch",
    "describe_schedule",
]

log = structlog.get_logger("orchestrator.scheduler")

#: Longest trio sleep before the wall clock is read again.
POLL_SECONDS: Final = 60.0
#: After a teammate's task failed (the journal could not record, say), wait this long
#: before it starts again from its facts.
RETRY_SECONDS: Final = 60.0
#: After following a run another node ran ended without its end (that node went), wait
#: this long before finding it again (its lease may not have expired yet).
FIND_AGAIN_AFTER: Final = 1.0
#: How much of a run's final answer its record keeps.
SUMMARY_CHARS: Final = 500

_RUN_OUTCOME: Final = {
    RunStatus.COMPLETED: TeammateRunOutcome.COMPLETED,
    RunStatus.FAILED: TeammateRunOutcome.FAILED,
    RunStatus.CANCELLED: TeammateRunOutcome.CANCELLED,
}
_TINY: Final = dt.timedelta(microseconds=1)


def describe_schedule(spec: BackgroundSpec) -> str:
    """The schedule as a person reads it: ``"0 3 * * * Europe/Berlin"``, ``"every 15m"``."""
    schedule = spec.schedule
    if isinstance(schedule, Cron):
        return f"{schedule.expression} {schedule.timezone}"
    assert isinstance(schedule, Every)
    seconds = int(schedule.interval.total_seconds())
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "every " + "".join(parts)


def run_usage(state: TeamState) -> dict[str, int]:
    """The tokens every chat of a run used, summed over their turns."""
    totals = {"inputTokens": 0, "outputTokens": 0}
    for chat in state.chats.values():
        for turn in chat.turns:
            usage = turn.usage
            if usage is not None:
                totals["inputTokens"] += usage.input_tokens or 0
                totals["outputTokens"] += usage.output_tokens or 0
    return {k: v for k, v in totals.items() if v}


def _blocked(state: TeamState) -> bool:
    """The run waits for a person: an approval routed to the user, or a question."""
    routed_to_user = any(a.request.routed_to == USER for a in state.pending_approvals())
    return routed_to_user or bool(open_questions(state))


Watcher = Callable[["Teammate", Sequence[Envelope]], None]


class Teammate:
    """One background teammate: its spec, its folded stream, and the task that runs it."""

    def __init__(
        self,
        scheduler: Scheduler,
        team: str,
        spec: BackgroundSpec,
        state: TeammateState,
        uri: str | None = None,
    ) -> None:
        """``uri``: its stream (default: the one of ``team``'s name and the spec's)."""
        self.scheduler = scheduler
        self.team = team
        self.spec = spec
        self.name = spec.name
        self.key = f"{team}/{spec.name}"
        self.uri = uri or teammate_uri(team, spec.name)
        self.state = state
        self.blocked = False
        self._record_lock = trio.Lock()
        self._changed = trio.Event()  # set when a control changed what the loop waits for
        self._run_done = trio.Event()
        self._run_done.set()
        self._live: LiveSession | None = None
        self._ending: tuple[TeammateRunOutcome, str | None] | None = None  # why we cancel the run

    # ── what clients see ───────────────────────────────────────────────────

    @property
    def next_wake(self) -> str | None:
        return None if self.state.paused else self.state.due_from

    def to_json(self) -> dict[str, object]:
        return self.state.to_json(next_wake=self.next_wake, blocked=self.blocked)

    def envelopes(self, sequence: int, at: str) -> list[Envelope]:
        return teammate_envelopes(
            self.state,
            sequence=sequence,
            at=at,
            agent=self.spec.agent,
            next_wake=self.next_wake,
            blocked=self.blocked,
        )

    # ── controls ───────────────────────────────────────────────────────────

    async def pause(self, by: str) -> bool:
        """Stop waking on schedule (a running run goes on); False if it was paused."""
        if self.state.paused:
            return False
        await self._record([TeammatePaused(name=self.name, by=by)])
        self._poke()
        return True

    async def resume(self, by: str) -> bool:
        """Wake on schedule again from now (wakes that came due while paused are dropped);
        False if it was not paused."""
        if not self.state.paused:
            return False
        await self._record([TeammateResumed(name=self.name, by=by), self._slept(self._now())])
        self._poke()
        return True

    async def trigger(self, by: str) -> WakeDecision:
        """Wake now, whatever the schedule or pause says; the overlap policy decides what
        the wake does while a run is going."""
        self._check_serving()
        return await self._wake(WakeReason.TRIGGER, None, by=by)

    def stop(self, by: str) -> bool:
        """Stop the running run (recorded ``stopped``); False if none was running."""
        return self._end_run(TeammateRunOutcome.STOPPED, by)

    # ── the schedule ───────────────────────────────────────────────────────

    async def serve(self) -> None:
        """Run the teammate until cancelled: take up where its facts left off, then wake,
        run, record and sleep.

        Only the node that owns the teammate's stream runs it. The others (several daemons on
        one journal) wait here to take it over. On PostgreSQL every fact of the stream is
        fenced by its lease. So a wake is recorded, and run, by one node."""
        daemon = self.scheduler.daemon
        if not daemon.ownership.holds(self.uri):  # claimed as it was loaded, unless held
            await daemon.wait_owned(self.uri)
            # Another node may have run it until now: its facts as they are.
            facts = await trio.to_thread.run_sync(daemon.reader.facts, self.uri)
            self.state = fold_teammate(self.team, self.name, facts)
        await self._take_up()
        while True:
            if self.state.paused:
                await self._wait_for_change(None)
                continue
            assert self.state.due_from is not None
            due = parse_timestamp(self.state.due_from)
            if not await self._wait_for_change(due):
                continue  # a control changed the plan
            if self.state.paused or self.state.due_from != timestamp(due):
                continue
            if not self.scheduler.daemon.accepting:
                return  # stopping: the wake is caught up at the next start
            await self._wake(WakeReason.SCHEDULE, due, by=None)

    async def _take_up(self) -> None:
        """After a start: follow a run that was going, then handle what the stream says
        about the schedule (first start, a changed schedule, missed wakes)."""
        now = self._now()
        if self.state.running is not None:
            self._follow(self.state.running)
        elif self.state.backlog:
            # Stopped between a run's end and the start of the wake waiting for it.
            await self._start_waiting()
        schedule = describe_schedule(self.spec)
        if self.state.due_from is None or self.state.schedule != schedule:
            # New, or its schedule changed in the team file: the old one's wakes are moot.
            await self._record([self._slept(now)])
            return
        if self.state.paused:
            return
        due = parse_timestamp(self.state.due_from)
        if due > now:
            return
        missed = missed_wakes(self.spec, due - _TINY, now)
        log.info(
            "missed wakes",
            teammate=self.key,
            since=self.state.due_from,
            catch_up=self.spec.catch_up.value,
            running=len(missed),
        )
        for index, wake in enumerate(missed):
            await self._wake(WakeReason.CATCH_UP, wake, by=None, backlog=index > 0)
        if self.state.due_from == timestamp(due):
            await self._record([self._slept(now)])

    async def _wake(
        self,
        reason: WakeReason,
        scheduled_for: dt.datetime | None,
        *,
        by: str | None,
        backlog: bool = False,
    ) -> WakeDecision:
        """Handle one wake: record it (with the run it starts, and for a scheduled wake the
        sleep until the next one, in the same append), then act on it."""
        running = self.state.running is not None
        if backlog:
            # Catch-up "all": the missed wakes run one after another, whatever ``overlap``.
            decision = Decision.QUEUE if running else Decision.START
        else:
            decision = on_wake(self.spec, running, queued=bool(self.state.backlog))
        wake_decision = WakeDecision(decision.value)
        at = None if scheduled_for is None else timestamp(scheduled_for)
        actions: list[TeammateAction] = [
            TeammateWoke(
                name=self.name, reason=reason, decision=wake_decision, scheduled_for=at, by=by
            )
        ]
        run: TeammateRunStarted | None = None
        if decision is Decision.START:
            run = self._run_started(Wake(reason=reason, scheduled_for=at, by=by))
            actions.append(run)
        if reason is WakeReason.SCHEDULE and scheduled_for is not None:
            actions.append(self._slept(scheduled_for))
        log.info(
            "teammate woke",
            teammate=self.key,
            reason=reason.value,
            scheduled_for=at,
            decision=wake_decision.value,
        )
        await self._record(actions)
        if run is not None:
            self._follow_current()
        elif decision is Decision.REPLACE:
            self._end_run(TeammateRunOutcome.REPLACED, by)
        return wake_decision

    def _run_started(self, wake: Wake) -> TeammateRunStarted:
        session = f"ahp-session:/{uuid.uuid4()}"
        return TeammateRunStarted(
            name=self.name,
            session=session,
            reason=wake.reason,
            scheduled_for=wake.scheduled_for,
            by=wake.by,
        )

    def _slept(self, after: dt.datetime) -> TeammateSlept:
        return TeammateSlept(
            name=self.name,
            team=self.team,
            schedule=describe_schedule(self.spec),
            next_wake=timestamp(next_wake(self.spec, after)),
        )

    async def _wait_for_change(self, until: dt.datetime | None) -> bool:
        """Sleep until ``until`` (True) or until a control changes something (False)."""
        while True:
            changed = self._changed
            if until is None:
                await changed.wait()
            else:
                remaining = (until - self._now()).total_seconds()
                if remaining <= 0:
                    return True
                with trio.move_on_after(min(remaining, self.scheduler.poll)):
                    await changed.wait()
            if changed.is_set():
                self._changed = trio.Event()
                return False

    def _poke(self) -> None:
        self._changed.set()

    # ── runs ───────────────────────────────────────────────────────────────

    async def _start_waiting(self) -> None:
        """Start the run of the oldest wake waiting in the backlog."""
        await self._record([self._run_started(self.state.backlog[0])])
        self._follow_current()

    def _follow_current(self) -> None:
        """Follow the run just recorded as started."""
        run = self.state.running
        assert run is not None
        self._follow(run)

    def _follow(self, run: TeammateRun) -> None:
        """Follow ``run`` to its end (in the scheduler's nursery), then start the next
        waiting wake, if any."""
        self._run_done = trio.Event()
        self.scheduler.start_soon(self._run, run)

    async def _run(self, run: TeammateRun) -> None:
        try:
            ended = await self._drive(run)
        finally:
            self._live = None
            self.blocked = False
            self._ending = None
            self._run_done.set()
        if ended and self.state.backlog and self.scheduler.daemon.accepting:
            await self._start_waiting()

    async def _drive(self, run: TeammateRun) -> bool:
        """Start or find ``run``'s session, wait for it to end (stopping it at
        ``max_runtime``) and record how it ended; False if the daemon is stopping and
        the run goes on at the next start.

        Several nodes: a run may be taken up by another node. That happens when its node died
        while this one held the teammate's stream, or the other way round. Such a run is
        followed where it runs. Following it may end without the run's end (its owner went).
        Then it is found again: taken up here or followed where it went."""
        daemon = self.scheduler.daemon
        opened = False
        while True:
            try:
                live = await daemon.find(run.session)  # live, taken up, or followed
            except (OrchestratorError, OSError) as exc:
                await self._finished(run, TeammateRunOutcome.FAILED, error=str(exc))
                return True
            if live is None:
                if await daemon.journal_knows(run.session):
                    # It ended while the daemon was down (or elsewhere): record how.
                    state = await trio.to_thread.run_sync(daemon.reader.open, run.session)
                    await self._finished_from(run, state)
                    return True
                if not daemon.accepting or opened:
                    return False
                try:
                    live = await daemon.open_session(
                        self.team, session=run.session, background=self.spec
                    )
                    await live.prompt(self.spec.prompt, task_id=None)
                except (OrchestratorError, OSError) as exc:
                    log.error("teammate run did not start", teammate=self.key, error=str(exc))
                    await self._finished(run, TeammateRunOutcome.FAILED, error=str(exc))
                    return True
                opened = True
            ended = await self._wait(run, live)
            if ended is not None:
                return ended
            if not daemon.accepting or daemon.journal.failed:
                return False  # stopped with the daemon, recording nothing: taken up next start
            await trio.sleep(FIND_AGAIN_AFTER)  # following ended with its owner: find it again

    async def _wait(self, run: TeammateRun, live: LiveSession) -> bool | None:
        """Wait for ``live`` (the run's session) to end, stopping it at ``max_runtime``;
        True once its end is recorded, None if it stopped without one (the daemon
        stopping, or the node running it gone while this one followed it)."""
        self._live = live
        live.observe(self._observe_run)
        self._set_blocked(_blocked(live.state))
        deadline = run_deadline(self.spec, parse_timestamp(run.started_at))
        seconds = math.inf
        if deadline is not None:
            seconds = max((deadline - self._now()).total_seconds(), 0.0)
        with live.attached():  # watched: a followed session nobody watches is dropped
            with trio.move_on_after(seconds):
                await live.finished.wait()
            if not live.finished.is_set():
                log.warning("teammate run timed out", teammate=self.key, session=run.session)
                self._ending = (TeammateRunOutcome.TIMED_OUT, None)
                await live.cancel()
                await live.finished.wait()
        final = live.state.run
        if final is None or final.status is None:
            return None
        await self._finished_from(run, live.state)
        return True

    async def _finished_from(self, run: TeammateRun, state: TeamState) -> None:
        final = state.run
        if final is None or final.status is None:
            await self._finished(run, TeammateRunOutcome.FAILED, error="the run never finished")
            return
        outcome, by = _RUN_OUTCOME[final.status], None
        if self._ending is not None and final.status is RunStatus.CANCELLED:
            outcome, by = self._ending
        await self._finished(
            run,
            outcome,
            summary=final.result[:SUMMARY_CHARS],
            error=final.error,
            by=by,
            usage=run_usage(state),
        )

    async def _finished(
        self,
        run: TeammateRun,
        outcome: TeammateRunOutcome,
        *,
        summary: str = "",
        error: str = "",
        by: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        log.info("teammate run ended", teammate=self.key, session=run.session, outcome=outcome)
        await self._record(
            [
                TeammateRunFinished(
                    name=self.name,
                    session=run.session,
                    outcome=outcome,
                    summary=summary,
                    error=error,
                    by=by,
                    usage=usage or {},
                )
            ]
        )

    def _end_run(self, outcome: TeammateRunOutcome, by: str | None) -> bool:
        live = self._live
        if live is None or live.finished.is_set():
            return False
        self._ending = (outcome, by)
        live.cancel_nowait()
        return True

    def _observe_run(self, facts: Sequence[Fact]) -> None:
        """Follow the run's approvals and questions: ``blocked`` while one waits."""
        live = self._live
        if live is None:
            return
        if any(
            isinstance(f.action, (ApprovalRequested, ApprovalResolved))
            or f.type in ("chat/inputRequested", "chat/inputCompleted")
            for f in facts
        ):
            self._set_blocked(_blocked(live.state))

    def _set_blocked(self, blocked: bool) -> None:
        if blocked != self.blocked:
            self.blocked = blocked
            self.scheduler.publish(
                self, self.envelopes(self.state.last_sequence, timestamp(self._now()))
            )

    async def wait_idle(self) -> None:
        """Until no run of the teammate is being followed (tests)."""
        await self._run_done.wait()

    # ── recording ──────────────────────────────────────────────────────────

    async def _record(self, actions: Sequence[TeammateAction]) -> None:
        """Append ``actions`` to the teammate's stream (durable before anything acts on
        them), then fold them and tell the watchers."""
        async with self._record_lock:
            at = timestamp(self._now())
            first = self.state.last_sequence + 1
            facts = [
                Fact(sequence=first + i, session=self.uri, channel=self.uri, at=at, action=a)
                for i, a in enumerate(actions)
            ]
            ticket = self.scheduler.daemon.journal.submit(facts)
            with trio.CancelScope(shield=True):
                await ticket.wait()
            if ticket.error is not None:
                raise ticket.error
            for fact in facts:
                self.state = self.state.apply(fact)
            self.scheduler.publish(self, self.envelopes(facts[-1].sequence, at))

    def _now(self) -> dt.datetime:
        return self.scheduler.clock()

    def _check_serving(self) -> None:
        if not self.scheduler.daemon.accepting:
            raise RunError("the daemon is stopping: no new runs")


@attrs.define(eq=False)
class Watch:
    """A watcher's registration (:meth:`Scheduler.watch`); pass it to unwatch."""

    callback: Watcher


class Scheduler:
    """Every background teammate of the daemon's teams; start with
    ``await nursery.start(scheduler.serve)`` once the daemon serves."""

    def __init__(
        self,
        daemon: Daemon,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
        poll: float = POLL_SECONDS,
        retry: float = RETRY_SECONDS,
    ) -> None:
        self.daemon = daemon
        self.clock = clock
        self.poll = poll
        self.retry = retry
        self.teammates: dict[str, Teammate] = {}
        self._watches: list[Watch] = []
        self._nursery: trio.Nursery | None = None
        self.stopping = trio.Event()  # the daemon stops: no wake starts a run any more

    async def serve(
        self, *, task_status: trio.TaskStatus[Scheduler] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Load every teammate's stream, then run them until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for team_name, team in sorted(self.daemon.catalog.teams.items()):
                for spec in team.background:
                    if team_name in self.daemon.runtimes.unavailable:
                        log.warning(
                            "background teammate cannot run",
                            teammate=f"{team_name}/{spec.name}",
                            error=self.daemon.runtimes.unavailable[team_name],
                        )
                        continue
                    # Claimed before it is read (if no other node holds it), so the facts
                    # read are all its previous owner wrote; else Teammate.serve waits.
                    uri = teammate_uri(team_name, spec.name)
                    await self.daemon.claim(uri)
                    facts = await trio.to_thread.run_sync(self.daemon.reader.facts, uri)
                    stem = self.daemon.catalog.stem(team_name)
                    if not facts and stem is not None:
                        # A journal of before teams were named by [team] name: its stream
                        # is under the file's stem, and goes on there.
                        old_uri = teammate_uri(stem, spec.name)
                        old = await trio.to_thread.run_sync(self.daemon.reader.facts, old_uri)
                        if old:
                            await self.daemon.release(uri)
                            uri, facts = old_uri, old
                            if await self.daemon.claim(uri):
                                facts = await trio.to_thread.run_sync(self.daemon.reader.facts, uri)
                    state = fold_teammate(team_name, spec.name, facts)
                    teammate = Teammate(self, team_name, spec, state, uri)
                    self.teammates[teammate.key] = teammate
            for teammate in self.teammates.values():
                nursery.start_soon(self._supervise, teammate)
            task_status.started(self)
            await trio.sleep_forever()

    async def _supervise(self, teammate: Teammate) -> None:
        """Run ``teammate`` behind an error barrier: a failure (the journal refusing a
        fact, say) is logged, and the teammate starts again from its facts later."""
        while True:
            try:
                await teammate.serve()
                return
            except (OrchestratorError, FactLogError, OSError, ValueError) as exc:
                log.error("background teammate failed", teammate=teammate.key, error=str(exc))
            await trio.sleep(self.retry)
            facts = await trio.to_thread.run_sync(self.daemon.reader.facts, teammate.uri)
            teammate.state = fold_teammate(teammate.team, teammate.name, facts)

    def start_soon(self, function: Callable[..., object], *args: object) -> None:
        assert self._nursery is not None, "the scheduler is not serving"
        self._nursery.start_soon(function, *args)  # type: ignore[arg-type]

    # ── lookup ─────────────────────────────────────────────────────────────

    def find(self, name: str) -> Teammate:
        """The teammate ``name`` (``NAME`` when only one team has it, else ``TEAM/NAME``);
        :class:`RunError` naming the known ones otherwise."""
        if name in self.teammates:
            return self.teammates[name]
        team, slash, teammate = name.partition("/")
        if slash and f"{self.daemon.catalog.name(team)}/{teammate}" in self.teammates:
            return self.teammates[f"{self.daemon.catalog.name(team)}/{teammate}"]  # a file stem
        matches = [t for t in self.teammates.values() if t.name == name]
        if len(matches) == 1:
            return matches[0]
        known = sorted(self.teammates)
        if matches:
            raise RunError(
                f"{len(matches)} teams have a teammate {name!r}: name one of "
                + ", ".join(t.key for t in matches)
            )
        if not known:
            raise RunError(f"no background teammate {name!r}: no team has [[background]] entries")
        names = [*known, *(t.name for t in self.teammates.values())]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise RunError(f"no background teammate {name!r}{hint}; known: {', '.join(known)}")

    def __iter__(self) -> Iterator[Teammate]:
        return iter(sorted(self.teammates.values(), key=lambda t: t.key))

    # ── watchers (the /teammates socket) ───────────────────────────────────

    def watch(self, callback: Watcher) -> Watch:
        watch = Watch(callback)
        self._watches.append(watch)
        return watch

    def unwatch(self, watch: Watch) -> None:
        if watch in self._watches:
            self._watches.remove(watch)

    def publish(self, teammate: Teammate, envelopes: Sequence[Envelope]) -> None:
        for watch in list(self._watches):
            try:
                watch.callback(teammate, envelopes)
            except Exception:
                log.exception("a teammate watcher failed", teammate=teammate.key)
                self.unwatch(watch)
