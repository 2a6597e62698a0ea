"""A transport's receiver for the tests: what arrived, what could not be delivered, how the
transport ended. Wait on :attr:`Sink.arrived` (or :meth:`Sink.answer`), never on a sleep."""

from __future__ import annotations

import asyncio
from typing import Any

from mcphost.transports.base import Gone


class Sink:
    """Records everything a transport pushes. ``strict``: a message it could not deliver is
    a failure of the test (an ``AssertionError`` in the transport's callback)."""

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self.messages: list[Any] = []
        self.arrived = asyncio.Event()
        self.lost: list[tuple[Any, str]] = []
        self.gone: list[Gone] = []

    def on_messages(self, messages: list[Any]) -> None:
        self.messages.extend(messages)
        self.arrived.set()

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        if self.strict:
            raise AssertionError(reason)
        self.lost.append((request_id, reason))

    def on_failed(self, request_id: Any, error: Any) -> None: ...

    def on_gone(self, gone: Gone) -> None:
        self.gone.append(gone)

    def on_write_paused(self, paused: bool) -> None: ...

    def answered(self, rid: Any) -> bool:
        """Whether the response to ``rid`` came."""
        return any(isinstance(m, dict) and m.get("id") == rid and "method" not in m for m in self.messages)

    async def answer(self, rid: Any) -> dict[str, Any]:
        """The response to ``rid``, once it came (10 s at most)."""
        while True:
            for message in self.messages:
                if isinstance(message, dict) and message.get("id") == rid and "method" not in message:
                    return message
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 10)
