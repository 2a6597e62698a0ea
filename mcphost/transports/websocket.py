"""MCP over a WebSocket: one JSON-RPC message per text frame (subprotocol ``mcp``).

Layer 2, over :mod:`mcphost.wire.http11` (the upgrade's response head) and
:mod:`mcphost.wire.websocket` (RFC 6455 frames). The connection is an ``asyncio`` protocol
whose ``data_received`` decodes frames and pushes the messages straight to the receiver,
as stdio does: no reader task. ``wss://`` URLs use TLS with the default context.

- ``start()`` connects, sends the upgrade (offering the ``mcp`` subprotocol, with the
  configuration's ``headers``) and checks the server's ``101`` (§4.1); a refused connection,
  a non-101 answer or a bad handshake is a ``TransportError`` (the supervisor makes it the
  server's start error) naming the endpoint (no path, no query: they may hold secrets) and
  the socket error or the HTTP status;
- every message sent is one masked text frame; a ping is answered with a pong;
- a ``Close`` from the server is answered, and the peer is gone ("server closed the
  WebSocket (1001 going away)"); a connection that drops is gone too; a frame the decoder
  refuses closes the connection with the code the RFC gives (1002, 1007, 1009);
- ``aclose()`` sends ``Close`` (1000), waits for the server's (bounded), then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import urllib.parse
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final

from .._json import MAX_TOKENS, loads
from ..config.urls import hide_credentials, host_problem
from ..errors import ConfigurationError, TransportError
from ..wire import websocket as ws
from ..wire.http11 import EndOfMessage, HttpProtocolError, Response, ResponseParser
from .base import REQUEST, Gone, GoneOnce, Receiver, oversized_target
from .counted import Decode, InOrder, Raw, head_of
from .throttle import Throttle
from .trace import WireTrace

__all__ = ["WebSocketTransport"]

logger = logging.getLogger("mcphost.transports.websocket")

SUBPROTOCOL: Final = "mcp"
_TAIL: Final = 20
_HIGH_WATER: Final = 1 << 20


class _Connection(asyncio.Protocol):
    def __init__(self, owner: WebSocketTransport) -> None:
        self.owner = owner

    def data_received(self, data: bytes) -> None:
        self.owner._on_data(data)

    def eof_received(self) -> bool | None:
        self.owner._on_lost("server closed the connection")
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._on_lost(f"connection lost: {exc}" if exc else "server closed the connection")

    def pause_writing(self) -> None:
        self.owner._paused(True)

    def resume_writing(self) -> None:
        self.owner._paused(False)


class WebSocketTransport(GoneOnce):
    """One WebSocket connection to one server."""

    def __init__(self, name: str, url: str, *, headers: Iterable[tuple[str, str]] = (),
                 max_message_size: int = ws.DEFAULT_MAX_MESSAGE_SIZE, max_message_tokens: int = MAX_TOKENS,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"not a valid URL: {exc}", server=name) from None
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ConfigurationError(f"expected a ws:// or wss:// URL, not {parts.scheme or hide_credentials(url)!r}",
                                     server=name)
        problem = host_problem(parts.hostname)
        if problem is not None:
            raise ConfigurationError(f"not a valid URL: {problem}", server=name)
        self.name = name
        self.url = url
        self.secure = parts.scheme == "wss"
        self.host = parts.hostname
        self.port = port or (443 if self.secure else 80)
        self.target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        self.shown = f"{parts.scheme}://{parts.hostname}:{self.port}"  # no path, no query: they may hold secrets
        self.headers = list(headers)
        self.ssl_context = ssl_context
        self.needs_drain = False
        self.trace: WireTrace = WireTrace(name)
        self._decoder = ws.FrameDecoder(max_message_size=max_message_size)
        #: Messages in order; one over 1 MiB has its JSON tokens counted first.
        self._in_order = InOrder[Raw](name, self._deliver, self._too_many_tokens, max_message_tokens, loads)
        self._transport: asyncio.Transport | None = None
        self._receiver: Receiver | None = None
        self._early: list[Any] = []
        self._gone: Gone | None = None
        self._gone_told = False
        self._closing = False
        self._handshake: asyncio.Future[None] | None = None
        self._parser: ResponseParser | None = None
        self._key = ""
        self._closed_by_server = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._tail: deque[str] = deque(maxlen=_TAIL)
        self._not_json = Throttle()
        self._stats = {"bytes_in": 0, "bytes_out": 0, "messages_in": 0, "messages_out": 0, "pongs_coalesced": 0}
        #: The payload of the latest ping not answered while writing is paused (None: none).
        self._pending_pong: bytes | None = None

    # -- connecting ---------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        context = (self.ssl_context or ssl.create_default_context()) if self.secure else None
        try:
            transport, _ = await loop.create_connection(lambda: _Connection(self), self.host, self.port,
                                                        ssl=context, server_hostname=self.host if context else None)
        except (OSError, ssl.SSLError) as exc:
            # The server may be starting: worth another try (transient).
            raise TransportError(f"cannot connect to {self.shown}: {exc.strerror or exc}", server=self.name,
                                 os_error=str(exc.strerror or exc), transient=True) from None
        self._transport = transport
        host_header = self.host if self.port in (80, 443) else f"{self.host}:{self.port}"
        request, self._key = ws.handshake_request(host_header, self.target, self.headers, protocols=[SUBPROTOCOL])
        self._parser = ResponseParser()
        self._handshake = loop.create_future()
        transport.write(request)
        try:
            await self._handshake
        except BaseException:
            transport.abort()
            raise

    def _handshaking(self, data: bytes) -> None:
        assert self._parser is not None and self._handshake is not None
        try:
            events = self._parser.feed(data)
        except HttpProtocolError as exc:
            self._handshake_failed(f"bad handshake answer: {exc}")
            return
        for event in events:
            if isinstance(event, Response):
                try:
                    ws.check_handshake_response(event.status, event.headers, self._key, protocols=[SUBPROTOCOL])
                except ws.WebSocketProtocolError as exc:
                    self._handshake_failed(str(exc), event.status)
                    return
                rest = bytes(self._parser.trailing_data)
                self._parser = None
                self._handshake.set_result(None)
                if rest:
                    self._on_frames(rest)
                return
            if isinstance(event, EndOfMessage):  # pragma: no cover - a 101 ends the parser first
                break

    def _handshake_failed(self, why: str, status: int | None = None) -> None:
        assert self._handshake is not None
        self._tail.append(why)
        if not self._handshake.done():
            # A refused upgrade says so again on another try, unless its status says "later".
            transient = status is not None and TransportError.transient_status(status)
            self._handshake.set_exception(TransportError(f"{self.shown}: {why}", server=self.name,
                                                         http_status=status, transient=transient))

    # -- reading ------------------------------------------------------------------------------

    def _on_data(self, data: bytes) -> None:
        self._stats["bytes_in"] += len(data)
        if self._parser is not None:
            self._handshaking(data)
        else:
            self._on_frames(data)

    def _on_frames(self, data: bytes) -> None:
        try:
            events = self._decoder.feed(data)
        except ws.WebSocketProtocolError as exc:
            self._fail(exc.close_code or 1002, f"server broke the WebSocket protocol: {exc}")
            return
        for event in events:
            if isinstance(event, ws.Message):
                self._in_order.push([event.payload])  # in its turn: a big one is counted first
            elif isinstance(event, ws.Ping):
                self._pong(event.payload)
            elif isinstance(event, ws.Close):
                self._closed_by_server.set()
                if not self._closing:
                    self._write(ws.close(event.code if event.code is not None else 1000))
                    reason = f" ({event.code} {event.reason})".rstrip() if event.code else ""
                    self._in_order.then(functools.partial(self._tell_gone, Gone(f"server closed the WebSocket{reason}")))

    def _deliver(self, payloads: list[Raw], decode: Decode) -> None:
        if self.trace.enabled():
            self.trace.messages(False, [p.encode("utf-8") if isinstance(p, str) else p for p in payloads])
        messages: list[Any] = []
        for payload in payloads:
            try:
                messages.append(decode(payload))  # text is decoded as it is, not encoded first
            except ValueError:
                # The server controls how many: the first few are logged, then one in 1000.
                if self._not_json.tick():
                    self._tail.append(f"a frame that is not JSON ({len(payload)} bytes)")
                    logger.warning("%s: skipping a WebSocket message that is not JSON%s",
                                   self.name, self._not_json.suffix())
        if messages and self._gone is None:
            self._stats["messages_in"] += len(messages)
            self._hand_over(messages)

    def _too_many_tokens(self, payload: Raw, reason: str) -> None:
        from_server, rid = oversized_target(head_of(payload))
        # A request or notification of the server: no call waits for it, it is only logged.
        said = f"{reason}; discarded" + (" (a request or notification of the server)" if from_server else "")
        self._tail.append(said)
        logger.error("%s: %s", self.name, said)
        if from_server:
            return
        if rid is None:
            reason += "; the call it answered cannot be identified"
        if self._receiver is not None and self._gone is None:
            self._receiver.on_undeliverable(rid, reason)

    def _on_lost(self, why: str) -> None:
        self._closed_by_server.set()
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.close()  # a TLS transport is only marked closed by close()
        if self._handshake is not None and not self._handshake.done():
            self._handshake_failed(why)
            return
        self._in_order.then(lambda: self._tell_gone(Gone(why)))  # after the messages before it

    def _fail(self, code: int, why: str) -> None:
        self._tail.append(why)
        logger.error("%s: %s", self.name, why)
        self._write(ws.close(code))
        if self._transport is not None:
            self._transport.close()
        self._tell_gone(Gone(why))

    # -- writing ------------------------------------------------------------------------------

    def _write(self, frame: bytes) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        self._stats["bytes_out"] += len(frame)
        transport.write(frame)

    def _pong(self, payload: bytes) -> None:
        # A server that pings and never reads its pongs would make them queue one for one
        # in the write buffer. While writing is paused only the latest ping is answered,
        # once writing resumes: RFC 6455 §5.5.3, "If an endpoint receives a Ping frame and
        # has not yet sent Pong frame(s) in response to previous Ping frame(s), the endpoint
        # MAY elect to send a Pong frame for only the most recently processed Ping frame."
        if self._closing:
            return  # our Close is sent: nothing follows it on the wire
        if self.needs_drain:
            if self._pending_pong is not None:
                self._stats["pongs_coalesced"] += 1
            self._pending_pong = payload
            return
        self._write(ws.pong(payload))

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        if self._gone is not None or self._closing:
            return
        if self.trace.enabled():
            self.trace.messages(True, [data])
        self._stats["messages_out"] += 1
        self._write(ws.encode_frame(ws.Opcode.TEXT, data))

    def _paused(self, paused: bool) -> None:
        self.needs_drain = paused
        if paused:
            self._drained.clear()
        else:
            self._drained.set()
            pending, self._pending_pong = self._pending_pong, None
            if pending is not None and not self._closing:
                self._write(ws.pong(pending))
        if self._receiver is not None:
            self._receiver.on_write_paused(paused)

    async def drain(self) -> None:
        await self._drained.wait()

    async def aclose(self, timeout: float) -> Gone:
        if not self._closing:
            self._closing = True
            self._in_order.close()
            transport = self._transport
            if transport is not None and not transport.is_closing():
                self._write(ws.close(1000))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._closed_by_server.wait(), max(0.0, min(timeout, 2.0)))
                transport.close()
        return self._gone or Gone("connection closed")

    # -- what the host shows --------------------------------------------------------------------

    def tail(self) -> list[str]:
        return list(self._tail)

    def statistics(self) -> dict[str, Any]:
        return {**self._stats, "not_json": self._not_json.count, "too_many_tokens": self._in_order.refused}
