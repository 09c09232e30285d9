"""A minimal agent-channel client: open a session of a team, send a prompt, print what the
team does (the coordinator's stream, and each worker as it starts and ends, from the team
channel), answer its approvals and questions from the terminal.

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
from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError, open_websocket_url


class Screen:
    """What the client prints; the answer once (streamed as text, not again at the end)."""

    def __init__(self) -> None:
        self.streamed = False  # the coordinator's answer came as text

    def show(self, event: dict[str, Any]) -> None:
        match event.get("type"):
            case "text":
                self.streamed = True
                print(event["content"], end="", flush=True)
            case "thinking":
                print(f"\x1b[2m{event['content']}\x1b[0m", end="", flush=True)
            case "tool_invocation":
                print(f"\n→ {event['toolName']} {json.dumps(event['args'])}")
            case "tool_result":
                print(f"← {str(event['result'])[:200]}")
            case "result":
                # The answer was streamed as text: say only that the turn is over.
                print("\n\n== done" if self.streamed else f"\n\n== {event['summary'][:500]}")
                self.streamed = False
            case "error":
                print(f"\n!! {event.get('code', 'error')}: {event['message']}", file=sys.stderr)
            case "history":
                print(f"({len(event['messages'])} events of history)")
            case "view_update":
                print(f"[view {event['view_type']} updated]")
            case "init":
                print(f"session {event['sessionId']} of team {event['team']}")

    def show_team(self, envelope: dict[str, Any]) -> None:
        """A worker's start and end, from the team channel's Agent UI envelopes."""
        payload = envelope.get("payload") or {}
        if payload.get("role") == "coordinator" or payload.get("runtimeEntity") == "agent_turn":
            return  # the coordinator is the agent channel's own
        who = envelope.get("agentId", payload.get("agentName", "?"))
        match envelope.get("type"):
            case "agent.spawned":
                print(f"\n  + {who} started")
            case "agent.completed" | "agent.failed":
                state = "done" if envelope["type"] == "agent.completed" else "failed"
                print(f"\n  ✔ {who} {state}: {str(payload.get('summary', ''))[:160]}")


def asker(event: dict[str, Any]) -> str:
    """Who asks: ``researcher #3 (task: ...)`` (an older daemon sends the name alone)."""
    name = event.get("agentName") or "the agent"
    if "agentNumber" in event:
        name += f" #{event['agentNumber']}"
    if event.get("taskTitle"):
        name += f" (task: {event['taskTitle']})"
    return name


async def main(args: argparse.Namespace) -> None:
    query = f"session={args.session}" if args.session else f"team={args.team}"
    headers = [(b"authorization", f"Bearer {args.token}".encode())] if args.token else None
    screen = Screen()
    async with open_websocket_url(f"{args.url}/ws?{query}", extra_headers=headers) as ws:
        # Workers are not on the agent channel: follow the team channel too.
        await ws.send_message(json.dumps({"channel": "team", "type": "subscribe"}))
        if args.prompt:
            await ws.send_message(
                json.dumps({"channel": "agent", "type": "prompt", "prompt": args.prompt})
            )
        try:
            while True:
                event = json.loads(await ws.get_message())
                if event.get("channel") == "team":
                    if event.get("type") == "event":
                        screen.show_team(event["event"])
                    continue
                screen.show(event)
                if event.get("type") == "permission_request":
                    print(f"\n{asker(event)} wants to run {event['toolName']}({event['summary']}).")
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
                    asked = f"\n{asker(event)} asks: {event['questions'][0]} "
                    answer = await trio.to_thread.run_sync(input, asked)
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


def refusal(exc: ConnectionRejected) -> str:
    """The daemon's reason for refusing the connection (its JSON ``error``), with the status."""
    try:
        error = json.loads(exc.body or b"{}").get("error")
    except (ValueError, AttributeError):
        error = None
    return f"HTTP {exc.status_code}" + (f": {error}" if error else "")


def run(args: argparse.Namespace) -> int:
    """Run the client; a daemon that refuses or is not there is one line and exit 1."""
    try:
        trio.run(main, args)
    except ConnectionRejected as exc:
        print(f"agent_client: the daemon at {args.url} refused: {refusal(exc)}", file=sys.stderr)
        return 1
    except (OSError, HandshakeError) as exc:
        # trio-websocket's HandshakeError says nothing itself: the reason is its cause.
        reason = str(exc) or str(exc.__cause__ or "") or "the connection failed"
        print(f"agent_client: no daemon answers at {args.url}: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?")
    parser.add_argument("--team", default="delivery")
    parser.add_argument("--session")
    parser.add_argument("--url", default="ws://127.0.0.1:8765")
    parser.add_argument("--token")
    parser.add_argument("--approve", action="store_true")
    sys.exit(run(parser.parse_args()))
