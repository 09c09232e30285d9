"""Named team documents for the tests: the TOML text of each, and what it is for."""

from __future__ import annotations

#: A coordinator whose one tool call waits for the user's approval, with nothing else going:
#: once the request is out, the node writes nothing until it is decided.
APPROVER = """
[team]
name = "approver"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "user"
[agents.lead.tool_results]
publish = "published"
[[agents.lead.turns]]
steps = [ { tool = "publish", input = { target = "release page" } },
          { say = "The release notes are ready." } ]
"""
