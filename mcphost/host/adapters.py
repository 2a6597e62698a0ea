"""The client-manager API's surface, as thin adapters over the host.

Layer 4. Applications written against the client-manager API (``connect_all``,
``connect_server``, ``disconnect_server``, ``get_connection``, ``connected_servers``,
``available_tool_count``, ``execute_tool`` with ``mcp__{server}__{tool}`` names) keep their
code: :class:`ClientManagerAPI` is mixed into :class:`~mcphost.host.facade.MCPHost` and
every method is one step over the host's own API.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import UsageError
from ..protocol.lifecycle import ServerState

if TYPE_CHECKING:
    from .handle import ServerHandle
    from .supervisor import Supervisor

__all__ = ["ClientManagerAPI", "split_mcp_name"]

PREFIX = "mcp__"


def split_mcp_name(name: str) -> tuple[str, str]:
    """``mcp__{server}__{tool}`` -> ``(server, tool)`` (the tool may contain ``__``)."""
    if not isinstance(name, str) or not name.startswith(PREFIX) or "__" not in name[len(PREFIX):]:
        raise UsageError(f"{name!r} is not an MCP tool name of the form mcp__server__tool")
    server, _, tool = name[len(PREFIX):].partition("__")
    if not server or not tool:
        raise UsageError(f"{name!r} is not an MCP tool name of the form mcp__server__tool")
    return server, tool


class ClientManagerAPI:
    """``connect_all``, ``connect_server``, ``disconnect_server``, ``get_connection``,
    ``connected_servers``, ``available_tool_count``, ``qualified_tools``, ``execute_tool``."""

    _servers: dict[str, ServerHandle]
    _environ: dict[str, str]

    if TYPE_CHECKING:
        @property
        def _supervisor(self) -> Supervisor: ...
        @property
        def _state(self) -> str: ...

        async def initialize(self, config: Any = None, *, require_all: bool | None = None) -> dict[str, Any]: ...
        async def stop_server(self, name: str) -> None: ...
        def get_tools(self, server: str | None = None, *, include_unavailable: bool = False) -> dict[str, Any]: ...
        def _new_handle(self, cfg: Any) -> ServerHandle: ...

    async def connect_all(self) -> dict[str, bool]:
        """Start every server, whatever fails: ``{name: connected}``."""
        results = await self.initialize(require_all=False)
        return {name: bool(result["ok"]) for name, result in results.items()}

    async def connect_server(self, name: str, entry: Mapping[str, Any]) -> bool:
        """Add server ``name`` (an ``mcp.json`` entry) to the running host and start it:
        whether it connected (its error is in ``get_connection(name)``)."""
        if self._state != "ready":
            raise UsageError("connect_server() needs a running host: initialize() first")
        if name in self._servers:
            raise UsageError(f"a server named {name!r} exists already")
        from ..config import config_from_data

        home = self._environ.get("HOME") or os.path.expanduser("~")
        loaded = config_from_data({"mcpServers": {name: dict(entry)}}, environ=self._environ, user_home=home,
                                  workspace_folder=os.getcwd())
        self._supervisor.redactor.add_config(loaded)
        handle = self._servers[name] = self._new_handle(loaded.servers[name])
        try:
            await self._supervisor.start(handle)
        except Exception:  # told by the result and get_connection(), as the API promises
            return False
        return True

    async def disconnect_server(self, name: str) -> None:
        """Stop server ``name``: its tools and resources are gone from the host."""
        await self.stop_server(name)

    async def disconnect_all(self) -> None:
        """Stop every server (the host itself stays usable: ``start_server`` again)."""
        for name in list(self._servers):
            await self.stop_server(name)

    def get_connection(self, name: str) -> dict[str, Any] | None:
        """``{"name", "connected", "state", "tools", "resources", "error"}``, or ``None``."""
        if name not in self._servers:
            return None
        info = self.get_tools(name)[name]
        return {"name": name, "connected": info["state"] == "ready", "state": info["state"],
                "tools": info["tools"], "resources": info["resources"], "error": info["error"]}

    @property
    def connected_servers(self) -> list[str]:
        """The servers that are ready."""
        return [name for name, h in self._servers.items() if h.state is ServerState.READY]

    @property
    def available_tool_count(self) -> int:
        """Tools offered by the ready servers (those the permissions allow)."""
        return sum(len(info["tools"]) for info in self.get_tools().values())

    def qualified_tools(self, server: str | None = None) -> list[str]:
        """Every tool as ``server.tool`` (of one server, or of all)."""
        return [f"{name}.{t['name']}" for name, info in self.get_tools(server).items() for t in info["tools"]]

    async def execute_tool(self, tool_name: str, arguments: Mapping[str, Any]) -> str:
        """Call ``mcp__{server}__{tool}`` and return its text (the text blocks joined).

        Raises:
            UsageError (also a ``ValueError``): a name of another form; PermissionDeniedError
            (also a ``PermissionError``); and every error of ``call_tool``.
        """
        server, tool = split_mcp_name(tool_name)
        result = await cast(Any, self).call_tool(f"{server}.{tool}", arguments)
        texts = [b.get("text", "") for b in result.get("content", []) if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts)
