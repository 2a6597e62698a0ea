"""A stdlib-only remote MCP server whose tools/list answer is one huge message.

argv[1]: how it speaks: ``http-json`` (Streamable HTTP, a JSON body), ``http-sse``
(Streamable HTTP, an SSE response stream), ``sse`` (the legacy HTTP+SSE transport: the
answer is an event of the GET stream) or ``ws`` (WebSocket, one text frame). argv[2]: how
many tools the one page lists (default 1,000,000: about 47 MB). With argv[3] ``notify``,
a notification just as big is sent first (it is the server's own: only logged).

It prints its port on stdout, then serves on 127.0.0.1 until stdin closes. It speaks the
handshake era: ``initialize``, ``tools/list``, ``tools/call`` and ``ping`` are answered,
any other request (``server/discover`` included) gets -32601.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
from typing import Any

MODE = sys.argv[1]
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
NOTIFY = len(sys.argv) > 3 and sys.argv[3] == "notify"
_BIG: dict[str, bytes] = {}


def big(head: bytes) -> bytes:
    if "items" not in _BIG:
        item = '{"name":"t%d","inputSchema":{"type":"object"}}'
        _BIG["items"] = ",".join(item % i for i in range(COUNT)).encode()
    return head + _BIG["items"] + b"]}}"


def answers(msg: Any) -> list[bytes]:
    """The messages that answer ``msg`` (the big notification first, if asked)."""
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        return []
    if method == "initialize":
        result: Any = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                       "serverInfo": {"name": "big", "version": "1"}}
    elif method == "tools/list":
        out = [big(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":[')] if NOTIFY else []
        return [*out, big(b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[' % json.dumps(rid).encode())]
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "hi"}]}
    elif method == "ping":
        result = {}
    else:  # server/discover included: a server of the handshake era
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return [json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode()]
    return [json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()]


def head(status: str, headers: dict[str, str]) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()


def sse(data: bytes, event: str = "message") -> bytes:
    return b"event: %s\ndata: %s\n\n" % (event.encode(), data)


class Server:
    def __init__(self) -> None:
        self.stream: asyncio.StreamWriter | None = None  # the legacy transport's GET stream

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                raw = await reader.readuntil(b"\r\n\r\n")
                lines = raw.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                if MODE == "ws":
                    await self.websocket(reader, writer, headers)
                    return
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "GET" and MODE == "sse":
                    self.stream = writer
                    writer.write(head("200 OK", {"Content-Type": "text/event-stream"}) + sse(b"/messages", "endpoint"))
                    await writer.drain()
                    await asyncio.Event().wait()
                elif method != "POST":
                    writer.write(head("405 Method Not Allowed", {"Content-Length": "0"}))
                elif MODE == "sse":
                    writer.write(head("202 Accepted", {"Content-Length": "0"}))
                    assert self.stream is not None
                    for out in answers(json.loads(body)):
                        self.stream.write(sse(out))
                    await self.stream.drain()
                else:
                    msg = json.loads(body)
                    out = answers(msg)
                    extra = {"Mcp-Session-Id": "s1"} if msg.get("method") == "initialize" else {}
                    if not out:
                        writer.write(head("202 Accepted", {"Content-Length": "0"}))
                    elif MODE == "http-sse":
                        data = b"".join(sse(one) for one in out)
                        writer.write(head("200 OK", {"Content-Type": "text/event-stream", "Content-Length": str(len(data)),
                                                     **extra}) + data)
                    else:
                        writer.write(head("200 OK", {"Content-Type": "application/json",
                                                     "Content-Length": str(len(out[-1])), **extra}) + out[-1])
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def websocket(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        headers: dict[str, str]) -> None:
        key = headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
        writer.write(head("101 Switching Protocols", {"Upgrade": "websocket", "Connection": "Upgrade",
                                                      "Sec-WebSocket-Accept": accept, "Sec-WebSocket-Protocol": "mcp"}))
        while True:
            first, second = await reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                length = int.from_bytes(await reader.readexactly(2), "big")
            elif length == 127:
                length = int.from_bytes(await reader.readexactly(8), "big")
            mask = await reader.readexactly(4)
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(await reader.readexactly(length)))
            opcode = first & 0x0F
            if opcode == 8:
                writer.write(b"\x88\x02\x03\xe8")
                await writer.drain()
                return
            if opcode != 1:
                continue
            for out in answers(json.loads(payload)):
                size = len(out)
                if size < 126:
                    frame = bytes([0x81, size])
                elif size < 65536:
                    frame = bytes([0x81, 126]) + size.to_bytes(2, "big")
                else:
                    frame = bytes([0x81, 127]) + size.to_bytes(8, "big")
                writer.write(frame + out)
            await writer.drain()


async def main() -> None:
    server = await asyncio.start_server(Server().serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the test closes stdin
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
