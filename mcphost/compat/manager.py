"""The client-manager API (specification 003), as a thin facade over ``MCPHost``.

Layer 5: imports only the public ``mcphost`` API and ``mcphost.errors``. Code written
against the document runs as written::

    configs = [MCPServerConfig(name="fs", transport="stdio", command="npx",
                               args=["-y", "@modelcontextprotocol/server-filesystem", "/tmp"])]
    manager = MCPClientManager(configs, capability_set=caps)
    results = await manager.connect_all()            # {"fs": True}
    for tool in manager.get_tools():                 # ToolWrapper: mcp__fs__read_file, ...
        ...
    text = await manager.execute_tool("mcp__fs__read_file", {"path": "/tmp/data.txt"})

Each server is a server of one :class:`mcphost.MCPHost` (``manager.host``), added at run time
(``MCPHost.add_server``); the capability set is the host's ``permissions``. The errors are
the document's builtin classes and mcphost's at once: a tool of an unknown or disconnected
server raises :class:`ToolLookupError`, a ``ValueError`` and also the ``RoutingError`` or
``ServerUnavailableError`` it stands for; a denied one raises ``PermissionDeniedError``, a
``PermissionError``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcphost import CapabilitySet, MCPHost
from mcphost.errors import MCPHostError, RoutingError, ServerUnavailableError, UsageError

from .bridge import check_host_options, document_error

__all__ = [
    "CapabilitySet",
    "MCPClientManager",
    "MCPServerConfig",
    "MCPServerConnection",
    "ToolLookupError",
    "ToolWrapper",
    "mcp_tool_name",
    "split_mcp_tool_name",
]

logger = logging.getLogger("mcphost.compat.manager")

PREFIX = "mcp__"

#: The document's transports -> mcp.json ``type``.
TRANSPORTS = {"stdio": "stdio", "sse": "sse", "http": "http", "streamable-http": "http", "streamable_http": "http",
              "streamablehttp": "http", "websocket": "websocket", "ws": "websocket"}


class ToolLookupError(MCPHostError, ValueError):
    """The tool cannot be found or its server is not connected (the document's
    ``ValueError``; also the mcphost error it stands for)."""


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__{server}__{tool}``."""
    return f"{PREFIX}{server}__{tool}"


def split_mcp_tool_name(name: str) -> tuple[str, str]:
    """``mcp__{server}__{tool}`` -> ``(server, tool)``; a ``ToolLookupError`` (a
    ``ValueError``) for a name of another form. Server names have no ``__``; tool names may."""
    if isinstance(name, str) and name.startswith(PREFIX):
        server, sep, tool = name[len(PREFIX):].partition("__")
        if sep and server and tool:
            return server, tool
    raise ToolLookupError(f"{name!r} is not an MCP tool name of the form mcp__server__tool")


@dataclass
class MCPServerConfig:
    """One server, as the document's ``MCPServerConfig`` (``corteX.interop.types``).

    ``transport`` is ``"stdio"`` (``command``, ``args``, ``env``), ``"sse"`` or ``"http"``
    (``url``, ``headers``), or ``"websocket"``. ``timeout`` is the start-up timeout in
    seconds (mcphost's default when ``None``).
    """

    name: str
    transport: str = "stdio"
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None

    def to_entry(self) -> dict[str, Any]:
        """This server as an ``mcp.json`` entry."""
        kind = TRANSPORTS.get(str(self.transport).lower())
        if kind is None:
            raise UsageError(f"MCPServerConfig {self.name!r}: unknown transport {self.transport!r} "
                             f"(one of {', '.join(sorted(set(TRANSPORTS)))})", server=self.name)
        entry: dict[str, Any] = {"type": kind}
        if kind == "stdio":
            entry.update(command=self.command, args=list(self.args), env=dict(self.env))
        else:
            entry["url"] = self.url
            if self.headers:
                entry["headers"] = dict(self.headers)
        if self.timeout is not None:
            entry["timeout"] = self.timeout
        return entry


@dataclass
class ToolWrapper:
    """One tool of one server, named ``mcp__{server}__{tool}``: ``name``, ``description``,
    ``parameters`` (its ``inputSchema``); ``await wrapper(arguments)`` (or
    ``wrapper(**arguments)``) runs it and returns its text."""

    name: str
    description: str
    parameters: dict[str, Any]
    server_name: str
    tool_name: str
    manager: MCPClientManager | None = field(default=None, repr=False, compare=False)

    async def __call__(self, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> str:
        if self.manager is None:
            raise ToolLookupError(f"tool {self.name!r} belongs to no manager", server=self.server_name)
        return await self.manager.execute_tool(self.name, {**(arguments or {}), **kwargs})

    execute = __call__

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``: a provider-agnostic tool definition."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass
class MCPServerConnection:
    """The state of one server: its ``config``, its ``tools`` keyed by namespaced name, its
    ``resources``, whether it is ``connected``, and its ``error``."""

    config: MCPServerConfig
    tools: dict[str, ToolWrapper] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    connected: bool = False
    error: str | None = None


class MCPClientManager:
    """Connections to many MCP servers, their tools as :class:`ToolWrapper`, and their
    execution under a :class:`~mcphost.CapabilitySet`.

    Args:
        configs: the servers (each an :class:`MCPServerConfig`).
        capability_set: when given, ``execute_tool`` needs ``execute`` on
            ``mcp:{server}:{tool}`` (``PermissionError`` otherwise), and the tools it denies
            are not listed.
        **host_options: given to :class:`mcphost.MCPHost` as they are.
    """

    def __init__(self, configs: Sequence[MCPServerConfig] | None = None,
                 capability_set: CapabilitySet | None = None, **host_options: Any) -> None:
        configs = list(configs or [])
        for config in configs:
            if not isinstance(config, MCPServerConfig):
                raise UsageError(f"MCPClientManager(configs=...): each is an MCPServerConfig, not "
                                 f"{type(config).__name__}")
        names = [c.name for c in configs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"MCPClientManager(configs=...): server names are unique; twice: {', '.join(twice)}")
        self.configs: dict[str, MCPServerConfig] = {c.name: c for c in configs}
        self.capability_set = capability_set
        check_host_options(host_options)
        self._options = dict(host_options)
        self._host: MCPHost | None = None
        self._started = asyncio.Lock()
        #: Tools registered by register_tools(), per server (schemas only).
        self._registered: dict[str, dict[str, ToolWrapper]] = {}

    @property
    def host(self) -> MCPHost | None:
        """The :class:`mcphost.MCPHost` underneath, once a server was connected."""
        return self._host

    async def _running(self) -> MCPHost:
        async with self._started:
            if self._host is None:
                host = MCPHost({"mcpServers": {}}, permissions=self.capability_set, **self._options)
                await host.initialize()
                self._host = host
            return self._host

    # -- connections -------------------------------------------------------------------------

    async def connect_all(self) -> dict[str, bool]:
        """Connect every configured server, in parallel: ``{name: connected}``. A failure is
        logged and recorded (``get_connection(name).error``); it raises nothing."""
        outcomes = await asyncio.gather(*(self.connect_server(c) for c in list(self.configs.values())))
        return dict(zip(self.configs, outcomes))

    async def connect_server(self, config: MCPServerConfig) -> bool:
        """Connect one server and discover its tools; ``True`` if it connected (a failure's
        error is in ``get_connection(config.name).error``). A server already connected
        stays as it is; one that failed or was disconnected is tried again."""
        if not isinstance(config, MCPServerConfig):
            raise UsageError(f"connect_server(): config is an MCPServerConfig, not {type(config).__name__}")
        host = await self._running()
        entry = config.to_entry()
        self.configs[config.name] = config
        try:
            info = host.get_tools(include_unavailable=True).get(config.name)
            if info is None:
                await host.add_server(config.name, entry)
            elif info["state"] != "ready":
                await host.start_server(config.name)
        except MCPHostError as exc:
            logger.warning("%s: not connected: %s", config.name, exc)
            if isinstance(exc, UsageError) and config.name not in host.get_tools():
                raise
            return False
        return True

    async def disconnect_server(self, name: str) -> None:
        """Disconnect server ``name``: its process ends, its tools and resources are gone;
        its record stays (``connected`` false) and ``connect_server`` connects it again."""
        host = self._host
        if host is None or name not in host.get_tools():
            raise document_error(ToolLookupError, f"no server named {name!r}", RoutingError(
                f"no server named {name!r}"), server=name)
        await host.stop_server(name)

    async def disconnect_all(self) -> None:
        """Disconnect every server and clear the state: every record is gone (the configs
        given to the constructor stay, for ``connect_all`` again)."""
        host, self._host = self._host, None
        self._registered.clear()
        if host is not None:
            await host.shutdown()

    # -- tools ------------------------------------------------------------------------------

    def _wrappers(self, server: str, tools: list[dict[str, Any]]) -> dict[str, ToolWrapper]:
        out = {}
        for tool in tools:
            name = mcp_tool_name(server, tool["name"])
            out[name] = ToolWrapper(name=name, description=str(tool.get("description") or ""),
                                    parameters=dict(tool.get("inputSchema") or {"type": "object"}),
                                    server_name=server, tool_name=tool["name"], manager=self)
        return out

    def _server_tools(self, name: str) -> dict[str, ToolWrapper]:
        tools: dict[str, ToolWrapper] = {}
        if self._host is not None:
            info = self._host.get_tools().get(name)
            if info is not None:
                tools.update(self._wrappers(name, [dict(t) for t in info["tools"]]))
        for key, wrapper in self._registered.get(name, {}).items():
            tools.setdefault(key, wrapper)
        return tools

    def _names(self) -> list[str]:
        names = list(self._host.get_tools()) if self._host is not None else []
        return names + [n for n in self._registered if n not in names]

    def get_tools(self) -> list[ToolWrapper]:
        """Every tool of every connected server (and every registered one), as one list."""
        return [w for name in self._names() for w in self._server_tools(name).values()]

    def get_tools_for_server(self, name: str) -> list[ToolWrapper]:
        """The tools of server ``name``; ``[]`` when it is unknown or not connected."""
        return list(self._server_tools(name).values())

    def qualified_tools(self, server: str | None = None) -> list[str]:
        """Every tool as mcphost names it, ``server.tool`` (of one server, or of all)."""
        names = [server] if server is not None else self._names()
        return [f"{w.server_name}.{w.tool_name}" for n in names for w in self._server_tools(n).values()]

    def register_tools(self, server_name: str, tool_schemas: list[dict[str, Any]]) -> None:
        """Register tools from MCP tool definitions (``name``, ``description``,
        ``inputSchema``) under ``server_name``: listed as ``mcp__{server_name}__{name}``
        (a record is made for a server not seen before). They run on the server of that name
        once it is connected and offers them; until then ``execute_tool`` raises
        :class:`ToolLookupError`."""
        if not isinstance(server_name, str) or not server_name or "__" in server_name or "." in server_name:
            raise UsageError(f"register_tools(): {server_name!r} is not a server name")
        if not isinstance(tool_schemas, list):
            raise UsageError("register_tools(): tool_schemas is a list of MCP tool definitions")
        for i, schema in enumerate(tool_schemas):
            if not isinstance(schema, Mapping) or not isinstance(schema.get("name"), str) or not schema["name"]:
                raise UsageError(f"register_tools(): tool_schemas[{i}] has no 'name'", server=server_name)
        self._registered.setdefault(server_name, {}).update(
            self._wrappers(server_name, [dict(s) for s in tool_schemas]))

    async def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> str:
        """Run ``mcp__{server}__{tool}`` with ``arguments``; its text (the text blocks joined
        by newlines; a tool that fails inside gives its error text).

        Raises:
            ToolLookupError (a ``ValueError``): not an MCP tool name, the server is not
                connected, or the tool is not found (also ``RoutingError`` /
                ``ServerUnavailableError``).
            PermissionDeniedError (a ``PermissionError``): the capability set denies it,
                checked before anything is sent.
            and every other error of ``MCPHost.call_tool`` (``TimeoutError``...).
        """
        server, tool = split_mcp_tool_name(tool_name)
        if self._host is None:
            raise document_error(ToolLookupError, f"{tool_name}: server {server!r} is not connected",
                                 ServerUnavailableError("not connected", server=server), server=server)
        try:
            result = await self._host.call_tool(f"{server}.{tool}", arguments)
        except (RoutingError, ServerUnavailableError) as exc:
            raise document_error(ToolLookupError, f"{tool_name}: {exc.message}", exc) from exc
        texts = [b.get("text", "") for b in result.get("content", []) if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts)

    # -- records ----------------------------------------------------------------------------

    def get_connection(self, name: str) -> MCPServerConnection | None:
        """The record of server ``name`` (a snapshot), or ``None``."""
        info = self._host.get_tools().get(name) if self._host is not None else None
        if info is None and name not in self._registered:
            return None
        config = self.configs.get(name) or MCPServerConfig(name=name, transport="stdio")
        if info is None:
            return MCPServerConnection(config=config, tools=self._server_tools(name))
        return MCPServerConnection(config=config, tools=self._server_tools(name),
                                   resources=[dict(r) for r in info["resources"]],
                                   connected=info["state"] == "ready", error=info.get("error"))

    @property
    def connected_servers(self) -> list[str]:
        """The names of the servers connected now."""
        if self._host is None:
            return []
        return [name for name, info in self._host.get_tools().items() if info["state"] == "ready"]

    @property
    def available_tool_count(self) -> int:
        """How many tools the connected servers offer (those the capability set allows)."""
        return len(self.get_tools())

    async def __aenter__(self) -> MCPClientManager:
        await self.connect_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.disconnect_all()
