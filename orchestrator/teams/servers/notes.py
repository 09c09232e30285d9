"""A small MCP tool server for the example team ``teams/tools.toml``: a notebook.

It speaks the Model Context Protocol over stdio (the team file starts it with
``command = ["python", "notes.py"]``) and keeps its notes in memory, so each team run starts
with an empty notebook. It is written with the official SDK's ``MCPServer``, as a server of
your own would be: each tool is a typed function, and the SDK derives the input schema the
model is offered from its signature.
"""

from __future__ import annotations

import os
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

server = MCPServer("notes")
_notes: dict[str, str] = {}


@server.tool()
def add_note(
    title: Annotated[str, Field(min_length=1, max_length=200)],
    text: Annotated[str, Field(min_length=1)],
) -> str:
    """Write a note under a title (an existing title is replaced)."""
    replaced = title in _notes
    _notes[title] = text
    # NOTES_OWNER comes from the team file's env table: the server sees nothing else of the
    # orchestrator's environment but PATH, HOME, the locale and TZ.
    owner = os.environ.get("NOTES_OWNER", "the team")
    verb = "replaced" if replaced else "added"
    return f"{verb} note {title!r} in the notebook of {owner} ({len(text.split())} words)"


@server.tool()
def list_notes() -> str:
    """The titles of every note, one a line, in the order they were first written."""
    return "\n".join(_notes) or "no notes yet"


@server.tool()
def read_note(title: str) -> str:
    """The text of the note with this title."""
    if title not in _notes:
        known = ", ".join(repr(t) for t in _notes) or "none"
        # A ToolError's message is what the model reads (any other exception is reported
        # without its text, so a server's internals do not leak).
        raise ToolError(f"no note {title!r} (notes: {known})")
    return _notes[title]


if __name__ == "__main__":
    server.run()
