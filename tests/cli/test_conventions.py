"""What every command shares (``cli/_conventions``): exit statuses, the one format of stderr,
the journal's default place."""

from __future__ import annotations


class TestDefaults:
    def test_the_parser_s_default_port_is_the_daemon_s(self) -> None:
        from orchestrator.cli._conventions import DEFAULT_PORT
        from orchestrator.server import DEFAULT_PORT as DAEMON_PORT

        assert DEFAULT_PORT == DAEMON_PORT
