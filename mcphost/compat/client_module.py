"""The client-module revision's API (specification 002), as a thin facade over ``MCPHost``.

Layer 5: imports only the public ``mcphost`` API and ``mcphost.errors``. The document's
pieces, with its names:

- ``MCPServerConfig`` (``name``, ``command``, ``args``, ``env``, ``enabled``) and
  ``MCPConfigManager`` (``load_config()``, ``get_enabled_servers()``) for the
  ``{"server_id": {...}}`` file (``config/mcp_servers.json``);
- ``MCPService``: ``sessions``, ``connected_servers`` (``{id: bool}``),
  ``connect_to_server(config) -> bool``, ``register_server_tools(id)``,
  ``_format_tool_definition``, ``_create_tool_handler``, ``cleanup()``; its tools go into a
  tool registry (``ToolRegistry``, or the application's own object with ``register`` and
  ``unregister``) as provider-agnostic definitions named ``server_id.tool_name``, and leave
  it when their server disconnects;
- ``MCPSessionManager`` (``get_instance()``, ``initialize_servers()``, ``cleanup()``);
- ``get_mcp_connect_tool_definition()``, ``handle_mcp_connect()`` and ``register()``.

Each server is a server of one :class:`mcphost.MCPHost` (``service.host``): ``${VAR}`` in a
server's fields is expanded, a failed start is retried per the host's retry policy, and a
failure never raises out of ``connect_to_server`` (it is ``False``, logged, and the server is
marked disconnected).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mcphost import MCPHost
from mcphost.errors import ConfigurationError, MCPHostError, UsageError

from .bridge import check_host_options

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "MCPConfigManager",
    "MCPServerConfig",
    "MCPServerSession",
    "MCPService",
    "MCPSessionManager",
    "ToolRegistry",
    "get_mcp_connect_tool_definition",
    "handle_mcp_connect",
    "register",
]

logger = logging.getLogger("mcphost.compat.client_module")

#: Where the document puts the configuration.
DEFAULT_CONFIG_PATH = os.path.join("config", "mcp_servers.json")

_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass
class MCPServerConfig:
    """One server of ``mcp_servers.json``. ``id`` is its key in the file (the name tools are
    namespaced by); ``name`` its display name. Built in code without an ``id``, the
    ``name`` is the key."""

    name: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    id: str | None = None

    @property
    def server_id(self) -> str:
        return self.id or self.name

    def to_entry(self) -> dict[str, Any]:
        """This server as an ``mcp.json`` entry."""
        return {"command": self.command, "args": list(self.args), "env": dict(self.env), "enabled": self.enabled}


class MCPConfigManager:
    """Reads ``{"server_id": {"name", "command", "args", "env", "enabled"}}``."""

    def __init__(self, config_path: str | os.PathLike[str] = DEFAULT_CONFIG_PATH) -> None:
        self.config_path = os.fspath(config_path)
        self.servers: dict[str, MCPServerConfig] = {}

    def load_config(self) -> dict[str, MCPServerConfig]:
        """Read and check the file: ``{server_id: MCPServerConfig}`` (also kept in ``servers``).

        Raises:
            ConfigurationError: the file is missing, not JSON, or a field is wrong (named).
        """
        where = os.path.basename(self.config_path)
        try:
            with open(self.config_path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise ConfigurationError(f"{where}: no such file", path=self.config_path) from None
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"{where}: cannot be read as JSON: {exc}", path=self.config_path) from None
        self.servers = _servers(data, where, self.config_path)
        return dict(self.servers)

    def get_enabled_servers(self) -> dict[str, MCPServerConfig]:
        """The servers with ``enabled`` true (the file is read first if it was not)."""
        if not self.servers:
            self.load_config()
        return {key: cfg for key, cfg in self.servers.items() if cfg.enabled}


def _servers(data: Any, where: str, path: str) -> dict[str, MCPServerConfig]:
    if not isinstance(data, dict):
        raise ConfigurationError(f"{where}: expected an object of servers", path=path)
    out = {}
    for key, entry in data.items():
        def bad(what: str, fld: str | None = None, key: str = key) -> ConfigurationError:
            spot = f"{key}.{fld}" if fld else key
            return ConfigurationError(f"{where}: {spot}: {what}", path=path, field=spot)

        if not _ID.match(key):
            raise bad("a server id starts with a letter and has only letters, digits, '_' and '-'")
        if not isinstance(entry, dict):
            raise bad("expected an object")
        if not isinstance(entry.get("command"), str) or not entry["command"]:
            raise bad("expected a command (a non-empty string)", "command")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise bad("expected a list of strings", "args")
        env = entry.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise bad("expected an object of strings", "env")
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            raise bad("expected true or false", "enabled")
        name = entry.get("name", key)
        if not isinstance(name, str):
            raise bad("expected a string", "name")
        out[key] = MCPServerConfig(name=name, command=entry["command"], args=list(args), env=dict(env),
                                   enabled=enabled, id=key)
    return out


class ToolRegistry:
    """A minimal tool registry: ``register(definition, handler)``, ``unregister(name)``,
    ``get_definitions()``, ``get_handler(name)``. Any object with ``register`` and
    ``unregister`` of the same shape can stand for it."""

    def __init__(self) -> None:
        self.tools: dict[str, tuple[dict[str, Any], Callable[..., Awaitable[Any]]]] = {}

    def register(self, definition: dict[str, Any], handler: Callable[..., Awaitable[Any]]) -> None:
        self.tools[definition["name"]] = (definition, handler)

    def unregister(self, name: str) -> None:
        self.tools.pop(name, None)

    def get_definitions(self) -> list[dict[str, Any]]:
        return [definition for definition, _ in self.tools.values()]

    def get_handler(self, name: str) -> Callable[..., Awaitable[Any]] | None:
        entry = self.tools.get(name)
        return entry[1] if entry is not None else None


class MCPServerSession:
    """One connected server, seen as a session: ``list_tools``, ``call_tool``,
    ``list_resources``, ``read_resource``, ``get_prompt`` (each one request of the host)."""

    def __init__(self, host: MCPHost, server: str) -> None:
        self.host = host
        self.server = server

    async def list_tools(self) -> list[dict[str, Any]]:
        return [dict(t) for t in self.host.get_tools(self.server)[self.server]["tools"]]

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return dict(await self.host.call_tool(f"{self.server}.{name}", arguments))

    async def list_resources(self) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.host.list_resources(self.server)]

    async def read_resource(self, uri: str) -> dict[str, Any]:
        return dict(await self.host.get_resource(uri, server=self.server))

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return dict(await self.host.get_prompt(f"{self.server}.{name}", arguments))


class MCPService:
    """Connections to the servers and their tools in the tool registry.

    Attributes:
        sessions: ``{server_id: MCPServerSession}`` of the connected servers.
        connected_servers: ``{server_id: bool}`` of every server tried.
        registry: where tools are registered (:class:`ToolRegistry` by default).
    """

    def __init__(self, registry: Any = None, **host_options: Any) -> None:
        self.registry = registry if registry is not None else ToolRegistry()
        self.sessions: dict[str, MCPServerSession] = {}
        self.connected_servers: dict[str, bool] = {}
        #: The registry names of each server's tools.
        self.registered: dict[str, list[str]] = {}
        check_host_options(host_options)
        self._options = dict(host_options)
        self._host: MCPHost | None = None
        self._lock = asyncio.Lock()

    @property
    def host(self) -> MCPHost | None:
        return self._host

    async def _running(self) -> MCPHost:
        async with self._lock:
            if self._host is None:
                host = MCPHost({"mcpServers": {}}, **self._options)
                host.on_event(self._on_event)
                await host.initialize()
                self._host = host
            return self._host

    async def connect_to_server(self, server_config: MCPServerConfig) -> bool:
        """Connect one server (its start is retried per the host's policy): ``True`` if it is
        connected. A failure is logged and the server marked disconnected; nothing raises
        but a config that is not an ``MCPServerConfig``."""
        if not isinstance(server_config, MCPServerConfig):
            raise UsageError(f"connect_to_server(): expected an MCPServerConfig, not {type(server_config).__name__}")
        key = server_config.server_id
        host = await self._running()
        try:
            info = host.get_tools(include_unavailable=True).get(key)
            state = info["state"] if info is not None else None
            if state is None:
                await host.add_server(key, server_config.to_entry())
            elif state != "ready":
                await host.start_server(key)
        except MCPHostError as exc:
            logger.warning("%s: not connected: %s", key, exc)
            self._disconnected(key)
            return False
        ready = host.get_tools()[key]["state"] == "ready"
        self.connected_servers[key] = ready
        if ready:
            self.sessions[key] = MCPServerSession(host, key)
        return ready

    def register_server_tools(self, server_name: str) -> list[dict[str, Any]]:
        """Register every tool of connected server ``server_name`` in the registry, named
        ``server_name.tool_name`` (namespaced: two servers' tools never collide); returns
        the definitions registered. Its earlier tools are replaced."""
        if self._host is None or not self.connected_servers.get(server_name):
            raise UsageError(f"register_server_tools(): server {server_name!r} is not connected", server=server_name)
        self._unregister(server_name)
        definitions = []
        for tool in self._host.get_tools(server_name)[server_name]["tools"]:
            definition = self._format_tool_definition(dict(tool), server_name)
            self.registry.register(definition, self._create_tool_handler(server_name, tool["name"]))
            definitions.append(definition)
        self.registered[server_name] = [d["name"] for d in definitions]
        return definitions

    def _format_tool_definition(self, tool: dict[str, Any], server_name: str) -> dict[str, Any]:
        """The document's provider-agnostic definition: ``{"name": "server.tool",
        "description", "parameters": {"type": "object", "properties", "required"}}``."""
        schema = dict(tool.get("inputSchema") or {})
        parameters = {**schema, "type": "object", "properties": dict(schema.get("properties") or {}),
                      "required": list(schema.get("required") or [])}
        return {"name": f"{server_name}.{tool['name']}", "description": str(tool.get("description") or ""),
                "parameters": parameters}

    def _create_tool_handler(self, server_name: str, tool_name: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        """``await handler(**arguments)`` (or ``handler(arguments)``): the tool's ``CallToolResult``."""
        async def handler(arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
            if self._host is None:
                raise UsageError(f"{server_name}.{tool_name}: the service is cleaned up", server=server_name)
            return dict(await self._host.call_tool(f"{server_name}.{tool_name}", {**(arguments or {}), **kwargs}))

        handler.__name__ = f"{server_name}.{tool_name}"
        return handler

    def _unregister(self, server_name: str) -> None:
        for name in self.registered.pop(server_name, []):
            self.registry.unregister(name)

    def _disconnected(self, server_name: str) -> None:
        self.connected_servers[server_name] = False
        self.sessions.pop(server_name, None)
        self._unregister(server_name)

    def _on_event(self, event: Mapping[str, Any]) -> None:
        # "Tools from disconnected servers should be unregistered."
        if event.get("type") == "state_changed" and event.get("data", {}).get("to") != "ready":
            server = event.get("server")
            if isinstance(server, str) and server in self.connected_servers:
                self._disconnected(server)

    async def cleanup(self) -> None:
        """Disconnect every server and unregister their tools (idempotent)."""
        host, self._host = self._host, None
        for server in list(self.registered):
            self._unregister(server)
        for server in list(self.connected_servers):
            self.connected_servers[server] = False
        self.sessions.clear()
        if host is not None:
            await host.shutdown()


class MCPSessionManager:
    """The process's one MCP session manager: ``get_instance()``, ``initialize_servers()``,
    ``cleanup()``; its ``config_manager`` reads the file, its ``mcp_service`` connects."""

    _instance: ClassVar[MCPSessionManager | None] = None

    def __init__(self, config_path: str | os.PathLike[str] = DEFAULT_CONFIG_PATH, registry: Any = None,
                 **host_options: Any) -> None:
        self.config_manager = MCPConfigManager(config_path)
        self.mcp_service = MCPService(registry, **host_options)

    @classmethod
    def get_instance(cls, config_path: str | os.PathLike[str] | None = None) -> MCPSessionManager:
        """The one instance (made on first use; ``config_path`` only counts then)."""
        if cls._instance is None:
            cls._instance = cls(config_path if config_path is not None else DEFAULT_CONFIG_PATH)
        return cls._instance

    @classmethod
    def reset_instance(cls) -> None:
        """Forget the instance (after its ``cleanup()``): the next ``get_instance()`` makes one."""
        cls._instance = None

    async def initialize_servers(self) -> dict[str, bool]:
        """Connect every enabled server, concurrently, and register the tools of those that
        connected: ``{server_id: connected}``."""
        enabled = self.config_manager.get_enabled_servers()
        outcomes = await asyncio.gather(*(self.mcp_service.connect_to_server(c) for c in enabled.values()))
        for key, ok in zip(enabled, outcomes):
            if ok:
                self.mcp_service.register_server_tools(key)
        return dict(zip(enabled, outcomes))

    async def cleanup(self) -> None:
        await self.mcp_service.cleanup()


def get_mcp_connect_tool_definition() -> dict[str, Any]:
    """The definition of the ``mcp_connect`` tool (connect the configured MCP servers)."""
    return {"name": "mcp_connect",
            "description": "Connect to the configured MCP servers and register their tools.",
            "parameters": {"type": "object", "properties": {}, "required": []}}


async def handle_mcp_connect() -> dict[str, Any]:
    """Run ``mcp_connect``: ``{"success", "connected_servers": {id: bool}, "tools": [names],
    "error"?}``. A configuration error is told in the result, not raised."""
    manager = MCPSessionManager.get_instance()
    try:
        connected = await manager.initialize_servers()
    except ConfigurationError as exc:
        return {"success": False, "connected_servers": {}, "tools": [], "error": str(exc)}
    service = manager.mcp_service
    tools = [name for server in connected if connected[server] for name in service.registered.get(server, [])]
    return {"success": any(connected.values()) or not connected, "connected_servers": connected, "tools": tools}


def register(registry: Any = None) -> None:
    """Register the ``mcp_connect`` tool in ``registry`` (default: the session manager's)."""
    target = registry if registry is not None else MCPSessionManager.get_instance().mcp_service.registry

    async def handler(arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        return await handle_mcp_connect()

    target.register(get_mcp_connect_tool_definition(), handler)
