"""stdio transport: newline-delimited JSON over a child process's stdin and stdout.

Layer 2, the stdio room. Bytes read from stdout go through :class:`~mcphost.wire.framing.LineFramer` as
the event loop reads them; the complete lines are decoded and pushed to the receiver at
once (no reader task). Writes go to stdin with a newline appended, a loop turn's writes
gathered into one. What only stdio can say is said here:

- a line that is not JSON is a server printing to stdout what belongs on stderr (banners,
  logs): skipped, counted (``noise_lines``), logged once with the offending line;
- a line over the size limit is discarded as it streams; its first bytes name the response
  it carried when they can (``on_undeliverable(id)``), else every waiting call must fail
  (``on_undeliverable(None)``); a request or notification that large is only logged;
- a line over 1 MiB is not decoded in the loop turn it arrives in: its JSON tokens are
  counted first, a slice per turn (:class:`~mcphost.transports.counted.InOrder`), and past
  ``max_message_tokens`` it is refused like an oversized line, undecoded. Decoding cannot
  be sliced; counting can, so no allowed-size message stalls the event loop for seconds
  (a million-tool ``tools/list`` of 47 MB did, 4 to 8 s). The lines after it wait their
  turn: messages are delivered in order;
- when stdout ends, the exit code (bounded wait) makes the ``Gone`` reason ("server exited
  with code 1"), and the stderr tail goes with it as data (``Gone.stderr_tail``; the error
  made of it shows both); its ``process`` part says how the process ended (exit code, a
  resource limit it most likely died of, whether it had to be killed) for the host to word.

The process itself (spawn, pipes, the shutdown ladder) is :mod:`.process`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ..._json import MAX_TOKENS, loads
from ...wire.framing import DEFAULT_MAX_SIZE, LineFramer, Oversized
from ..base import Gone, GoneOnce, ProcessEnd, Receiver, Vitals, oversized_target
from ..counted import COUNTED, Decode, InOrder, head_of
from ..trace import WireTrace
from .platform import Limits
from .process import ServerProcess

__all__ = ["StdioTransport"]

logger = logging.getLogger("mcphost.transports.stdio")

#: A loop turn's writes are gathered into one, but no more than this many bytes wait: the
#: server starts on the first requests of a big burst while the rest are being produced.
_EAGER_BYTES: Final = 8192
#: How long the end of stdout waits for the exit code and the last stderr lines.
_EXIT_WAIT: Final = 2.0
#: How long the leader's exit waits for the rest of its stdout before the end is told.
_OUTPUT_WAIT: Final = 0.2
#: How long the end of the server waits for the messages still being counted.
_COUNT_WAIT: Final = 10.0


class StdioTransport(GoneOnce):
    """Frames messages over a :class:`~.process.ServerProcess`'s pipes."""

    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        max_message_size: int = DEFAULT_MAX_SIZE,
        max_message_tokens: int = MAX_TOKENS,
        memory_limit: int | None = None,
        cpu_limit: int | None = None,
        files_limit: int | None = None,
        process_limit: int | None = None,
        redact: Callable[[str], str] | None = None,
        shutdown_timeout: float = 10.0,
    ) -> None:
        self.name = name
        self.process = ServerProcess(
            name, command, args, env=env, cwd=cwd, redact=redact, exit_grace=shutdown_timeout,
            limits=Limits(memory_limit, cpu_limit, files_limit, process_limit),
        )
        self.process.on_stdout = self._on_stdout
        self.process.on_stdout_eof = self._on_stdout_eof
        self.process.on_write_paused = self._on_write_paused
        self.process.on_exit = self._on_exit
        #: The stdin pipe holds more than its high-water mark: senders should ``drain()``.
        self.needs_drain = False
        self._framer = LineFramer(max_message_size)
        # Lines over 1 MiB counted before they are decoded, and the lines behind them.
        self._in_order: InOrder[bytes] = InOrder(name, self._deliver, self._too_many_tokens, max_message_tokens,
                                                 loads)
        self._receiver: Receiver | None = None
        self._early: list[Any] = []  # messages read before there was a receiver
        self._early_lost: list[tuple[int | str | None, str]] = []
        self._gone: Gone | None = None
        self._gone_told = False
        self._stdout_ended = False
        self._closing = False
        self._eof_task: asyncio.Task[None] | None = None
        self._noise_logged = False
        self._stats = {"bytes_in": 0, "bytes_out": 0, "messages_in": 0, "messages_out": 0,
                       "noise_lines": 0, "oversized": 0}
        # Messages sent in one event-loop turn go out in one write (one system call),
        # joined with newlines at the flush.
        self._wbuf: list[bytes] = []
        self._wbuf_bytes = 0
        self._flush_scheduled = False
        #: The wire trace (``mcphost.wire.<name>`` at DEBUG).
        self.trace: WireTrace = WireTrace(name)

    async def start(self) -> None:
        await self.process.start()

    def tail(self) -> list[str]:
        return self.process.stderr_lines()

    def statistics(self) -> dict[str, Any]:
        return {**self._stats, "too_many_tokens": self._in_order.refused, "pid": self.process.pid}

    def vitals(self) -> Vitals:
        return Vitals(self.process.pid, self._stats["noise_lines"])

    def kill_now(self) -> bool:
        return self.process.kill_now()

    def _ended(self, code: int | None, tail: list[str]) -> ProcessEnd:
        process = self.process
        if process.forced:  # the SIGKILL was ours, not a limit's
            return ProcessEnd(code, forced=True)
        return ProcessEnd(code, limit=process.tree.limit_hit(process.limits, code, tail))

    # -- receiving --------------------------------------------------------------------------

    def set_receiver(self, receiver: Receiver) -> None:
        self._receiver = receiver
        early, self._early = self._early, []
        lost, self._early_lost = self._early_lost, []
        if early:
            receiver.on_messages(early)
        for rid, reason in lost:
            receiver.on_undeliverable(rid, reason)
        if self._gone is not None and not self._gone_told:
            self._gone_told = True
            receiver.on_gone(self._gone)

    def _on_stdout(self, data: bytes) -> None:
        self._stats["bytes_in"] += len(data)
        framer = self._framer
        # Only a chunk that is large or ends a long buffered line can finish a big line.
        big = len(data) + framer.buffered > COUNTED or self._in_order.busy
        lines = framer.feed(data)
        if lines:
            if big:
                self._in_order.push(lines)
            else:
                self._deliver(lines)
        if framer.oversized:
            self._on_oversized(framer.oversized)

    def _deliver(self, lines: list[bytes], decode: Decode | None = None) -> None:
        if self.trace.maybe(10, True) and self.trace.enabled():
            self.trace.messages(False, lines)
        if decode is None:
            decode = loads
        try:
            messages = list(map(decode, lines))  # the common case: every line is JSON (no frame per chunk)
        except ValueError:
            messages = []
            for line in lines:
                try:
                    messages.append(decode(line))
                except ValueError:
                    if not line.isspace():  # a line of blanks is no message, and no noise either
                        self._on_noise(line)
            if not messages:
                return
        self._stats["messages_in"] += len(messages)
        self._hand_over(messages)

    def _too_many_tokens(self, line: bytes, reason: str) -> None:
        self._undeliverable(head_of(line), reason)

    def _on_noise(self, line: bytes) -> None:
        self._stats["noise_lines"] += 1
        if not self._noise_logged:
            self._noise_logged = True
            logger.warning(
                "%s: skipping non-JSON output on stdout (logged once; counted in metrics): %r",
                self.name,
                line[:200].decode("utf-8", "replace"),
            )

    def _on_oversized(self, items: list[Oversized]) -> None:
        batch = list(items)
        items.clear()
        for item in batch:
            self._stats["oversized"] += 1
            self._undeliverable(item.head, f"server sent a message of {item.size} bytes "
                                f"(limit {self._framer.max_size} bytes)")

    def _undeliverable(self, head: bytes, reason: str) -> None:
        """A message was discarded unread: fail the call it answered (named by ``head``,
        its first bytes), or every call when which one is unknown."""
        logger.error("%s: %s; discarded", self.name, reason)
        from_server, rid = oversized_target(head)
        if from_server:
            return  # a notification or request from the server: no call waits for it
        if rid is None:
            reason += "; the call it answered cannot be identified"
        receiver = self._receiver
        if receiver is None:
            self._early_lost.append((rid, reason))
        else:
            receiver.on_undeliverable(rid, reason)

    def _on_stdout_eof(self) -> None:
        self._stdout_ended = True
        lines = self._framer.feed_eof()
        if lines:
            self._in_order.push(lines)
        self._end()

    def _on_exit(self) -> None:
        # The leader exited. Its stdout usually ends with it, but a grandchild that
        # inherited the pipe keeps it open: the end is told from the exit as well, after a
        # short wait for the last output to be read.
        self._end(drain=not self._stdout_ended)

    def _end(self, drain: bool = False) -> None:
        if not self._closing and self._eof_task is None:
            self._eof_task = asyncio.get_running_loop().create_task(
                self._collect_exit(drain), name=f"mcphost-exit-{self.name}"
            )

    async def _collect_exit(self, drain: bool = False) -> None:
        """The server ended: wait (bounded) for the exit code, the rest of its output and
        stderr, then tell the receiver."""
        process = self.process
        if drain:
            await process.wait_stdout_eof(_OUTPUT_WAIT)
        await self._in_order.settle(_COUNT_WAIT)  # its messages come before the end
        code = await process.wait_exit(_EXIT_WAIT)
        await process.wait_stderr(min(_EXIT_WAIT, 0.5) if code is not None else 0.0)
        if code is None:
            what = "server closed its output"
        elif code < 0:
            what = f"server was killed by signal {-code}"
        else:
            what = f"server exited with code {code}"
        tail = process.stderr_lines()
        logger.debug("! %s: %s", self.name, what)
        self._tell_gone(Gone(what, stderr_tail=tail, process=self._ended(code, tail)))

    # -- sending ----------------------------------------------------------------------------

    def send(self, data: bytes, kind: int = 1, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
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
        stats = self._stats
        stats["messages_out"] += len(buf)
        if self.trace.maybe(10, True) and self.trace.enabled():
            self.trace.messages(True, buf)
        buf.append(b"")  # the last message's newline
        data = b"\n".join(buf)
        buf.clear()
        self._wbuf_bytes = 0
        stats["bytes_out"] += len(data)
        self.process.write(data)

    def _on_write_paused(self, paused: bool) -> None:
        self.needs_drain = paused
        if self._receiver is not None:
            self._receiver.on_write_paused(paused)

    async def drain(self) -> None:
        self._flush()
        await self.process.drain()

    async def aclose(self, timeout: float) -> Gone:
        self._flush()
        self._closing = True
        code = await self.process.shutdown(timeout)
        self._in_order.close()
        ending = self._eof_task
        if ending is not None and not ending.done():
            ending.cancel()
            # Waited for, not awaited: the child's cancellation ends here, while our
            # caller's own cancellation goes through.
            await asyncio.wait({ending})
        tail = self.process.stderr_lines()
        if self._gone is not None:
            return self._gone
        return Gone("server was shut down", stderr_tail=tail, process=self._ended(code, tail))

