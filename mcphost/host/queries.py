"""The host's requests other than ``tools/call``, as public methods: prompts, resources,
completion, tasks, roots, logging levels, subscriptions.

Layer 4. :class:`Queries` is one of the collaborators :class:`~mcphost.host.facade.MCPHost`
delegates to; each method routes (:class:`~mcphost.host.router.Router`), and sends through
:mod:`~mcphost.host.requests`; the reads that are safe to repeat go through the retry
policy (:mod:`~mcphost.host.recovery`).
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import MCPHostError, UsageError
from ..protocol.lifecycle import HostState, ServerState
from ..types import (
    GatheredResources,
    GetPromptResult,
    JSONObject,
    ReadResourceResult,
    Root,
    ServerInfo,
)
from . import recovery, requests
from .configload import fail_fast as configured_fail_fast
from .handlers import LOG_LEVELS, normalise_roots
from .registry import list_all

if TYPE_CHECKING:
    from ..bounds import Bounds
    from .handle import ServerHandle
    from .handlers import Handlers
    from .lifecycle import HostLifecycle
    from .readcache import ReadCache
    from .router import Router
    from .skills import Skills
    from .supervisor import Supervisor

__all__ = ["Queries"]


class Queries:
    """Prompts, resources, completion, tasks and client-side utilities of the host."""

    def __init__(
        self,
        servers: Mapping[str, ServerHandle],
        *,
        router: Router,
        supervisor: Supervisor,
        handlers: Handlers,
        lifecycle: HostLifecycle,
        bounds: Bounds,
        reads: ReadCache,
    ) -> None:
        self._servers = servers
        self._router = router
        self._supervisor = supervisor
        self._handlers = handlers
        self._lifecycle = lifecycle
        self.bounds = bounds
        self._reads = reads

    @functools.cached_property
    def skills(self) -> Skills:
        """Skills (the io.modelcontextprotocol/skills extension): listed, loaded verified.

        Built on first use: a host whose application never asks for a skill does not load
        the skills room (nor ``hmac``, ``base64``): memory close to a bare client."""
        from .skills import Skills

        return Skills(self._router, self.bounds)

    def get_tools(self, server: str | None = None, *, include_unavailable: bool = False) -> dict[str, ServerInfo]:
        """Every configured server (or only ``server``) with its state, its error and what
        it offers; a server that is not ready offers nothing, unless ``include_unavailable``
        (its last lists, for diagnostics)."""
        handles = [self._router.handle(server)] if server is not None else self._servers.values()
        return {h.name: cast(ServerInfo, h.info(include_unavailable, self._router.visible_tools)) for h in handles}

    async def list_tasks(self, server: str) -> list[JSONObject]:
        """``tasks/list`` of one server (all pages)."""
        return await recovery.retry_safe(self._supervisor, lambda: requests.list_tasks(
            self._router.handle(server), self.bounds.max_pages, self.bounds.max_list_items), "tasks/list")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None,
        cache: bool = True, allow_stale: bool = False, scope: str | None = None,
    ) -> GetPromptResult:
        """Get ``server.prompt`` rendered with ``arguments`` (string values).

        The result comes from the cache while fresh (``cache=False``: ask the server);
        ``allow_stale=True`` serves an expired one, marked in ``_meta``, when the server
        cannot answer (docs/observability.md). ``scope`` names the user the host reads for
        (a gateway's client): a result the server marks ``cacheScope: "private"`` is kept
        for that user only, never served to another scope."""
        server = self._servers.get(name.partition(".")[0]) if isinstance(name, str) else None
        given = dict(arguments) if isinstance(arguments, Mapping) else arguments  # refused in requests
        params: dict[str, Any] = {"name": name, "arguments": given or {}}

        def ask() -> Awaitable[Any]:
            return recovery.retry_safe(
                self._supervisor, lambda: requests.get_prompt(self._router, name, arguments, timeout), "prompts/get")

        return cast(GetPromptResult, await self._reads.fetch(
            server, "prompts/get", params, ask, use=cache, allow_stale=allow_stale, scope=scope))

    def route_resource(self, uri: str, server: str | None = None) -> ServerHandle:
        """The server that serves ``uri``: exact URIs first, then templates."""
        return self._router.resource(uri, server)

    async def get_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None, cache: bool = True,
        allow_stale: bool = False, scope: str | None = None,
    ) -> ReadResourceResult:
        """Read a resource, routed by URI (exact, then RFC 6570 template) or by ``server=``.

        The result comes from the cache while fresh (``cache=False``: ask the server);
        ``allow_stale=True`` serves an expired one, marked in ``_meta``, when the server
        cannot answer (docs/observability.md). ``scope``: as for :meth:`get_prompt`."""
        try:
            handle: ServerHandle | None = self._router.resource(uri, server, quiet=True)
        except MCPHostError as exc:  # not routable now; a stale entry may still serve
            handle = self._servers.get(exc.server or server or "") if allow_stale else None
            if handle is None and allow_stale and isinstance(uri, str):
                handle = self._reads.owner("resources/read", {"uri": uri}, self._servers)

        def ask() -> Awaitable[Any]:
            return recovery.retry_safe(
                self._supervisor, lambda: requests.get_resource(self._router, uri, server, timeout), "resources/read")

        return cast(ReadResourceResult, await self._reads.fetch(
            handle, "resources/read", {"uri": uri}, ask, use=cache, allow_stale=allow_stale, scope=scope))

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        timeout: float | None = None,
    ) -> JSONObject:
        """``completion/complete`` for ``{"type": "ref/prompt", "name": "server.prompt"}`` or
        ``{"type": "ref/resource", "uri": ...}``; returns ``{"values", "total"?, "hasMore"?}``."""
        return await recovery.retry_safe(self._supervisor, lambda: requests.complete(
            self._router, ref, argument, context, server, timeout), "completion/complete")

    # -- client-initiated utilities -------------------------------------------------------

    async def set_roots(self, roots: Iterable[str | os.PathLike[str] | Root]) -> None:
        """Replace the roots and send ``notifications/roots/list_changed`` to every server
        (roots are declared at start: give ``roots=`` to the constructor, even ``[]``)."""
        if not (self._handlers.roots_given or self._handlers.roots_handler) and \
                self._lifecycle.state is not HostState.NEW:
            raise UsageError("set_roots(): roots were not declared at start; pass roots=[] to MCPHost")
        self._handlers.roots = normalise_roots(roots)
        self._handlers.roots_given = True
        for handle in self._servers.values():
            if handle.state is ServerState.READY and handle.session is not None:
                handle.session.notify("notifications/roots/list_changed")

    async def set_log_level(self, server: str | None, level: str) -> None:
        """Send ``logging/setLevel`` to ``server`` (or every server declaring ``logging``)."""
        if not isinstance(level, str) or level not in LOG_LEVELS:
            raise UsageError(f"unknown log level {level!r} (one of {', '.join(LOG_LEVELS)})")
        handles = [self._router.handle(server)] if server else [
            h for h in self._servers.values()
            if h.state is ServerState.READY and h.session is not None and h.session.has_capability("logging")
        ]
        await requests.set_log_level(handles, level)

    async def subscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """``resources/subscribe``: updates then arrive as ``resource_updated`` events."""
        await requests.subscription(self._router, "resources/subscribe", uri, server)

    async def unsubscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """``resources/unsubscribe``."""
        await requests.subscription(self._router, "resources/unsubscribe", uri, server)

    # -- resources for context ------------------------------------------------------------

    async def list_resources(self, server: str | None = None) -> list[JSONObject]:
        """``resources/list`` asked now (every page) of ``server``, or of every ready server
        that declares ``resources``; each resource with its ``server`` added. Unlike
        ``get_tools()``, which shows the lists of the last discovery, this asks.

        Raises:
            RoutingError: no server ``server``; ServerUnavailableError: it is not ready;
            and the request's errors (TimeoutError, ServerError, ProtocolError).
        """
        if server is not None:
            handles = [self._router.handle(server)]
        else:
            handles = [h for h in self._servers.values() if h.state is ServerState.READY
                       and h.session is not None and h.session.has_capability("resources")]
        bounds = self.bounds

        async def one(handle: ServerHandle) -> list[Any]:
            session = handle.require_ready()
            return cast(list[Any], await requests.timed(handle, list_all(
                session, "resources/list", "resources", bounds.max_pages, bounds.max_list_items), "resources/list"))

        found: list[JSONObject] = []
        for handle in handles:
            items = await recovery.retry_safe(self._supervisor, functools.partial(one, handle), "resources/list")
            found.extend({**item, "server": handle.name} for item in items if isinstance(item, dict))
        return found

    def servers_with(self, capability: str, *, ready: bool = True) -> list[str]:
        """The servers that have ``capability``, by priority (lower first): declared in the
        configuration (``capabilities``), a tool of that name (e.g. ``execute_query``), or an
        MCP capability of the session (``tools``, ``resources``, ``prompts``, ``logging``...).
        ``ready=False`` also names the servers that are not ready (by declaration only)."""
        if not isinstance(capability, str) or not capability:
            raise UsageError(f"servers_with(): capability must be a non-empty string, not {capability!r}")
        chosen = []
        for h in self._servers.values():
            is_ready = h.state is ServerState.READY
            if ready and not is_ready:
                continue
            if capability in h.config.declared_capabilities or (is_ready and (
                    capability in h.tool_index or (h.session is not None and h.session.has_capability(capability)))):
                chosen.append(h)
        return [h.name for h in sorted(chosen, key=lambda h: (h.config.priority, h.name))]

    def servers_for(self, domain: str) -> list[str]:
        """The servers whose ``domains`` include ``domain``, by priority (lower first)."""
        chosen = [h for h in self._servers.values() if domain in h.config.domains]
        return [h.name for h in sorted(chosen, key=lambda h: (h.config.priority, h.name))]

    async def gather_resources(
        self, servers: Iterable[str] | None = None, uri_filter: Callable[[str], bool] | str | None = None,
        fail_fast: bool | None = None, *, concurrency: int = 8, timeout: float | None = None,
    ) -> GatheredResources:
        """Read every listed resource of ``servers`` (default: every ready server), at most
        ``concurrency`` at once, through the cache.

        ``uri_filter`` keeps the URIs it accepts (a callable, or a shell-style glob).
        Returns ``{"resources": [...], "errors": [...]}``: each resource with its ``server``,
        ``priority``, ``domains``, ``uri``, ``name``, ``mimeType`` and ``contents``, ordered by
        server priority (lower first), then server, then URI; each error with ``server``,
        ``uri`` and ``error``. With ``fail_fast`` (by default the configuration's ``failFast``,
        else ``True``) the first failure cancels the other reads and is raised, with every
        failure so far in its ``errors`` attribute.
        """
        fail_fast = configured_fail_fast(self._lifecycle.config, fail_fast)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(f"concurrency must be an integer of 1 or more, not {concurrency!r}")
        if servers is not None and (isinstance(servers, (str, bytes)) or not hasattr(servers, "__iter__")):
            raise UsageError(f"servers must be a list of server names (or None), not {type(servers).__name__}")
        if uri_filter is not None and not isinstance(uri_filter, str) and not callable(uri_filter):
            raise UsageError(f"uri_filter must be a glob or a function (or None), not {type(uri_filter).__name__}")
        if not isinstance(fail_fast, bool):
            raise UsageError(f"fail_fast must be True or False, not {type(fail_fast).__name__}")
        names = list(self._servers) if servers is None else list(servers)
        handles = [self._router.handle(name) for name in names]  # unknown names: RoutingError
        if isinstance(uri_filter, str):
            pattern = uri_filter
            uri_filter = lambda uri: fnmatch.fnmatchcase(uri, pattern)  # noqa: E731
        wanted = [(h, r) for h in handles if h.state is ServerState.READY
                  for r in h.resources if isinstance(r.get("uri"), str)
                  and (uri_filter is None or uri_filter(r["uri"]))]
        gate = asyncio.Semaphore(concurrency)
        found: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []

        async def read(handle: ServerHandle, listed: dict[str, Any]) -> None:
            async with gate:
                try:
                    result = await self.get_resource(listed["uri"], server=handle.name, timeout=timeout)
                except MCPHostError as exc:
                    errors.append({"server": handle.name, "uri": listed["uri"], "error": str(exc)})
                    if fail_fast:
                        raise exc.with_errors(errors) from exc.__cause__
                    return
            found.append({"server": handle.name, "priority": handle.config.priority,
                          "domains": list(handle.config.domains), "uri": listed["uri"],
                          "name": listed.get("name"), "mimeType": listed.get("mimeType"),
                          "contents": result.get("contents", [])})

        tasks = [asyncio.ensure_future(read(h, r)) for h, r in wanted]
        try:
            if fail_fast:
                await asyncio.gather(*tasks)
            else:
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks)
        found.sort(key=lambda r: (r["priority"], r["server"], r["uri"]))
        return {"resources": found, "errors": errors}
