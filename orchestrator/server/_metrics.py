"""``/metrics``: the daemon's state in the Prometheus text format (prometheus-client).

Gauges are read from the daemon and its scheduler at scrape time (a custom collector). So
nothing has to be kept in step by hand. The approval wait histogram is observed as approvals
are resolved. The metrics are the sessions'
:class:`~orchestrator.sessions._live_session.SessionObserver`, wired by the app assembly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from orchestrator.sessions import Daemon, Scheduler

__all__: list[str] = []

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class DaemonMetrics(Collector):
    def __init__(self, daemon: Daemon, scheduler: Scheduler) -> None:
        self._daemon = daemon
        self._scheduler = scheduler
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._approval_wait = Histogram(
            "orchestrator_approval_wait_seconds",
            "Time from an approval's request to its decision",
            buckets=(1, 5, 15, 30, 60, 300, 900, 3600, 14400, 86400),
            registry=self.registry,
        )
        # Clients disconnected because they fell behind (counted by their connections).
        self.dropped_clients = 0
        self.connected_clients = 0

    def approval_waited(self, seconds: float) -> None:
        self._approval_wait.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def collect(self) -> Iterator[Metric]:
        daemon = self._daemon
        # One vocabulary with `orchestrator sessions` and the journal: a session's status is
        # its run's (running until the run ends); whether a turn is going is its activity.
        sessions = GaugeMetricFamily(
            "orchestrator_sessions",
            "Live sessions by status (as `orchestrator sessions` says) and activity "
            "(busy: a turn is running; idle: waiting for a prompt or an answer)",
            labels=["status", "activity"],
        )
        chats = GaugeMetricFamily(
            "orchestrator_chats",
            "Chats of live sessions by status (the Agent UI member status)",
            labels=["status"],
        )
        by_session: Counter[tuple[str, str]] = Counter()
        by_chat: Counter[str] = Counter()
        subscribers = 0
        for live in daemon.sessions.values():
            state = live.state
            run = state.run
            status = str(run.status) if run is not None and run.status is not None else "running"
            by_session[status, "idle" if live.idle.is_set() else "busy"] += 1
            by_chat.update(str(state.member_status(chat)) for chat in state.members)
            statistics = live.bus_statistics()
            subscribers += statistics.subscribers + live.sinks
        for activity in ("busy", "idle"):  # always there, so a dashboard sees zeros
            by_session.setdefault(("running", activity), 0)
        for (status, activity), count in sorted(by_session.items()):
            sessions.add_metric([status, activity], count)
        for status, count in sorted(by_chat.items()):
            chats.add_metric([status], count)
        yield sessions
        yield chats
        journal = daemon.journal.statistics()
        yield CounterMetricFamily(
            "orchestrator_facts_appended", "Facts made durable by this process", journal.facts
        )
        yield GaugeMetricFamily(
            "orchestrator_subscribers",
            "Subscribers of live sessions (clients and internal readers)",
            subscribers,
        )
        yield GaugeMetricFamily("orchestrator_clients", "Connected clients", self.connected_clients)
        yield from _teammates(self._scheduler)
        yield from _leases(daemon)
        yield CounterMetricFamily(
            "orchestrator_journal_looks",
            "Times the daemon asked its SQLite journal whether it changed (one per interval, "
            "while it follows a session another process runs)",
            daemon.following.statistics().journal_looks,
        )
        yield CounterMetricFamily(
            "orchestrator_dropped_subscribers",
            "Clients disconnected because they fell behind",
            self.dropped_clients,
        )


def _leases(daemon: Daemon) -> Iterator[Metric]:
    """The sessions this node owns (their leases on a PostgreSQL journal several daemons
    share, their locks on a SQLite file), the sessions it took over from a node that died,
    and the leases it lost (its sessions then stopped here)."""
    statistics = daemon.ownership.statistics()
    yield GaugeMetricFamily(
        "orchestrator_leases_held",
        "Sessions this node owns (their leases, or their locks on a SQLite journal)",
        statistics.held,
    )
    yield CounterMetricFamily(
        "orchestrator_leases_taken_over",
        "Sessions this node took over from another whose lease expired",
        daemon.taken_over,
    )
    yield CounterMetricFamily(
        "orchestrator_leases_lost",
        "Session leases this node lost to another node (the session stopped here)",
        statistics.lost,
    )


def _teammates(scheduler: Scheduler) -> Iterator[Metric]:
    """Each background teammate's state (1 for the one it is in) and its runs by outcome
    (those its state keeps: the last thousand), so an alert can watch a nightly job."""
    states = GaugeMetricFamily(
        "orchestrator_teammate_state",
        "Background teammates by state (1: the teammate is in that state)",
        labels=["teammate", "state"],
    )
    runs = CounterMetricFamily(
        "orchestrator_teammate_runs",
        "Ended runs of background teammates by outcome",
        labels=["teammate", "outcome"],
    )
    for teammate in scheduler:
        state = teammate.state.status(blocked=teammate.blocked)
        states.add_metric([teammate.key, state.value], 1)
        outcomes = Counter(str(run.outcome) for run in teammate.state.runs)
        for outcome, count in sorted(outcomes.items()):
            runs.add_metric([teammate.key, outcome], count)
    yield states
    yield runs
