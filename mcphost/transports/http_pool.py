"""The pool of HTTP/1.1 connections to one origin: bounded, sized by demand.

Layer 2, over :mod:`.httpconn` (one connection, the exchanges it serves).

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

The pool grows with demand: a request that finds no idle connection opens one more while
there is room, so a busy server gets up to ``max_connections``. It shrinks with it: while
more than one connection is idle, one timer per pool ticks every ``idle_timeout`` seconds and
closes the idle connections that served nothing since the tick before (so after between one
and two ``idle_timeout`` unused), down to one kept for the next request. Nothing is counted
per request for it: a connection's ``served`` count is compared at each tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from typing import Any, Final

from ..wire.http11 import DEFAULT_MAX_HEADER_SIZE
from .httpconn import Exchange, HttpConnection, Origin, describe
from .proxy import Proxy
from .throttle import Throttle
from .tunnel import open_tunnel

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_CONNECTIONS", "MAX_URGENT_WAITING",
           "ConnectionPool"]

logger = logging.getLogger("mcphost.transports.http")

DEFAULT_MAX_CONNECTIONS: Final = 8
DEFAULT_CONNECT_TIMEOUT: Final = 30.0
#: Seconds a connection may stay idle in the pool before it is closed.
DEFAULT_IDLE_TIMEOUT: Final = 30.0
#: Urgent exchanges (answers, notifications) waiting for a connection at most; past it the
#: newest is dropped (a server that does not read its answers cannot make the host hold more).
MAX_URGENT_WAITING: Final = 1024


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
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if not idle_timeout > 0:
            raise ValueError("idle_timeout must be positive")
        self.idle_timeout = idle_timeout
        self._reaper: asyncio.TimerHandle | None = None
        #: The ``served`` count of each idle connection at the last tick.
        self._marks: dict[HttpConnection, int] = {}
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
        #: Connections serving an exchange: [the others, the urgent ones].
        self.busy = [0, 0]
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
        busy = self.busy[urgent] + (self._opening_urgent if urgent else self.opening - self._opening_urgent)
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
        # (self._room_for(urgent), inline: this runs once per message)
        if (self.busy[urgent] + (self._opening_urgent if urgent else self.opening - self._opening_urgent)
                < (self.urgent_cap if urgent else self.normal_cap)):
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
        elif self.waiting and self.busy[0] + self.opening - self._opening_urgent < self.normal_cap:
            conn.begin(self.waiting.popleft())  # (room for it: self._room_for(False), inline)
        elif len(self.idle) < self.max_connections:
            idle = self.idle
            idle.append(conn)
            if self._reaper is None and len(idle) > 1:
                self._reaper = asyncio.get_running_loop().call_later(self.idle_timeout, self._reap)
        else:
            conn.close()

    def _reap(self) -> None:
        """The idle tick: close the idle connections that served nothing since the last one
        (the most recently used is kept)."""
        self._reaper = None
        marks = self._marks
        kept: dict[HttpConnection, int] = {}
        idle = self.idle
        for conn in idle[:-1]:  # (the last is the next one used)
            if marks.get(conn) == conn.served:
                logger.debug("%s: closing a connection idle for %g s", self.origin.shown, self.idle_timeout)
                idle.remove(conn)
                conn.close()
            else:
                kept[conn] = conn.served
        self._marks = kept
        if len(idle) > 1 and not self.closed:
            self._reaper = asyncio.get_running_loop().call_later(self.idle_timeout, self._reap)

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
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        self._marks.clear()
        self.waiting.clear()
        self.urgent_waiting.clear()
        self.idle.clear()
        for task in list(self._tasks):
            task.cancel()
        for conn in list(self.conns):
            conn.exchange = None
            conn.close(abort=True)
        self.busy = [0, 0]
        self._paused = 0
        self._drained.set()

    async def aclose(self) -> None:
        self.close_now()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
