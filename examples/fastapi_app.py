"""A FastAPI app that runs a team and streams its AG-UI events to the browser.

    pip install fastapi uvicorn
    uvicorn examples.fastapi_app:app

``POST /runs`` with ``{"prompt": "..."}`` starts the delivery team (``teams/delivery.toml``,
offline) and answers with its AG-UI events as server-sent events, one JSON event a message,
as an AG-UI client reads them. The first, ``RUN_STARTED``, names the session (``threadId``).

When a worker asks to publish, the AG-UI run ends interrupted (``RUN_FINISHED`` with an
``interrupt``) and the stream waits. ``POST /approvals/{approval}`` with
``{"session": "<threadId>", "approve": true}`` decides it; the stream goes on with the next
AG-UI run and ends with the team's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from orchestrator import aio, load_team

TEAM = load_team(Path(__file__).resolve().parent.parent / "teams" / "delivery.toml")

app = FastAPI(title="A team over AG-UI")
#: The runs streaming now, by session: where a decision finds its run.
runs: dict[str, aio.TeamRun] = {}


class RunRequest(BaseModel):
    prompt: str


class Decision(BaseModel):
    session: str
    approve: bool


@app.post("/runs")
async def start_run(request: RunRequest) -> EventSourceResponse:
    async def events() -> AsyncIterator[dict[str, str]]:
        async with aio.open_run(TEAM, request.prompt) as run:
            runs[run.session] = run
            try:
                async for event in run.stream("agui"):
                    yield {"data": json.dumps(event)}
            finally:
                del runs[run.session]

    return EventSourceResponse(events())


@app.post("/approvals/{approval}")
async def decide(approval: str, decision: Decision) -> dict[str, str]:
    run = runs.get(decision.session)
    if run is None:
        raise HTTPException(404, f"no run streams session {decision.session!r}")
    if approval not in {request.approval for request in run.pending_approvals()}:
        raise HTTPException(404, f"session {decision.session!r} waits on no approval {approval!r}")
    if decision.approve:
        await run.approve(approval)
    else:
        await run.deny(approval)
    return {"approval": approval, "decision": "approved" if decision.approve else "denied"}
