"""A minimal agent-channel client: open a session of a team, send a prompt, print what the
team does, answer its approvals and questions from the terminal.

    orchestrator serve &                        # in another terminal, from the project root
    python examples/agent_client.py "Ship the release notes" --team delivery
    python examples/agent_client.py --session ID   # reattach: history, then live events

Options: --url (default ws://127.0.0.1:8765), --token (a bearer token, when the daemon has
tokens), --approve (approve every request without asking).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import trio
from trio_websocket import ConnectionClosed, open_websocket_url


def show(event: dict[str, Any]) -> None:
    match event.get("type"):
        case "text":
            print(event["content"], end="", flush=True)
        case "thinking":
            print(f"\x1b[2m{event['content']}\x1b[0m", end="", flush=True)
        case "tool_invocation":
            print(f"\n→ {event['toolName']} {json.dumps(event['args'])}")
        case "tool_result":
            print(f"← {str(event['result'])[:200]}")
        case "result":
            print(f"\n\n== {event['summary'][:500]}")
        case "error":
            print(f"\n!! {event.get('code', 'error')}: {event['message']}", file=sys.stderr)
        case "history":
            print(f"({len(event['messages'])} events of history)")
        case "view_update":
            print(f"[view {event['view_type']} updated]")
        case "init":
            print(f"session {event['sessionId']} of team {event['team']}")


async def main(args: argparse.Namespace) -> None:
    query = f"session={args.session}" if args.session else f"team={args.team}"
    headers = [(b"authorization", f"Bearer {args.token}".encode())] if args.token else None
    async with open_websocket_url(f"{args.url}/ws?{query}", extra_headers=headers) as ws:
        if args.prompt:
            await ws.send_message(
                json.dumps({"channel": "agent", "type": "prompt", "prompt": args.prompt})
            )
        try:
            while True:
                event = json.loads(await ws.get_message())
                show(event)
                if event.get("type") == "permission_request":
                    print(
                        f"\n{event['agentName']} wants to run {event['toolName']}"
                        f"({event['summary']})."
                    )
                    yes = args.approve or (
                        await trio.to_thread.run_sync(input, "Approve? [y/N] ")
                    ).strip().lower() in ("y", "yes")
                    kind = "approve" if yes else "reject"
                    await ws.send_message(
                        json.dumps(
                            {"channel": "agent", "type": kind, "requestId": event["requestId"]}
                        )
                    )
                elif event.get("type") == "question":
                    answer = await trio.to_thread.run_sync(input, f"\n{event['questions'][0]} ")
                    await ws.send_message(
                        json.dumps(
                            {
                                "channel": "agent",
                                "type": "tool_response",
                                "toolCallId": event["toolCallId"],
                                "result": answer,
                            }
                        )
                    )
                elif event.get("type") == "done" and args.prompt:
                    return
        except ConnectionClosed as closed:
            print(f"\nconnection closed: {closed.reason}", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?")
    parser.add_argument("--team", default="delivery")
    parser.add_argument("--session")
    parser.add_argument("--url", default="ws://127.0.0.1:8765")
    parser.add_argument("--token")
    parser.add_argument("--approve", action="store_true")
    trio.run(main, parser.parse_args())
