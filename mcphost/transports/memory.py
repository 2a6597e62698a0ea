"""A paired in-memory transport: two ends in one event loop, no process, no socket.

Layer 2. ``a, b = memory_pair()``: what ``a`` sends, ``b``'s receiver gets, decoded, in a
later loop turn (never inside the sender's call: the same ordering as a real pipe). Each
message is encoded and decoded, so what crosses is exactly what would cross a wire.
Closing one end tells the other it is gone. Used by tests to run the host against servers
written in Python in the same process, and by applications that embed a server.

``peer_gone(reason)`` ends the connection as a crash would: the other end hears
``on_gone`` with that reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .._json import loads
from .base import REQUEST, BaseTransport, Gone, Receiver

__all__ = ["MemoryTransport", "memory_pair"]


class MemoryTransport(BaseTransport):
    """One end of an in-memory connection."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.needs_drain = False
        self.peer: MemoryTransport | None = None
        self._receiver: Receiver | None = None
        self._inbox: list[Any] = []
        self._scheduled = False
        self._gone: Gone | None = None
        self._gone_told = False
        self._closed = False
        self._stats = {"bytes_in": 0, "bytes_out": 0, "messages_in": 0, "messages_out": 0}

    async def start(self) -> None:
        if self.peer is None:
            raise RuntimeError("memory transport has no peer (use memory_pair())")

    def set_receiver(self, receiver: Receiver) -> None:
        self._receiver = receiver
        if self._inbox:
            self._deliver()
        if self._gone is not None and not self._gone_told:
            self._gone_told = True
            receiver.on_gone(self._gone)

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        peer = self.peer
        if self._closed or peer is None or peer._closed:
            return
        self._stats["bytes_out"] += len(data)
        self._stats["messages_out"] += 1
        peer._arrive(data)

    def _arrive(self, data: bytes) -> None:
        self._stats["bytes_in"] += len(data)
        self._stats["messages_in"] += 1
        self._inbox.append(loads(data))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._deliver)

    def _deliver(self) -> None:
        self._scheduled = False
        receiver = self._receiver
        if receiver is None or not self._inbox or self._closed:
            return
        messages, self._inbox = self._inbox, []
        receiver.on_messages(messages)

    async def drain(self) -> None:
        return None

    def tail(self) -> list[str]:
        return []

    def statistics(self) -> dict[str, Any]:
        return dict(self._stats)

    def peer_gone(self, reason: str = "peer closed the connection") -> None:
        """End the connection from this side as a crash would (the peer is told)."""
        self._closed = True
        peer = self.peer
        if peer is not None:
            peer._hear_gone(Gone(reason))

    def _hear_gone(self, gone: Gone) -> None:
        if self._gone is not None or self._closed:
            return
        self._gone = gone

        def tell() -> None:
            receiver = self._receiver
            if receiver is not None and not self._gone_told and not self._closed:
                self._deliver()
                self._gone_told = True
                receiver.on_gone(gone)

        asyncio.get_running_loop().call_soon(tell)

    async def aclose(self, timeout: float) -> Gone:
        if not self._closed:
            self._closed = True
            peer = self.peer
            if peer is not None:
                peer._hear_gone(Gone("peer closed the connection"))
        return self._gone or Gone("connection closed")


def memory_pair(name: str = "memory") -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected ends: give one to the host, serve the other."""
    a, b = MemoryTransport(name), MemoryTransport(name)
    a.peer, b.peer = b, a
    return a, b
