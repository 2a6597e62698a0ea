"""The WebSocket transport against a WebSocket server written here (stdlib, 127.0.0.1):
the handshake, messages both ways through MCPHost, ping, the server's Close, refusals and
protocol violations."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcphost import MCPHost, ServerStartupError, ServerUnavailableError, TransportError
from mcphost.policy import NO_RETRY
from mcphost.wire import websocket as ws

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
ECHO = {"name": "echo", "inputSchema": {"type": "object"}}


def frame(opcode: int, payload: bytes, masked: bool = False) -> bytes:
    """A server frame (unmasked, as §5.1 requires of a server, unless told otherwise)."""
    n = len(payload)
    head = bytes([0x80 | opcode])
    mask_bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 1 << 16:
        head += bytes([mask_bit | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([mask_bit | 127]) + n.to_bytes(8, "big")
    if masked:
        key = b"\x01\x02\x03\x04"
        return head + key + ws.apply_mask(payload, key)
    return head + payload


class Server:
    """An MCP server over WebSocket: initialize, tools/list, tools/call (echo); ``on_call``
    may do something else for a call (close, ping, break the protocol)."""

    def __init__(self, status: int = 101) -> None:
        self.status = status
        self.on_call: Callable[[asyncio.StreamWriter, dict[str, Any]], Any] | None = None
        self.pongs: list[bytes] = []
        self.headers: dict[str, str] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if self.status != 101:
            writer.write(f"HTTP/1.1 {self.status} Forbidden\r\nContent-Length: 0\r\n\r\n".encode())
            await writer.drain()
            writer.close()
            return
        accept = base64.b64encode(hashlib.sha1(self.headers["sec-websocket-key"].encode() + GUID).digest()).decode()
        writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: mcp\r\n\r\n").encode())
        decoder = ws.FrameDecoder(masked=True)
        while True:
            data = await reader.read(65536)
            if not data:
                break
            for event in decoder.feed(data):
                if isinstance(event, ws.Close):
                    writer.write(frame(8, (event.code or 1000).to_bytes(2, "big")))
                    writer.close()
                    return
                if isinstance(event, ws.Pong):
                    self.pongs.append(event.payload)
                if isinstance(event, ws.Message):
                    await self.answer(writer, json.loads(event.payload))

    async def answer(self, writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
        if "id" not in msg:
            return
        method = msg["method"]
        if method == "initialize":
            result: Any = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "ws", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [ECHO]}
        elif method == "tools/call":
            if self.on_call is not None:
                await self.on_call(writer, msg)
                return
            result = {"content": [{"type": "text", "text": json.dumps(msg["params"]["arguments"])}]}
        else:
            result = {}
        writer.write(frame(1, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()))


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[str]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}/mcp?token=secret-token"
    finally:
        listener.close()
        await listener.wait_closed()


def host_for(url: str) -> MCPHost:
    # Through the host's own factory: "type": "websocket" (or a ws:// url) is all it takes.
    cfg = {"mcpServers": {"w": {"url": url, "headers": {"X-Api-Key": "k"}}}}
    return MCPHost(cfg, retry=NO_RETRY)


async def test_calls_over_a_websocket() -> None:
    server = Server()
    async with serving(server) as url, host_for(url) as host:
        assert host.get_tools()["w"]["serverInfo"]["name"] == "ws"
        result = await host.call_tool("w.echo", {"a": 1})
        assert json.loads(result["content"][0]["text"]) == {"a": 1}
        assert server.headers["sec-websocket-protocol"] == "mcp" and server.headers["x-api-key"] == "k"
        stats = host.get_metrics()["w"]["transport"]
        assert stats["messages_out"] >= 3 and stats["bytes_in"] > 0
    assert host.get_tools()["w"]["state"] == "stopped"


async def test_a_ping_is_answered_and_a_close_ends_the_server() -> None:
    server = Server()

    async def ping_then_close(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
        writer.write(frame(9, b"are you there"))
        await asyncio.sleep(0.05)
        writer.write(frame(8, (1001).to_bytes(2, "big") + b"going away"))

    server.on_call = ping_then_close
    async with serving(server) as url, host_for(url) as host:
        with pytest.raises(ServerUnavailableError, match="server closed the WebSocket .1001 going away."):
            await asyncio.wait_for(host.call_tool("w.echo", {}), 10)
        assert server.pongs == [b"are you there"]
        assert host.get_tools()["w"]["state"] == "unavailable"


async def test_a_protocol_violation_fails_the_server() -> None:
    server = Server()

    async def masked(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
        writer.write(frame(1, b"{}", masked=True))  # §5.1: a server MUST NOT mask

    server.on_call = masked
    async with serving(server) as url, host_for(url) as host:
        with pytest.raises(ServerUnavailableError, match="broke the WebSocket protocol"):
            await asyncio.wait_for(host.call_tool("w.echo", {}), 10)


async def test_refusals_name_the_endpoint_and_never_its_path() -> None:
    async with serving(Server(status=403)) as url:
        with pytest.raises(ServerStartupError) as info:
            await host_for(url).initialize()
    text = str(info.value)
    assert "status 403" in text and "ws://127.0.0.1:" in text and "secret-token" not in text
    refused = info.value.failures["w"]
    assert isinstance(refused, ServerStartupError) and not refused.transient  # a 403 says so again
    assert isinstance(refused.__cause__, TransportError) and refused.__cause__.http_status == 403
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    with pytest.raises(ServerStartupError, match=f"cannot connect to ws://127.0.0.1:{port}"):
        await host_for(f"ws://127.0.0.1:{port}/mcp").initialize()


async def test_junk_messages_are_counted_and_logged_a_bounded_number_of_times(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 3,000 messages that are not JSON: before, 3,000 WARNING lines; now the first 5, then
    # one in 1000 (with the count), and the exact count in the statistics.
    server = Server()

    async def junk_then_answer(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
        writer.write(frame(1, b"not json") * 3000)
        result = {"content": [{"type": "text", "text": "after"}]}
        writer.write(frame(1, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()))

    server.on_call = junk_then_answer
    caplog.set_level("DEBUG", logger="mcphost")
    async with serving(server) as url, host_for(url) as host:
        result = await asyncio.wait_for(host.call_tool("w.echo", {}), 10)
        assert result["content"][0]["text"] == "after"
        assert host.get_metrics()["w"]["transport"]["not_json"] == 3000
    warned = [r for r in caplog.records if "not JSON" in r.getMessage()]
    assert len(warned) == 5 + 3
    assert "3000 so far" in warned[-1].getMessage()


async def test_a_ping_flood_whose_pongs_are_not_read_holds_a_bounded_write_buffer() -> None:
    # The server sends 60,000 pings of 125 bytes and reads nothing: before, 60,000 pongs
    # (7.9 MB) queued in the host's write buffer beyond what the socket took. Now, once
    # writing is paused, only the latest ping is answered when it resumes.
    server = Server()
    flooded = asyncio.Event()
    sizes: list[int] = []
    hold: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def flood(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
        ping = frame(9, b"p" * 125)
        for _ in range(60):
            writer.write(ping * 1000)
            await writer.drain()
        flooded.set()
        await hold  # and never read again until the test ends

    server.on_call = flood
    async with serving(server) as url, host_for(url) as host:
        call = asyncio.ensure_future(host.call_tool("w.echo", {}))
        await asyncio.wait_for(flooded.wait(), 30)
        transport = host.supervisor.servers["w"].transport
        for _ in range(100):  # the last reads reach the host
            await asyncio.sleep(0)
            sizes.append(transport._transport.get_write_buffer_size())
        stats = host.get_metrics()["w"]["transport"]
        hold.set_result(None)
        call.cancel()
        # The write buffer stays near asyncio's high-water mark (64 KiB), not 7.9 MB.
        assert max(sizes) <= 256 * 1024
        assert stats["pongs_coalesced"] > 0
