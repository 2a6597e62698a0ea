"""The gateway served over its own standard input and output (``mcphost serve --stdio``).

Layer 5. An IDE starts ``mcphost serve --stdio mcp.json`` as its one MCP server: messages
arrive on stdin, one JSON text per line, and leave on stdout the same way (spec 2025-11-25,
Transports, stdio: "The server MUST NOT write anything to its stdout that is not a valid MCP
message"; logs go to stderr). :class:`PipeTransport` reads and writes two pipes with the
event loop's pipe transports, framed by :class:`~mcphost.wire.framing.LineFramer`
(``max_message_size`` bounds a line: a longer one is discarded as it streams, and the
request it carried is answered with an error when its id can be read). A line that is not
JSON is answered with a parse error, as JSON-RPC asks. End of input ends the session.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._json import dumps, loads
from ..protocol import jsonrpc
from ..transports.base import REQUEST, Gone, GoneOnce, Receiver, oversized_target
from ..wire.framing import DEFAULT_MAX_SIZE, LineFramer

__all__ = ["PipeTransport", "stdio_transport"]

logger = logging.getLogger("mcphost.gateway")


class PipeTransport(GoneOnce):
    """A transport over a reading and a writing pipe (the server side of stdio)."""

    def __init__(self, reader: Any, writer: Any, *, max_message_size: int = DEFAULT_MAX_SIZE) -> None:
        self._reader_file = reader
        self._writer_file = writer
        self._framer = LineFramer(max_message_size)
        self.needs_drain = False
        self._receiver: Receiver | None = None
        self._early: list[Any] = []
        self._gone = None
        self._gone_told = False
        self._closing = False
        self._read: asyncio.ReadTransport | None = None
        self._write: asyncio.WriteTransport | None = None
        self._write_protocol: _Writer | None = None
        self._file_reader: asyncio.Task[None] | None = None
        self._stats = {"bytes_in": 0, "bytes_out": 0, "messages_in": 0, "messages_out": 0, "noise_lines": 0}

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._read, _ = await loop.connect_read_pipe(lambda: _Reader(self), self._reader_file)
        except ValueError:
            # A regular file (``< requests.jsonl``): read in a thread, a task this transport owns.
            self._file_reader = loop.create_task(self._read_file())
        writer = self._write_protocol = _Writer(self)
        try:
            self._write, _ = await loop.connect_write_pipe(lambda: writer, self._writer_file)
        except ValueError:
            self._write = None  # a regular file (``> replies.jsonl``): written as it comes

    async def _read_file(self) -> None:
        loop = asyncio.get_running_loop()
        fd = self._reader_file.fileno()
        while True:
            data = await loop.run_in_executor(None, os.read, fd, 65536)
            if not data:
                self.ended("the client closed its input")
                return
            self.received(data)

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        if self._closing and self._gone is not None:
            return
        write = self._write
        self._stats["bytes_out"] += len(data) + 1
        self._stats["messages_out"] += 1
        if write is None:
            if self._write_protocol is not None:
                self._writer_file.write(data + b"\n")
                self._writer_file.flush()
            return
        if not write.is_closing():
            write.write(data + b"\n")

    async def drain(self) -> None:
        if self._write_protocol is not None:
            await self._write_protocol.drained()

    def tail(self) -> list[str]:
        return []

    def statistics(self) -> dict[str, Any]:
        return dict(self._stats)

    async def aclose(self, timeout: float) -> Gone:
        self._closing = True
        if self._file_reader is not None:
            self._file_reader.cancel()
        if self._read is not None:
            self._read.close()
        if self._write is not None and not self._write.is_closing():
            self._write.close()
        return self._gone or Gone("the session was closed")

    def write_paused(self, paused: bool) -> None:
        self.needs_drain = paused
        if self._receiver is not None:
            self._receiver.on_write_paused(paused)

    # -- from the reading pipe ----------------------------------------------------------------

    def received(self, data: bytes) -> None:
        self._stats["bytes_in"] += len(data)
        self._take(self._framer.feed(data))

    def ended(self, why: str) -> None:
        self._take(self._framer.feed_eof())
        self._tell_gone(Gone(why))

    def _take(self, lines: list[bytes]) -> None:
        framer = self._framer
        if framer.oversized:
            for big in framer.oversized:
                own, rid = oversized_target(big.head)
                if not own and rid is not None:
                    self._answer_error(rid, jsonrpc.INVALID_REQUEST,
                                       f"message of {big.size} bytes is over the limit of {framer.max_size}")
            framer.oversized.clear()
        messages = []
        for line in lines:
            try:
                messages.append(loads(line))
            except (ValueError, RecursionError):
                self._stats["noise_lines"] += 1
                self._answer_error(None, jsonrpc.PARSE_ERROR, "parse error: a line that is not JSON")
        if not messages:
            return
        self._stats["messages_in"] += len(messages)
        self._hand_over(messages)

    def _answer_error(self, rid: Any, code: int, message: str) -> None:
        self.send(dumps(jsonrpc.error_response(rid, code, message)))


class _Reader(asyncio.Protocol):
    def __init__(self, owner: PipeTransport) -> None:
        self._owner = owner

    def data_received(self, data: bytes) -> None:
        self._owner.received(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.ended("the client closed its input" if exc is None else f"input failed: {exc}")


class _Writer(asyncio.Protocol):
    def __init__(self, owner: PipeTransport) -> None:
        self._owner = owner
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []

    def pause_writing(self) -> None:
        self._paused = True
        self._owner.write_paused(True)

    def resume_writing(self) -> None:
        self._paused = False
        self._owner.write_paused(False)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def drained(self) -> None:
        if self._paused:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        self._owner.ended("the client closed its output" if exc is None else f"output failed: {exc}")


def stdio_transport(max_message_size: int = DEFAULT_MAX_SIZE) -> PipeTransport:
    """The transport over this process's own stdin and stdout."""
    return PipeTransport(sys.stdin.buffer, sys.stdout.buffer, max_message_size=max_message_size)
