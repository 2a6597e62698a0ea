"""stdio transport: newline-delimited JSON over a child process's stdin and stdout.

Layer 2. Bytes read from stdout go through :class:`~mcphost.framing.LineFramer`; writes go
to stdin with a newline appended. Writes never raise once the child is gone: the reader
sees end of stream and the connection layer fails what is pending.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Final

from ..framing import DEFAULT_MAX_SIZE, LineFramer, Oversized
from ..process import ServerProcess
from .base import ExitInfo

__all__ = ["StdioTransport"]

logger = logging.getLogger("mcphost.transports.stdio")

_READ_SIZE: Final = 1 << 18
_HIGH_WATER: Final = 1 << 20
#: A loop turn's writes are gathered into one, but no more than this many bytes wait: the
#: server starts on the first requests of a big burst while the rest are being produced.
_EAGER_BYTES: Final = 8192


class StdioTransport:
    """Frames messages over a :class:`ServerProcess`'s pipes."""

    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        max_message_size: int = DEFAULT_MAX_SIZE,
        memory_limit: int | None = None,
        cpu_limit: int | None = None,
    ) -> None:
        self.name = name
        self.process = ServerProcess(
            name,
            command,
            args,
            env=env,
            cwd=cwd,
            memory_limit=memory_limit,
            cpu_limit=cpu_limit,
        )
        self._framer = LineFramer(max_message_size)
        self.oversized: list[Oversized] = self._framer.oversized
        self._stdin_transport: object | None = None
        self._broken = False
        self._eof = False
        # Messages sent in one event-loop turn go out in one write (one system call),
        # joined with newlines at the flush.
        self._wbuf: list[bytes] = []
        self._wbuf_bytes = 0
        self._flush_scheduled = False
        #: The pipe holds more than the high-water mark: a sender should await ``drain()``
        #: (set at each write, so that asking costs an attribute read).
        self.needs_drain = False

    async def start(self) -> None:
        await self.process.start()

    def send(self, data: bytes, now: bool = False) -> None:
        """Queue one message; ``now`` writes it (and anything queued) at once."""
        if self._broken:
            return
        self._wbuf.append(data)
        self._wbuf_bytes += len(data) + 1
        if now or self._wbuf_bytes >= _EAGER_BYTES:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        buf = self._wbuf
        if not buf:
            return
        buf.append(b"")  # the last message's newline
        data = b"\n".join(buf)
        buf.clear()
        self._wbuf_bytes = 0
        proc = self.process.proc
        if self._broken or proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(data)
            self.needs_drain = proc.stdin.transport.get_write_buffer_size() > _HIGH_WATER
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            # The child is gone: the reader will see EOF and fail what is pending.
            self._broken = True
            self.needs_drain = False
            logger.debug("! %s: write failed: %s", self.name, exc)

    async def drain(self) -> None:
        self._flush()
        proc = self.process.proc
        if proc is None or proc.stdin is None or self._broken:
            return
        try:
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            self._broken = True
            self.needs_drain = False
            logger.debug("! %s: drain failed: %s", self.name, exc)
            return
        self.needs_drain = proc.stdin.transport.get_write_buffer_size() > _HIGH_WATER

    async def receive(self) -> list[bytes] | None:
        proc = self.process.proc
        if proc is None or proc.stdout is None or self._eof:
            return None
        stdout = proc.stdout
        framer = self._framer
        while True:
            try:
                chunk = await stdout.read(_READ_SIZE)
            except (OSError, ValueError) as exc:  # pragma: no cover - rare pipe errors
                logger.debug("! %s: read failed: %s", self.name, exc)
                chunk = b""
            if not chunk:
                self._eof = True
                return framer.feed_eof() or None
            lines = framer.feed(chunk)
            if lines or framer.oversized:
                return lines

    async def exit_info(self, timeout: float) -> ExitInfo:
        code = await self.process.wait_exit(timeout)
        await self.process.wait_stderr(min(timeout, 0.5) if code is not None else 0.0)
        return ExitInfo(code, self.process.stderr_lines())

    async def aclose(self, timeout: float) -> ExitInfo:
        self._flush()
        code = await self.process.shutdown(timeout)
        return ExitInfo(code, self.process.stderr_lines())
