"""The daemon and its one port: app assembly, the daemon and its live sessions, the
background-teammate scheduler, metrics, the WebSocket sockets and HTTP endpoints, the
hypercorn seam and outbox, auth, rate limits, systemd notification and daemon config.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._app import *  # noqa: F403
    from ._auth import *  # noqa: F403
    from ._cluster import *  # noqa: F403
    from ._config import *  # noqa: F403
    from ._daemon import *  # noqa: F403
    from ._expected_action import *  # noqa: F403
    from ._followed import *  # noqa: F403
    from ._forwarding import *  # noqa: F403
    from ._hypercorn_ws import *  # noqa: F403
    from ._live_session import *  # noqa: F403
    from ._outbox import *  # noqa: F403
    from ._principals import *  # noqa: F403
    from ._rate_limit import *  # noqa: F403
    from ._reclaim import *  # noqa: F403
    from ._scheduler import *  # noqa: F403
    from ._served_names import *  # noqa: F403
    from ._session_folds import *  # noqa: F403
    from ._sqlite_following import *  # noqa: F403
    from ._team_log import *  # noqa: F403
    from ._web import *  # noqa: F403
    from ._web_assets import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ANY_NAME": "._served_names",
            "AccessRefusedError": "._principals",
            "Asset": "._web_assets",
            "Authenticator": "._auth",
            "CLOSE_FELL_BEHIND": "._outbox",
            "CLOSE_GOING_AWAY": "._outbox",
            "CLOSE_INTERNAL_ERROR": "._outbox",
            "CONTENT_SECURITY_POLICY": "._web_assets",
            "COOKIE_LIFETIME": "._auth",
            "COOKIE_NAME": "._auth",
            "Cluster": "._cluster",
            "Command": "._forwarding",
            "CommandRoute": "._followed",
            "CommandServer": "._forwarding",
            "DEFAULT_PORT": "._config",
            "Daemon": "._daemon",
            "DaemonStatistics": "._daemon",
            "EnvelopeCache": "._session_folds",
            "EnvelopeFold": "._session_folds",
            "ExpectedAction": "._expected_action",
            "FollowedRuntime": "._followed",
            "Forwarder": "._forwarding",
            "FrameWriter": "._hypercorn_ws",
            "GraphCache": "._session_folds",
            "HypercornSeam": "._hypercorn_ws",
            "LOCAL": "._auth",
            "Limits": "._config",
            "LiveSession": "._live_session",
            "Outbox": "._outbox",
            "Permission": "._auth",
            "Principals": "._principals",
            "ReadFacts": "._team_log",
            "ReclaimStatistics": "._reclaim",
            "Reclaimer": "._reclaim",
            "Refusal": "._followed",
            "Role": "._auth",
            "SCOPE_KEY": "._hypercorn_ws",
            "Scheduler": "._scheduler",
            "SendLock": "._hypercorn_ws",
            "ServeConfig": "._config",
            "ServedNames": "._served_names",
            "SessionFolds": "._session_folds",
            "SessionRecorder": "._live_session",
            "SessionRuntime": "._live_session",
            "SharedText": "._hypercorn_ws",
            "SqliteFollowing": "._sqlite_following",
            "TeamLog": "._team_log",
            "Teammate": "._scheduler",
            "Token": "._auth",
            "TokenBucket": "._rate_limit",
            "WebAssets": "._web_assets",
            "WebError": "._web",
            "ahp_envelopes": "._live_session",
            "assemble": "._app",
            "carry_out": "._forwarding",
            "decode_command": "._forwarding",
            "decode_error": "._forwarding",
            "decode_origin": "._expected_action",
            "describe_schedule": "._scheduler",
            "encode_error": "._forwarding",
            "encode_origin": "._expected_action",
            "follow_session": "._followed",
            "frame_writer": "._hypercorn_ws",
            "host_name": "._served_names",
            "is_served": "._served_names",
            "load_serve_config": "._config",
            "parse_serve_config": "._config",
            "seam_problem": "._hypercorn_ws",
            "serve": "._app",
            "session_summary": "._web",
            "team_frame": "._team_log",
            "web_root": "._web_assets",
            "web_routes": "._web",
        },
    )
