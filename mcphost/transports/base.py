"""The transport interface every transport implements.

Layer 2. A transport carries whole JSON-RPC messages as ``bytes`` in both directions:
``send`` queues one message; what arrives is pushed to the receiver given to
``set_receiver`` as soon as it is read — ``on_frames(messages)`` (an empty list when only
an oversized line arrived; lines longer than the limit are reported through
``oversized``), then ``on_end()`` once at the end of the stream. Pushing rather than
awaiting a read saves a task wake-up per read, and a loop turn per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..wire.framing import Oversized

__all__ = ["Transport", "TransportClosed", "ExitInfo"]


class TransportClosed(Exception):
    """Internal: the peer's end is gone (never escapes the connection layer)."""


class ExitInfo:
    """How a transport's peer ended: exit code (if a process) and last stderr lines."""

    __slots__ = ("exit_code", "stderr_tail")

    def __init__(self, exit_code: int | None, stderr_tail: list[str]) -> None:
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class Transport(Protocol):
    oversized: list[Oversized]

    async def start(self) -> None: ...

    def send(self, data: bytes, now: bool = False) -> None:
        """Queue one encoded message. Messages queued in one event-loop turn may go out
        together; ``now=True`` asks for this one (and any queued before it) to go at once."""

    #: The sender should ``await drain()`` before sending more (an attribute: it is read
    #: once per request).
    needs_drain: bool

    def set_receiver(
        self, on_frames: Callable[[list[bytes]], None], on_end: Callable[[], None]
    ) -> None:
        """Where messages go from now on (any that came earlier are handed over at once)."""

    async def drain(self) -> None: ...

    async def exit_info(self, timeout: float) -> ExitInfo: ...

    async def aclose(self, timeout: float) -> ExitInfo: ...
