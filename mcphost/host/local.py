"""Tools from elsewhere: the application's own functions served as an MCP server in the host.

Layer 4. ``await host.register_tools("local", tools, handler)`` adds a server named
``local`` whose tools are ``tools`` (MCP tool objects: ``name``, ``description``,
``inputSchema``...) and whose calls run ``handler(name, arguments)`` (a function or a
coroutine function). It is served over the in-memory transport by :class:`LocalServer`,
so the host lists, validates, routes, times, permits and formats these tools exactly like
those of any MCP server: one interface for the application's local functions and its MCP
tools.

What the handler returns becomes the ``CallToolResult``: a dict with ``content`` as it is;
a string as one text block; anything else JSON as ``structuredContent`` plus its JSON text.
An exception is a result with ``isError: true`` and the exception's message (the model sees
it, as MCP servers report tool failures).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._json import dumps
from ..errors import UsageError
from ..transports.base import Gone, Transport

__all__ = ["LocalServer", "ToolHandler", "check_tools"]

logger = logging.getLogger("mcphost.host.local")

#: ``handler(tool_name, arguments)`` -> a result (or an awaitable of one).
ToolHandler = Callable[[str, dict[str, Any]], Any]


def check_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tool objects, checked: each a mapping with a non-empty string ``name`` (unique)
    and an object ``inputSchema`` (``{"type": "object"}`` when absent)."""
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise UsageError(f"tools must be a list of tool objects, not {type(tools).__name__}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise UsageError(f"tools[{i}] must be a mapping (an MCP tool object), not {type(tool).__name__}")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise UsageError(f"tools[{i}] needs a non-empty string 'name'")
        if name in seen:
            raise UsageError(f"tool {name!r} is given twice")
        seen.add(name)
        schema = tool.get("inputSchema", {"type": "object"})
        if not isinstance(schema, Mapping):
            raise UsageError(f"the inputSchema of tool {name!r} must be an object")
        try:
            checked = json.loads(dumps({**tool, "inputSchema": dict(schema)}))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"tool {name!r} is not JSON: {exc}") from None
        out.append(checked)
    return out


def _result(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping) and isinstance(value.get("content"), list):
        return dict(value)
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    text = dumps(value).decode("utf-8")
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if isinstance(value, Mapping):
        result["structuredContent"] = dict(value)
    return result


class LocalServer:
    """A minimal MCP server in the host's own loop, over one end of a memory pair."""

    def __init__(self, name: str, tools: list[dict[str, Any]], handler: ToolHandler) -> None:
        self.name = name
        self.tools = tools
        self.handler = handler
        self.end: Transport | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def connect(self) -> Transport:
        """A new connection (each start of the server gets one)."""
        from ..transports.factory import in_process_pair

        client, server = in_process_pair(f"local:{self.name}")
        self.end = server
        server.set_receiver(self)
        return client

    # -- the receiver of the server's end -----------------------------------------------

    def on_messages(self, messages: list[Any]) -> None:
        for msg in messages:
            if isinstance(msg, dict) and "method" in msg and "id" in msg:
                task = asyncio.get_running_loop().create_task(self._answer(msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    def on_undeliverable(self, request_id: Any, reason: str) -> None:  # pragma: no cover - in-memory
        logger.debug("%s: undeliverable %r: %s", self.name, request_id, reason)

    def on_gone(self, gone: Gone) -> None:
        for task in list(self._tasks):
            task.cancel()

    def on_write_paused(self, paused: bool) -> None:  # pragma: no cover - in-memory
        pass

    async def _answer(self, msg: dict[str, Any]) -> None:
        method, params = msg["method"], msg.get("params") or {}
        error: dict[str, Any] | None = None
        result: Any = None
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": self.name, "version": "local"}}
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": self.tools}
        elif method == "tools/call":
            result = await self._call(str(params.get("name")), params.get("arguments") or {})
        else:
            error = {"code": -32601, "message": f"method {method!r} is not served by local tools"}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        if self.end is not None:
            self.end.send(dumps(reply))

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            value = self.handler(name, arguments)
            if inspect.isawaitable(value):
                value = await value
            return _result(value)
        except Exception as exc:  # the tool failed inside: a result the model can read
            logger.info("%s: local tool %r failed: %r", self.name, name, exc)
            return {"content": [{"type": "text", "text": f"{type(exc).__name__}: {exc}"}], "isError": True}
