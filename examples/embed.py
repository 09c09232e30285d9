"""Run a team from Python with a backend of your own, watching it as it happens.

    python examples/embed.py ["a prompt"]

The team is one agent whose model is ``Shout`` below (a backend in a dozen lines: it
answers with the prompt, shouted), given to the run in place of the one its team file
names. Every fact is printed once it is recorded, with the
Agent UI envelopes it projects to; then the outcome. Nothing else writes to stdout: the
library logs through the standard library's ``logging``, which this script leaves alone.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator

import trio

import orchestrator

TEAM = """
[team]
name = "embedded"
topology = "solo_run"
coordinator = "lead"

[agents.lead]
role = "coordinator"
"""


class Shout:
    """A model backend: one round, the last user message in capitals, word by word."""

    async def stream_round(
        self, context: orchestrator.RoundContext
    ) -> AsyncGenerator[orchestrator.ModelEvent, None]:
        said = next((text for role, text in reversed(context.history) if role == "user"), "")
        for word in said.upper().split():
            yield orchestrator.TextDelta(text=word + " ")
        yield orchestrator.UsageReport(input_tokens=len(said.split()), output_tokens=0)


async def main(prompt: str) -> int:
    team = orchestrator.parse_team(TEAM, file="embedded.toml")
    async with orchestrator.open_run(team, prompt, backends=Shout()) as run:
        async for update in run.updates():
            print(f"{update.fact.sequence:3} {update.fact.type}")
            for envelope in update.envelopes:
                print(f"      → {envelope.type}")
        outcome = await run.outcome()
    print(f"{outcome.status}: {outcome.result}")
    return 0 if outcome.status is orchestrator.RunStatus.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(trio.run(main, " ".join(sys.argv[1:]) or "ship the release notes"))
