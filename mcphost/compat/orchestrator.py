"""The Talk-2-Tables orchestrator's API (specification 004), as a thin facade over ``MCPHost``.

Layer 5: imports only the public ``mcphost`` API and ``mcphost.errors``. The document's
``MCPOrchestrator(config_path)`` connects every server of its configuration (the YAML or
JSON ``mcp_servers`` + ``orchestration`` file, read by the host), lists and reads resources
per server, gathers every server's resources in parallel through a TTL cache ordered by
priority (lower first), finds the server that has a capability (``execute_query``), and
raises the document's exception tree. Each of those exceptions is also the mcphost error it
stands for (:mod:`mcphost.compat.bridge`): ``except ResourceDataError`` and ``except
RoutingError`` both catch a read of an unknown URI.

Every operation logs the document's events (``mcp_connection_*``, ``resource_list_*``,
``resource_fetch_*``, ``resource_cache_*``, ``error_occurred``) on the
``mcphost.compat.orchestrator`` logger with ``server``, ``context`` and ``metrics``: format
them with ``mcphost.logs.JSONFormatter(nested=True)`` for the document's log shape, and wrap
a piece of work in ``mcphost.logs.operation()`` for its ``operation_id``.

The question-answering loop of the document (``process_query``: the LLM, SQL generation,
the recovery of failed SQL) is the application's: the Talk-2-Tables example builds it on
this class.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from mcphost import MCPHost
from mcphost.errors import (
    MCPHostError,
    RoutingError,
    ServerStartupError,
    ServerUnavailableError,
    UsageError,
)

from .bridge import document_error

__all__ = [
    "MCPOrchestrator",
    "MCPOrchestratorException",
    "MCPConnectionError",
    "InitialConnectionError",
    "ConnectionLostError",
    "NoMCPAvailableError",
    "ResourceFetchError",
    "ResourceListError",
    "ResourceDataError",
    "SQLGenerationError",
    "LLMCommunicationError",
    "InvalidSQLError",
    "QueryExecutionError",
    "NoExecutorAvailableError",
    "SQLExecutionError",
    "SQLSyntaxError",
    "SQLSchemaError",
    "SQLDataError",
]

logger = logging.getLogger("mcphost.compat.orchestrator")


# -- the document's exception tree ("Error Handling Strategy") -------------------------------


class MCPOrchestratorException(MCPHostError):
    """Base of the orchestrator's exceptions (also an ``MCPHostError``)."""


class MCPConnectionError(MCPOrchestratorException):
    """A server could not be connected, or its connection was lost."""


class InitialConnectionError(MCPConnectionError, ServerStartupError):
    """``initialize()`` could not connect (also a ``ServerStartupError``: ``failures``
    names every server that failed and why)."""


class ConnectionLostError(MCPConnectionError, ServerUnavailableError):
    """A server that was connected is gone (also a ``ServerUnavailableError``)."""


class NoMCPAvailableError(MCPConnectionError, ServerUnavailableError):
    """No server is connected: nothing to gather (Algorithm 1, step 4). The document names
    it outside its tree; here it is an ``MCPConnectionError`` (what it is) and a
    ``ServerUnavailableError``."""


class ResourceFetchError(MCPOrchestratorException):
    """Resources could not be listed or read."""


class ResourceListError(ResourceFetchError):
    """``resources/list`` failed."""


class ResourceDataError(ResourceFetchError):
    """``resources/read`` failed."""


class SQLGenerationError(MCPOrchestratorException):
    """No SQL came out of the model."""


class LLMCommunicationError(SQLGenerationError):
    """The model could not be reached, or answered nothing usable."""


class InvalidSQLError(SQLGenerationError):
    """The model's SQL does not pass validation."""


class QueryExecutionError(MCPOrchestratorException):
    """The SQL could not be executed."""


class NoExecutorAvailableError(QueryExecutionError, RoutingError):
    """No connected server has the capability to execute queries (also a ``RoutingError``)."""


class SQLExecutionError(QueryExecutionError):
    """The database server refused or failed the SQL."""


class SQLSyntaxError(SQLExecutionError):
    """The SQL is not valid SQL."""


class SQLSchemaError(SQLExecutionError):
    """The SQL names a table or column that does not exist."""


class SQLDataError(SQLExecutionError):
    """The SQL's values do not fit (a type mismatch, a constraint)."""


# -- the orchestrator ------------------------------------------------------------------------


class MCPOrchestrator:
    """The servers of one Talk-2-Tables configuration, as the document's orchestrator.

    Args:
        config_path: the configuration (YAML needs PyYAML; JSON always works), or a dict of it.
        clock: the clock of the resource cache (seconds, monotonic); injectable for tests.
        **host_options: given to :class:`mcphost.MCPHost` as they are.

    Attributes:
        host: the :class:`mcphost.MCPHost` underneath (its whole API is there).
        resource_cache / cache_timestamps: the document's ``Resource_Cache``: per server,
            what :meth:`gather_all_resources` gathered, and when.
    """

    def __init__(self, config_path: str | os.PathLike[str] | Mapping[str, Any] = "mcp_config.yaml", *,
                 clock: Callable[[], float] = time.monotonic, **host_options: Any) -> None:
        self.config_path = config_path
        self.host = MCPHost(config_path, **host_options)
        self.host.on_event(self._on_event)
        self.clock = clock
        self.resource_cache: dict[str, dict[str, Any]] = {}
        self.cache_timestamps: dict[str, float] = {}

    async def __aenter__(self) -> MCPOrchestrator:
        await self.initialize()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- settings (from the configuration's orchestration block) ------------------------------

    @property
    def fail_fast(self) -> bool:
        """``orchestration.fail_fast`` (default ``True``): a server that cannot be connected
        or gathered fails the whole operation."""
        config = self.host.config
        return True if config is None or config.fail_fast is None else bool(config.fail_fast)

    @property
    def resource_cache_ttl(self) -> float:
        """``orchestration.resource_cache_ttl`` in seconds (default 300)."""
        config = self.host.config
        return 300.0 if config is None else float(config.cache.ttl)

    @property
    def mcp_clients(self) -> dict[str, dict[str, Any]]:
        """Every configured server: ``{name: {"name", "priority", "domains", "capabilities",
        "connected", "state", "error"}}`` (the document's ``MCP_Config`` and its connection)."""
        out = {}
        for name, info in self.host.get_tools().items():
            shown: dict[str, Any] = dict(info)
            config = self.host.config.servers.get(name) if self.host.config is not None else None
            out[name] = {"name": name, "priority": shown.get("priority", 0), "domains": list(shown.get("domains", [])),
                         "capabilities": list(shown.get("declaredCapabilities", [])),
                         "connected": info["state"] == "ready", "state": info["state"], "error": info.get("error"),
                         "transport": config.type if config is not None else None}
        return out

    # -- the document's interface ----------------------------------------------------------

    async def initialize(self) -> None:
        """Connect every configured server.

        With ``fail_fast`` (the default) every server must connect; otherwise the servers
        that can do, and the others are logged (``mcp_connection_failed``) and skipped.

        Raises:
            InitialConnectionError: a server could not be connected (with ``fail_fast``),
                or none could. The configuration's own errors stay ``ConfigurationError``.
        """
        started = self.clock()
        try:
            results = await self.host.initialize(require_all=None)
        except ServerStartupError as exc:
            raise self._error(InitialConnectionError, f"could not connect: {exc.message}", exc) from exc
        connected = [name for name, result in results.items() if result.get("ok")]
        if results and not connected:
            await self.host.shutdown()
            failures = {name: str(result.get("error")) for name, result in results.items()}
            error = InitialConnectionError(f"no server could be connected: {failures}")
            self._log_error(error, "initialize")
            raise error
        logger.info("%d of %d servers connected", len(connected), len(results),
                    extra={"event": "mcp_connection_established", "context": {"servers": connected},
                           "metrics": {"duration_ms": _ms(self.clock() - started)}})

    async def close(self) -> None:
        """Close every connection (idempotent)."""
        await self.host.close()
        self.resource_cache.clear()
        self.cache_timestamps.clear()

    async def list_resources(self, server_name: str | None = None) -> list[dict[str, Any]]:
        """The resources of ``server_name`` (or of every connected server), asked now; each
        is the MCP ``Resource`` (``uri``, ``name``, ``description``, ``mimeType``...) with its
        ``server``.

        Raises:
            ResourceListError: the server is unknown or not connected (also a
                ``RoutingError`` / ``ServerUnavailableError``), or the listing failed.
        """
        started = self.clock()
        logger.debug("resources/list of %s", server_name or "every server", extra={
            "event": "resource_list_requested", "server": server_name})
        try:
            resources = await self.host.list_resources(server_name)
        except MCPHostError as exc:
            raise self._error(ResourceListError, f"could not list resources: {exc.message}", exc,
                              server_name) from exc
        logger.debug("%d resources listed", len(resources), extra={
            "event": "resource_list_received", "server": server_name,
            "metrics": {"duration_ms": _ms(self.clock() - started), "resource_count": len(resources)}})
        return resources

    async def get_resource(self, server_name: str, resource_uri: str) -> Any:
        """The data of resource ``resource_uri`` of server ``server_name``: a JSON resource
        (``application/json``, or a ``.json`` URI) decoded, a text as its text, a blob as its
        bytes; a resource of several contents, the list of them.

        Raises:
            ResourceDataError: unknown server or URI (also a ``RoutingError``), the server is
                not connected (also a ``ServerUnavailableError``), the read failed (also the
                error it failed with), or a JSON resource is not JSON.
        """
        if not isinstance(server_name, str) or not isinstance(resource_uri, str):
            raise UsageError("get_resource(server_name, resource_uri): both are strings")
        started = self.clock()
        logger.debug("%s: read %s", server_name, resource_uri, extra={
            "event": "resource_fetch_requested", "server": server_name, "context": {"uri": resource_uri}})
        try:
            result = await self.host.get_resource(resource_uri, server=server_name)
            data = _data(result.get("contents", []))
        except (MCPHostError, ValueError) as exc:
            message = exc.message if isinstance(exc, MCPHostError) else f"{resource_uri} is not valid JSON: {exc}"
            raise self._error(ResourceDataError, f"could not read {resource_uri}: {message}", exc,
                              server_name) from exc
        logger.debug("%s: read %s", server_name, resource_uri, extra={
            "event": "resource_fetch_completed", "server": server_name, "context": {"uri": resource_uri},
            "metrics": {"duration_ms": _ms(self.clock() - started)}})
        return data

    async def gather_all_resources(self, *, use_cache: bool = True) -> dict[str, dict[str, Any]]:
        """Every connected server's resources, read in parallel (Algorithm 2):
        ``{server: {"priority", "domains", "capabilities", "resources": {uri: data}}}``,
        ordered by priority (lower first), each server's from the cache while it is fresh.

        A server that is not connected is skipped, or, with ``fail_fast``, raises
        ``MCPConnectionError``; a failed read raises (``fail_fast``) or leaves the server out
        (logged), and drops its cache entry.

        Raises:
            NoMCPAvailableError: no server could give anything.
            MCPConnectionError, ResourceListError, ResourceDataError: as above.
        """
        started = self.clock()
        logger.info("gathering resources", extra={"event": "resource_gathering_started"})
        servers = self.mcp_clients
        wanted = []
        for name, info in servers.items():
            if info["connected"]:
                wanted.append(name)
            elif info["state"] != "disabled" and self.fail_fast:
                error = self._error(ConnectionLostError, f"not connected ({info['state']}): {info['error']}",
                                    None, name)
                raise error
            else:
                logger.warning("%s: not connected (%s); skipped", name, info["state"],
                               extra={"event": "error_occurred", "server": name})
        outcomes = await asyncio.gather(*(self._gather_one(name, servers[name], use_cache) for name in wanted),
                                        return_exceptions=True)
        gathered: dict[str, dict[str, Any]] = {}
        for name, outcome in zip(wanted, outcomes):
            if isinstance(outcome, BaseException):
                if self.fail_fast or not isinstance(outcome, Exception):
                    raise outcome
                logger.warning("%s: resources not gathered: %s", name, outcome, extra={
                    "event": "error_occurred", "server": name,
                    "error": {"type": type(outcome).__name__, "message": str(outcome)}})
                continue
            gathered[name] = outcome
        if not gathered:
            error = NoMCPAvailableError("no MCP server is available to gather resources from")
            self._log_error(error, "gather_all_resources")
            raise error
        ordered = dict(sorted(gathered.items(), key=lambda item: (item[1]["priority"], item[0])))
        logger.info("resources of %d servers gathered", len(ordered), extra={
            "event": "resource_gathering_completed", "context": {"servers": list(ordered)},
            "metrics": {"duration_ms": _ms(self.clock() - started),
                        "resource_count": sum(len(v["resources"]) for v in ordered.values())}})
        return ordered

    async def _gather_one(self, name: str, info: dict[str, Any], use_cache: bool) -> dict[str, Any]:
        stamp = self.cache_timestamps.get(name)
        if use_cache and stamp is not None and name in self.resource_cache:
            if self.clock() - stamp < self.resource_cache_ttl:
                logger.debug("%s: resources from the cache", name, extra={"event": "resource_cache_hit", "server": name})
                return self.resource_cache[name]
            logger.debug("%s: cached resources expired", name, extra={"event": "resource_cache_expired", "server": name})
        else:
            logger.debug("%s: resources not cached", name, extra={"event": "resource_cache_miss", "server": name})
        try:
            listed = await self.list_resources(name)
            uris = [r["uri"] for r in listed if isinstance(r.get("uri"), str)]
            datas = await asyncio.gather(*(self.get_resource(name, uri) for uri in uris))
        except Exception:
            # "Invalidation on error": what this server said before is not served again.
            self.resource_cache.pop(name, None)
            self.cache_timestamps.pop(name, None)
            raise
        entry = {"priority": info["priority"], "domains": info["domains"], "capabilities": info["capabilities"],
                 "resources": dict(zip(uris, datas))}
        self.resource_cache[name] = entry
        self.cache_timestamps[name] = self.clock()
        return entry

    def invalidate_cache(self, server_name: str | None = None) -> None:
        """Forget the gathered resources of ``server_name`` (or of every server)."""
        for cache in (self.resource_cache, self.cache_timestamps):
            if server_name is None:
                cache.clear()
            else:
                cache.pop(server_name, None)

    # -- lookups -----------------------------------------------------------------------------

    def servers_with(self, capability: str) -> list[str]:
        """The connected servers that have ``capability`` (declared, or a tool of that name),
        by priority."""
        return self.host.servers_with(capability)

    def servers_for(self, domain: str) -> list[str]:
        """The servers whose ``domains`` include ``domain``, by priority."""
        return self.host.servers_for(domain)

    def find_executor(self, capability: str = "execute_query") -> str:
        """The server to execute queries on: the first by priority that has ``capability``.

        Raises:
            NoExecutorAvailableError: no connected server has it (also a ``RoutingError``).
        """
        found = self.servers_with(capability)
        if not found:
            raise NoExecutorAvailableError(f"no connected MCP server has the capability {capability!r}")
        return found[0]

    async def call_tool(self, server_name: str, tool_name: str, arguments: Mapping[str, Any] | None = None,
                        **options: Any) -> Any:
        """Call ``tool_name`` of ``server_name``; the ``CallToolResult`` (``isError: true``
        is a result). Its failures raise ``QueryExecutionError`` (also the mcphost error)."""
        try:
            return await self.host.call_tool(f"{server_name}.{tool_name}", arguments, **options)
        except MCPHostError as exc:
            raise self._error(QueryExecutionError, f"{tool_name} failed: {exc.message}", exc, server_name) from exc

    # -- internals ---------------------------------------------------------------------------

    def _error(self, cls: type[MCPOrchestratorException], message: str, cause: BaseException | None,
               server: str | None = None) -> MCPOrchestratorException:
        error = document_error(cls, message, cause, server=server)
        self._log_error(error, cls.__name__)
        return error

    def _log_error(self, error: MCPHostError, operation: str) -> None:
        logger.error("%s", error, extra={"event": "error_occurred", "server": error.server,
                                         "context": {"operation": operation},
                                         "error": {"type": type(error).__name__, "message": str(error)}})

    def _on_event(self, event: Mapping[str, Any]) -> None:
        if event.get("type") != "state_changed":
            return
        to = event.get("data", {}).get("to")
        name = _CONNECTION_EVENTS.get(to)
        if name is not None:
            level = logging.WARNING if name == "mcp_connection_failed" else logging.INFO
            logger.log(level, "%s: %s", event.get("server"), to, extra={
                "event": name, "server": event.get("server"), "context": {"state": to}})


_CONNECTION_EVENTS = {"starting": "mcp_connection_initiated", "ready": "mcp_connection_established",
                      "failed": "mcp_connection_failed", "unavailable": "mcp_connection_failed",
                      "stopped": "mcp_connection_closed"}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _data(contents: list[Any]) -> Any:
    """A read's contents as data: JSON decoded, text as text, a blob as bytes."""
    values = []
    for content in contents:
        if not isinstance(content, dict):
            continue
        if "text" in content:
            text = content["text"]
            mime = str(content.get("mimeType") or "")
            is_json = mime == "application/json" or mime.endswith("+json") or str(content.get("uri", "")).endswith(".json")
            values.append(json.loads(text) if is_json else text)
        elif "blob" in content:
            values.append(base64.b64decode(content["blob"]))
    return values[0] if len(values) == 1 else values
