"""What every layer stands on: the errors, the clock, immutable updates, keyed vectors,
the input gate every JSON from outside passes, and compact JSON.

Pure: no trio, no IO.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_facade

if TYPE_CHECKING:
    from ._by_class import registrar, resolve_subclass
    from ._clock import now_timestamp, parse_timestamp, timestamp, utc_now
    from ._compact_json import compact_dumps
    from ._errors import (
        ConfigError,
        FactLogError,
        IllegalTransitionError,
        LocalProtocolError,
        ModelError,
        ModelRequestError,
        ModelStreamError,
        OrchestratorError,
        PeerProtocolError,
        ProtocolError,
        RpcError,
        RunError,
        RunInputError,
        ScheduleError,
        SessionExistsError,
        SessionLimitError,
        TeamFileError,
        UnavailableError,
    )
    from ._evolve import evolve, slot_init
    from ._input_gate import (
        JSON_LIMITS,
        JsonLimits,
        clean_text,
        parse_json,
        parse_json_counted,
        text_problem,
    )
    from ._keyed import KeyedVector
    from ._redact import (
        MIN_SECRET_CHARS,
        REDACTED,
        SENSITIVE_HEADERS,
        SENSITIVE_KEYS,
        forget_secrets,
        redact_text,
        register_secret,
        registered_secrets,
    )

__all__ = [
    "JSON_LIMITS",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SENSITIVE_HEADERS",
    "SENSITIVE_KEYS",
    "ConfigError",
    "FactLogError",
    "IllegalTransitionError",
    "JsonLimits",
    "KeyedVector",
    "LocalProtocolError",
    "ModelError",
    "ModelRequestError",
    "ModelStreamError",
    "OrchestratorError",
    "PeerProtocolError",
    "ProtocolError",
    "RpcError",
    "RunError",
    "RunInputError",
    "ScheduleError",
    "SessionExistsError",
    "SessionLimitError",
    "TeamFileError",
    "UnavailableError",
    "clean_text",
    "compact_dumps",
    "evolve",
    "forget_secrets",
    "lazy_facade",
    "now_timestamp",
    "parse_json",
    "parse_json_counted",
    "parse_timestamp",
    "redact_text",
    "register_secret",
    "registered_secrets",
    "registrar",
    "resolve_subclass",
    "slot_init",
    "text_problem",
    "timestamp",
    "utc_now",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._by_class": ("registrar", "resolve_subclass"),
            "._clock": ("now_timestamp", "parse_timestamp", "timestamp", "utc_now"),
            "._compact_json": ("compact_dumps",),
            "._redact": (
                "MIN_SECRET_CHARS",
                "REDACTED",
                "SENSITIVE_HEADERS",
                "SENSITIVE_KEYS",
                "forget_secrets",
                "redact_text",
                "register_secret",
                "registered_secrets",
            ),
            "._errors": (
                "ConfigError",
                "FactLogError",
                "IllegalTransitionError",
                "LocalProtocolError",
                "ModelError",
                "ModelRequestError",
                "ModelStreamError",
                "OrchestratorError",
                "PeerProtocolError",
                "ProtocolError",
                "RpcError",
                "RunError",
                "RunInputError",
                "ScheduleError",
                "SessionExistsError",
                "SessionLimitError",
                "TeamFileError",
                "UnavailableError",
            ),
            "._evolve": ("evolve", "slot_init"),
            "._input_gate": (
                "JSON_LIMITS",
                "JsonLimits",
                "clean_text",
                "parse_json",
                "parse_json_counted",
                "text_problem",
            ),
            "._keyed": ("KeyedVector",),
        },
    )
