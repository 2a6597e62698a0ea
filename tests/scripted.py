"""An MCP server scripted in the test itself, served over the in-memory transport.

For host tests that need a server to do something the fake server cannot be told to do.
``scripted_host({"a": Script(...)})`` builds an ``MCPHost`` whose servers are these
scripts (the configuration names a dummy command that is never run).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from mcphost import MCPHost
from mcphost._json import dumps
from mcphost.transports.base import Gone
from mcphost.transports.memory import MemoryTransport, memory_pair

Handler = Callable[[dict[str, Any]], Any]


class MethodError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Script:
    """Answers ``initialize`` with ``capabilities``; every other request by ``methods``
    (a handler returns the result, may be async, or raises ``MethodError``); an unknown
    method is -32601. Everything received is kept in ``received``."""

    def __init__(
        self,
        methods: dict[str, Handler] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        version: str = "2025-11-25",
    ) -> None:
        self.methods = methods or {}
        self.capabilities = capabilities if capabilities is not None else {"tools": {}}
        self.version = version
        #: tools/call requests are left to the test to answer.
        self.manual_calls = False
        self.received: list[Any] = []
        self.end: MemoryTransport | None = None
        #: Request ids a test has already dealt with itself.
        self.seen: set[Any] = set()
        self._arrived: asyncio.Event | None = None

    def connect(self) -> MemoryTransport:
        client, server = memory_pair()
        self.end = server
        server.set_receiver(self)
        return client

    def on_messages(self, messages: list[Any]) -> None:
        if self._arrived is not None:
            self._arrived.set()
        for msg in messages:
            self.received.append(msg)
            if "method" in msg and "id" in msg and not (msg["method"] == "tools/call" and self.manual_calls):
                asyncio.get_running_loop().create_task(self._answer(msg))

    async def _answer(self, msg: dict[str, Any]) -> None:
        method, params = msg["method"], msg.get("params") or {}
        if method == "initialize":
            result: Any = {"protocolVersion": self.version, "capabilities": self.capabilities,
                           "serverInfo": {"name": "scripted", "version": "1"}}
        elif method in self.methods:
            try:
                result = self.methods[method](params)
                if inspect.isawaitable(result):
                    result = await result
            except MethodError as exc:
                error = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    error["data"] = exc.data
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": error})
                return
        else:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
            return
        self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        raise AssertionError(reason)

    def on_gone(self, gone: Gone) -> None:
        pass

    def send(self, msg: Any) -> None:
        assert self.end is not None
        self.end.send(dumps(msg))

    async def unseen_request(self, method: str, timeout: float = 10.0) -> dict[str, Any]:
        """The first ``method`` request whose id is not in ``seen`` (now marked seen),
        waiting for it to arrive; ``asyncio.TimeoutError`` after ``timeout`` seconds."""

        async def first() -> dict[str, Any]:
            if self._arrived is None:
                self._arrived = asyncio.Event()
            while True:
                for msg in self.received:
                    if msg.get("method") == method and msg.get("id") not in self.seen:
                        self.seen.add(msg["id"])
                        return msg
                self._arrived.clear()  # nothing arrives between the look and here
                await self._arrived.wait()

        return await asyncio.wait_for(first(), timeout)

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method]


def scripted_host(scripts: dict[str, Script], **kwargs: Any) -> MCPHost:
    cfg = {"mcpServers": {name: {"command": "never-run"} for name in scripts}}
    return MCPHost(cfg, transport_factory=lambda config: scripts[config.name].connect(), **kwargs)
