"""The connection pool against a raw stdlib server that breaks HTTP framing: bytes after
the end of a response must not reach the next request on a kept-alive connection."""

from __future__ import annotations

import asyncio

from mcphost.transports.http_pool import ConnectionPool
from mcphost.transports.httpconn import Exchange, Origin
from mcphost.wire.http11 import Response


class Get(Exchange):
    def __init__(self) -> None:
        self.done: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self.status = 0
        self.body = bytearray()

    def request(self) -> bytes:
        return b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"

    def on_response(self, response: Response) -> None:
        self.status = response.status

    def on_data(self, chunk: bytes) -> None:
        self.body += chunk

    def on_end(self) -> None:
        self.done.set_result((self.status, bytes(self.body)))

    def on_error(self, why: str) -> None:
        self.done.set_exception(OSError(why))


async def test_bytes_after_content_length_close_the_connection() -> None:
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                # Content-Length says 2, the server sends 2 and then more in the same write.
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 Bad\r\nContent-Le")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = ConnectionPool(Origin("http", "127.0.0.1", port))
    try:
        results = []
        for _ in range(5):
            exchange = Get()
            pool.submit(exchange)
            results.append(await asyncio.wait_for(exchange.done, 10))
        # Before: the second request read "HTTP/1.1 500 Bad...HTTP/1.1 200" and failed.
        assert results == [(200, b"ok")] * 5
        assert connections == 5  # none of these connections was reused
        assert pool.idle == []
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()


async def test_a_clean_response_keeps_the_connection() -> None:
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = ConnectionPool(Origin("http", "127.0.0.1", port))
    try:
        for _ in range(3):
            exchange = Get()
            pool.submit(exchange)
            assert await asyncio.wait_for(exchange.done, 10) == (200, b"ok")
        assert connections == 1
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()


class Urgent(Get):
    urgent = True


async def test_urgent_exchanges_the_server_never_answers_hold_one_connection_and_a_bounded_queue() -> None:
    # A server that reads nothing it is sent after the head: each urgent exchange (an answer,
    # a notification) would have opened a connection of its own. Now: one connection for
    # them, MAX_URGENT_WAITING wait, the rest are dropped and counted; requests still go.
    from mcphost.transports.http_pool import MAX_URGENT_WAITING

    open_now = peak = 0
    stuck = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now, peak
        open_now += 1
        peak = max(peak, open_now)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"POST"):
                    await stuck.wait()  # an answer: never taken
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            open_now -= 1
            writer.close()

    class Answer(Urgent):
        def request(self) -> bytes:
            return b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = ConnectionPool(Origin("http", "127.0.0.1", port))
    try:
        total = MAX_URGENT_WAITING + 50
        for _ in range(total):
            pool.submit(Answer())
        for _ in range(5):  # requests go on the connections left to them
            exchange = Get()
            pool.submit(exchange)
            assert await asyncio.wait_for(exchange.done, 10) == (200, b"ok")
        assert pool.dropped == total - 1 - MAX_URGENT_WAITING
        assert len(pool.urgent_waiting) == MAX_URGENT_WAITING
        assert peak <= pool.max_connections and pool.size <= pool.max_connections
    finally:
        stuck.set()
        await pool.aclose()
        server.close()
        await server.wait_closed()


class Whole(Get):
    """An exchange that takes a plain head's responses whole (or declines: ``takes``)."""

    def __init__(self, takes: bool) -> None:
        super().__init__()
        self.takes = takes
        self.offered = 0

    def plain(self, response: Response) -> bool:
        return response.status == 200

    def whole(self, body: bytes, head: Response) -> bool:
        self.offered += 1
        if self.takes:
            assert self.conn is None  # the connection is free, as for on_end
            self.done.set_result((head.status, body))
        return self.takes


async def test_a_response_with_the_plain_head_is_offered_whole() -> None:
    # Each answer is one write with the same head but for its length: after the first
    # (parsed, found plain), the next ones are offered whole; declined, the events follow.
    # Either way the outcome is the same and the one connection is kept.
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        n = 0
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                n += 1
                body = b"x" * n
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = ConnectionPool(Origin("http", "127.0.0.1", port))
    try:
        for takes in (True, False):
            offered = 0
            for n in range(1, 6):
                exchange = Whole(takes)
                pool.submit(exchange)
                assert await asyncio.wait_for(exchange.done, 10) == (200, b"x" * (n + 5 * (not takes)))
                offered += exchange.offered
            assert offered >= 1  # (each answer is one small write: one read on 127.0.0.1)
        assert connections == 1
        assert len(pool.idle) == 1
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()
