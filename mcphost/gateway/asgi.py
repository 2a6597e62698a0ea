"""The gateway as an ASGI application: ``mcphost.gateway.asgi_app(config)``.

Layer 5. The same endpoint as ``mcphost serve --http`` (:class:`~mcphost.gateway.http.HttpGateway`
answers every request; only the connection differs: :class:`AsgiWire` turns its writes into
ASGI messages), for uvicorn, hypercorn, or gunicorn with uvicorn workers::

    # app.py
    from mcphost.gateway import asgi_app
    app = asgi_app("mcp.json")

    $ uvicorn app:app --port 8808

The host starts with the ASGI lifespan (or with the first request when the server sends no
lifespan events) and stops with it. Sessions live in the worker that opened them: with several
workers or replicas, route by the ``Mcp-Session-Id`` header (sticky sessions; docs/serve.md).
Behind a proxy the ``Host`` is the public name, so no Host/Origin check is made unless
``allowed_hosts`` names what to accept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..server.session import ServerLimits
from .app import ConfigSource, Gateway
from .http import HttpGateway, HttpOptions
from .httpwire import Request, Wire

__all__ = ["AsgiApp", "AsgiWire", "asgi_app"]

logger = logging.getLogger("mcphost.gateway")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class AsgiWire(Wire):
    """One ASGI HTTP exchange as the gateway writes to it: writes are queued and sent by
    :meth:`pump`, in order."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._queue: asyncio.Queue[Message | None] = asyncio.Queue()
        self._size = 0
        self._started = False
        self._ended = False

    def respond(self, status: int, body: bytes = b"", *, content_type: str = "application/json",
                headers: dict[str, str] | None = None, close: bool = False) -> None:
        if self._started:
            return
        head = [(b"content-length", str(len(body)).encode())]
        if body:
            head.append((b"content-type", content_type.encode("latin-1")))
        self._start(status, head, headers)
        self._put({"type": "http.response.body", "body": body, "more_body": False})
        self._ended = True

    def start_sse(self, headers: dict[str, str] | None = None) -> None:
        self._start(200, [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")], headers)

    def _start(self, status: int, head: list[tuple[bytes, bytes]], headers: dict[str, str] | None) -> None:
        self._started = True
        head += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        self._put({"type": "http.response.start", "status": status, "headers": head})

    def write(self, data: bytes) -> None:
        if not self._ended:
            self._size += len(data)
            self._put({"type": "http.response.body", "body": data, "more_body": True})

    def end_stream(self) -> None:
        self.close()

    def _put(self, message: Message) -> None:
        self._queue.put_nowait(message)

    def is_closing(self) -> bool:
        return self._ended

    def close(self) -> None:
        if not self._ended:
            self._ended = True
            if not self._started:
                self.respond(500, b"")
            else:
                self._put({"type": "http.response.body", "body": b"", "more_body": False})
        self._queue.put_nowait(None)

    def buffered(self) -> int:
        return self._size

    async def drain(self) -> None:
        return None

    async def client_gone(self) -> None:
        while True:
            message = await self._receive()
            if message.get("type") == "http.disconnect":
                return

    async def pump(self) -> None:
        """Send what is written, until the response ends (or the client is gone). The body
        parts waiting are sent as one message: one write, not one small segment per part."""
        queue = self._queue
        while True:
            message = await queue.get()
            if message is None:
                return
            last = message.get("type") == "http.response.body" and not message.get("more_body")
            if message.get("type") == "http.response.body" and not last and not queue.empty():
                parts = [message["body"]]
                while not last and not queue.empty():
                    following = queue.get_nowait()
                    if following is None:
                        queue.put_nowait(None)  # still the end: seen on the next turn
                        break
                    parts.append(following.get("body", b""))
                    last = not following.get("more_body")
                message = {"type": "http.response.body", "body": b"".join(parts), "more_body": not last}
            self._size -= len(message.get("body", b""))
            try:
                await self._send(message)
            except OSError:
                self._ended = True
                return
            if last:
                return


class AsgiApp:
    """The ASGI application (see the module docstring); build it with :func:`asgi_app`."""

    def __init__(self, gateway: Gateway, front: HttpGateway) -> None:
        self.gateway = gateway
        self.front = front
        self._started: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "http":
            await self._http(scope, receive, send)
        else:
            await send({"type": "websocket.close", "code": 1003})

    async def startup(self) -> None:
        """Start the host (once; later callers wait for the same start)."""
        if self._started is None:
            self._started = asyncio.get_running_loop().create_task(self._start())
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        await self.gateway.start()
        await self.front.open()

    async def shutdown(self) -> None:
        await self.front.aclose()
        await self.gateway.aclose()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.startup()
        options = self.front.options
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", ()):
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        wire = AsgiWire(receive, send)
        pump = asyncio.get_running_loop().create_task(wire.pump())
        try:
            body = await _body(receive, headers, options.max_body)
            if body is None:
                wire.respond(413, b'{"error": "request body over the limit"}')
            else:
                await self.front.handle(Request(str(scope.get("method", "GET")), str(scope.get("path", "/")),
                                                headers, body), wire)
        finally:
            wire.close()
            await pump


async def _body(receive: Receive, headers: dict[str, str], limit: int) -> bytes | None:
    """The request body, or ``None`` when it is over ``limit`` (not read further)."""
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        return None
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(parts)


def asgi_app(config: ConfigSource, *, naming: str = "dot", limits: ServerLimits | None = None,
             http: HttpOptions | None = None, **host_options: Any) -> AsgiApp:
    """The gateway of ``config`` as an ASGI application (options as for ``mcphost serve``;
    ``http`` holds the endpoint's bounds, its token and ``allowed_hosts``)."""
    host_options.setdefault("handle_signals", False)  # the ASGI server owns the signals
    gateway = Gateway(config, naming=naming, limits=limits, **host_options)
    return AsgiApp(gateway, HttpGateway(gateway, http))
