"""HTTP/1.1 for the gateway's server: one request read (bounded), one response written.

Layer 5. Only what a Streamable HTTP endpoint needs: a request line, headers (at most
``max_header`` bytes in all, else 431), a body of ``Content-Length`` bytes (at most
``max_body``, else 413; a body without a length is 411). Responses are either whole
(``Content-Length``) or a Server-Sent Events stream (chunked); the connection is kept alive
after either, written through a :class:`Wire`. Nothing is read or written past a bound: a client that
sends too much gets its status and the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Final

__all__ = ["HttpFailure", "Request", "StreamWire", "Wire", "read_request", "sse_event"]

_REASONS: Final = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
                   403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
                   409: "Conflict", 411: "Length Required", 413: "Content Too Large", 415: "Unsupported Media Type",
                   431: "Request Header Fields Too Large", 503: "Service Unavailable", 500: "Internal Server Error"}


class HttpFailure(Exception):
    """A request that cannot be read: answered with ``status`` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Request:
    """One HTTP request: method, path (without the query), lower-cased headers, body."""

    __slots__ = ("body", "headers", "method", "path")

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    def accepts(self, media: str) -> bool:
        accept = self.headers.get("accept", "")
        return media in accept or "*/*" in accept or not accept


async def read_request(reader: asyncio.StreamReader, max_header: int, max_body: int,
                       prefix: bytes = b"") -> Request | None:
    """The next request of the connection (``None``: the client closed it between requests);
    ``prefix``: its first bytes, already read."""
    try:
        head = prefix + await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not (prefix + exc.partial).strip():
            return None
        raise HttpFailure(400, "the request ended inside its headers") from None
    except asyncio.LimitOverrunError:
        raise HttpFailure(431, f"request headers over {max_header} bytes") from None
    if len(head) > max_header:
        raise HttpFailure(431, f"request headers over {max_header} bytes")
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise HttpFailure(400, "malformed request line") from None
    if not version.startswith("HTTP/1."):
        raise HttpFailure(400, "HTTP/1.x only")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpFailure(400, "malformed header line")
        key = name.lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    body = b""
    if "transfer-encoding" in headers:
        raise HttpFailure(411, "a request body needs a Content-Length")
    length_text = headers.get("content-length")
    if length_text is not None:
        if not length_text.isdigit():
            raise HttpFailure(400, "invalid Content-Length")
        length = int(length_text)
        if length > max_body:
            raise HttpFailure(413, f"request body of {length} bytes is over the limit of {max_body}")
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise HttpFailure(400, "the request body ended early") from None
    elif method == "POST":
        raise HttpFailure(411, "a request body needs a Content-Length")
    return Request(method, target.partition("?")[0], headers, body)


class Wire:
    """One client connection as the gateway writes to it: whole responses, or the head of an
    SSE stream and its events (:class:`StreamWire` over asyncio streams; the ASGI app has its
    own)."""

    def respond(self, status: int, body: bytes = b"", *, content_type: str = "application/json",
                headers: dict[str, str] | None = None, close: bool = False) -> None:
        raise NotImplementedError

    def start_sse(self, headers: dict[str, str] | None = None) -> None:
        raise NotImplementedError

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def end_stream(self) -> None:
        """The SSE stream is complete (the connection may carry another request)."""
        raise NotImplementedError

    def is_closing(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def buffered(self) -> int:
        """Bytes written and not yet taken by the client."""
        raise NotImplementedError

    async def drain(self) -> None:
        raise NotImplementedError

    async def client_gone(self) -> None:
        """Return when the client has closed the connection."""
        raise NotImplementedError


class StreamWire(Wire):
    """A connection of the stdlib server (asyncio streams)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        #: An SSE stream is being written, in chunks (the connection outlives it).
        self.chunked = False
        #: Bytes of the next request read while watching for the client to leave.
        self.pending = b""

    def respond(self, status: int, body: bytes = b"", *, content_type: str = "application/json",
                headers: dict[str, str] | None = None, close: bool = False) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", f"Content-Length: {len(body)}"]
        if body:
            lines.append(f"Content-Type: {content_type}")
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if close:
            lines.append("Connection: close")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def start_sse(self, headers: dict[str, str] | None = None) -> None:
        # Chunked, so that the connection carries the next request once the stream ends (a
        # new TCP connection per call would cost more than the call).
        lines = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-cache",
                 "Transfer-Encoding: chunked"]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.chunked = True

    def write(self, data: bytes) -> None:
        if self.chunked:
            self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.writer.write(data)

    def end_stream(self) -> None:
        if self.chunked:
            self.chunked = False
            self.writer.write(b"0\r\n\r\n")

    def is_closing(self) -> bool:
        return self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()

    def buffered(self) -> int:
        return self.writer.transport.get_write_buffer_size()

    async def drain(self) -> None:
        await self.writer.drain()

    async def client_gone(self) -> None:
        # A read ends when the client closes the connection. A client that sends the next
        # request as soon as the stream ended may have its first byte read here: it is kept
        # (``pending``) for the next request, and the client is not gone.
        data = await self.reader.read(1)
        if data:
            self.pending += data
            await asyncio.Event().wait()  # until the stream ends (the caller cancels this)

    def take_pending(self) -> bytes:
        data, self.pending = self.pending, b""
        return data


def sse_event(event_id: str, data: bytes, retry_ms: int | None = None) -> bytes:
    """One SSE event carrying ``data`` (one JSON text: it holds no newline)."""
    retry = f"retry: {retry_ms}\n" if retry_ms is not None else ""
    return f"id: {event_id}\n{retry}".encode("ascii") + b"data: " + data + b"\n\n"
