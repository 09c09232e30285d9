"""A coordinator and two workers, defined in Python, run from asyncio.

    python examples/quickstart.py

The agents play scripted turns, so it runs offline; give them ``backend="openai"`` and
``model=...`` (and drop ``turns``) to run them on a model.
"""

import asyncio

from orchestrator import Agent, ApprovalRequested, Team, aio, tool


@tool
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@tool(needs_approval=True)
def publish(target: str) -> str:
    """Publish the release notes on a page."""
    return f"published on the {target}"


writer = Agent(
    "writer",
    role="writes notes",
    tools=[word_count],
    turns=[
        {
            "steps": [
                {"tool": word_count, "input": {"text": "{task}"}},
                {"say": "Drafted notes for: {task} ({outcomes} words)"},
            ]
        }
    ],
)
publisher = Agent(
    "publisher",
    role="publishes",
    tools=[publish],
    turns=[
        {"steps": [{"tool": publish, "input": {"target": "release page"}}, {"say": "{outcomes}"}]}
    ],
)
lead = Agent(
    "lead",
    role="coordinator",
    tools=["delegate"],
    delegates_to=[writer, publisher],
    turns=[
        {
            "steps": [
                {
                    "delegate": [
                        {"agent": "writer", "task": "the 2.4 release"},
                        {"agent": "publisher", "task": "publish 2.4"},
                    ]
                },
                {"say": "Both done.\n{outcomes}"},
            ]
        }
    ],
)
team = Team("quickstart", coordinator=lead, agents=[writer, publisher])


async def decide(request: ApprovalRequested) -> bool:
    print(f"{request.requested_by} asks to run {request.tool_name}: approved")
    return True


async def main() -> None:
    outcome = await aio.run_team(team, "Ship the 2.4 release notes", on_approval=decide)
    print(outcome.status, outcome.result, sep="\n")


if __name__ == "__main__":
    asyncio.run(main())
