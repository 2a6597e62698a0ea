"""TLS and proxies of the HTTP transports: a self-signed server with and without ``caFile``,
``verify: false``, a client certificate, and a forward proxy (CONNECT for https, absolute
form for http) chosen from the environment as curl does, ``NO_PROXY`` honoured."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from http_listener import Listener, parse_head
from remote_server import RemoteServer

from mcphost import ConfigurationError, MCPHost, ServerStartupError
from mcphost.config import parse_config
from mcphost.policy import NO_RETRY
from mcphost.transports.proxy import bypassed, proxy_for

TLS = Path(__file__).resolve().parent.parent / "data" / "tls"
SERVER_PEM, SERVER_KEY = str(TLS / "server.pem"), str(TLS / "server.key")
CLIENT_PEM, CLIENT_KEY = str(TLS / "client.pem"), str(TLS / "client.key")


def server_context(client_ca: str | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(SERVER_PEM, SERVER_KEY)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    return context


def host_for(url: str, environ: dict[str, str] | None = None, **entry: Any) -> MCPHost:
    return MCPHost({"mcpServers": {"r": {"url": url, "timeout": 10, **entry}}}, retry=NO_RETRY,
                   environ=environ or {})


async def echo(host: MCPHost) -> str:
    result = await host.call_tool("r.echo", {"tls": 1})
    return str(result["content"][0]["text"])


# -- TLS --------------------------------------------------------------------------------------


@pytest.mark.parametrize("legacy", [False, True])
async def test_a_self_signed_server_is_trusted_with_its_ca_file(legacy: bool) -> None:
    async with RemoteServer(ssl_context=server_context()) as server:
        url = server.sse_url if legacy else server.url
        async with host_for(url, tls={"caFile": SERVER_PEM}) as host:
            assert await echo(host) == '{"tls": 1}'


async def test_a_self_signed_server_is_refused_without_its_ca_file() -> None:
    async with RemoteServer(ssl_context=server_context()) as server:
        host = host_for(server.url)
        with pytest.raises(ServerStartupError, match="TLS certificate verification failed") as info:
            await host.initialize()
        assert "self-signed" in str(info.value) or "self signed" in str(info.value)
        await host.shutdown()


async def test_verify_false_accepts_any_certificate_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    async with RemoteServer(ssl_context=server_context()) as server, \
            host_for(server.url, tls={"verify": False}) as host:
        assert await echo(host) == '{"tls": 1}'
    assert "tls.verify is false" in caplog.text


async def test_the_host_name_is_checked() -> None:
    # The certificate names 127.0.0.1, localhost and mcp.test; ::1 is not among them.
    async with RemoteServer(ssl_context=server_context()) as server:
        url = server.url.replace("127.0.0.1", "localhost")
        async with host_for(url, tls={"caFile": SERVER_PEM}) as host:
            assert await echo(host) == '{"tls": 1}'


async def test_a_client_certificate_is_presented() -> None:
    async with RemoteServer(ssl_context=server_context(client_ca=CLIENT_PEM)) as server:
        async with host_for(server.url, tls={"caFile": SERVER_PEM, "certFile": CLIENT_PEM,
                                             "keyFile": CLIENT_KEY}) as host:
            assert await echo(host) == '{"tls": 1}'
        refused = host_for(server.url, tls={"caFile": SERVER_PEM})
        with pytest.raises(ServerStartupError):
            await refused.initialize()
        await refused.shutdown()


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"caFile": "/nonexistent/ca.pem"}, "tls.caFile: file 'ca.pem' does not exist"),
        ({"caFile": str(TLS)}, "tls.caFile: 'tls' is not a file"),
        ({"caFile": str(TLS / "README.md")}, "holds no usable PEM certificate"),
        ({"certFile": SERVER_PEM, "keyFile": CLIENT_KEY}, "the client certificate or its key cannot be used"),
    ],
)
async def test_bad_tls_files_are_configuration_errors(tls: dict[str, Any], message: str) -> None:
    host = host_for("https://127.0.0.1:9/mcp", tls=tls)
    with pytest.raises((ConfigurationError, ServerStartupError), match=message) as info:
        await host.initialize()
    assert "/nonexistent" not in str(info.value)
    await host.shutdown()


def test_tls_is_read_from_the_configuration_relative_to_its_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"r": {"url": "https://example.com/mcp", '
                    '"tls": {"verify": true, "caFile": "certs/ca.pem", "certFile": "c.pem"}}}}')
    config = parse_config(path.read_text(), path=str(path), environ={})
    tls = config.servers["r"].tls
    assert tls is not None
    assert tls.verify is True
    assert tls.ca_file == str(tmp_path / "certs" / "ca.pem")
    assert tls.cert_file == str(tmp_path / "c.pem")
    assert tls.key_file is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "x", "tls": {"verify": False}}, "only applies to http, sse and websocket servers"),
        ({"url": "https://e.com/mcp", "tls": {"verify": "no"}}, "tls.verify"),
        ({"url": "https://e.com/mcp", "tls": {"keyFile": "k.pem"}}, "certFile"),
        ({"url": "https://e.com/mcp", "tls": {"cafile": "k.pem"}}, "cafile"),
    ],
)
def test_bad_tls_entries_are_refused(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    import json

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"r": entry}}))
    with pytest.raises(ConfigurationError, match=message):
        parse_config(path.read_text(), path=str(path), environ={})


# -- proxies ----------------------------------------------------------------------------------


class ForwardProxy:
    """A forward proxy for the tests: CONNECT tunnels and absolute-form requests, every one
    sent to the test server whatever host it names (so the URLs can use a name, mcp.test,
    that no resolver knows and that is not loopback)."""

    def __init__(self, target_port: int, *, auth: str | None = None, refuse: int | None = None) -> None:
        self.target_port = target_port
        self.auth = auth
        self.refuse = refuse
        self.lines: list[str] = []
        self.authorizations: list[str | None] = []
        self.port = 0
        self._listener = Listener(self._serve)

    async def __aenter__(self) -> ForwardProxy:
        self.port = await self._listener.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._listener.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lines, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
        self.lines.append(lines[0])
        self.authorizations.append(headers.get("proxy-authorization"))
        if self.refuse is not None:
            writer.write(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\n\r\n" % self.refuse)
            return
        if self.auth is not None and headers.get("proxy-authorization") != self.auth:
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        try:
            if lines[0].startswith("CONNECT "):
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
                return
            answers = asyncio.ensure_future(self._pipe(up_reader, writer))
            try:
                while True:  # absolute form: each request goes on in origin form
                    await self._forward(lines, headers, reader, up_writer)
                    lines, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
                    self.lines.append(lines[0])
                    self.authorizations.append(headers.get("proxy-authorization"))
            finally:
                answers.cancel()
        finally:
            up_writer.close()

    async def _forward(self, lines: list[str], headers: dict[str, str], reader: asyncio.StreamReader,
                       up_writer: asyncio.StreamWriter) -> None:
        method, target, version = lines[0].split(" ", 2)
        path = "/" + target.split("://", 1)[1].split("/", 1)[1]
        kept = [x for x in lines[1:] if x and not x.lower().startswith("proxy-authorization")]
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        up_writer.write(("\r\n".join([f"{method} {path} {version}", *kept]) + "\r\n\r\n").encode("latin-1") + body)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()


@asynccontextmanager
async def proxied(**server_options: Any) -> AsyncIterator[tuple[RemoteServer, ForwardProxy]]:
    async with RemoteServer(**server_options) as server, ForwardProxy(server.port) as proxy:
        yield server, proxy


async def test_https_goes_through_a_connect_tunnel() -> None:
    async with proxied(ssl_context=server_context()) as (server, proxy):
        url = f"https://mcp.test:{server.port}/mcp"
        environ = {"HTTPS_PROXY": proxy.url}
        async with host_for(url, environ, tls={"caFile": SERVER_PEM}) as host:
            assert await echo(host) == '{"tls": 1}'
        assert proxy.lines and all(line == f"CONNECT mcp.test:{server.port} HTTP/1.1" for line in proxy.lines)


async def test_http_goes_to_the_proxy_in_absolute_form_with_credentials() -> None:
    async with RemoteServer() as server, ForwardProxy(server.port, auth="Basic dTpwQHNz") as proxy:
        url = f"http://mcp.test:{server.port}/mcp"
        environ = {"http_proxy": f"http://u:p%40ss@127.0.0.1:{proxy.port}"}
        async with host_for(url, environ) as host:
            assert await echo(host) == '{"tls": 1}'
        assert proxy.lines[0] == f"POST http://mcp.test:{server.port}/mcp HTTP/1.1"
        assert proxy.authorizations[0] == "Basic dTpwQHNz"  # u:p@ss
        assert all(r.path == "/mcp" for r in server.log)
        assert all("proxy-authorization" not in r.headers for r in server.log)
        assert all(r.headers["host"] == f"mcp.test:{server.port}" for r in server.log)


async def test_legacy_sse_through_a_proxy() -> None:
    async with proxied() as (server, proxy):
        url = f"http://mcp.test:{server.port}/sse"
        async with host_for(url, {"ALL_PROXY": proxy.url}) as host:
            assert await echo(host) == '{"tls": 1}'
        assert any(line.startswith(f"POST http://mcp.test:{server.port}/messages?") for line in proxy.lines)


async def test_a_proxy_that_refuses_the_tunnel_fails_the_start_with_its_answer() -> None:
    async with RemoteServer() as server, ForwardProxy(server.port, refuse=403) as proxy:
        host = host_for(f"https://mcp.test:{server.port}/mcp", {"HTTPS_PROXY": proxy.url})
        with pytest.raises(ServerStartupError, match=rf"through the proxy 127.0.0.1:{proxy.port}: .*HTTP 403"):
            await host.initialize()
        await host.shutdown()


async def test_no_proxy_and_loopback_go_direct() -> None:
    async with proxied() as (server, proxy):
        environ = {"HTTP_PROXY": proxy.url}
        async with host_for(server.url, environ) as host:  # 127.0.0.1: always direct
            assert await echo(host) == '{"tls": 1}'
        assert proxy.lines == []


def test_the_proxy_is_chosen_as_curl_does() -> None:
    env = {"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:2", "HTTP_PROXY": "proxy.example:3128",
           "NO_PROXY": "internal.example, .corp, 10.0.0.0/8, special:8443"}
    assert proxy_for("https", "api.example.com", 443, env, "s") == proxy_for("https", "x.com", 443, env, "s")
    chosen = proxy_for("https", "api.example.com", 443, env, "s")
    assert chosen is not None
    assert (chosen.host, chosen.port) == ("low", 1)
    plain = proxy_for("http", "api.example.com", 80, env, "s")
    assert plain is not None
    assert (plain.host, plain.port, plain.authorization) == ("proxy.example", 3128, None)
    assert proxy_for("https", "internal.example", 443, env, "s") is None
    assert proxy_for("https", "a.b.corp", 443, env, "s") is None
    assert proxy_for("https", "10.1.2.3", 443, env, "s") is None
    assert proxy_for("https", "special", 8443, env, "s") is None
    assert proxy_for("https", "special", 443, env, "s") is not None
    assert proxy_for("https", "example.com", 443, {}, "s") is None
    assert proxy_for("http", "h", 80, {"ALL_PROXY": "http://p"}, "s") is not None
    default_port = proxy_for("http", "h", 80, {"ALL_PROXY": "http://p"}, "s")
    assert default_port is not None
    assert default_port.port == 1080
    assert bypassed("anything", 1, "*")
    assert bypassed("127.0.0.1", 80, None)
    assert bypassed("localhost", 80, None)
    assert bypassed("::1", 80, None)
    with pytest.raises(ConfigurationError, match="only http:// proxies"):
        proxy_for("https", "h", 443, {"HTTPS_PROXY": "socks5://p:1080"}, "s")
