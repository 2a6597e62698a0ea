"""``MCPHost``: many servers from one configuration, one API.

Layer 4. The facade holds the public API and delegates: configuration to
:mod:`~mcphost.host.configload`, lifecycles to the :class:`~mcphost.host.supervisor.Supervisor`,
discovery to the :class:`~mcphost.host.registry.Registry`, names and URIs to the
:class:`~mcphost.host.router.Router`, schemas to :class:`~mcphost.host.validation.Validation`,
the application's handlers to :class:`~mcphost.host.handlers.Handlers`. Only ``call_tool``
is written out here: it is the hot path, and each level of delegation shows in it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, cast, overload

from ..bounds import Bounds
from ..client.tasks import TaskHandle
from ..config.model import SERVER_NAME_PATTERN, ServerConfig
from ..errors import ConfigurationError, MCPHostError, ProtocolError, ServerStartupError, UsageError
from ..policy import RetryPolicy
from ..protocol.lifecycle import ServerState
from ..transports.base import Transport
from ..types import (
    CallToolResult,
    JSONObject,
    Root,
    ServerInfo,
)
from ..version import __version__
from ..wire.framing import DEFAULT_MAX_SIZE
from . import observe, recovery, requests
from .configload import fail_fast, load_config, select
from .handle import ServerHandle
from .handlers import Handlers, Registration
from .local import LocalServer, ToolHandler, check_tools
from .observe import Observability
from .permissions import Permissions
from .queries import Queries
from .registry import Registry
from .reload import Watcher, apply, dependents_of
from .reload import add_server as adding
from .reload import remove_server as removing
from .router import Router
from .supervisor import Supervisor
from .tools_api import ModelAPI
from .validation import Validation

__all__ = ["MCPHost"]

logger = logging.getLogger("mcphost.host")

_EMPTY: Final[list[Any]] = []
#: The clock of per-tool latency metrics (bound once: call_tool reads it twice per call).
_clock: Final = time.perf_counter
_debug: Final = observe.requests_log.isEnabledFor


def _ignore(_params: JSONObject) -> None:
    return None


def _as_arguments(name: str, params: Any) -> dict[str, Any]:
    if isinstance(params, Mapping):
        return dict(params)
    if params is None:
        return {}
    raise UsageError(f"arguments of {name!r} must be a mapping, not {type(params).__name__}")


class MCPHost(Registration, Queries, Observability, ModelAPI):
    """A host for many MCP servers (every option is described in docs/api.md).

    Args:
        config: path of an ``mcp.json``, or a dict of its content (or give it to
            :meth:`initialize`).
        roots, validate_arguments, validate_output, validate_messages, request_timeout,
        shutdown_timeout, unavailable_after_timeouts, max_message_size, max_pages, bounds,
        environ, inherit_env, inputs, client_info, servers, require_all, watch, retry, log_level, trace_bodies,
        permissions, handle_signals, transport_factory: see docs/api.md ("MCPHost(config=None, **options)").
    """

    def __init__(
        self,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        roots: Iterable[str | os.PathLike[str] | Root] | None = None,
        validate_arguments: bool = True,
        request_timeout: float = 60.0,
        shutdown_timeout: float = 10.0,
        max_message_size: int = DEFAULT_MAX_SIZE,
        max_pages: int = 1000,
        environ: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        inputs: Mapping[str, str] | Callable[[Any], Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handle_signals: bool = True,
        validate_output: str = "error",
        validate_messages: str = "lenient",
        servers: Iterable[str] | None = None,
        transport_factory: Callable[[Any], Transport] | None = None,
        bounds: Bounds | None = None,
        unavailable_after_timeouts: int = 1,
        require_all: bool | None = None,
        watch: bool = False,
        retry: RetryPolicy | None = None,
        log_level: str | int | None = None,
        trace_bodies: bool = False,
        permissions: Permissions | None = None,
    ) -> None:
        self._config_source = config
        self._log_level = observe.check_level(log_level)
        self._require_all = require_all
        self._watch = watch
        self._watcher: Watcher | None = None
        self._reload_lock = asyncio.Lock()
        self._only = None if servers is None else tuple(servers)
        self.validate_messages = validate_messages
        self.request_timeout = request_timeout
        self.shutdown_timeout = shutdown_timeout
        self.max_message_size = max_message_size
        self.max_pages = max_pages
        self._environ = dict(os.environ if environ is None else environ)
        self._inputs = inputs
        self._client_info = dict(client_info or {"name": "mcphost", "version": __version__})
        self._servers: dict[str, ServerHandle] = {}
        self._call_hooks: list[observe.CallHook] = []
        self._handlers = Handlers(roots)
        self._progress_handlers = self._handlers.progress  # the same list, one lookup less
        self._validation = Validation(arguments=validate_arguments, output=validate_output)
        self._router = Router(self._servers)
        self._tool_routes = self._router.routes
        self._router.set_permissions(permissions)
        self._router.resolve = self._resolve_alias
        if bounds is None:
            bounds = Bounds(max_pages=max_pages)
        self.bounds = bounds
        self._registry = Registry(bounds=bounds, on_listed=self._on_listed)
        self._supervisor = Supervisor(
            self._servers, handlers=self._handlers, registry=self._registry, transport_factory=transport_factory,
            environ=self._environ, max_message_size=max_message_size, inherit_env=inherit_env,
            unavailable_after_timeouts=unavailable_after_timeouts, client_info=self._client_info,
            validate_messages=validate_messages, handle_signals=handle_signals, retry=retry,
        )
        self._supervisor.shutdown = self.shutdown
        self._supervisor.trace_bodies = trace_bodies
        self._state = "new"
        self.config: Any = None

    @property
    def permissions(self) -> Permissions | None:
        """The application's permissions (``mcphost.host.permissions``); settable."""
        return self._router.permissions

    @permissions.setter
    def permissions(self, value: Permissions | None) -> None:
        self._router.set_permissions(value)

    @property
    def validate_arguments(self) -> bool:
        return self._validation.arguments

    @validate_arguments.setter
    def validate_arguments(self, value: bool) -> None:
        self._validation.arguments = value

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> MCPHost:
        await self.initialize()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    async def initialize(
        self, config: str | os.PathLike[str] | Mapping[str, Any] | None = None, *, require_all: bool | None = None
    ) -> dict[str, dict[str, Any]]:
        """Load the configuration and start every enabled server.

        Servers start in parallel, in dependency layers, each within its ``timeout``. By
        default it is all-or-nothing: if any fails, every server already started is shut
        down and the error names every server that failed and why. With
        ``require_all=False`` (here or in the constructor) the servers that can start do,
        and the failed ones are listed with their error in ``get_tools()``.

        Returns:
            ``{name: {"ok": bool, "state", "error"}}`` per server started or tried.

        Raises:
            ConfigurationError: the configuration is invalid.
            ServerStartupError: one or more servers failed to start (with ``require_all``).
            UsageError: the host was initialized before.
        """
        if self._state != "new":
            raise UsageError(f"initialize() called on a host that is {self._state}")
        self._state = "starting"
        source = config if config is not None else self._config_source
        try:
            loaded = await load_config(
                "mcp.json" if source is None else source, environ=self._environ, inputs=self._inputs,
                only=self._only,
            )
            self.config = select(loaded, self._only)
            observe.apply_settings(self._supervisor, self.config, self._log_level)
            self._supervisor.redactor.add_config(loaded)
            self._supervisor.redactor.install()
            for name, cfg in self.config.servers.items():
                if name in self._supervisor.local:
                    raise ConfigurationError(f"server {name!r} of the configuration has the name of registered tools")
                self._servers[name] = self._new_handle(cfg)
            strict = fail_fast(self.config, require_all, self._require_all)
            local = [name for name in self._supervisor.local if name in self._servers]
            results = await self._supervisor.start_all([*self.config.start_order(), local], strict)
        except BaseException:
            await self.shutdown()
            raise
        self._state = "ready"
        if self._watch and isinstance(source, (str, os.PathLike)):
            self._watcher = Watcher(os.fspath(source), self.reload)
            self._watcher.start()
        return results

    def _new_handle(self, cfg: Any) -> ServerHandle:
        return ServerHandle(cfg, request_timeout=self.request_timeout, shutdown_timeout=self.shutdown_timeout,
                            call_hooks=self._call_hooks)

    async def reload(self) -> dict[str, Any]:
        """Load the configuration again and apply what changed: added servers start,
        removed ones stop, changed ones (and their dependents) restart, ones whose only
        changes are settings (priority, domains, cacheTtl, logLevel, capabilities, retry,
        restart) are updated in place, the others are not touched. An invalid file changes
        nothing: its error is raised (and emitted as a ``config_reload_failed`` event).
        Reloads never interleave.

        Returns:
            ``{"added", "removed", "changed", "updated", "unchanged": [names],
            "failed": {name: error}}``.
        """
        self._require_running("reload")
        async with self._reload_lock:
            source = self._config_source if self._config_source is not None else "mcp.json"
            try:
                loaded = await load_config(source, environ=self._environ, inputs=self._inputs, only=self._only)
                new = select(loaded, self._only)
            except MCPHostError as exc:
                logger.error("configuration not reloaded: %s", exc, extra={"event": "config_reload_failed"})
                self._handlers.emit({"type": "config_reload_failed", "server": None, "data": str(exc)})
                raise
            self._supervisor.redactor.add_config(new)
            observe.apply_settings(self._supervisor, new, self._log_level)
            summary = await apply(self._supervisor, self._servers, self.config, new, self._new_handle)
            self.config = new
            logger.info("configuration reloaded: %s", summary, extra={"event": "config_reloaded"})
            self._handlers.emit({"type": "config_reloaded", "server": None, "data": summary})
            return summary

    async def shutdown(self) -> None:
        """Stop every server, in parallel; idempotent and safe to call from any task."""
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            await watcher.stop()
        if self._state != "stopped":
            self._state = "stopping"
        await self._supervisor.shutdown_once()
        observe.restore_levels(self._supervisor)
        self._state = "stopped"

    close = shutdown  # the orchestrator specification's name for it
    add_server, remove_server = adding, removing  # at run time: mcphost.host.reload, docs/api.md

    async def start_server(self, name: str) -> None:
        """Start a stopped, failed, unavailable or disabled server (a new process and session);
        raises as :meth:`initialize` does for one server (``RoutingError``: no such server)."""
        self._require_running("start_server")
        handle = self._router.handle(name)
        if name in getattr(self.config, "left_out", ()):
            # Left out by servers=: read (expanded, validated) now that it is wanted.
            source = self._config_source if self._config_source is not None else "mcp.json"
            loaded = await load_config(source, environ=self._environ, inputs=self._inputs, only=(name,))
            self._supervisor.redactor.add_config(loaded)
            handle = self._servers[name] = self._new_handle(loaded.servers[name])
        self._require_dependencies(handle)
        await self._supervisor.start(handle)

    def _require_dependencies(self, handle: ServerHandle) -> None:
        """A server starts only when what it depends on is ready (FR10)."""
        blocked = [d for d in handle.config.dependencies
                   if (h := self._servers.get(d)) is None or h.state is not ServerState.READY]
        if blocked:
            raise ServerStartupError(f"not started: it depends on {', '.join(blocked)}, which is not ready",
                                     server=handle.name)

    async def stop_server(self, name: str) -> None:
        """Stop one server; its tools, prompts and resources leave :meth:`get_tools` at once."""
        self._require_running("stop_server")
        await self._supervisor.stop(self._router.handle(name))

    async def restart_server(self, name: str) -> None:
        """Stop then start one server: a new process and session; its tools come back."""
        self._require_running("restart_server")
        handle = self._router.handle(name)
        self._require_dependencies(handle)
        await self._supervisor.restart(handle)
        # What depends on it was using the old process: restarted after it, in start order.
        for dependent in dependents_of(self.config, name):
            if (other := self._servers.get(dependent)) is not None and other.state is ServerState.READY:
                await self._supervisor.restart(other)

    async def register_tools(self, server: str, tools: Sequence[Mapping[str, Any]], handler: ToolHandler) -> None:
        """Serve the application's own ``tools`` (MCP tool objects) as server ``server``:
        ``handler(name, arguments)`` runs each call (docs/api.md). They are listed,
        validated, routed, permitted and timed like any server's; the server starts now (or
        with the others, before ``initialize()``)."""
        if not isinstance(server, str) or not re.match(SERVER_NAME_PATTERN, server) or server in self._servers:
            raise UsageError(f"register_tools(): {server!r} is not a free server name ({SERVER_NAME_PATTERN})")
        if not callable(handler):
            raise UsageError("register_tools(): handler must be callable as handler(name, arguments)")
        self._supervisor.local[server] = LocalServer(server, check_tools(tools), handler)
        handle = self._servers[server] = self._new_handle(ServerConfig(name=server, type="local"))
        if self._state == "ready":
            await self._supervisor.start(handle)

    def kill(self) -> list[str]:
        """SIGKILL every running server's process group now, without the shutdown ladder
        (a second Ctrl-C); returns the servers killed. ``shutdown()`` still finishes."""
        return self._supervisor.kill_now()

    def _require_running(self, what: str) -> None:
        if self._state != "ready":
            raise UsageError(f"{what}() needs a running host (this one is {self._state})")

    # -- queries --------------------------------------------------------------------------

    @property
    def servers(self) -> Mapping[str, ServerHandle]:
        return self._servers

    def get_tools(self, server: str | None = None, *, include_unavailable: bool = False) -> dict[str, ServerInfo]:
        """Every configured server (or only ``server``) with its state, its error and what
        it offers; a server that is not ready offers nothing, unless ``include_unavailable``
        (its last lists, for diagnostics)."""
        handles = [self._router.handle(server)] if server is not None else self._servers.values()
        return {h.name: cast(ServerInfo, h.info(include_unavailable, self._router.visible_tools)) for h in handles}

    def get_metrics(self) -> dict[str, Any]:
        """Per-server state, counters and per-tool latency statistics."""
        return {name: h.metrics_snapshot() for name, h in self._servers.items()}

    # -- calls ----------------------------------------------------------------------------

    @overload
    async def call_tool(
        self, name: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None,
        progress: Callable[[JSONObject], Any] | None = None, reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None, meta: Mapping[str, Any] | None = None, task: Literal[False] = False,
    ) -> CallToolResult: ...

    @overload
    async def call_tool(
        self, name: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None,
        progress: Callable[[JSONObject], Any] | None = None, reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None, meta: Mapping[str, Any] | None = None,
        task: Literal[True] | Mapping[str, Any],
    ) -> TaskHandle: ...

    async def call_tool(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[JSONObject], Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
        task: bool | Mapping[str, Any] = False,
    ) -> Any:
        """Call ``server.tool`` with ``params`` and return its ``CallToolResult``.

        A tool that fails inside returns ``isError: true``: that is a result, not an error.
        With ``task=True`` (or ``{"ttl": ms}``) the call creates a server task (protocol
        2025-11-25) and a :class:`~mcphost.client.tasks.TaskHandle` is returned at once;
        ``await`` it for the result. A tool whose ``execution.taskSupport`` is
        ``"required"`` runs as a task either way; without ``task=`` the task is followed
        to its end and its result returned, so a caller always gets a ``CallToolResult``.

        Raises:
            RoutingError: unknown server or tool (the message lists what exists).
            PermissionDeniedError: the tool is denied by the server's ``tools`` filter.
            ValidationError: the arguments do not match the tool's ``inputSchema``.
            UsageError: the arguments cannot be sent as JSON; the host is not running.
            ServerError, TimeoutError, ServerUnavailableError, ProtocolError.
        """
        route = self._tool_routes.get(name)
        if route is None or route.generation != route.handle.route_generation:
            if self._state in ("new", "starting"):
                raise UsageError(f"call_tool({name!r}) before initialize() finished")
            route = self._router.tool(name)  # raises if the server is not ready, saying why
        handle = route.handle
        arguments = params if type(params) is dict else _as_arguments(name, params)
        if self._validation.arguments:
            valid = route.valid
            if valid is None:
                validator = await self._validation.input_validator_async(handle, route.tool)
                valid = route.valid = False if validator is False else validator.is_valid
            if valid is not False and not valid(arguments):
                self._validation.check_arguments(handle, route.tool, arguments)
        request: dict[str, Any] = {"name": route.name, "arguments": arguments}
        if progress is None and self._progress_handlers:
            progress = _ignore  # the application's on_progress handlers still hear it
        # The commonest call (a name, arguments, perhaps progress) takes the peer's fused path.
        fast = timeout is None and route.plain and not (meta or task or max_timeout or reset_timeout_on_progress)
        if not fast:
            if meta:
                request["_meta"] = dict(meta)
            if task or not route.plain:  # else: nothing about tasks to decide
                if task and route.task_support == "forbidden":
                    # Spec 2025-11-25: a client MUST NOT task-augment a call the tool forbids.
                    raise UsageError(
                        f"tool {route.name!r} does not support tasks (taskSupport is 'forbidden')",
                        server=handle.name,
                    )
                if task or route.task_support == "required":
                    tracked = await requests.call_as_task(self._handlers, handle, route.session, request, task,
                                                          timeout)
                    return tracked if task else await tracked
        started = _clock()
        try:
            if fast:
                call = route.start_plain(request, progress)
            else:
                call = route.start(request, timeout, progress, reset_timeout_on_progress, max_timeout, True)
            # Sent: not kept alive while waiting. Fewer live objects per call in flight
            # means fewer garbage-collector passes under load.
            del request
            peer = route.peer
            try:
                if peer.needs_drain:
                    await peer.drain()
                result = await call.future
            except asyncio.CancelledError:
                peer.abandon(call)
                raise
        except MCPHostError as exc:
            self._supervisor.redactor.error(exc)  # no secret, no absolute path (TR10.3)
            observe.failed(handle, "tools/call", route.name, _clock() - started, exc)
            if not route.retry_safe:
                raise  # it may have acted already: never sent twice (see mcphost.policy)
            # (No closure here: its cells would be made on every call, the fast path included.)
            return await recovery.retry_call(self._supervisor, self.call_tool, exc, route.name, name, params,
                                             timeout, progress, reset_timeout_on_progress, max_timeout, meta)
        elapsed = _clock() - started
        if type(result) is not dict or type(result.get("content", _EMPTY)) is not list:
            bad = ProtocolError(f"tools/call {route.name!r} returned a malformed result (expected an object "
                                "with a 'content' array)", server=handle.name)
            observe.failed(handle, "tools/call", route.name, elapsed, bad, call.rid)
            raise bad
        is_error = result.get("isError") is True
        route.record(elapsed)  # the tool's latency histogram, bound once per route
        if is_error:
            route.stats.is_errors += 1
        if handle.call_hooks or _debug(10):  # an on_call hook or DEBUG request logs want a record
            observe.completed(handle, "tools/call", route.name, elapsed, is_error, call.rid)
        if not route.plain and route.has_output and not is_error and self._validation.output != "off":
            await self._validation.check_output_async(handle, route.tool, result)
        return result  # a CallToolResult, as checked above

    def _on_listed(self, handle: ServerHandle, kinds: tuple[str, ...]) -> None:
        self._handlers.emit({"type": "capabilities_changed", "server": handle.name, "data": list(kinds)})
