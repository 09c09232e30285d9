"""The daemon's configuration: ``orchestrator serve --config FILE`` (TOML).

::

    host = "127.0.0.1"          # with no [tokens], only a loopback address is allowed
    port = 8765
    db = "/var/lib/orchestrator/journal.db"   # default: the XDG state directory
    teams = "/etc/orchestrator/teams"         # every *.toml here is a team, by [team] name
    default_team = "delivery"                 # /ws without ?team= (default: the only team)
    node = "node-a"             # this daemon's id among several on one PostgreSQL journal
                                # (default: HOSTNAME:PID)
    lease_ttl = 15.0            # seconds a session's lease lasts unless renewed (PostgreSQL)
    server_names = ["orch.example.com"]   # the names clients reach the daemon by, besides
                                # IP literals and localhost, which are always answered;
                                # ["*"]: any name (behind a proxy that checks them)
    reconnect_for = 15.0        # seconds the journal tries to reconnect to a PostgreSQL server
                                # it lost (a restart, a failover), or waits for a SQLite file
                                # another process locked, before it fails (default: 15 on
                                # PostgreSQL, 60 on SQLite)

    [tokens.alice]              # a bearer token, named: the name is what the logs and the
    role = "operator"           # approvals record, never the token itself
    token_env = "ORCH_TOKEN_ALICE"   # or token_file = "...", or (not for production) token = "..."

    [limits]
    max_frame_bytes = 65536     # largest client frame on /ws and /ahp
    max_body_bytes = 1048576    # largest POST body (/callback, /agui)
    messages_per_second = 20.0  # per connection, with bursts up to `burst`
    burst = 40
    subscriber_buffer = 2000    # events queued for one client before it is disconnected
    shutdown_grace = 5.0        # seconds running turns get to end on SIGTERM
    idle_session = 600.0        # seconds an idle session with no client stays in memory
    idle_conversation = 86400.0 # seconds a conversation waits for its next prompt before
                                # the daemon ends it (completed, and prunable)
    unprompted_session = 30.0   # seconds a session never prompted stays with no client on it
    max_unprompted_per_token = 16   # sessions never prompted one token may hold at once
    max_sessions = 500          # live sessions in memory at once: no new one beyond
    max_connections = 512       # WebSocket connections and AG-UI streams at once
    max_json_depth = 64         # objects / arrays inside one another in a client's JSON
    max_json_integer_digits = 32  # digits of one integer in a client's JSON

    [tracing]                   # OpenTelemetry traces (pip install 'team-orchestrator[otel]')
    enabled = true              # default false; OTEL_TRACES_EXPORTER=otlp turns it on too
    endpoint = "http://collector:4318/v1/traces"   # OTLP/HTTP (default: OTEL_EXPORTER_OTLP_*)
    service_name = "orchestrator"                  # default: OTEL_SERVICE_NAME, else
                                                   # team-orchestrator
    sampler = "parentbased_traceidratio"           # an OTEL_TRACES_SAMPLER name
    sampler_arg = 0.25          # its ratio, 0 to 1
    capture_content = false     # prompts, answers and tool input/output on spans (redacted)
    exporter = "otlp"           # or "console" (spans as JSON on stdout)
    trace_url = "http://localhost:16686/trace/{trace_id}"   # the web view links agents and
                                # tool calls to their trace ({trace_id}, {span_id})

The ``OTEL_*`` variables of the daemon's environment override ``[tracing]``.

A request or WebSocket handshake whose ``Host`` is another name is refused with 421 (see
:mod:`orchestrator.server._served_names`: a DNS-rebinding page presents its own name).

Some sessions never get their first prompt: a ``/ws?team=`` connection that only looks, or an
AHP ``createSession`` with no ``createChat``. Such a session is forgotten ``unprompted_session``
seconds after it was opened or after its last client left. A client that stays keeps it at most
``idle_session`` seconds. Nothing of it was recorded, so nothing is lost. Beyond a limit the
daemon refuses the request and says which limit: ``max_unprompted_per_token`` with 429 (AHP
error -32090), ``max_sessions`` and ``max_connections`` with 503 (``/healthz`` and ``/metrics``
always answer).

Command-line flags override the file. Pure apart from :func:`load_serve_config`, which reads
the file and the token sources; every problem raises :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import ipaddress
import os
import re
import string
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from orchestrator.base import ConfigError
from orchestrator.journal import db_location
from orchestrator.runtime import DEFAULT_DELTA_WINDOW, EXPORTERS, SAMPLERS, TracingSettings, ratio
from orchestrator.sessions import Limits

from ._auth import Role, Token

__all__ = [
    "DEFAULT_PORT",
    "ServeConfig",
    "load_serve_config",
    "parse_serve_config",
]

DEFAULT_PORT: Final = 8765


@attrs.frozen(kw_only=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    # A SQLite file, or postgresql://...; None: the default (orchestrator.cli._main.default_db)
    db: Path | str | None = None
    teams: Path = Path("teams")
    # Teams named one by one (``serve --team``): a team file, or module:attr of a Team in
    # Python; served with the directory's, which may then be missing.
    team_references: tuple[str, ...] = ()
    default_team: str | None = None
    tokens: tuple[Token, ...] = ()
    limits: Limits = attrs.field(factory=Limits)
    file: str = "<defaults>"
    # Several daemons on one PostgreSQL journal: this one's id (None: HOSTNAME:PID), and how
    # long a session's lease lasts unless renewed (renewed every third of it).
    node: str | None = None
    lease_ttl: float = 15.0
    # Seconds the journal's writer tries to reconnect to a PostgreSQL server it lost, or
    # waits for a SQLite file another connection locked (its sessions pause meanwhile),
    # before the journal fails. None: the journal's own default (RECONNECT_FOR, a lease's
    # TTL, on PostgreSQL; LOCKED_FOR on a file).
    reconnect_for: float | None = None
    # The DNS names clients reach the daemon by (IP literals and localhost always answer).
    server_names: tuple[str, ...] = ()
    # Seconds a chat's streamed chunks gather for at most before they are written as one
    # fact (see orchestrator.runtime._stream_writer); 0: each chunk its own fact.
    delta_window: float = DEFAULT_DELTA_WINDOW
    # [tracing]: OpenTelemetry traces, before the OTEL_* variables have their say.
    tracing: TracingSettings = attrs.field(factory=TracingSettings)

    @property
    def served_names(self) -> tuple[str, ...]:
        """The names answered besides IP literals and ``localhost``: ``server_names``, and
        the bind ``host`` when it is a name."""
        if self.host in self.server_names or _is_ip_literal(self.host):
            return self.server_names
        return (*self.server_names, self.host)

    def check(self) -> None:
        """:class:`ConfigError` for a configuration that must not start: no tokens and a
        bind address other than loopback (anyone on the network could drive the team)."""
        if not self.tokens and not is_loopback(self.host):
            raise ConfigError(
                f"no [tokens] configured, so the daemon only binds a loopback address, not "
                f"{self.host!r} (add tokens to serve other machines)",
                file=self.file,
                key_path="host",
            )


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_TOP: Final = {
    "host",
    "port",
    "db",
    "teams",
    "default_team",
    "tokens",
    "limits",
    "node",
    "lease_ttl",
    "reconnect_for",
    "server_names",
    "delta_window",
    "tracing",
}
#: One label of a host name (RFC 1123; an underscore is let in, as resolvers do).
_LABEL: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_LIMITS: Final = frozenset(a.name for a in attrs.fields(Limits))
#: Limits the input gate caps: past them it would give way to Python's own (the recursion
#: limit, int()'s digit limit) and fail where it should refuse.
_LIMIT_MAXIMA: Final = {"max_json_depth": 500, "max_json_integer_digits": 4300}
_WHOLE_LIMITS: Final = frozenset(
    name for name, default in attrs.asdict(Limits()).items() if isinstance(default, int)
)


def load_serve_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> ServeConfig:
    """Read the TOML file at ``path`` (tokens from the environment or their files)."""
    file = str(path)
    try:
        data = tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror or exc}", file=file) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: {exc.reason}", file=file) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=file) from exc
    return parse_serve_config(data, file=file, environ=os.environ if environ is None else environ)


def parse_serve_config(
    data: Mapping[str, Any], *, file: str, environ: Mapping[str, str]
) -> ServeConfig:
    """A configuration from a decoded TOML document; ``file`` names it in errors."""

    def fail(message: str, key: str) -> ConfigError:
        return ConfigError(message, file=file, key_path=key)

    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise fail(f"unknown key (known: {', '.join(sorted(_TOP))})", unknown[0])

    def text(key: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise fail("expected a non-empty string", key)
        return value

    values: dict[str, Any] = {"file": file}
    for key in ("host", "default_team", "node"):
        if key in data:
            values[key] = text(key, data[key])
    if len(values.get("node", "")) > 200:
        raise fail("at most 200 characters", "node")
    if "lease_ttl" in data:
        ttl = data["lease_ttl"]
        if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not ttl > 0:
            raise fail("expected a number of seconds above 0", "lease_ttl")
        values["lease_ttl"] = float(ttl)
    if "reconnect_for" in data:
        bound = data["reconnect_for"]
        if not isinstance(bound, int | float) or isinstance(bound, bool) or not bound >= 0:
            raise fail("expected a number of seconds, 0 or more", "reconnect_for")
        values["reconnect_for"] = float(bound)
    if "delta_window" in data:
        window = data["delta_window"]
        if not isinstance(window, int | float) or isinstance(window, bool) or not 0 <= window <= 1:
            raise fail("expected a number of seconds from 0 to 1", "delta_window")
        values["delta_window"] = float(window)
    if "server_names" in data:
        values["server_names"] = _server_names(data["server_names"], fail)
    if "db" in data:
        values["db"] = db_location(text("db", data["db"]))  # a path, or postgresql://...
    if "teams" in data:
        values["teams"] = Path(text("teams", data["teams"]))
    if "port" in data:
        port = data["port"]
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise fail("expected a port number from 0 to 65535", "port")
        values["port"] = port
    limits = data.get("limits", {})
    if not isinstance(limits, dict):
        raise fail("expected a table", "limits")
    values["limits"] = _limits(limits, fail)
    tracing = data.get("tracing", {})
    if not isinstance(tracing, dict):
        raise fail("expected a table", "tracing")
    values["tracing"] = _tracing(tracing, fail, file)
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise fail("expected a table of named tokens ([tokens.NAME])", "tokens")
    values["tokens"] = tuple(
        _token(name, entry, fail, environ, file) for name, entry in tokens.items()
    )
    return ServeConfig(**values)


def _server_names(value: Any, fail: Any) -> tuple[str, ...]:
    """``server_names``: DNS names as a client writes them in a URL, without scheme or port."""
    if not isinstance(value, list):
        raise fail('expected a list of names, e.g. ["orch.example.com"]', "server_names")
    names: list[str] = []
    for index, name in enumerate(value):
        key = f"server_names[{index}]"
        if not isinstance(name, str) or not name:
            raise fail("expected a non-empty string", key)
        if name != "*" and (
            len(name) > 253 or not all(part and _LABEL.fullmatch(part) for part in name.split("."))
        ):
            raise fail(
                f"{name!r:.80} is not a host name (letters, digits and hyphens between dots, "
                'no scheme or port; "*" for any name)',
                key,
            )
        names.append(name.lower())
    return tuple(names)


def _limits(table: Mapping[str, Any], fail: Any) -> Limits:
    unknown = sorted(set(table) - set(_LIMITS))
    if unknown:
        raise fail(f"unknown limit (known: {', '.join(sorted(_LIMITS))})", f"limits.{unknown[0]}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not (whole if key in _WHOLE_LIMITS else number) or not value > 0:  # NaN too
            kind = "a whole number" if key in _WHOLE_LIMITS else "a number"
            raise fail(f"expected {kind} above 0", f"limits.{key}")
        if value > _LIMIT_MAXIMA.get(key, value):
            raise fail(f"at most {_LIMIT_MAXIMA[key]}", f"limits.{key}")
        values[key] = value
    return Limits(**values)


_TRACING_KEYS: Final = (
    "enabled",
    "endpoint",
    "service_name",
    "sampler",
    "sampler_arg",
    "capture_content",
    "exporter",
    "trace_url",
)
#: The placeholders a ``tracing.trace_url`` may hold.
TRACE_URL_FIELDS: Final = frozenset({"trace_id", "span_id"})


def _tracing(table: Mapping[str, Any], fail: Any, file: str) -> TracingSettings:
    unknown = sorted(set(table) - set(_TRACING_KEYS))
    if unknown:
        known = ", ".join(_TRACING_KEYS)
        raise fail(f"unknown key (known: {known})", f"tracing.{unknown[0]}")
    values: dict[str, Any] = {}
    for key in ("enabled", "capture_content"):
        if key in table:
            if not isinstance(table[key], bool):
                raise fail("expected true or false", f"tracing.{key}")
            values[key] = table[key]
    for key in ("endpoint", "service_name"):
        if key in table:
            if not isinstance(table[key], str) or not table[key]:
                raise fail("expected a non-empty string", f"tracing.{key}")
            values[key] = table[key]
    endpoint = values.get("endpoint")
    if endpoint is not None and not re.match(r"https?://[^/\s]+", endpoint):
        raise fail(
            "expected an http:// or https:// URL (the OTLP/HTTP traces endpoint)",
            "tracing.endpoint",
        )
    for key, allowed in (("sampler", SAMPLERS), ("exporter", EXPORTERS)):
        if key in table:
            if table[key] not in allowed:
                raise fail(f"expected one of {', '.join(allowed)}", f"tracing.{key}")
            values[key] = table[key]
    if "sampler_arg" in table:
        arg = table["sampler_arg"]
        if isinstance(arg, bool) or not isinstance(arg, int | float):
            raise fail("expected a number from 0 to 1", "tracing.sampler_arg")
        values["sampler_arg"] = ratio(arg, file=file, key_path="tracing.sampler_arg")
    if "trace_url" in table:
        values["trace_url"] = _trace_url(table["trace_url"], fail)
    return TracingSettings(**values)


def _trace_url(template: Any, fail: Any) -> str:
    """A trace UI's URL template: http(s), with ``{trace_id}`` and maybe ``{span_id}``."""
    key = "tracing.trace_url"
    if not isinstance(template, str) or not re.match(r"https?://[^/\s]+", template):
        raise fail(
            "expected an http:// or https:// URL with {trace_id} in it "
            '("http://localhost:16686/trace/{trace_id}")',
            key,
        )
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise fail(f"not a URL template ({exc}): write a brace as {{{{ or }}}}", key) from None
    fields = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in TRACE_URL_FIELDS or spec or conversion:
            raise fail(f"unknown placeholder {{{name}}} (known: {{trace_id}}, {{span_id}})", key)
        fields.add(name)
    if "trace_id" not in fields:
        raise fail("expected {trace_id} in the URL (the trace to show)", key)
    return template


def _token(name: str, entry: Any, fail: Any, environ: Mapping[str, str], file: str) -> Token:
    key = f"tokens.{name}"
    if not isinstance(entry, dict):
        raise fail("expected a table with role and one of token, token_env, token_file", key)
    unknown = sorted(set(entry) - {"role", "token", "token_env", "token_file"})
    if unknown:
        raise fail("unknown key (known: role, token, token_env, token_file)", f"{key}.{unknown[0]}")
    roles = [str(r) for r in Role]
    role = entry.get("role")
    if role not in roles:
        raise fail(f"expected one of {', '.join(roles)}", f"{key}.role")
    sources = [k for k in ("token", "token_env", "token_file") if k in entry]
    if len(sources) != 1:
        raise fail("give exactly one of token, token_env, token_file", key)
    source = sources[0]
    where = entry[source]
    if not isinstance(where, str) or not where:
        raise fail("expected a non-empty string", f"{key}.{source}")
    if source == "token":
        secret = where
    elif source == "token_env":
        secret = environ.get(where, "")
        if not secret:
            raise fail(f"the environment variable {where} is not set", f"{key}.token_env")
    else:
        path = Path(where) if Path(where).is_absolute() else Path(file).parent / where
        try:
            secret = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise fail(f"cannot read {path}: {exc.strerror or exc}", f"{key}.token_file") from exc
    if len(secret) < 16:
        # Never echo the secret: say only what is wrong with it.
        raise fail("a token must be at least 16 characters", key)
    return Token(name=name, role=Role(role), secret=secret)
