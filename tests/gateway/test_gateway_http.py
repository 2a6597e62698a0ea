"""``mcphost serve --http`` in process: the official SDK client, fastmcp's client and mcphost's
own client in front of the gateway's Streamable HTTP endpoint, two fake servers behind it; and
hostile clients (oversized, junk, rebinding, too many sessions), each bounded, none with a
traceback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers import fake, fake_config, wait_for
from test_gateway_inprocess import TOOLS_A, two_servers

from mcphost import MCPHost
from mcphost.gateway.app import Gateway
from mcphost.gateway.http import HttpGateway, HttpOptions


class Front:
    def __init__(self, gateway: Gateway, http: HttpGateway) -> None:
        self.gateway = gateway
        self.http = http
        self.port = http.address[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"


async def serving(config: dict[str, Any], **options: Any) -> tuple[Gateway, HttpGateway]:
    gateway = Gateway(config, handle_signals=False, coalesce=0.01)
    await gateway.start()
    http = HttpGateway(gateway, HttpOptions(**options))
    await http.start("127.0.0.1", 0)
    return gateway, http


@pytest.fixture
async def front() -> AsyncIterator[Front]:
    gateway, http = await serving(two_servers())
    try:
        yield Front(gateway, http)
    finally:
        await http.aclose()
        await gateway.aclose()


async def raw(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP exchange: status, headers, body (read until the server closes or the
    Content-Length is read)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        length = int(headers.get("content-length", "0"))
        body = await asyncio.wait_for(reader.readexactly(length), 10) if length else b""
        return status, headers, body
    finally:
        writer.close()


def post(body: bytes, *, host: str = "127.0.0.1", extra: str = "", length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json\r\nContent-Length: {size}\r\n{extra}\r\n").encode() + body


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()


# -- real clients ------------------------------------------------------------------------------

async def test_the_official_sdk_client(front: Front) -> None:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client

    async def sampling(_ctx: Any, _params: Any) -> Any:
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="sampled by the SDK"))

    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with streamable_http_client(front.url) as (read, write, *_), \
            ClientSession(read, write, sampling_callback=sampling, message_handler=on_message) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        assert names == ["a.echo", "a.count", "a.ask", "a.grow", "a.slow", "b.echo"]
        steps: list[float] = []

        async def progress(value: float, _total: float | None, _message: str | None) -> None:
            steps.append(value)

        result = await session.call_tool("a.count", {}, progress_callback=progress)
        assert steps == [1, 2, 3] and not result.is_error
        asked = await session.call_tool("a.ask", {})
        assert "sampled by the SDK" in asked.content[0].text  # type: ignore[union-attr]
        await session.call_tool("a.grow", {})
        await asyncio.wait_for(changed.wait(), 10)


async def test_fastmcp_client(front: Front) -> None:
    from fastmcp import Client

    def sampling(_messages: Any, _params: Any, _ctx: Any) -> str:
        return "sampled by fastmcp"

    steps: list[float] = []

    async def progress(value: float, _total: float | None, _message: str | None) -> None:
        steps.append(value)

    async with Client(front.url, sampling_handler=sampling, progress_handler=progress) as client:
        names = [t.name for t in await client.list_tools()]
        assert "a.count" in names and "b.echo" in names
        await client.call_tool("a.count", {})
        assert steps == [1, 2, 3]
        asked = await client.call_tool("a.ask", {})
        assert "sampled by fastmcp" in asked.content[0].text  # type: ignore[union-attr]


async def test_mcphosts_own_client(front: Front) -> None:
    async with MCPHost({"mcpServers": {"gw": {"type": "http", "url": front.url}}}, handle_signals=False) as client:
        client.on_sampling(lambda _s, _p: {"role": "assistant", "model": "m",
                                           "content": {"type": "text", "text": "sampled by mcphost"}})
        assert len(client.get_tools()["gw"]["tools"]) == 6
        seen: list[Any] = []
        await client.call_tool("gw.a.count", {}, progress=seen.append)
        assert [p["progress"] for p in seen] == [1, 2, 3]
        result = await client.call_tool("gw.b.echo", {"text": "over http"})
        assert result["content"][0]["text"] == '{"text":"over http"}'


# -- hostile clients ---------------------------------------------------------------------------

async def test_an_oversized_body_is_refused_before_it_is_read() -> None:
    gateway, http = await serving(fake_config(a=fake({"tools": TOOLS_A})), max_body=1000)
    try:
        status, _, body = await raw(http.address[1], post(b"", length=10_000_000))
        assert status == 413 and b"over the limit" in body
        status, _, body = await raw(http.address[1], b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: "
                                    + b"y" * 70_000 + b"\r\n\r\n")
        assert status == 431
    finally:
        await http.aclose()
        await gateway.aclose()


async def test_dns_rebinding_is_refused(front: Front) -> None:
    status, _, body = await raw(front.port, post(INIT, host="evil.example.com"))
    assert status == 403 and b"DNS rebinding" in body
    status, _, _ = await raw(front.port, post(INIT, extra="Origin: http://evil.example.com\r\n"))
    assert status == 403
    status, headers, _ = await raw(front.port, post(INIT, host=f"localhost:{front.port}",
                                                    extra=f"Origin: http://localhost:{front.port}\r\n"))
    assert status == 200 and headers["mcp-session-id"]


async def test_junk_gets_clear_errors_and_no_traceback(front: Front) -> None:
    answers = [
        await raw(front.port, post(b"{not json")),
        await raw(front.port, post(b"[1, 2]")),
        await raw(front.port, post(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')),
        await raw(front.port, post(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
                                   extra="Mcp-Session-Id: nope\r\n")),
        await raw(front.port, b"BREW /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        await raw(front.port, b"nonsense\r\n\r\n"),
    ]
    assert [status for status, _, _ in answers] == [400, 400, 400, 404, 405, 400]
    assert all(b"Traceback" not in body for _, _, body in answers)
    status, _, _ = await raw(front.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 200


async def test_sessions_are_bounded_and_ended_by_delete() -> None:
    gateway, http = await serving(fake_config(a=fake({"tools": TOOLS_A})), max_sessions=2)
    try:
        ids = []
        for _ in range(2):
            status, headers, _ = await raw(http.address[1], post(INIT))
            assert status == 200
            ids.append(headers["mcp-session-id"])
        status, _, body = await raw(http.address[1], post(INIT))
        assert status == 503 and b"too many sessions" in body
        status, _, _ = await raw(http.address[1], f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                  f"Mcp-Session-Id: {ids[0]}\r\n\r\n".encode())
        assert status == 200
        status, _, _ = await raw(http.address[1], post(INIT))
        assert status == 200
    finally:
        await http.aclose()
        await gateway.aclose()


async def test_a_stream_ended_with_its_session_leaves_the_connection_to_the_client() -> None:
    # The GET stream's response ends (its last chunk) when the session is deleted; the
    # connection was not told to close, so the client may send its next request on it at
    # once: the gateway must read it, not close the connection under it (a reset, seen by
    # the conformance suite's clients on a loaded machine).
    gateway, http = await serving(fake_config(a=fake({"tools": TOOLS_A})))
    port = http.address[1]
    try:
        status, headers, _ = await raw(port, post(INIT))
        assert status == 200
        sid = headers["mcp-session-id"]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                         f"Mcp-Session-Id: {sid}\r\n\r\n".encode())
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith(b"HTTP/1.1 200") and b"connection: close" not in head.lower()
            status, _, _ = await raw(port, f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           f"Mcp-Session-Id: {sid}\r\n\r\n".encode())
            assert status == 200
            await asyncio.wait_for(reader.readuntil(b"0\r\n\r\n"), 10)  # the stream's last chunk
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith(b"HTTP/1.1 200"), head
        finally:
            writer.close()
    finally:
        await http.aclose()
        await gateway.aclose()


async def test_a_bearer_token_is_required_when_set() -> None:
    gateway, http = await serving(fake_config(a=fake({"tools": TOOLS_A})), token="s3cret")
    try:
        status, headers, _ = await raw(http.address[1], post(INIT))
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        status, _, _ = await raw(http.address[1], post(INIT, extra="Authorization: Bearer wrong\r\n"))
        assert status == 401
        status, _, _ = await raw(http.address[1], post(INIT, extra="Authorization: Bearer s3cret\r\n"))
        assert status == 200
        status, _, body = await raw(http.address[1], b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                     b"Authorization: Bearer s3cret\r\n\r\n")
        assert status == 200 and b"# TYPE" in body
    finally:
        await http.aclose()
        await gateway.aclose()


async def test_a_lost_stream_is_resumed_with_last_event_id(front: Front) -> None:
    status, headers, _ = await raw(front.port, post(INIT))
    assert status == 200
    sid = headers["mcp-session-id"]
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "a.count", "arguments": {}, "_meta": {"progressToken": "t"}}}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(post(call, extra=f"Mcp-Session-Id: {sid}\r\n").replace(b"Accept: application/json",
                                                                       b"Accept: application/json, text/event-stream"))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert b"text/event-stream" in head
    priming = await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)
    event_id = next(line[4:] for line in priming.decode().split("\n") if line.startswith("id: "))
    assert b"retry: " in priming
    writer.close()  # the client loses the stream at once; the call goes on
    resumed = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n"
               f"Last-Event-ID: {event_id}\r\n\r\n").encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    try:
        writer.write(resumed)
        # The stream ends after the response (its last chunk); the connection stays open.
        data = await asyncio.wait_for(reader.readuntil(b"\r\n0\r\n\r\n"), 30)
    finally:
        writer.close()
    messages = [json.loads(line[6:]) for line in data.decode().split("\n") if line.startswith("data: {")]
    assert [m.get("params", {}).get("progress") for m in messages[:-1]] == [1, 2, 3]
    assert messages[-1]["id"] == 2 and "result" in messages[-1]


async def test_streams_and_connections_are_bounded() -> None:
    gateway, http = await serving(fake_config(a=fake({"tools": TOOLS_A})), max_streams=1, max_connections=2)
    port = http.address[1]
    try:
        status, headers, _ = await raw(port, post(INIT))
        sid = headers["mcp-session-id"]
        slow = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "a.slow", "arguments": {}}}).encode()
        held = asyncio.ensure_future(raw(port, post(slow, extra=f"Mcp-Session-Id: {sid}\r\n")))
        assert await wait_for(lambda: gateway.backend.calling)
        ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
        status, _, body = await raw(port, post(ping, extra=f"Mcp-Session-Id: {sid}\r\n"))
        assert status == 503 and b"too many streams" in body
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)  # the second connection
        try:
            # The third is answered at once, before it sends anything, and closed.
            third_reader, third = await asyncio.open_connection("127.0.0.1", port)
            answer = await asyncio.wait_for(third_reader.read(), 10)
            third.close()
            assert answer.startswith(b"HTTP/1.1 503") and b"too many connections" in answer
        finally:
            writer.close()
        held.cancel()
        await asyncio.wait([held])
    finally:
        await http.aclose()
        await gateway.aclose()
