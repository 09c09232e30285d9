"""The daemon's one port, the transport: app assembly, metrics, the WebSocket sockets and
HTTP endpoints, the hypercorn seam and outbox, auth, rate limits, systemd notification and
daemon config. The daemon and its sessions are :mod:`orchestrator.sessions`.

The names of the daemon's domain that this facade exported before the sessions layer was made
(``Daemon``, ``LiveSession``, ``Scheduler``, ...) are still reached here, from
:mod:`orchestrator.sessions`; they are not in :data:`__all__`, which names the server's own.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from orchestrator.sessions import Cluster as Cluster
    from orchestrator.sessions import Command as Command
    from orchestrator.sessions import CommandRoute as CommandRoute
    from orchestrator.sessions import CommandServer as CommandServer
    from orchestrator.sessions import Daemon as Daemon
    from orchestrator.sessions import DaemonStatistics as DaemonStatistics
    from orchestrator.sessions import EnvelopeCache as EnvelopeCache
    from orchestrator.sessions import EnvelopeFold as EnvelopeFold
    from orchestrator.sessions import ExpectedAction as ExpectedAction
    from orchestrator.sessions import FollowedRuntime as FollowedRuntime
    from orchestrator.sessions import Forwarder as Forwarder
    from orchestrator.sessions import GraphCache as GraphCache
    from orchestrator.sessions import Limits as Limits
    from orchestrator.sessions import LiveSession as LiveSession
    from orchestrator.sessions import ReadFacts as ReadFacts
    from orchestrator.sessions import Reclaimer as Reclaimer
    from orchestrator.sessions import ReclaimStatistics as ReclaimStatistics
    from orchestrator.sessions import Refusal as Refusal
    from orchestrator.sessions import Scheduler as Scheduler
    from orchestrator.sessions import SessionFolds as SessionFolds
    from orchestrator.sessions import SessionRecorder as SessionRecorder
    from orchestrator.sessions import SessionRuntime as SessionRuntime
    from orchestrator.sessions import SharedText as SharedText
    from orchestrator.sessions import SqliteFollowing as SqliteFollowing
    from orchestrator.sessions import TeamLog as TeamLog
    from orchestrator.sessions import Teammate as Teammate
    from orchestrator.sessions import ahp_envelopes as ahp_envelopes
    from orchestrator.sessions import carry_out as carry_out
    from orchestrator.sessions import decode_command as decode_command
    from orchestrator.sessions import decode_error as decode_error
    from orchestrator.sessions import decode_origin as decode_origin
    from orchestrator.sessions import describe_schedule as describe_schedule
    from orchestrator.sessions import encode_error as encode_error
    from orchestrator.sessions import encode_origin as encode_origin
    from orchestrator.sessions import follow_session as follow_session
    from orchestrator.sessions import team_frame as team_frame

    from ._app import assemble, serve
    from ._auth import COOKIE_LIFETIME, COOKIE_NAME, LOCAL, Authenticator, Permission, Role, Token
    from ._config import DEFAULT_PORT, ServeConfig, load_serve_config, parse_serve_config
    from ._hypercorn_ws import (
        SCOPE_KEY,
        FrameWriter,
        HypercornSeam,
        SendLock,
        frame_writer,
        seam_problem,
    )
    from ._outbox import CLOSE_FELL_BEHIND, CLOSE_GOING_AWAY, CLOSE_INTERNAL_ERROR, Outbox
    from ._principals import AccessRefusedError, Principals
    from ._rate_limit import TokenBucket
    from ._served_names import ANY_NAME, ServedNames, host_name, is_served
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
    "FrameWriter",
    "HypercornSeam",
    "Outbox",
    "Permission",
    "Principals",
    "Role",
    "SendLock",
    "ServeConfig",
    "ServedNames",
    "Token",
    "TokenBucket",
    "WebAssets",
    "WebError",
    "assemble",
    "frame_writer",
    "host_name",
    "is_served",
    "load_serve_config",
    "parse_serve_config",
    "seam_problem",
    "serve",
    "session_summary",
    "web_root",
    "web_routes",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            # Before the sessions layer, these were the server's: still reached here.
            "orchestrator.sessions": (
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
                "GraphCache",
                "Limits",
                "LiveSession",
                "ReadFacts",
                "ReclaimStatistics",
                "Reclaimer",
                "Refusal",
                "Scheduler",
                "SessionFolds",
                "SessionRecorder",
                "SessionRuntime",
                "SharedText",
                "SqliteFollowing",
                "TeamLog",
                "Teammate",
                "ahp_envelopes",
                "carry_out",
                "decode_command",
                "decode_error",
                "decode_origin",
                "describe_schedule",
                "encode_error",
                "encode_origin",
                "follow_session",
                "team_frame",
            ),
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
            "._config": (
                "DEFAULT_PORT",
                "ServeConfig",
                "load_serve_config",
                "parse_serve_config",
            ),
            "._hypercorn_ws": (
                "FrameWriter",
                "HypercornSeam",
                "SCOPE_KEY",
                "SendLock",
                "frame_writer",
                "seam_problem",
            ),
            "._outbox": ("CLOSE_FELL_BEHIND", "CLOSE_GOING_AWAY", "CLOSE_INTERNAL_ERROR", "Outbox"),
            "._principals": ("AccessRefusedError", "Principals"),
            "._rate_limit": ("TokenBucket",),
            "._served_names": ("ANY_NAME", "ServedNames", "host_name", "is_served"),
            "._web": ("WebError", "session_summary", "web_routes"),
            "._web_assets": ("Asset", "CONTENT_SECURITY_POLICY", "WebAssets", "web_root"),
        },
    )
