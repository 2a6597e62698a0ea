"""The client's end of a server session over the memory transport, for the server session's
tests (``tests/server/``): a recorder of every message the session sends, and a way to send
it JSON-RPC."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcphost.server.context import Backend
from mcphost.server.session import ServerLimits, ServerSession
from mcphost.transports.base import Gone
from mcphost.transports.memory import memory_pair


class Recorder:
    """The client's end: every message the session sends, in order."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.arrived = asyncio.Event()

    def on_messages(self, messages: list[Any]) -> None:
        self.messages.extend(messages)
        self.arrived.set()

    def on_undeliverable(self, request_id: Any, reason: str) -> None: ...

    def on_failed(self, request_id: Any, error: Any) -> None: ...

    def on_gone(self, gone: Gone) -> None: ...

    def on_write_paused(self, paused: bool) -> None: ...

    async def answer(self, rid: Any) -> dict[str, Any]:
        """The response to ``rid``, once it came (10 s at most)."""
        while True:
            for message in self.messages:
                if message.get("id") == rid and "method" not in message:
                    return message  # type: ignore[no-any-return]
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 10)


async def session_with(backend: Backend, **limits: Any) -> tuple[Any, Recorder]:
    """A started server session of ``backend`` (``limits``: :class:`ServerLimits`'s), and
    the client's end: its transport and its recorder."""
    client, server = memory_pair()
    ServerSession(server, backend, limits=ServerLimits(**limits)).start()
    recorder = Recorder()
    client.set_receiver(recorder)
    return client, recorder


def send(client: Any, rid: Any, method: str, params: Any = None) -> None:
    """A request (``rid`` given) or a notification (``rid`` None) from the client."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        message["id"] = rid
    if params is not None:
        message["params"] = params
    client.send(json.dumps(message).encode())
