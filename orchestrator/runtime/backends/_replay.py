"""The replay backend: each model round answered from a recorded session's journal.

A :class:`~orchestrator.core.ReplayScript` finds the recorded round a context asks for, and
checks it is asked the same thing; this streams its events. A round asked something else ends
its turn with :class:`~orchestrator.core.ReplayMismatchError`, which says where the request
first differs. One script serves every agent of the run.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import trio

from orchestrator.core import ModelEvent, ReplayExhaustedError, ReplayScript, RoundContext

__all__ = ["ReplayBackend"]


class ReplayBackend:
    """A backend streaming recorded rounds (see the module).

    ``wait_past_end``: a round the recording does not have (a replay ``--until`` a fact)
    waits to be cancelled instead of failing its turn.
    """

    def __init__(self, script: ReplayScript, *, wait_past_end: bool = False) -> None:
        self.script = script
        self.wait_past_end = wait_past_end

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        try:
            recorded = self.script.round_for(context)
        except ReplayExhaustedError:
            if not self.wait_past_end:
                raise
            await trio.sleep_forever()
            raise
        for event in recorded.events:
            yield event
