"""Tools from elsewhere: the application's own functions served as an MCP server in the host.

Layer 4. ``await host.register_tools("local", tools, handler)`` adds a server named
``local`` whose tools are ``tools`` (MCP tool objects: ``name``, ``description``,
``inputSchema``...) and whose calls run ``handler(name, arguments)`` (a function or a
coroutine function). Its configuration type is ``local``: the transport factory connects
the host to :meth:`LocalServer.serve` over an in-memory pair, and :class:`LocalServer`
answers with the same role-neutral :class:`~mcphost.rpc.peer.Peer` the client session uses
(here in the server role). So the host lists, validates, routes, times, permits and formats
these tools exactly like those of any MCP server: one interface for the application's local
functions and its MCP tools.

What the handler returns becomes the ``CallToolResult``: a dict with ``content`` as it is;
a string as one text block; anything else JSON as ``structuredContent`` plus its JSON text.
An exception is a result with ``isError: true`` and the exception's message (the model sees
it, as MCP servers report tool failures).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._json import dumps
from ..errors import RpcError, UsageError
from ..protocol import jsonrpc
from ..protocol.versions import SUPPORTED_VERSIONS
from ..rpc.peer import Peer
from ..transports.base import Transport

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
    """A minimal MCP server in the host's own loop: a :class:`Peer` in the server role."""

    def __init__(self, name: str, tools: list[dict[str, Any]], handler: ToolHandler) -> None:
        self.name = name
        self.tools = tools
        self.handler = handler
        #: The peer serving the current connection (each start of the server gets one).
        self.peer: Peer | None = None

    def serve(self, end: Transport) -> None:
        """Serve the server's ``end`` of a new connection (the transport factory calls it)."""
        # No request of ours: no deadline; the calls it serves end when the host closes.
        peer = Peer(f"local:{self.name}", end, request_timeout=0, on_request=self._on_request,
                    on_notification=self._on_notification)
        self.peer = peer
        peer.start()

    def _on_request(self, rid: Any, method: str, params: Any) -> None:
        peer = self.peer
        if peer is not None:
            peer.serve(rid, self._answer(method, params if isinstance(params, dict) else {}))

    def _on_notification(self, method: str, params: Any) -> None:
        peer = self.peer
        if method == "notifications/cancelled" and peer is not None and isinstance(params, dict):
            peer.cancel_served(params.get("requestId"))

    async def _answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            # The version the client asked for when it is one of ours, else our latest.
            asked = params.get("protocolVersion")
            version = asked if asked in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
            return {"protocolVersion": version, "capabilities": {"tools": {}},
                    "serverInfo": {"name": self.name, "version": "local"}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools}
        if method == "tools/call":
            return await self._call(str(params.get("name")), params.get("arguments") or {})
        raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"method {method!r} is not served by local tools")

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            value = self.handler(name, arguments)
            if inspect.isawaitable(value):
                value = await value
            return _result(value)
        except Exception as exc:  # the tool failed inside: a result the model can read
            logger.info("%s: local tool %r failed: %r", self.name, name, exc)
            return {"content": [{"type": "text", "text": f"{type(exc).__name__}: {exc}"}], "isError": True}
