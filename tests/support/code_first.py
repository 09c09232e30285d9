"""A team defined in Python, with decorated tools, and its twin as a team file.

The team file names the tools by import path (``tests.support.code_first:count_words``): the
same functions, so a run of either team calls the same code and records the same facts.
"""

from __future__ import annotations

import trio

from orchestrator import Agent, Team, tool

#: (tool, keyword arguments) of each call, in order.
CALLS: list[tuple[str, dict[str, object]]] = []


@tool
def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text to count.
    """
    CALLS.append(("count_words", {"text": text}))
    return len(text.split())


@tool(name="publish", needs_approval=True, description="Publish a text.")
async def publish_text(text: str, draft: bool = False) -> str:
    await trio.lowlevel.checkpoint()
    CALLS.append(("publish", {"text": text, "draft": draft}))
    return f"published{' a draft' if draft else ''}: {text}"


def words_team() -> Team:
    """A coordinator that has one worker count the task's words and another publish them."""
    counter = Agent(
        "counter",
        role="counts words",
        tools=[count_words],
        turns=[
            {"steps": [{"tool": count_words, "input": {"text": "{task}"}}, {"say": "{outcomes}"}]}
        ],
    )
    publisher = Agent(
        "publisher",
        role="publishes",
        tools=[publish_text],
        turns=[
            {"steps": [{"tool": publish_text, "input": {"text": "{task}"}}, {"say": "{outcomes}"}]}
        ],
    )
    lead = Agent(
        "lead",
        role="coordinator",
        instructions="Count, then publish.",
        tools=["delegate"],
        delegates_to=[counter, publisher],
        turns=[
            {
                "steps": [
                    {"delegate": [{"agent": "counter", "task": "{task}"}]},
                    {"delegate": [{"agent": "publisher", "task": "{task}"}]},
                    {"say": "done: {outcomes}"},
                ]
            }
        ],
    )
    return Team("words", coordinator=lead, agents=[counter, publisher], parallel_budget=2)


WORDS = words_team()

#: :data:`WORDS` written by hand as a team file.
WORDS_TOML = """\
[team]
name = "words"
coordinator = "lead"
parallel_budget = 2

[tools.count_words]
python = "tests.support.code_first:count_words"

[tools.publish]
python = "tests.support.code_first:publish_text"
description = "Publish a text."

[agents.lead]
role = "coordinator"
instructions = "Count, then publish."
tools = ["delegate"]
delegates_to = ["counter", "publisher"]

[[agents.lead.turns]]
steps = [
  { delegate = [{ agent = "counter", task = "{task}" }] },
  { delegate = [{ agent = "publisher", task = "{task}" }] },
  { say = "done: {outcomes}" },
]

[agents.counter]
role = "counts words"
tools = ["count_words"]

[[agents.counter.turns]]
steps = [{ tool = "count_words", input = { text = "{task}" } }, { say = "{outcomes}" }]

[agents.publisher]
role = "publishes"
tools = ["publish"]
needs_approval = ["publish"]

[[agents.publisher.turns]]
steps = [{ tool = "publish", input = { text = "{task}" } }, { say = "{outcomes}" }]
"""
