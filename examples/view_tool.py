"""A command tool that shows a diff to the people watching a session, as a view.

Declare it in a team file and list it in an agent's tools:

    [tools.show_diff]
    command = ["python3", "examples/view_tool.py"]   # argv: no shell
    cwd = ".."              # relative to the team file (teams/): the project's root
    description = "Show the current changes to the user as a diff"
    timeout = "1m"

A call's input arrives on stdin as JSON: ``{"patch": "..."}`` shows that patch; without one,
the tool shows ``git diff`` of its working directory. It posts a ``view_update`` to the
callback the orchestrator gives it (``ORCHESTRATOR_CALLBACK_URL``, with the session id as
``group_id`` and the call's own ``ORCHESTRATOR_CALLBACK_TOKEN``), and what it
prints is the tool call's result, which the model reads. An empty patch clears the view.
Standard library only, so any Python 3 runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request


def main() -> int:
    arguments = json.load(sys.stdin)
    patch = arguments.get("patch")
    if patch is None:
        done = subprocess.run(["git", "diff"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"git diff failed: {done.stderr.strip()}", file=sys.stderr)
            return 1
        patch = done.stdout
    url = os.environ.get("ORCHESTRATOR_CALLBACK_URL")
    if url is None:
        print(f"no callback to show the diff to ({len(patch.splitlines())} lines)")
        return 0
    update = {
        "type": "view_update",
        "group_id": os.environ["ORCHESTRATOR_GROUP_ID"],
        "view_type": "diff",
        "content": {"patch": patch} if patch else {},  # {} clears the view
    }
    headers = {"content-type": "application/json"}
    token = os.environ.get("ORCHESTRATOR_CALLBACK_TOKEN")
    if token:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(update).encode(), headers, method="POST")
    # The daemon runs on this machine: no proxy between the tool and it.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as answer:
        answer.read()
    shown = f"{len(patch.splitlines())} lines" if patch else "cleared"
    print(f"diff view: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
