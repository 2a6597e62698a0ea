"""Newline-delimited message framing for stdio (bytes in, complete lines out).

Sans-I/O (layer 1). MCP stdio: "Messages are delimited by newlines, and MUST NOT contain
embedded newlines." The framer is incremental and works on bytes, so there is no line
limit other than ``max_size`` (default 64 MiB), which is a security limit protecting memory:
a longer line is discarded as it streams in (never buffered whole) and reported through
``oversized`` with its first bytes, so the connection can fail just the call it answered.

Cost is linear in the input: the buffer is scanned from where the last scan stopped, and
the common case — a chunk of whole lines, none with ``\\r``, shorter than the limit — is a
``bytes.split`` and a filter, with no Python step per line. Empty lines are dropped; a line
of only spaces or tabs is passed on (the decoder rejects it, the connection skips it):
finding those would cost a step per line.
"""

from __future__ import annotations

from typing import Final, cast

__all__ = ["DEFAULT_MAX_SIZE", "LineFramer", "Oversized"]

DEFAULT_MAX_SIZE: Final = 64 * 1024 * 1024
_HEAD: Final = 512
#: Lines longer than this are handed over as the buffer they were gathered in (a
#: ``bytearray``), not copied.
_LONG: Final = 1 << 20


class Oversized:
    """A line that exceeded the limit: its total ``size`` and its first bytes (``head``)."""

    __slots__ = ("head", "size")

    def __init__(self, head: bytes, size: int) -> None:
        self.head = head
        self.size = size

    def __repr__(self) -> str:
        return f"Oversized(size={self.size}, head={self.head[:40]!r})"


class LineFramer:
    """Splits a byte stream into lines (without the newline, ``\\r`` stripped).

    ``feed`` returns the complete, non-empty lines the data finished (a line over 1 MiB
    gathered over several chunks may be a ``bytearray``). Lines over ``max_size`` are
    dropped and appended to ``oversized`` instead (the caller clears it).
    """

    __slots__ = ("_buf", "_scan", "_skip_head", "_skipped", "_skipping", "max_size", "oversized")

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE) -> None:
        if max_size <= 0:
            raise ValueError("max_size must be positive")
        self.max_size = max_size
        self._buf = bytearray()
        self._scan = 0  # bytes of _buf already known to hold no newline
        self._skipping = False
        self._skipped = 0
        self._skip_head = b""
        self.oversized: list[Oversized] = []

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data`` and return the lines it completed."""
        if self._skipping:
            data = self._skip(data)
            if not data:
                return []
        buf = self._buf
        if not buf:
            # Fast path: nothing buffered, split the chunk directly.
            parts = data.split(b"\n")
            rest = parts.pop()
            if len(data) <= self.max_size and b"\r" not in data:
                lines = list(filter(None, parts))  # no line can need cleaning
            else:
                lines = self._clean(parts)
            if rest:
                if len(rest) > self.max_size:
                    self._start_skip(rest)
                else:
                    buf += rest
                    self._scan = len(rest)
            return lines
        start = len(buf)
        buf += data
        nl = buf.find(b"\n", self._scan if self._scan < start else start)
        if nl < 0:
            self._scan = len(buf)
            if len(buf) > self.max_size:
                head = bytes(buf[:_HEAD])
                size = len(buf)
                buf.clear()
                self._scan = 0
                self._begin_skip(head, size)
            return []
        tail = bytes(buf[nl + 1 :])
        self._scan = 0
        if nl > _LONG:
            # A long line is handed over as it is, uncopied: copying tens of megabytes
            # into fresh memory costs tens of milliseconds of page faults in one go.
            # It has every method of ``bytes`` that is used on a line (the codecs take it).
            del buf[nl:]
            first = cast(bytes, buf)
            self._buf = bytearray()
        else:
            first = bytes(buf[:nl])
            buf.clear()
        lines = self._clean([first]) if len(first) <= self.max_size else self._over(first)
        if tail:
            lines.extend(self.feed(tail))
        return lines

    def feed_eof(self) -> list[bytes]:
        """The stream ended: return a final unterminated line, if any."""
        self._skipping = False
        if not self._buf:
            return []
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = 0
        return self._clean([rest])

    @property
    def buffered(self) -> int:
        """Bytes held waiting for a newline."""
        return len(self._buf)

    def _clean(self, parts: list[bytes]) -> list[bytes]:
        out = []
        limit = self.max_size
        for line in parts:
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                continue
            if len(line) > limit:
                self.oversized.append(Oversized(line[:_HEAD], len(line)))
                continue
            out.append(line)
        return out

    def _over(self, line: bytes) -> list[bytes]:
        self.oversized.append(Oversized(line[:_HEAD], len(line)))
        return []

    def _start_skip(self, rest: bytes) -> None:
        self._begin_skip(rest[:_HEAD], len(rest))

    def _begin_skip(self, head: bytes, size: int) -> None:
        self._skipping = True
        self._skip_head = head
        self._skipped = size

    def _skip(self, data: bytes) -> bytes:
        nl = data.find(b"\n")
        if nl < 0:
            self._skipped += len(data)
            return b""
        self._skipped += nl
        self._skipping = False
        self.oversized.append(Oversized(self._skip_head, self._skipped))
        self._skip_head = b""
        return data[nl + 1 :]
