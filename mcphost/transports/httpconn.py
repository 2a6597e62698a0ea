"""HTTP/1.1 connections for the remote transports: one origin, a bounded keep-alive pool,
one exchange at a time per connection.

Layer 2, over :mod:`mcphost.wire.http11`. A connection is an ``asyncio`` protocol: what it
reads goes through the :class:`~mcphost.wire.http11.ResponseParser` and on to the
:class:`Exchange` it serves (the response head, body bytes, the end) in the loop turn that
read it — no reader task, no stream copy. An exchange is one request and what comes back;
the transports above say what each response means (:mod:`.http`, :mod:`.sse`).

The pool keeps at most ``max_connections`` connections to the origin, whatever the server
does; a request that finds no idle connection and no room waits for one (in order).
Requests marked ``urgent`` (a response or a notification, which the server answers at once)
must not queue behind the streams that wait for them, nor take the connections requests
need: the other exchanges (requests, GET streams) hold at most ``max_connections - 1``
connections and the urgent ones the last one (with fewer than 3 in all, both share them),
where they go one after the other, ahead of everything else. A server that never reads its
answers holds that one connection and no more: the urgent exchanges that wait are bounded
too (``MAX_URGENT_WAITING``; past it the newest is dropped, counted in ``dropped``). A connection
goes back to the pool when its response ended and the server keeps it alive; the server
may close an idle one at any time, so an exchange that finds its kept-alive connection
closed before a single byte of the response came is sent once more on a new connection.

Everything is bounded: the time to connect (``connect_timeout``), the response head
(``max_header_size``), the number of connections. Bodies are bounded by the exchanges.
``https`` URLs use TLS with ``ssl.create_default_context()`` unless a context is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import urllib.parse
from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from ..config.urls import host_problem
from ..errors import ConfigurationError
from ..wire.http11 import (
    DEFAULT_MAX_HEADER_SIZE,
    Data,
    EndOfMessage,
    HttpProtocolError,
    Response,
    ResponseParser,
)
from .proxy import Proxy
from .throttle import Throttle
from .tunnel import open_tunnel

__all__ = [
    "ConnectionPool", "Exchange", "HttpConnection", "MAX_URGENT_WAITING", "Origin", "clip", "describe", "header",
    "parse_url",
]

logger = logging.getLogger("mcphost.transports.http")

DEFAULT_MAX_CONNECTIONS: Final = 8
DEFAULT_CONNECT_TIMEOUT: Final = 30.0
#: Urgent exchanges (answers, notifications) waiting for a connection at most; past it the
#: newest is dropped (a server that does not read its answers cannot make the host hold more).
MAX_URGENT_WAITING: Final = 1024
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

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        self.pool.bytes_in += len(data)
        exchange = self.exchange
        if exchange is None:
            # Bytes nobody asked for (a 408 before an idle close...): the connection is not
            # in a known state any more.
            self.close()
            return
        self.received = True
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
        self.exchange = None
        exchange.conn = None
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
        self.exchange = exchange
        exchange.conn = self
        self.received = False
        self.parser.set_request(exchange.method)
        try:
            data = exchange.request()
        except HttpProtocolError as exc:  # a header the configuration holds is not valid
            self.exchange = None
            exchange.conn = None
            self.pool.release(self, True)
            exchange.on_error(f"cannot build the request: {exc}")
            return
        self.pool.bytes_out += len(data)
        self.pool.requests += 1
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
            elif kind is EndOfMessage:
                self.exchange = None
                exchange.conn = None
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

    def _fail(self, exchange: Exchange, why: str) -> None:
        self.exchange = None
        exchange.conn = None
        self.close()
        exchange.on_error(why)

    def drop(self, exchange: Exchange) -> None:
        """The exchange wants no more: close without telling it."""
        if self.exchange is exchange:
            self.exchange = None
            exchange.conn = None
            self.close(abort=True)

    def close(self, abort: bool = False) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            if abort:
                transport.abort()
            else:
                transport.close()


class ConnectionPool:
    """The connections to one origin (bounded), and the exchanges waiting for one."""

    def __init__(
        self,
        origin: Origin,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        proxy: Proxy | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.origin = origin
        self.proxy = proxy
        self.ssl_context = ssl_context if ssl_context is not None or not origin.secure else ssl.create_default_context()
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.max_header_size = max_header_size
        self.idle: list[HttpConnection] = []
        self.conns: set[HttpConnection] = set()
        self.waiting: deque[Exchange] = deque()
        #: Urgent exchanges waiting (served before ``waiting``).
        self.urgent_waiting: deque[Exchange] = deque()
        #: Connections the other exchanges may hold at most: one is left for urgent ones
        #: (with fewer than 3 in all, they share them).
        self.normal_cap = max_connections - 1 if max_connections >= 3 else max_connections
        #: Connections the urgent exchanges may hold at most (a server that does not read
        #: its answers must not take the requests' connections).
        self.urgent_cap = max_connections - self.normal_cap or max_connections
        self.opening = 0
        self._opening_urgent = 0
        self._dropped = Throttle()
        self.closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._paused = 0
        self._drained = asyncio.Event()
        self._drained.set()
        #: Told ``True`` when a connection's write buffer is over its mark, ``False`` when
        #: none is any more.
        self.on_write_paused: Any = None
        # Counters (the transports' statistics).
        self.bytes_in = 0
        self.bytes_out = 0
        self.requests = 0
        self.connections = 0

    @property
    def absolute_form(self) -> bool:
        """Requests name the whole URL (``http`` through a proxy: no tunnel)."""
        return self.proxy is not None and not self.origin.secure

    @property
    def size(self) -> int:
        """Connections open or being opened."""
        return len(self.conns) + self.opening

    @property
    def dropped(self) -> int:
        """Urgent exchanges dropped because too many waited for a connection."""
        return self._dropped.count

    def _room_for(self, urgent: bool) -> bool:
        """An exchange of this kind may take one more connection: the other exchanges hold
        at most ``normal_cap``, the urgent ones the rest."""
        busy = self._opening_urgent if urgent else self.opening - self._opening_urgent
        for conn in self.conns:
            exchange = conn.exchange
            if exchange is not None and exchange.urgent == urgent:
                busy += 1
        return busy < (self.urgent_cap if urgent else self.normal_cap)

    # -- connecting -------------------------------------------------------------------------

    async def connect(self) -> HttpConnection:
        """Open one connection (bounded by ``connect_timeout``); ``OSError`` with a reason
        from :func:`describe` if it cannot be made."""
        loop = asyncio.get_running_loop()
        origin = self.origin
        context = self.ssl_context
        via = f" through the proxy {self.proxy.shown}" if self.proxy is not None else ""
        try:
            if self.proxy is not None:
                conn = await asyncio.wait_for(self._through_proxy(self.proxy), self.connect_timeout)
            else:
                _, conn = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: HttpConnection(self), origin.host, origin.port, ssl=context,
                        server_hostname=origin.host if context is not None else None,
                    ),
                    self.connect_timeout,
                )
        except asyncio.TimeoutError:
            raise OSError(f"cannot connect to {origin.shown}{via}: no answer within {self.connect_timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise OSError(f"cannot connect to {origin.shown}{via}: {describe(exc)}") from None
        except UnicodeError as exc:  # a host name IDNA cannot encode (parse_url checks first)
            raise OSError(f"cannot connect to {origin.shown}{via}: the host name is not valid ({exc})") from None
        self.connections += 1
        if self.closed:
            conn.close(abort=True)
            raise OSError("the transport is closed")
        self.conns.add(conn)
        return conn

    async def _through_proxy(self, proxy: Proxy) -> HttpConnection:
        """A connection through ``proxy``: to the proxy itself for ``http`` (requests in
        absolute form), a ``CONNECT`` tunnel with TLS inside for ``https``."""
        loop = asyncio.get_running_loop()
        origin = self.origin
        if not origin.secure:
            _, conn = await loop.create_connection(lambda: HttpConnection(self), proxy.host, proxy.port)
            return conn
        assert self.ssl_context is not None
        secure = await open_tunnel(proxy, origin, self.ssl_context)
        conn = HttpConnection(self)
        secure.set_protocol(conn)
        conn.connection_made(secure)
        return conn

    async def warm(self) -> None:
        """Open a connection and keep it idle (a transport's ``start``: is the server there?)."""
        self.opening += 1
        try:
            conn = await self.connect()
        finally:
            self.opening -= 1
        self.release(conn, True)

    # -- exchanges --------------------------------------------------------------------------

    def submit(self, exchange: Exchange) -> None:
        """Send ``exchange`` on an idle connection now, on a new one soon, or when one is free."""
        if self.closed:
            exchange.on_error("the transport is closed")
            return
        urgent = exchange.urgent
        if self._room_for(urgent):
            idle = self.idle
            while idle:
                conn = idle.pop()  # the most recently used: the least likely to be closed
                if not conn.lost and conn.transport is not None and not conn.transport.is_closing():
                    conn.begin(exchange)
                    return
            if self.size < self.max_connections:
                self._open(exchange)
                return
        if not urgent:
            self.waiting.append(exchange)
        elif len(self.urgent_waiting) < MAX_URGENT_WAITING:
            self.urgent_waiting.append(exchange)
        # Else dropped as it is: nobody waits for an answer or a notification once sent. The
        # server decides how often: the warning is throttled.
        elif self._dropped.tick():
            logger.warning("%s: %d answers and notifications wait for a connection (the server does not "
                           "read them); dropped one%s", self.origin.shown, MAX_URGENT_WAITING,
                           self._dropped.suffix())

    def _open(self, exchange: Exchange) -> None:
        self.opening += 1
        urgent = exchange.urgent
        self._opening_urgent += urgent
        task = asyncio.get_running_loop().create_task(self._connect_for(exchange, urgent))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect_for(self, exchange: Exchange, urgent: bool) -> None:
        try:
            conn = await self.connect()
        except OSError as exc:
            self.opening -= 1
            self._opening_urgent -= urgent
            if not self.closed:
                exchange.on_connect_failed(str(exc))
                self._next()
            return
        except asyncio.CancelledError:
            self.opening -= 1
            self._opening_urgent -= urgent
            raise
        self.opening -= 1
        self._opening_urgent -= urgent
        conn.begin(exchange)

    def release(self, conn: HttpConnection, keep: bool) -> None:
        """``conn`` finished an exchange: serve a waiting one, keep it idle, or close it."""
        if conn.lost:
            return
        if not keep or self.closed:
            conn.close()
            return
        if self.urgent_waiting and self._room_for(True):
            conn.begin(self.urgent_waiting.popleft())
        elif self.waiting and self._room_for(False):
            conn.begin(self.waiting.popleft())
        elif len(self.idle) < self.max_connections:
            self.idle.append(conn)
        else:
            conn.close()

    def forget(self, conn: HttpConnection) -> None:
        """``conn`` is closed."""
        self.conns.discard(conn)
        with contextlib.suppress(ValueError):
            self.idle.remove(conn)
        if not self.closed:
            self._next()

    def _next(self) -> None:
        while self.size < self.max_connections:
            if self.urgent_waiting and self._room_for(True):
                self._open(self.urgent_waiting.popleft())
            elif self.waiting and self._room_for(False):
                self._open(self.waiting.popleft())
            else:
                break

    # -- flow control -----------------------------------------------------------------------

    def paused(self, delta: int) -> None:
        before = self._paused
        self._paused += delta
        if before == 0 and self._paused > 0:
            self._drained.clear()
            if self.on_write_paused is not None:
                self.on_write_paused(True)
        elif before > 0 and self._paused == 0:
            self._drained.set()
            if self.on_write_paused is not None:
                self.on_write_paused(False)

    async def drain(self) -> None:
        await self._drained.wait()

    # -- closing ----------------------------------------------------------------------------

    def close_now(self) -> None:
        """Drop every connection and waiting exchange at once (nothing is told)."""
        self.closed = True
        self.waiting.clear()
        self.urgent_waiting.clear()
        self.idle.clear()
        for task in list(self._tasks):
            task.cancel()
        for conn in list(self.conns):
            conn.exchange = None
            conn.close(abort=True)
        self._paused = 0
        self._drained.set()

    async def aclose(self) -> None:
        self.close_now()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
