"""The client's end of a server session over the memory transport, for the server session's
tests (``tests/server/``): a :class:`~sink.Sink` records every message the session sends;
:func:`send` sends it JSON-RPC."""

from __future__ import annotations

import json
from typing import Any

from sink import Sink

from mcphost.server.context import Backend
from mcphost.server.session import ServerLimits, ServerSession
from mcphost.transports.memory import memory_pair


async def session_with(backend: Backend, **limits: Any) -> tuple[Any, Sink]:
    """A started server session of ``backend`` (``limits``: :class:`ServerLimits`'s), and
    the client's end: its transport and its recorder."""
    client, server = memory_pair()
    ServerSession(server, backend, limits=ServerLimits(**limits)).start()
    recorder = Sink()
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
