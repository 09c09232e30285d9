"""Where model rounds come from: the backend contract (defined with the model round in
:mod:`orchestrator.core`), the scripted backend, the OpenAI-compatible backend with its wire
form and transcript, backend plugins, and the factory that makes each agent's backend from
its team file.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._contract import (
        Backend,
        ModelEvent,
        ReasoningDelta,
        RoundContext,
        TextDelta,
        ToolCallInputDelta,
        ToolCallRequest,
        ToolCallStarted,
        ToolOutcome,
        UsageReport,
    )
    from ._factory import backend_factory
    from ._openai import HOSTED_API, OpenAIBackend, base_url_of, http_client, missing_key
    from ._openai_wire import (
        ChunkAssembler,
        provider_message,
        request_body,
        retry_after_seconds,
        served_models,
        serves_model,
    )
    from ._plugins import (
        ENTRY_POINT_GROUP,
        BackendSetup,
        PluginFactory,
        backend_problems,
        make_plugin_backend,
        resolve_plugin,
    )
    from ._probe import PROBE_TIMEOUT, ModelServer, model_servers, probe_model_servers
    from ._reachability import why_unreachable, worth_retrying
    from ._scripted import (
        ScriptedBackend,
        ScriptedFailure,
        chunk_text,
        render_json,
        render_text,
        tool_call_id,
        turn_index_of,
    )
    from ._transcript import (
        AssistantMessage,
        AssistantToolCall,
        ToolMessage,
        TranscriptMessage,
        UserMessage,
        tool_call_ids,
        transcript,
    )

__all__ = [
    "ENTRY_POINT_GROUP",
    "HOSTED_API",
    "PROBE_TIMEOUT",
    "AssistantMessage",
    "AssistantToolCall",
    "Backend",
    "BackendSetup",
    "ChunkAssembler",
    "ModelEvent",
    "ModelServer",
    "OpenAIBackend",
    "PluginFactory",
    "ReasoningDelta",
    "RoundContext",
    "ScriptedBackend",
    "ScriptedFailure",
    "TextDelta",
    "ToolCallInputDelta",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolMessage",
    "ToolOutcome",
    "TranscriptMessage",
    "UsageReport",
    "UserMessage",
    "backend_factory",
    "backend_problems",
    "base_url_of",
    "chunk_text",
    "http_client",
    "make_plugin_backend",
    "missing_key",
    "model_servers",
    "probe_model_servers",
    "provider_message",
    "render_json",
    "render_text",
    "request_body",
    "resolve_plugin",
    "retry_after_seconds",
    "served_models",
    "serves_model",
    "tool_call_id",
    "tool_call_ids",
    "transcript",
    "turn_index_of",
    "why_unreachable",
    "worth_retrying",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._contract": (
                "Backend",
                "ModelEvent",
                "ReasoningDelta",
                "RoundContext",
                "TextDelta",
                "ToolCallInputDelta",
                "ToolCallRequest",
                "ToolCallStarted",
                "ToolOutcome",
                "UsageReport",
            ),
            "._factory": ("backend_factory",),
            "._openai": (
                "HOSTED_API",
                "OpenAIBackend",
                "base_url_of",
                "http_client",
                "missing_key",
            ),
            "._openai_wire": (
                "ChunkAssembler",
                "provider_message",
                "request_body",
                "retry_after_seconds",
                "served_models",
                "serves_model",
            ),
            "._probe": ("PROBE_TIMEOUT", "ModelServer", "model_servers", "probe_model_servers"),
            "._reachability": ("why_unreachable", "worth_retrying"),
            "._plugins": (
                "BackendSetup",
                "ENTRY_POINT_GROUP",
                "PluginFactory",
                "backend_problems",
                "make_plugin_backend",
                "resolve_plugin",
            ),
            "._scripted": (
                "ScriptedBackend",
                "ScriptedFailure",
                "chunk_text",
                "render_json",
                "render_text",
                "tool_call_id",
                "turn_index_of",
            ),
            "._transcript": (
                "AssistantMessage",
                "AssistantToolCall",
                "ToolMessage",
                "TranscriptMessage",
                "UserMessage",
                "tool_call_ids",
                "transcript",
            ),
        },
    )
