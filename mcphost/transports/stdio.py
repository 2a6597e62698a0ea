"""stdio transport: newline-delimited JSON over a child process's stdin and stdout.

Layer 2. Bytes read from stdout go through :class:`~mcphost.wire.framing.LineFramer` as the
event loop reads them, and the complete lines go to the receiver at once (no reader task);
writes go to stdin with a newline appended. Writes never raise once the child is gone: the
receiver sees the end of the stream and the connection layer fails what is pending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from ..process import ServerProcess
from ..wire.framing import DEFAULT_MAX_SIZE, LineFramer, Oversized
from .base import ExitInfo

__all__ = ["StdioTransport"]

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
        self.process.on_stdout = self._on_stdout
        self.process.on_stdout_eof = self._on_stdout_eof
        self.process.on_write_paused = self._on_write_paused
        #: The stdin pipe holds more than its high-water mark: senders should ``drain()``
        #: (an attribute, kept up to date by the process: it is read once per request).
        self.needs_drain = False
        self._framer = LineFramer(max_message_size)
        self.oversized: list[Oversized] = self._framer.oversized
        self._on_frames: Callable[[list[bytes]], None] | None = None
        self._on_end: Callable[[], None] | None = None
        self._early: list[bytes] = []  # lines that came before there was a receiver
        self._eof = False
        # Messages sent in one event-loop turn go out in one write (one system call),
        # joined with newlines at the flush.
        self._wbuf: list[bytes] = []
        self._wbuf_bytes = 0
        self._flush_scheduled = False

    async def start(self) -> None:
        await self.process.start()

    # -- receiving --------------------------------------------------------------------------

    def set_receiver(
        self, on_frames: Callable[[list[bytes]], None], on_end: Callable[[], None]
    ) -> None:
        self._on_frames = on_frames
        self._on_end = on_end
        early, self._early = self._early, []
        if early or self.oversized:
            on_frames(early)
        if self._eof:
            on_end()

    def _on_stdout(self, data: bytes) -> None:
        lines = self._framer.feed(data)
        if lines or self.oversized:
            self._deliver(lines)

    def _on_stdout_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        lines = self._framer.feed_eof()
        if lines:
            self._deliver(lines)
        if self._on_end is not None:
            self._on_end()

    def _deliver(self, lines: list[bytes]) -> None:
        on_frames = self._on_frames
        if on_frames is None:
            self._early.extend(lines)
        else:
            on_frames(lines)

    # -- sending ----------------------------------------------------------------------------

    def send(self, data: bytes, now: bool = False) -> None:
        """Queue one message; ``now`` writes it (and anything queued) at once."""
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
        self.process.write(data)

    def _on_write_paused(self, paused: bool) -> None:
        self.needs_drain = paused

    async def drain(self) -> None:
        self._flush()
        await self.process.drain()

    async def exit_info(self, timeout: float) -> ExitInfo:
        code = await self.process.wait_exit(timeout)
        await self.process.wait_stderr(min(timeout, 0.5) if code is not None else 0.0)
        return ExitInfo(code, self.process.stderr_lines())

    async def aclose(self, timeout: float) -> ExitInfo:
        self._flush()
        code = await self.process.shutdown(timeout)
        return ExitInfo(code, self.process.stderr_lines())
