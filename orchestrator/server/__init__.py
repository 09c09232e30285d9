"""The daemon and its one port: app assembly, the daemon and its live sessions, the
background-teammate scheduler, metrics, the WebSocket sockets and HTTP endpoints, the
hypercorn seam and outbox, auth, rate limits, systemd notification and daemon config.
"""

from ._agent_socket import AgentSocket
from ._agui_endpoint import AguiRequestError, agui_run
from ._ahp_dispatch import ActionDispatcher
from ._ahp_socket import AhpSocket, ClientIds, serve_ahp
from ._app import ConnectionCap, DaemonAssembly, assemble, build_app, serve
from ._auth import LOCAL, Authenticator, Permission, Principal, Role, Token
from ._client_frames import client_frames
from ._config import (
    DEFAULT_PORT,
    Limits,
    ServeConfig,
    is_loopback,
    load_serve_config,
    parse_serve_config,
)
from ._daemon import Companion, Daemon, load_teams
from ._hypercorn_ws import SCOPE_KEY, FrameWriter, HypercornSeam, OpenSockets, frame_writer
from ._live_session import (
    CHAT_PREFIX,
    SESSION_PREFIX,
    LiveSession,
    SessionHost,
    SessionObserver,
    Sink,
    session_id,
    session_uri,
)
from ._metrics import CONTENT_TYPE, DaemonMetrics
from ._outbox import CLOSE_FELL_BEHIND, CLOSE_GOING_AWAY, Outbox
from ._rate_limit import TokenBucket
from ._scheduler import Scheduler, Teammate, Watch, describe_schedule, run_usage
from ._sd_notify import SystemdNotifier
from ._teammates_socket import serve_teammates

__all__ = [
    "CHAT_PREFIX",
    "CLOSE_FELL_BEHIND",
    "CLOSE_GOING_AWAY",
    "CONTENT_TYPE",
    "DEFAULT_PORT",
    "LOCAL",
    "SCOPE_KEY",
    "SESSION_PREFIX",
    "ActionDispatcher",
    "AgentSocket",
    "AguiRequestError",
    "AhpSocket",
    "Authenticator",
    "ClientIds",
    "Companion",
    "ConnectionCap",
    "Daemon",
    "DaemonAssembly",
    "DaemonMetrics",
    "FrameWriter",
    "HypercornSeam",
    "Limits",
    "LiveSession",
    "OpenSockets",
    "Outbox",
    "Permission",
    "Principal",
    "Role",
    "Scheduler",
    "ServeConfig",
    "SessionHost",
    "SessionObserver",
    "Sink",
    "SystemdNotifier",
    "Teammate",
    "Token",
    "TokenBucket",
    "Watch",
    "agui_run",
    "assemble",
    "build_app",
    "client_frames",
    "describe_schedule",
    "frame_writer",
    "is_loopback",
    "load_serve_config",
    "load_teams",
    "parse_serve_config",
    "run_usage",
    "serve",
    "serve_ahp",
    "serve_teammates",
    "session_id",
    "session_uri",
]
