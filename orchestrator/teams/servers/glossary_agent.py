"""A small A2A agent for the example team ``teams/remote.toml``: a glossary, offline.

It speaks the Agent2Agent protocol (its Agent Card at ``/.well-known/agent-card.json``, the
JSON-RPC binding at ``/``), written with the official SDK (``a2a-sdk``) as an agent of your
own would be: an ``AgentExecutor`` publishes the task's updates, and the SDK's request handler
and Starlette routes serve them. Start it, then run the team::

    python teams/servers/glossary_agent.py --port 8765 &
    orchestrator run teams/remote.toml "Explain the release terms"

Asked for terms it knows, it streams their definitions as an artifact, one term a chunk, then
completes. Asked for none it knows, it asks which term is meant (``input_required``) and
answers the reply. The SDK's server runs on asyncio: this program is its own process, served
by hypercorn's asyncio worker. ``--port 0`` takes a free port; the first line printed is the
agent's URL, once it is listening.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import sys

from a2a.helpers import new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)
from hypercorn.asyncio import serve
from hypercorn.config import Config
from starlette.applications import Starlette

GLOSSARY = {
    "changelog": "The list of user-visible changes of a release, newest first.",
    "release candidate": "A build that becomes the release unless a blocker is found.",
    "semver": "Versions as MAJOR.MINOR.PATCH: a breaking change bumps MAJOR.",
    "regression": "Something that worked in the last release and no longer does.",
    "hotfix": "A patch release made for one urgent fix, outside the usual schedule.",
}


def terms_in(text: str) -> list[str]:
    """The glossary's terms that ``text`` names, in the glossary's order."""
    lowered = text.lower()
    return [term for term in GLOSSARY if re.search(rf"\b{re.escape(term)}\b", lowered)]


class GlossaryAgent(AgentExecutor):
    """Defines the terms it is asked for; asks which one when it finds none."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                )
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        terms = terms_in(context.get_user_input())
        if not terms:
            question = "Which term should I define? I know: " + ", ".join(GLOSSARY) + "."
            await updater.requires_input(
                new_text_message(question, context_id=context_id, task_id=task_id)
            )
            return
        for index, term in enumerate(terms):
            await updater.add_artifact(
                [new_text_part(f"- **{term}**: {GLOSSARY[term]}\n", media_type="text/markdown")],
                artifact_id="definitions",
                name="definitions.md",
                append=index > 0,
                last_chunk=index == len(terms) - 1,
            )
        done = f"Defined {len(terms)} term{'s' if len(terms) > 1 else ''}: {', '.join(terms)}."
        await updater.complete(new_text_message(done, context_id=context_id, task_id=task_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def app(url: str) -> Starlette:
    """The agent's card and JSON-RPC routes, for an agent served at ``url``."""
    card = AgentCard(
        name="Glossary",
        description="Defines release-engineering terms, offline.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/markdown"],
        skills=[
            AgentSkill(
                id="define",
                name="Define terms",
                description="Defines the release terms a message names.",
                tags=["glossary", "release"],
                examples=["What do changelog and semver mean?"],
            )
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=GlossaryAgent(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="the port (0: a free one)")
    args = parser.parse_args()
    # Bound here, so the URL printed is listening already (and --port 0 can say its port).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    sock.set_inheritable(True)
    url = f"http://{args.host}:{sock.getsockname()[1]}/"
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    print(url, flush=True)
    try:
        asyncio.run(serve(app(url), config))  # type: ignore[arg-type]
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
