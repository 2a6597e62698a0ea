"""A JSON answer taken whole in the read callback (``StreamablePost.whole``) means what the
event path says it means, for the answers that go wrong too: a raw server on 127.0.0.1
answers every POST with the same head but for its ``Content-Length``, so that after the
first answer on a connection the others take the fast path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcphost import MCPHost, ProtocolError
from mcphost.policy import NO_RETRY
from mcphost.transports.http_post import StreamablePost

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: %d\r\n\r\n"
Answer = Callable[[dict[str, Any]], bytes]


def result(msg: dict[str, Any], value: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": value}).encode()


class Server:
    """Answers initialize, tools/list and tools/call (``call``: the body of the answer)."""

    def __init__(self) -> None:
        self.call: Answer = lambda msg: result(msg, {"content": [{"type": "text", "text": "ok"}]})

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next((int(line.split(":")[1]) for line in head.split("\r\n")
                               if line.lower().startswith("content-length:")), 0)
                body = await reader.readexactly(length)
                if not head.startswith("POST"):
                    writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                    continue
                msg = json.loads(body)
                method = msg.get("method")
                if "id" not in msg:
                    writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                    continue
                if method == "initialize":
                    answer = result(msg, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                          "serverInfo": {"name": "whole", "version": "1"}})
                elif method == "tools/list":
                    answer = result(msg, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
                elif method == "tools/call":
                    answer = self.call(msg)
                else:  # (server/discover: the handshake era it is)
                    answer = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                         "error": {"code": -32601, "message": "Method not found"}}).encode()
                writer.write(HEAD % len(answer) + answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(monkeypatch: pytest.MonkeyPatch, **host_options: Any) -> AsyncIterator[tuple[Server, MCPHost, list[bool]]]:
    taken: list[bool] = []  # what each offer of a whole answer returned
    whole = StreamablePost.whole

    def spy(post: StreamablePost, body: bytes, head: Any) -> bool:
        taken.append(whole(post, body, head))
        return taken[-1]

    monkeypatch.setattr(StreamablePost, "whole", spy)
    server = Server()
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        async with MCPHost({"mcpServers": {"w": {"url": f"http://127.0.0.1:{port}/mcp", "timeout": 10}}},
                           retry=NO_RETRY, **host_options) as host:
            for n in range(4):  # every connection the host uses has seen the head once
                await host.call_tool("w.echo", {"n": n})
            taken.clear()
            yield server, host, taken
    finally:
        listener.close()
        await listener.wait_closed()


async def test_answers_with_the_same_head_are_taken_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(monkeypatch) as (_, host, taken):
        for n in range(10):
            assert (await host.call_tool("w.echo", {"n": n}))["content"][0]["text"] == "ok"
        assert taken == [True] * 10


@pytest.mark.parametrize("body", [b'{"jsonrpc":"2.0","id":999999,"result":{}}', b"not json", b"  \r\n"])
async def test_a_whole_answer_without_the_response_fails_only_its_call(monkeypatch: pytest.MonkeyPatch,
                                                                      body: bytes) -> None:
    async with serving(monkeypatch) as (server, host, taken):
        server.call = lambda msg: body
        with pytest.raises(ProtocolError, match="HTTP 200 OK and no response to the request"):
            await host.call_tool("w.echo", {}, timeout=10)
        assert taken == [True]
        server.call = lambda msg: result(msg, {"content": [{"type": "text", "text": "back"}]})
        assert (await host.call_tool("w.echo", {}))["content"][0]["text"] == "back"
        if body == b"not json":
            assert any("not JSON" in line for line in host.servers["w"].session.peer.transport.tail())


async def test_a_whole_answer_over_the_limit_goes_the_long_way_and_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(monkeypatch, max_message_size=4096) as (server, host, taken):
        server.call = lambda msg: result(msg, {"content": [{"type": "text", "text": "x" * 5000}]})
        with pytest.raises(ProtocolError, match="limit 4096 bytes"):
            await host.call_tool("w.echo", {}, timeout=10)
        assert False in taken  # declined: the events said it
        server.call = lambda msg: result(msg, {"content": [{"type": "text", "text": "small"}]})
        assert (await host.call_tool("w.echo", {}))["content"][0]["text"] == "small"
