"""The daemon and its one port: app assembly, the daemon and its live sessions, the
background-teammate scheduler, metrics, the WebSocket sockets and HTTP endpoints, the
hypercorn seam and outbox, auth, rate limits, systemd notification and daemon config.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._app import assemble, serve
    from ._auth import COOKIE_LIFETIME, COOKIE_NAME, LOCAL, Authenticator, Permission, Role, Token
    from ._cluster import Cluster
    from ._config import DEFAULT_PORT, Limits, ServeConfig, load_serve_config, parse_serve_config
    from ._daemon import Daemon, DaemonStatistics
    from ._expected_action import ExpectedAction, decode_origin, encode_origin
    from ._followed import CommandRoute, FollowedRuntime, Refusal, follow_session
    from ._forwarding import (
        Command,
        CommandServer,
        Forwarder,
        carry_out,
        decode_command,
        decode_error,
        encode_error,
    )
    from ._hypercorn_ws import (
        SCOPE_KEY,
        FrameWriter,
        HypercornSeam,
        SendLock,
        SharedText,
        frame_writer,
        seam_problem,
    )
    from ._live_session import LiveSession, SessionRecorder, SessionRuntime, ahp_envelopes
    from ._outbox import CLOSE_FELL_BEHIND, CLOSE_GOING_AWAY, CLOSE_INTERNAL_ERROR, Outbox
    from ._principals import AccessRefusedError, Principals
    from ._rate_limit import TokenBucket
    from ._reclaim import Reclaimer, ReclaimStatistics
    from ._scheduler import Scheduler, Teammate, describe_schedule
    from ._served_names import ANY_NAME, ServedNames, host_name, is_served
    from ._session_folds import EnvelopeCache, EnvelopeFold, GraphCache, SessionFolds
    from ._sqlite_following import SqliteFollowing
    from ._team_log import ReadFacts, TeamLog, team_frame
    from ._web import WebError, session_summary, web_routes
    from ._web_assets import CONTENT_SECURITY_POLICY, Asset, WebAssets, web_root

__all__ = [
    "ANY_NAME",
    "CLOSE_FELL_BEHIND",
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL_ERROR",
    "CONTENT_SECURITY_POLICY",
    "COOKIE_LIFETIME",
    "COOKIE_NAME",
    "DEFAULT_PORT",
    "LOCAL",
    "SCOPE_KEY",
    "AccessRefusedError",
    "Asset",
    "Authenticator",
    "Cluster",
    "Command",
    "CommandRoute",
    "CommandServer",
    "Daemon",
    "DaemonStatistics",
    "EnvelopeCache",
    "EnvelopeFold",
    "ExpectedAction",
    "FollowedRuntime",
    "Forwarder",
    "FrameWriter",
    "GraphCache",
    "HypercornSeam",
    "Limits",
    "LiveSession",
    "Outbox",
    "Permission",
    "Principals",
    "ReadFacts",
    "ReclaimStatistics",
    "Reclaimer",
    "Refusal",
    "Role",
    "Scheduler",
    "SendLock",
    "ServeConfig",
    "ServedNames",
    "SessionFolds",
    "SessionRecorder",
    "SessionRuntime",
    "SharedText",
    "SqliteFollowing",
    "TeamLog",
    "Teammate",
    "Token",
    "TokenBucket",
    "WebAssets",
    "WebError",
    "ahp_envelopes",
    "assemble",
    "carry_out",
    "decode_command",
    "decode_error",
    "decode_origin",
    "describe_schedule",
    "encode_error",
    "encode_origin",
    "follow_session",
    "frame_writer",
    "host_name",
    "is_served",
    "load_serve_config",
    "parse_serve_config",
    "seam_problem",
    "serve",
    "session_summary",
    "team_frame",
    "web_root",
    "web_routes",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._app": ("assemble", "serve"),
            "._auth": (
                "Authenticator",
                "COOKIE_LIFETIME",
                "COOKIE_NAME",
                "LOCAL",
                "Permission",
                "Role",
                "Token",
            ),
            "._cluster": ("Cluster",),
            "._config": (
                "DEFAULT_PORT",
                "Limits",
                "ServeConfig",
                "load_serve_config",
                "parse_serve_config",
            ),
            "._daemon": ("Daemon", "DaemonStatistics"),
            "._expected_action": ("ExpectedAction", "decode_origin", "encode_origin"),
            "._followed": ("CommandRoute", "FollowedRuntime", "Refusal", "follow_session"),
            "._forwarding": (
                "Command",
                "CommandServer",
                "Forwarder",
                "carry_out",
                "decode_command",
                "decode_error",
                "encode_error",
            ),
            "._hypercorn_ws": (
                "FrameWriter",
                "HypercornSeam",
                "SCOPE_KEY",
                "SendLock",
                "SharedText",
                "frame_writer",
                "seam_problem",
            ),
            "._live_session": ("LiveSession", "SessionRecorder", "SessionRuntime", "ahp_envelopes"),
            "._outbox": ("CLOSE_FELL_BEHIND", "CLOSE_GOING_AWAY", "CLOSE_INTERNAL_ERROR", "Outbox"),
            "._principals": ("AccessRefusedError", "Principals"),
            "._reclaim": ("ReclaimStatistics", "Reclaimer"),
            "._rate_limit": ("TokenBucket",),
            "._scheduler": ("Scheduler", "Teammate", "describe_schedule"),
            "._served_names": ("ANY_NAME", "ServedNames", "host_name", "is_served"),
            "._session_folds": ("EnvelopeCache", "EnvelopeFold", "GraphCache", "SessionFolds"),
            "._sqlite_following": ("SqliteFollowing",),
            "._team_log": ("ReadFacts", "TeamLog", "team_frame"),
            "._web": ("WebError", "session_summary", "web_routes"),
            "._web_assets": ("Asset", "CONTENT_SECURITY_POLICY", "WebAssets", "web_root"),
        },
    )
