"""The daemon's one port, the transport: app assembly, metrics, the WebSocket sockets and
HTTP endpoints, the hypercorn seam and outbox, auth, rate limits, systemd notification and
daemon config. The daemon and its sessions are :mod:`orchestrator.sessions`.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._app import *  # noqa: F403
    from ._auth import *  # noqa: F403
    from ._config import *  # noqa: F403
    from ._hypercorn_ws import *  # noqa: F403
    from ._outbox import *  # noqa: F403
    from ._principals import *  # noqa: F403
    from ._rate_limit import *  # noqa: F403
    from ._served_names import *  # noqa: F403
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
            "DEFAULT_PORT": "._config",
            "FrameWriter": "._hypercorn_ws",
            "HypercornSeam": "._hypercorn_ws",
            "LOCAL": "._auth",
            "Outbox": "._outbox",
            "Permission": "._auth",
            "Principals": "._principals",
            "Role": "._auth",
            "SCOPE_KEY": "._hypercorn_ws",
            "SendLock": "._hypercorn_ws",
            "ServeConfig": "._config",
            "ServedNames": "._served_names",
            "Token": "._auth",
            "TokenBucket": "._rate_limit",
            "WebAssets": "._web_assets",
            "WebError": "._web",
            "assemble": "._app",
            "frame_writer": "._hypercorn_ws",
            "host_name": "._served_names",
            "is_served": "._served_names",
            "load_serve_config": "._config",
            "parse_serve_config": "._config",
            "seam_problem": "._hypercorn_ws",
            "serve": "._app",
            "session_summary": "._web",
            "web_root": "._web_assets",
            "web_routes": "._web",
        },
    )
