"""``/metrics`` (and ``/healthz`` beside it) on a daemon on loopback."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.support.daemon import running_daemon

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestHealthAndMetrics:
    async def test_healthz_and_metrics_answer_once_the_daemon_listens(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        async with running_daemon(tmp_path, db=journal_db) as daemon, daemon.http() as http:
            health = await http.get("/healthz")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            assert health.json()["node"] == f"{socket.gethostname()}:{os.getpid()}"
            assert health.json()["owned_sessions"] == []
            metrics = await http.get("/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain")
            assert 'orchestrator_sessions{activity="busy",status="running"} 0.0' in metrics.text
            assert 'orchestrator_sessions{activity="idle",status="running"} 0.0' in metrics.text
            assert "orchestrator_facts_appended_total" in metrics.text
            for counted in ("held", "taken_over_total", "lost_total"):
                assert f"orchestrator_leases_{counted} 0.0" in metrics.text
