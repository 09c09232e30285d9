"""The daemon's config file: every value checked, every problem named by its key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from orchestrator.base import ConfigError
from orchestrator.runtime import DEFAULT_DELTA_WINDOW, TracingSettings
from orchestrator.server import (
    Role,
    ServeConfig,
    Token,
    load_serve_config,
    parse_serve_config,
)
from orchestrator.sessions import Limits

SECRET = "s3cret-s3cret-s3cret"


def parse(text: str, environ: dict[str, str] | None = None) -> ServeConfig:
    return parse_serve_config(tomllib.loads(text), file="d.toml", environ=environ or {})


class TestParse:
    def test_db_is_a_file_or_a_postgresql_url(self) -> None:
        """A URL is kept as it was written (a path would fold its ``//``)."""
        url = "postgresql://orchestrator@db.internal:5432/journal"
        assert parse(f'db = "{url}"').db == url
        assert parse('db = "journal.db"').db == Path("journal.db")

    def test_a_node_and_its_lease_ttl(self) -> None:
        """Several daemons on one PostgreSQL journal: each names itself; by default it is
        HOSTNAME:PID (chosen at start: None here) and leases last 15 s."""
        config = parse('node = "node-a"\nlease_ttl = 6')
        assert (config.node, config.lease_ttl) == ("node-a", 6.0)
        assert (parse("").node, parse("").lease_ttl) == (None, 15.0)

    def test_how_long_the_journal_tries_to_reconnect(self) -> None:
        """A PostgreSQL server lost (a restart, a failover), or a SQLite file another
        process locked: the journal tries again for ``reconnect_for`` seconds (0: one try;
        unset, None: the journal's own default, 15 s on PostgreSQL and 60 s on SQLite)."""
        assert parse("reconnect_for = 40").reconnect_for == 40.0
        assert parse("reconnect_for = 0").reconnect_for == 0.0
        assert parse("").reconnect_for is None

    def test_how_long_streamed_text_gathers(self) -> None:
        """``delta_window``: seconds a chat's streamed chunks join one fact for at most (0:
        one fact per chunk); unset, the runtime's default."""
        assert parse("delta_window = 0.2").delta_window == 0.2
        assert parse("delta_window = 0").delta_window == 0.0
        assert parse("").delta_window == DEFAULT_DELTA_WINDOW

    def test_tracing(self) -> None:
        """[tracing]: off unless enabled; what the OTEL_* variables may also say."""
        assert parse("").tracing == TracingSettings()
        assert not parse("").tracing.enabled
        config = parse(
            "[tracing]\n"
            "enabled = true\n"
            'endpoint = "http://collector:4318/v1/traces"\n'
            'service_name = "orchestrator-a"\n'
            'sampler = "parentbased_traceidratio"\n'
            "sampler_arg = 0.25\n"
            "capture_content = true\n"
            'trace_url = "http://localhost:16686/trace/{trace_id}?uiFind={span_id}"\n'
        )
        assert config.tracing == TracingSettings(
            enabled=True,
            endpoint="http://collector:4318/v1/traces",
            service_name="orchestrator-a",
            sampler="parentbased_traceidratio",
            sampler_arg=0.25,
            capture_content=True,
            trace_url="http://localhost:16686/trace/{trace_id}?uiFind={span_id}",
        )
        assert parse("").tracing.trace_url is None

    def test_a_full_file(self, tmp_path: Path) -> None:
        (tmp_path / "tool.token").write_text(SECRET + "-file\n")
        path = tmp_path / "daemon.toml"
        path.write_text(
            'host = "0.0.0.0"\nport = 9000\ndb = "/var/lib/o/j.db"\nteams = "/etc/o/teams"\n'
            'default_team = "delivery"\n'
            '[tokens.alice]\nrole = "operator"\ntoken_env = "ALICE"\n'
            '[tokens.sandbox]\nrole = "tool"\ntoken_file = "tool.token"\n'
            "[limits]\nburst = 5\nmessages_per_second = 2.5\nshutdown_grace = 8\n"
            "unprompted_session = 10\nmax_unprompted_per_token = 4\nmax_sessions = 50\n"
            "max_connections = 100\n"
        )
        config = load_serve_config(path, environ={"ALICE": SECRET})
        assert (config.host, config.port, config.default_team) == ("0.0.0.0", 9000, "delivery")
        assert config.db == Path("/var/lib/o/j.db")
        assert config.limits == Limits(
            burst=5,
            messages_per_second=2.5,
            shutdown_grace=8,
            unprompted_session=10,
            max_unprompted_per_token=4,
            max_sessions=50,
            max_connections=100,
        )
        assert [(t.name, t.role, t.secret) for t in config.tokens] == [
            ("alice", Role.OPERATOR, SECRET),
            ("sandbox", Role.TOOL, SECRET + "-file"),
        ]
        assert SECRET not in repr(config), "a token never shows in a repr"
        config.check()

    @pytest.mark.parametrize(
        ("text", "key", "problem"),
        [
            ("hots = 'x'", "hots", "unknown key"),
            ("port = 70000", "port", "0 to 65535"),
            ("port = true", "port", "0 to 65535"),
            ("host = ''", "host", "non-empty string"),
            ("[limits]\nburst = 0", "limits.burst", "above 0"),
            ("[limits]\nburst = 1.5", "limits.burst", "whole number"),
            ("[limits]\nspeed = 1", "limits.speed", "unknown limit"),
            ("[limits]\nunprompted_session = 0", "limits.unprompted_session", "above 0"),
            ("[limits]\nmax_sessions = 1.5", "limits.max_sessions", "whole number"),
            ("[limits]\nmax_connections = -1", "limits.max_connections", "above 0"),
            (
                "[limits]\nmax_unprompted_per_token = true",
                "limits.max_unprompted_per_token",
                "whole number",
            ),
            ("[tokens.a]\nrole = 'admin'\ntoken = 'x'", "tokens.a.role", "viewer"),
            ("[tokens.a]\nrole = 'viewer'", "tokens.a", "exactly one of"),
            ("[tokens.a]\nrole = 'viewer'\ntoken = 'short'", "tokens.a", "16 characters"),
            ("[tokens.a]\nrole = 'viewer'\ntoken_env = 'UNSET'", "tokens.a.token_env", "not set"),
            ("[tokens.a]\nrole = 'viewer'\ntoken_file = 'nope'", "tokens.a.token_file", "cannot"),
            ("tokens = 3", "tokens", "named tokens"),
            ('node = ""', "node", "non-empty string"),
            (f'node = "{"n" * 201}"', "node", "at most 200"),
            ("lease_ttl = 0", "lease_ttl", "above 0"),
            ('lease_ttl = "15s"', "lease_ttl", "seconds above 0"),
            ("reconnect_for = -1", "reconnect_for", "0 or more"),
            ("reconnect_for = true", "reconnect_for", "number of seconds"),
            ("delta_window = -0.01", "delta_window", "from 0 to 1"),
            ("delta_window = 5", "delta_window", "from 0 to 1"),
            ("delta_window = nan", "delta_window", "from 0 to 1"),
            ('delta_window = "50ms"', "delta_window", "number of seconds"),
            ("tracing = 1", "tracing", "expected a table"),
            ("[tracing]\nenable = true", "tracing.enable", "unknown key"),
            ("[tracing]\nenabled = 'yes'", "tracing.enabled", "true or false"),
            ("[tracing]\nendpoint = 'collector:4318'", "tracing.endpoint", "http://"),
            ("[tracing]\nservice_name = ''", "tracing.service_name", "non-empty string"),
            ("[tracing]\nsampler = 'half'", "tracing.sampler", "parentbased_traceidratio"),
            ("[tracing]\nsampler_arg = 1.5", "tracing.sampler_arg", "from 0 to 1"),
            ("[tracing]\nsampler_arg = true", "tracing.sampler_arg", "from 0 to 1"),
            ("[tracing]\nexporter = 'jaeger'", "tracing.exporter", "otlp, console, none"),
            ("[tracing]\ntrace_url = 1", "tracing.trace_url", "http:// or https:// URL"),
            ("[tracing]\ntrace_url = 'jaeger/{trace_id}'", "tracing.trace_url", "https://"),
            ("[tracing]\ntrace_url = 'http://j/{span}'", "tracing.trace_url", "placeholder {span}"),
            (
                "[tracing]\ntrace_url = 'http://j/{trace_id!r}'",
                "tracing.trace_url",
                "placeholder {trace_id}",
            ),
            ("[tracing]\ntrace_url = 'http://j/{span_id}'", "tracing.trace_url", "{trace_id} in"),
            (
                "[tracing]\ntrace_url = 'http://j/{trace_id'",
                "tracing.trace_url",
                "not a URL template",
            ),
        ],
    )
    def test_a_bad_value_names_its_key(self, text: str, key: str, problem: str) -> None:
        with pytest.raises(ConfigError) as error:
            parse(text)
        assert error.value.key_path == key
        assert problem in str(error.value)
        assert str(error.value).startswith(f"d.toml: {key}: ")

    def test_a_short_token_is_not_echoed(self) -> None:
        with pytest.raises(ConfigError) as error:
            parse("[tokens.a]\nrole = 'viewer'\ntoken = 'tiny-secret'")
        assert "tiny-secret" not in str(error.value)

    def test_unreadable_and_invalid_files(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read the file"):
            load_serve_config(tmp_path / "missing.toml")
        bad = tmp_path / "bad.toml"
        bad.write_text("host = ")
        with pytest.raises(ConfigError, match="invalid TOML"):
            load_serve_config(bad)


class TestHost:
    def test_without_tokens_only_a_loopback_address_may_be_bound(self) -> None:
        ServeConfig(host="127.0.0.1").check()
        ServeConfig(host="::1").check()
        with pytest.raises(ConfigError, match=r"host: no \[tokens\] configured"):
            ServeConfig(host="0.0.0.0").check()
        ServeConfig(
            host="0.0.0.0", tokens=(Token(name="alice", role=Role.OPERATOR, secret=SECRET),)
        ).check()
