"""Who may do what: the tokens' roles, the authenticator, and each role on a daemon on loopback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.core import ApprovalResolved, ViewUpdated
from orchestrator.journal import JournalReader
from orchestrator.server import (
    COOKIE_LIFETIME,
    LOCAL,
    Authenticator,
    Permission,
    Role,
    ServeConfig,
    Token,
)
from orchestrator.server._auth import Principal
from orchestrator.sessions import Limits
from tests.support.agent_channel import of_type, refused, run_delivery
from tests.support.daemon import connect, running_daemon
from tests.support.teams import ECHO

SECRET = "s3cret-s3cret-s3cret"


#: A command tool that posts a view update into its own session and into the one named in
#: the file ``argv[1]``, writes the token it was told to ``argv[2]``, and prints the two
#: answers' statuses and its token.
CALLBACK_PROBE = """
import json, os, sys, urllib.error, urllib.request

token = os.environ["ORCHESTRATOR_CALLBACK_TOKEN"]
with open(sys.argv[2], "w") as told:
    told.write(token)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(group):
    update = {"type": "view_update", "group_id": group, "view_type": "diff",
              "content": {"patch": "+x"}}
    headers = {"content-type": "application/json", "authorization": "Bearer " + token}
    request = urllib.request.Request(
        os.environ["ORCHESTRATOR_CALLBACK_URL"], json.dumps(update).encode(), headers,
        method="POST")
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


with open(sys.argv[1]) as other:
    other_group = other.read()
own = post(os.environ["ORCHESTRATOR_GROUP_ID"])
print(json.dumps({"own": own, "other": post(other_group), "env": token}))
"""

OPERATOR, VIEWER, TOOL = "operator-token-0123456789", "viewer-token-0123456789", "tool-token-012345"
TOKENS = ServeConfig(
    tokens=(
        Token(name="alice", role=Role.OPERATOR, secret=OPERATOR),
        Token(name="victor", role=Role.VIEWER, secret=VIEWER),
        Token(name="sandbox", role=Role.TOOL, secret=TOOL),
    ),
    limits=Limits(shutdown_grace=0.5),
)


class TestAuthenticator:
    tokens = (
        Token(name="alice", role=Role.OPERATOR, secret=SECRET),
        Token(name="victor", role=Role.VIEWER, secret=SECRET + "-v"),
    )

    def test_roles_grant_permissions(self) -> None:
        auth = Authenticator(self.tokens)
        alice = auth.authenticate(f"Bearer {SECRET}")
        victor = auth.authenticate(None, query_token=SECRET + "-v")
        assert alice is not None
        assert victor is not None
        assert (alice.name, alice.may(Permission.OPERATE)) == ("alice", True)
        assert (victor.name, victor.may(Permission.OPERATE)) == ("victor", False)
        assert not alice.may(Permission.CALLBACK)

    @given(st.text(max_size=40), st.sampled_from(["Bearer ", "bearer ", "Basic ", ""]))
    def test_anything_else_is_nobody(self, presented: str, scheme: str) -> None:
        auth = Authenticator(self.tokens)
        known = {SECRET, SECRET + "-v"}
        principal = auth.authenticate(scheme + presented)
        if scheme.lower() == "bearer " and presented.strip() in known:
            assert principal is not None
        else:
            assert principal is None

    def test_no_tokens_means_local_with_every_permission(self) -> None:
        assert Authenticator(()).authenticate(None) is LOCAL


@pytest.mark.daemon
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestAuth:
    async def test_each_role_may_do_what_it_should_and_nothing_else(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=TOKENS) as daemon:
            assert (await refused(daemon, "", None))[0] == 401
            assert (await refused(daemon, "", "wrong-token-0123456789"))[0] == 401
            assert (await refused(daemon, "", TOOL))[0] == 403
            status, body = await refused(daemon, "", VIEWER)
            assert status == 403
            assert b"operator" in body
            # Choosing a session's model is opening it: an operator's, never a viewer's.
            status, body = await refused(daemon, "team=echo&model=other-model", VIEWER)
            assert (status, b"operator" in body) == (403, True)
            for secret in (OPERATOR, VIEWER, TOOL, "wrong"):
                assert secret.encode() not in body
            async with connect(daemon, token=OPERATOR) as operator:
                init = await operator.until_type("init")
                async with connect(daemon, f"session={init['sessionId']}", token=VIEWER) as viewer:
                    await viewer.until_type("history")
                    await viewer.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    error = await viewer.until_type("error")
                    assert error["code"] == "refused"
                    assert "victor may watch, not act" in error["message"]
                    await operator.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    await viewer.until_type("done")  # the viewer watches the operator's turn
            update = {
                "type": "view_update",
                "group_id": init["sessionId"],
                "view_type": "diff",
                "content": {"patch": ""},
            }
            checks = [
                (None, "GET", "/metrics", 401),
                (TOOL, "GET", "/metrics", 403),
                (VIEWER, "GET", "/metrics", 200),
                (None, "POST", "/callback", 401),
                (VIEWER, "POST", "/callback", 403),
                (OPERATOR, "POST", "/callback", 403),
                (TOOL, "POST", "/callback", 200),
                (None, "GET", "/healthz", 200),
            ]
            for token, method, path, status in checks:
                async with daemon.http(token) as http:
                    answer = await http.request(method, path, json=update)
                assert answer.status_code == status, (token, path, answer.text)
                if status == 401:
                    assert answer.headers["www-authenticate"] == "Bearer"
                for secret in (OPERATOR, VIEWER, TOOL):
                    assert secret not in answer.text

    async def test_an_approval_records_the_name_of_the_token_that_decided(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, config=TOKENS) as daemon,
            connect(daemon, "team=delivery", token=OPERATOR) as client,
        ):
            init, _ = await run_delivery(client)
        resolved = of_type(client.received, "permission_resolved")[0]
        assert resolved["by"] == "alice"
        facts = JournalReader(daemon.db).facts("ahp-session:/" + init["sessionId"])
        decisions = [f.action for f in facts if isinstance(f.action, ApprovalResolved)]
        assert [d.principal for d in decisions] == ["alice"]

    async def test_a_tool_call_s_token_posts_into_its_own_session_while_the_call_runs(
        self, tmp_path: Path
    ) -> None:
        """A command tool is given a token made for its call, not the daemon's tool token:
        POST /callback takes it for the call's own session (200), refuses it for another
        (403), and refuses it once the call has ended (401). A tool that prints it records
        ``[redacted]``; the journal never holds it."""
        other_file, token_file = tmp_path / "other-session", tmp_path / "told-token"
        script = tmp_path / "view_probe.py"
        script.write_text(CALLBACK_PROBE)
        argv = json.dumps([sys.executable, str(script), str(other_file), str(token_file)])
        team = (
            '[team]\nname = "views"\ncoordinator = "lead"\n'
            f"[tools.probe]\ncommand = {argv}\n"
            '[agents.lead]\nrole = "coordinator"\ntools = ["probe"]\n'
            '[[agents.lead.turns]]\nsteps = [ { tool = "probe" }, { say = "saw {outcomes}" } ]\n'
        )
        teams = {"views": team, "echo": ECHO}
        async with (
            running_daemon(tmp_path, teams=teams, config=TOKENS) as daemon,
            connect(daemon, "team=echo", token=OPERATOR) as bystander,
            connect(daemon, "team=views", token=OPERATOR) as client,
        ):
            other = (await bystander.until_type("init"))["sessionId"]
            await bystander.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
            await bystander.until_type("done")  # a started run: it takes views
            other_file.write_text(other)
            own = (await client.until_type("init"))["sessionId"]
            await client.send({"channel": "agent", "type": "prompt", "prompt": "go"})
            result = await client.until_type("result")
            told = token_file.read_text()
            update = {
                "type": "view_update",
                "group_id": own,
                "view_type": "diff",
                "content": {"patch": "+late"},
            }
            async with daemon.http(told) as http:
                late = await http.post("/callback", json=update)
            async with daemon.http(TOOL) as http:  # an outside tool's token still works
                outside = await http.post(
                    "/callback", json={**update, "content": {"patch": "+outside"}}
                )
        reported = json.loads(result["summary"].removeprefix("saw "))
        assert reported == {"own": 200, "other": 403, "env": "[redacted]"}
        assert len(told) >= 32
        assert told not in (OPERATOR, VIEWER, TOOL)
        assert late.status_code == 401, late.text
        assert outside.status_code == 200, outside.text
        reader = JournalReader(daemon.db)
        views = {
            session: [
                f.action.content
                for f in reader.facts("ahp-session:/" + session)
                if isinstance(f.action, ViewUpdated)
            ]
            for session in (own, other)
        }
        assert views == {own: [{"patch": "+x"}, {"patch": "+outside"}], other: []}
        assert told.encode() not in Path(daemon.db).read_bytes()


WEB_OPERATOR = "web-operator-secret-0123456789"
WEB_TOKENS = (
    Token(name="olivia", role=Role.OPERATOR, secret=WEB_OPERATOR),
    Token(name="victor", role=Role.VIEWER, secret="web-viewer-secret-0123456789ab"),
    Token(name="sandbox", role=Role.TOOL, secret="web-tool-secret-0123456789abcd"),
)


def test_a_sign_in_cookie_is_not_the_token_and_ends_with_it() -> None:
    auth = Authenticator(WEB_TOKENS)
    olivia = Principal(name="olivia", permissions=frozenset())
    cookie = auth.sign_in_cookie(olivia, now=1000.0)
    assert WEB_OPERATOR not in cookie
    signed_in = auth.from_cookie(cookie, now=1000.0 + COOKIE_LIFETIME - 1)
    assert signed_in is not None
    assert signed_in.name == "olivia"
    assert auth.from_cookie(cookie, now=1000.0 + COOKIE_LIFETIME) is None  # expired
    # a token changed or removed in the config: its cookies stop working
    rotated = Authenticator(
        [attrs.evolve(WEB_TOKENS[0], secret="a-new-secret-0123456789"), *WEB_TOKENS[1:]]
    )
    assert rotated.from_cookie(cookie, now=1000.0) is None
    assert Authenticator(WEB_TOKENS[1:]).from_cookie(cookie, now=1000.0) is None
    # another name, a later expiry, a cut MAC: refused
    version, name, expires, mac = cookie.split(".")
    victor = auth.sign_in_cookie(Principal(name="victor", permissions=frozenset()), now=1000.0)
    forged = [
        f"{version}.{victor.split('.')[1]}.{expires}.{mac}",
        f"{version}.{name}.{int(expires) + 1}.{mac}",
        f"{version}.{name}.{expires}.{mac[:-2]}",
        f"v2.{name}.{expires}.{mac}",
        "",
        "....",
        "v1.%%%.1.%%%",
    ]
    for value in forged:
        assert auth.from_cookie(value, now=1000.0) is None, value


@given(st.text(max_size=300))
def test_no_cookie_text_breaks_the_check(value: str) -> None:
    assert Authenticator(WEB_TOKENS).from_cookie(value, now=0.0) is None
