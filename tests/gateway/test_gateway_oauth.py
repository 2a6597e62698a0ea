"""The OAuth resource-server check in front of ``mcphost serve --http`` (``mcphost.gateway.oauth``),
against a stdlib authorization server run here: its RFC 8414 metadata, RFC 7662 introspection
with client authentication. Protected Resource Metadata served, the 401 that points to it,
tokens refused for each reason (inactive, expired, another audience, another issuer, a
missing scope), verdicts cached, an unreachable issuer a 503, mcphost's client through."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for
from test_gateway_http import INIT, post, raw

from mcphost import MCPHost
from mcphost.errors import UsageError
from mcphost.gateway.app import Gateway
from mcphost.gateway.http import HttpGateway, HttpOptions
from mcphost.gateway.oauth import OAuthOptions
from mcphost.testing import package_root

RESOURCE = "https://mcp.example.com/mcp"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


class Issuer:
    """An authorization server: metadata at the RFC 8414 path, introspection that requires
    the gateway's client credentials and knows a few tokens."""

    def __init__(self) -> None:
        self.introspected: list[str] = []
        issuer = self
        far = int(time.time()) + 3600

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None: ...

            def answer(self, status: int, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-authorization-server/tenant":
                    self.answer(200, {"issuer": issuer.url, "introspection_endpoint": issuer.base + "/introspect",
                                      "token_endpoint": issuer.base + "/token"})
                else:
                    self.answer(404, {})

            def do_POST(self) -> None:
                expected = "Basic " + base64.b64encode(b"gateway:s3cret").decode()
                if self.path != "/introspect" or self.headers.get("Authorization") != expected:
                    self.answer(401, {"error": "invalid_client"})
                    return
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                token = form["token"][0]
                issuer.introspected.append(token)
                good = {"active": True, "aud": [RESOURCE], "iss": issuer.url, "exp": far, "scope": "mcp read"}
                claims = {
                    "good": good,
                    "good-too": good,
                    "inactive": {"active": False},
                    "expired": {**good, "exp": int(time.time()) - 10},
                    "elsewhere": {**good, "aud": "https://other.example.com/mcp"},
                    "no-audience": {k: v for k, v in good.items() if k != "aud"},
                    "foreign": {**good, "iss": "https://evil.example.com"},
                    "no-scope": {**good, "scope": "read"},
                }.get(token, {"active": False})
                self.answer(200, claims)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + "/tenant"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    server = Issuer()
    try:
        yield server
    finally:
        server.close()


async def serving(oauth: OAuthOptions) -> tuple[Gateway, HttpGateway]:
    gateway = Gateway(fake_config(a=fake({"tools": [ECHO_TOOL]})), handle_signals=False)
    await gateway.start()
    http = HttpGateway(gateway, HttpOptions(oauth=oauth))
    await http.start("127.0.0.1", 0)
    return gateway, http


@pytest.fixture
async def front(issuer: Issuer) -> AsyncIterator[HttpGateway]:
    gateway, http = await serving(OAuthOptions(issuer.url, RESOURCE, client_id="gateway", client_secret="s3cret",
                                               scopes=["mcp"]))
    try:
        yield http
    finally:
        await http.aclose()
        await gateway.aclose()


def bearer(token: str) -> str:
    return f"Authorization: Bearer {token}\r\n"


async def test_the_metadata_is_served_and_the_401_points_to_it(front: HttpGateway) -> None:
    port = front.address[1]
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        status, _, body = await raw(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert status == 200
        assert json.loads(body) == {"resource": RESOURCE, "authorization_servers": [front.oauth.options.issuer],
                                    "bearer_methods_supported": ["header"], "scopes_supported": ["mcp"]}
    status, headers, _ = await raw(port, post(INIT))
    assert status == 401
    assert headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA_URL}", scope="mcp"'
    status, headers, _ = await raw(port, post(INIT, extra="Authorization: Basic eDp5\r\n"))
    assert status == 401 and 'error="invalid_request"' in headers["www-authenticate"]
    status, _, _ = await raw(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 200  # no token needed
    status, _, _ = await raw(port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 401
    assert front.oauth is not None and front.oauth.introspections == 0  # nothing was worth asking about


@pytest.mark.parametrize("token, status, why", [
    ("inactive", 401, "not active"),
    ("unknown", 401, "not active"),
    ("expired", 401, "expired"),
    ("elsewhere", 401, "not issued for this server"),
    ("no-audience", 401, "not issued for this server"),
    ("foreign", 401, "another authorization server"),
    ("no-scope", 403, "lacks the scope mcp"),
])
async def test_a_token_is_refused_saying_why_and_the_verdict_kept(
        front: HttpGateway, issuer: Issuer, token: str, status: int, why: str) -> None:
    for _ in range(2):
        got, headers, body = await raw(front.address[1], post(INIT, extra=bearer(token)))
        assert got == status and why in json.loads(body)["error"]
        error = "insufficient_scope" if status == 403 else "invalid_token"
        assert f'error="{error}"' in headers["www-authenticate"]
        assert f'resource_metadata="{METADATA_URL}"' in headers["www-authenticate"]
    assert issuer.introspected == [token]  # the second refusal came from the cache


async def test_a_good_token_opens_a_session_and_is_introspected_once(front: HttpGateway, issuer: Issuer) -> None:
    answers = await asyncio.gather(*(raw(front.address[1], post(INIT, extra=bearer("good"))) for _ in range(5)))
    assert [status for status, _, _ in answers] == [200] * 5
    assert all("mcp-session-id" in headers for _, headers, _ in answers)
    assert issuer.introspected == ["good"]


async def test_mcphosts_client_with_a_token_calls_through(front: HttpGateway, issuer: Issuer) -> None:
    url = f"http://127.0.0.1:{front.address[1]}/mcp"
    entry = {"type": "http", "url": url, "headers": {"Authorization": "Bearer good-too"}}
    async with MCPHost({"mcpServers": {"gw": entry}}, handle_signals=False) as client:
        result = await client.call_tool("gw.a.echo", {"text": "hi"})
        assert "hi" in json.dumps(result)
    assert issuer.introspected == ["good-too"]


async def test_an_issuer_that_cannot_be_asked_is_503_not_401(issuer: Issuer) -> None:
    # The issuer's metadata is found, but the gateway's credentials are refused by it.
    gateway, http = await serving(OAuthOptions(issuer.url, RESOURCE, client_id="gateway", client_secret="wrong"))
    try:
        status, _, body = await raw(http.address[1], post(INIT, extra=bearer("good")))
        assert status == 503 and "cannot be reached" in json.loads(body)["error"]
    finally:
        await http.aclose()
        await gateway.aclose()
    closed = Issuer()
    url = closed.url
    closed.close()  # nothing listens there any more
    gateway, http = await serving(OAuthOptions(url, RESOURCE, timeout=5))
    try:
        status, _, _ = await raw(http.address[1], post(INIT, extra=bearer("good")))
        assert status == 503
    finally:
        await http.aclose()
        await gateway.aclose()


def test_the_options_are_checked() -> None:
    with pytest.raises(UsageError, match="https"):
        OAuthOptions("http://auth.example.com", RESOURCE)
    with pytest.raises(UsageError, match="http\\(s\\) URL"):
        OAuthOptions("auth.example.com", RESOURCE)
    with pytest.raises(UsageError, match="client_id"):
        OAuthOptions("https://auth.example.com", RESOURCE, client_secret="x")
    with pytest.raises(UsageError, match="cache_size"):
        OAuthOptions("https://auth.example.com", RESOURCE, cache_size=0)
    with pytest.raises(UsageError, match="not both"):
        HttpOptions(token="t", oauth=OAuthOptions("https://auth.example.com", RESOURCE))


async def test_the_command_line(issuer: Issuer, tmp_path: Any) -> None:
    """``mcphost serve --http --oauth-issuer ...``: the metadata, the 401, a good token through."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(fake_config(a=fake({"tools": [ECHO_TOOL]}))))
    base = [sys.executable, "-m", "mcphost", "serve", "--http", "127.0.0.1:0", str(config)]
    env = {**os.environ, "PYTHONPATH": package_root(), "GW_SECRET": "s3cret"}
    wrong = await asyncio.create_subprocess_exec(*base, "--oauth-issuer", issuer.url, env=env,
                                                 stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL)
    _, said = await asyncio.wait_for(wrong.communicate(), 60)
    assert wrong.returncode == 2 and b"--oauth-issuer needs --oauth-resource" in said
    proc = await asyncio.create_subprocess_exec(
        *base, "--oauth-issuer", issuer.url, "--oauth-resource", RESOURCE, "--oauth-client-id", "gateway",
        "--oauth-client-secret-env", "GW_SECRET", "--oauth-scope", "mcp", env=env,
        stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL)
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert "serving MCP on http://127.0.0.1:" in line, line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        status, _, body = await raw(port, b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n"
                                          b"Host: 127.0.0.1\r\n\r\n")
        assert status == 200 and json.loads(body)["authorization_servers"] == [issuer.url]
        status, headers, _ = await raw(port, post(INIT))
        assert status == 401 and METADATA_URL in headers["www-authenticate"]
        status, _, _ = await raw(port, post(INIT, extra=bearer("good")))
        assert status == 200 and issuer.introspected == ["good"]
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 128 + signal.SIGTERM


async def test_the_same_check_under_uvicorn(issuer: Issuer) -> None:
    uvicorn = pytest.importorskip("uvicorn", reason="uvicorn (in the 'test' extra) is not installed")
    from mcphost.gateway import asgi_app

    oauth = OAuthOptions(issuer.url, RESOURCE, client_id="gateway", client_secret="s3cret")
    app = asgi_app(fake_config(a=fake({"tools": [ECHO_TOOL]})), http=HttpOptions(oauth=oauth))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
    task = asyncio.ensure_future(server.serve())
    try:
        assert await wait_for(lambda: server.started or task.done(), 60) and server.started
        port = int(server.servers[0].sockets[0].getsockname()[1])
        status, _, body = await raw(port, b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\n"
                                          b"Host: 127.0.0.1\r\n\r\n")
        assert status == 200 and json.loads(body)["resource"] == RESOURCE
        status, headers, _ = await raw(port, post(INIT, extra=bearer("elsewhere")))
        assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
        status, _, _ = await raw(port, post(INIT, extra=bearer("good")))
        assert status == 200 and issuer.introspected == ["elsewhere", "good"]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
