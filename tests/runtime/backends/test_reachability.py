"""Why a model server could not be reached, and whether the backend tries again.

The refusals are real (a port of 127.0.0.1 bound, then closed); the same refusal is then
judged for other addresses, since whether it is worth a retry depends on where it came from.
Resolver failures are built as httpx raises them (a ``ConnectError`` caused by a
``socket.gaierror``): a test machine's resolver cannot be made to answer either way.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from orchestrator.runtime.backends import why_unreachable, worth_retrying


def closed_port() -> int:
    """A port of 127.0.0.1 where nothing listens: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def refused() -> tuple[str, httpx.ConnectError]:
    """A URL where nothing listens, and the error httpx raised sending it a request."""
    url = f"http://127.0.0.1:{closed_port()}/v1/models"
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError) as caught:
            await client.get(url)
    return url, caught.value


def connect_error(cause: OSError) -> httpx.ConnectError:
    """A ``ConnectError`` caused by ``cause``, as httpx raises one."""
    try:
        try:
            raise cause
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
    except httpx.ConnectError as error:
        return error


class TestRefused:
    @pytest.mark.daemon
    async def test_nothing_listening_is_said_with_the_address(self) -> None:
        url, error = await refused()
        port = httpx.URL(url).port
        assert why_unreachable(url, error, timeout=2) == f"nothing listens on 127.0.0.1:{port}"

    @pytest.mark.daemon
    @pytest.mark.parametrize(
        ("port", "hint"), [(11434, ": is Ollama running?"), (1234, ": is LM Studio running?")]
    )
    async def test_a_local_servers_port_names_the_server(self, port: int, hint: str) -> None:
        _, error = await refused()
        url = f"http://localhost:{port}/v1/models"
        assert (
            why_unreachable(url, error, timeout=2) == f"nothing listens on localhost:{port}{hint}"
        )

    @pytest.mark.daemon
    @pytest.mark.parametrize(
        "base",
        [
            "http://127.0.0.1:8000",
            "http://127.3.4.5:80",
            "http://localhost:8000",
            "http://[::1]:8000",
            "http://models.localhost:8000",
        ],
    )
    async def test_a_loopback_refusal_is_not_retried(self, base: str) -> None:
        """Nothing listens on this machine: nothing will within the seconds a retry waits."""
        _, error = await refused()
        assert not worth_retrying(f"{base}/v1/chat/completions", error)

    @pytest.mark.daemon
    @pytest.mark.parametrize("base", ["http://10.0.0.5:8000", "https://models.example"])
    async def test_a_remote_refusal_is_retried(self, base: str) -> None:
        """A remote host may be restarting behind its address."""
        _, error = await refused()
        assert worth_retrying(f"{base}/v1/chat/completions", error)

    def test_an_ipv6_address_is_bracketed(self) -> None:
        error = connect_error(ConnectionRefusedError(111, "Connection refused"))
        assert why_unreachable("http://[::1]:8000/v1", error, timeout=2) == (
            "nothing listens on [::1]:8000"
        )


class TestResolver:
    def test_a_name_that_does_not_exist_is_said_and_not_retried(self) -> None:
        error = connect_error(socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
        url = "https://models.example/v1/chat/completions"
        assert why_unreachable(url, error, timeout=2) == "the name models.example does not resolve"
        assert not worth_retrying(url, error)

    def test_a_resolver_that_fails_for_now_is_retried(self) -> None:
        error = connect_error(
            socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        )
        url = "https://models.example/v1/chat/completions"
        assert why_unreachable(url, error, timeout=2) == (
            "the name models.example could not be looked up (Temporary failure in name resolution)"
        )
        assert worth_retrying(url, error)


class TestTimeouts:
    def test_a_connect_timeout_names_the_seconds(self) -> None:
        url = "http://10.0.0.5:8000/v1/chat/completions"
        error = httpx.ConnectTimeout("timed out")
        assert why_unreachable(url, error, timeout=10) == (
            "10.0.0.5:8000 did not take the connection within 10 s"
        )
        assert worth_retrying(url, error)

    def test_a_read_timeout_is_not_retried(self) -> None:
        """The server has the request and may be working on it: sending it again would pay
        twice."""
        url = "http://10.0.0.5:8000/v1/chat/completions"
        error = httpx.ReadTimeout("timed out")
        assert why_unreachable(url, error, timeout=2) == (
            "10.0.0.5:8000 took the connection but did not answer within 2 s"
        )
        assert not worth_retrying(url, error)
