"""HTTP/1.1 connections for the remote transports: one origin, one exchange at a time per
connection.

Layer 2, over :mod:`mcphost.wire.http11`. A connection is an ``asyncio`` protocol: what it
reads goes through the :class:`~mcphost.wire.http11.ResponseParser` and on to the
:class:`Exchange` it serves (the response head, body bytes, the end) in the loop turn that
read it — no reader task, no stream copy. A read that is one whole response with the head
the connection's exchange found plain last time (a ``200`` JSON answer) is handed to the
exchange whole (:meth:`Exchange.whole`): no event per response. An exchange is one request
and what comes back; the transports above say what each response means (:mod:`.http`,
:mod:`.sse`). The pool of connections to the origin is :mod:`.http_pool`'s.

Everything is bounded: the time to connect (``connect_timeout``), the response head
(``max_header_size``), the number of connections. Bodies are bounded by the exchanges.
``https`` URLs use TLS with ``ssl.create_default_context()`` unless a context is given.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..config.urls import host_problem
from ..errors import ConfigurationError
from ..wire.http11 import (
    Data,
    EndOfMessage,
    HttpProtocolError,
    Response,
    ResponseParser,
)

if TYPE_CHECKING:
    from .http_pool import ConnectionPool

__all__ = ["Exchange", "HttpConnection", "Origin", "clip", "describe", "header", "parse_url"]

logger = logging.getLogger("mcphost.transports.http")

#: Past this many bytes buffered for the socket, senders are asked to ``drain()``.
_HIGH_WATER: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the requests go: scheme, host and port (RFC 6454)."""

    scheme: str
    host: str
    port: int

    @property
    def secure(self) -> bool:
        return self.scheme == "https"

    @property
    def shown(self) -> str:
        """``host:port`` for messages (never the path or query: they may hold secrets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.secure else 80
        return host if self.port == default else f"{host}:{self.port}"


def parse_url(url: str, name: str) -> tuple[Origin, str]:
    """The origin and request target (path and query) of an ``http(s)://`` URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"not a valid URL: {exc}", server=name) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"expected an http:// or https:// URL, not {scheme or url!r}", server=name)
    problem = host_problem(parts.hostname)
    if problem is not None:
        raise ConfigurationError(f"not a valid URL: {problem}", server=name)
    origin = Origin(scheme, parts.hostname, port or (443 if scheme == "https" else 80))
    return origin, target_of(parts)


def target_of(parts: urllib.parse.SplitResult) -> str:
    """The request target (RFC 9112 §3.2.1 origin-form) of a parsed URL; no fragment."""
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    # Characters a URL may hold but a request line may not (spaces...) are escaped.
    return urllib.parse.quote(target, safe="/?&=%:@!$'()*+,;~-._")


def header(response: Response, name: str) -> str | None:
    """The first value of header ``name`` (lower case) in ``response``."""
    for key, value in response.headers:
        if key == name:
            return value
    return None


def clip(body: bytes | str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters of a body, for a message."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(exc: BaseException) -> str:
    """A short, lower-case reason for a failed connect or a lost connection."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset by peer"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, socket.gaierror):
        return f"host name not resolved ({exc.strerror})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


class Exchange:
    """One request on a connection and what comes back (subclasses say what it means).

    The connection calls :meth:`on_response`, :meth:`on_data` (zero or more times) and
    :meth:`on_end`; or :meth:`on_error` when the connection fails first; or the pool calls
    :meth:`on_connect_failed` when no connection could be made. An exchange that wants no
    more of the response calls :meth:`abort` (the connection is dropped; nothing more is
    called). ``method`` is the HTTP method (a ``HEAD`` response has no body).
    """

    method = "GET"
    urgent = False
    #: Set by the connection serving it.
    conn: HttpConnection | None = None
    retried = False

    def request(self) -> bytes:
        """The request's bytes (built when a connection takes it: headers are current)."""
        raise NotImplementedError

    def on_response(self, response: Response) -> None: ...

    def on_data(self, chunk: bytes) -> None: ...

    def on_end(self) -> None: ...

    def on_error(self, why: str) -> None: ...

    def on_connect_failed(self, why: str) -> None:
        self.on_error(why)

    def plain(self, response: Response) -> bool:
        """Would an exchange of this kind take a response with this head (its
        Content-Length aside) whole? Asked of each head that is the parser's template; if
        so, the connection offers the next response with that head to :meth:`whole`."""
        return False

    def whole(self, body: bytes, head: Response) -> bool:
        """The response came in one read, with the head ``head`` (a head :meth:`plain`
        accepted, but for its Content-Length) and ``body``. ``True``: taken, as
        :meth:`on_response`, :meth:`on_data` and :meth:`on_end` would have (the connection
        is already free, as for ``on_end``); ``False``: nothing done, the events follow."""
        return False

    def abort(self) -> None:
        conn = self.conn
        if conn is not None:
            conn.drop(self)


class HttpConnection(asyncio.Protocol):
    """One TCP (or TLS) connection of a pool; serves one exchange at a time."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = ResponseParser(max_header_size=pool.max_header_size)
        self.exchange: Exchange | None = None
        self.served = 0  # responses completed on this connection
        self.received = False  # bytes of the current exchange's response came
        self.lost = False
        self.paused = False
        #: The head an exchange found plain last (a token of the parser's template): the
        #: next response with it is offered whole (``Exchange.whole``).
        self.plain: Response | None = None
        #: The method of the request the parser was last told of.
        self.method = "GET"

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        pool = self.pool
        pool.bytes_in += len(data)
        exchange = self.exchange
        if exchange is None:
            # Bytes nobody asked for (a 408 before an idle close...): the connection is not
            # in a known state any more.
            self.close()
            return
        self.received = True
        plain = self.plain
        if plain is not None:
            parser = self.parser
            body = parser.feed_same(data, plain)
            if body is not None:
                # One whole response with the plain head: no event, no head object.
                self.exchange = None  # (self._detach(exchange), inline)
                exchange.conn = None
                pool.busy[exchange.urgent] -= 1
                self.served += 1
                if exchange.whole(body, plain):
                    # (bytes past the end would not match: a plain read ends the response)
                    pool.release(self, parser.keep_alive)
                    return
                self._attach(exchange)
                self.served -= 1
                self._events(exchange, parser.same_events(body))
                return
        try:
            events = self.parser.feed(data)
        except HttpProtocolError as exc:
            self._fail(exchange, f"bad HTTP response: {exc}")
            return
        self._events(exchange, events)

    def eof_received(self) -> bool | None:
        return None  # close: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        transport = self.transport
        if transport is not None and not transport.is_closing():
            # The peer went first; a TLS transport is only marked closed by close() (an
            # unclosed one warns when collected).
            transport.close()
        if self.paused:
            self.paused = False
            self.pool.paused(-1)
        exchange = self.exchange
        self.pool.forget(self)
        if exchange is None:
            return
        try:
            events = self.parser.feed_eof()
        except HttpProtocolError as err:
            why = str(err)
        else:
            self._events(exchange, events)
            if self.exchange is not exchange:
                return  # the body ended with the connection (read until close)
            why = "the server closed the connection before answering"
        if exc is not None:
            why = describe(exc)
        self._detach(exchange)
        if self.served and not self.received and not exchange.retried:
            # A kept-alive connection the server had closed meanwhile: nothing of the
            # request was answered, so it goes once more, on a new connection.
            exchange.retried = True
            logger.debug("%s: kept-alive connection closed by the server; sending again", self.pool.origin.shown)
            self.pool.submit(exchange)
            return
        exchange.on_error(why)

    def pause_writing(self) -> None:
        if not self.paused:
            self.paused = True
            self.pool.paused(1)

    def resume_writing(self) -> None:
        if self.paused:
            self.paused = False
            self.pool.paused(-1)

    # -- serving exchanges ------------------------------------------------------------------

    def begin(self, exchange: Exchange) -> None:
        transport = self.transport
        assert transport is not None
        pool = self.pool
        self.exchange = exchange  # (self._attach(exchange), inline)
        exchange.conn = self
        pool.busy[exchange.urgent] += 1
        self.received = False
        method = exchange.method
        if method is not self.method:  # (the parser is told only when it changes)
            self.method = method
            self.parser.set_request(method)
        try:
            data = exchange.request()
        except HttpProtocolError as exc:  # a header the configuration holds is not valid
            self._detach(exchange)
            pool.release(self, True)
            exchange.on_error(f"cannot build the request: {exc}")
            return
        pool.bytes_out += len(data)
        pool.requests += 1
        transport.write(data)

    def _events(self, exchange: Exchange, events: list[Any]) -> None:
        for i, event in enumerate(events):
            if self.exchange is not exchange:
                return  # the exchange aborted
            kind = type(event)
            if kind is Data:
                exchange.on_data(event.chunk)
            elif kind is Response:
                exchange.on_response(event)
                # A read with two heads ends with the connection closed: the template is
                # this head's whenever the connection is kept.
                template = self.parser.head_template
                self.plain = template if template is not None and exchange.plain(event) else None
            elif kind is EndOfMessage:
                self._detach(exchange)
                self.served += 1
                # A second response nobody asked for in the same read, or bytes after the
                # body's end (more than Content-Length said): the connection is not in a
                # known state, so it is closed rather than given the next request, whose
                # answer those bytes would corrupt.
                keep = self.parser.keep_alive and i == len(events) - 1 and not self.parser.buffered
                if not keep and self.parser.buffered:
                    logger.debug("%s: %d bytes after the end of a response; not reusing the connection",
                                 self.pool.origin.shown, self.parser.buffered)
                exchange.on_end()
                self.pool.release(self, keep)
                return

    def _attach(self, exchange: Exchange) -> None:
        self.exchange = exchange
        exchange.conn = self
        self.pool.busy[exchange.urgent] += 1

    def _detach(self, exchange: Exchange) -> None:
        self.exchange = None
        exchange.conn = None
        self.pool.busy[exchange.urgent] -= 1

    def _fail(self, exchange: Exchange, why: str) -> None:
        self._detach(exchange)
        self.close()
        exchange.on_error(why)

    def drop(self, exchange: Exchange) -> None:
        """The exchange wants no more: close without telling it."""
        if self.exchange is exchange:
            self._detach(exchange)
            self.close(abort=True)

    def close(self, abort: bool = False) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            if abort:
                transport.abort()
            else:
                transport.close()
