"""What a conversation's turn costs as the conversation grows (issue 33, section 5).

One scripted coordinator in a conversation (``conversation=True``, facts in memory): each
prompt is queued when the previous turn completes. The table shows the CPU time per turn
(this process, every thread) over 100 turns starting at each mark: flat if a turn's cost
does not depend on the turns before it.

    .venv/bin/python bench/conversation_turns.py            # marks 100, 1000, 2000
    .venv/bin/python bench/conversation_turns.py 100 4000
"""

from __future__ import annotations

import argparse
import time

import trio

from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team

TEAM = """
[team]
name = "chatty"
coordinator = "lead"
[agents.lead]
role = "coordinator"
"""
#: Turns measured after each mark.
SPAN = 100


async def _measure(marks: list[int]) -> dict[int, float]:
    runtime = TeamRuntime(
        parse_team(TEAM, file="chatty.toml"),
        backends=ScriptedBackend,
        factlog=MemoryFactLog(),
        ids=Ids(deterministic=True),
        conversation=True,
    )
    wanted = set(marks) | {mark + SPAN for mark in marks}
    last = max(wanted)
    times: dict[int, float] = {}
    subscription = runtime.bus.subscribe("bench")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.run, "turn 0 " + "x" * 200)
        ended = 0
        async for fact in subscription:
            if fact.type != "chat/turnComplete":
                continue
            ended += 1
            if ended in wanted:
                times[ended] = time.process_time()
            if ended == last:
                runtime.close()
                break
            await runtime.queue(fact.channel, f"turn {ended} " + "x" * 200)
        nursery.cancel_scope.cancel()
    return {mark: (times[mark + SPAN] - times[mark]) / SPAN for mark in marks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("marks", nargs="*", type=int, default=[100, 1000, 2000])
    args = parser.parse_args()
    per_turn = trio.run(_measure, sorted(args.marks))
    print(f"{'turns':>11} {'CPU µs per turn':>16}")
    for mark, seconds in per_turn.items():
        print(f"{f'{mark}-{mark + SPAN}':>11} {seconds * 1e6:>16.0f}")


if __name__ == "__main__":
    main()
