"""``MCPHost``: many servers from one configuration, one API.

Layer 4. The facade holds the public API and named collaborators, and delegates to them;
none of them reads another's private state, and the facade mixes nothing in. Where each
public method lives:

- ``initialize``, ``reload``, ``shutdown``/``close``, ``start_server``, ``stop_server``,
  ``restart_server``, ``register_tools``: :attr:`MCPHost.lifecycle`
  (:class:`~mcphost.host.lifecycle.HostLifecycle`: the host's state and its commands), which
  drives :attr:`MCPHost.supervisor` (:class:`~mcphost.host.supervisor.Supervisor`: each
  server's lifecycle) and reads configuration through :mod:`~mcphost.host.configload`;
- ``get_tools``: the servers' handles and :attr:`MCPHost.router`
  (:class:`~mcphost.host.router.Router`: names, URIs, permissions); discovery is
  :attr:`MCPHost.registry` (:class:`~mcphost.host.registry.Registry`);
- ``call_tool``: written out here, the hot path: the router's cached route, the
  :attr:`MCPHost.validation` of arguments (:class:`~mcphost.host.validation.Validation`),
  the server's :class:`~mcphost.client.session.ClientSession` (the one request path), the
  metrics;
- ``get_prompt``, ``get_resource``, ``complete``, ``list_tasks``, ``set_roots``,
  ``set_log_level``, ``subscribe_resource``, ``unsubscribe_resource``, ``servers_for``,
  ``gather_resources``, the skills: :attr:`MCPHost.queries` (:class:`~mcphost.host.queries.Queries`);
- ``register_callback`` and the ``on_*`` handlers: :attr:`MCPHost.callbacks`
  (:class:`~mcphost.host.handlers.Callbacks`), over :attr:`MCPHost.handlers`;
- ``get_metrics``, ``metrics_text``, ``on_call``: :attr:`MCPHost.observability`
  (:class:`~mcphost.host.observe.Observability`);
- ``tools_for``, ``dispatch``, ``search_tools``, ``resolve_tool_name``:
  :attr:`MCPHost.models` (:class:`~mcphost.host.tools_api.ModelAPI`, built on first use by ``host.lazy``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, overload

from ..auth.store import MemoryTokenStore, TokenStore
from ..bounds import Bounds
from ..client.tasks import TaskHandle
from ..config.model import ServerConfig
from ..errors import MCPHostError, ProtocolError, UsageError
from ..metrics.histogram import PENDING
from ..policy import RetryPolicy
from ..protocol.lifecycle import HostState
from ..rpc.calls import CallOptions
from ..transports.base import AuthHooks, Transport
from ..types import (
    CallToolResult,
    Embedder,
    GatheredResources,
    GetPromptResult,
    HostEvent,
    JSONObject,
    ReadResourceResult,
    Root,
    ServerInfo,
)
from ..version import __version__
from ..wire.framing import DEFAULT_MAX_SIZE
from . import observe, recovery, requests
from .handle import ServerHandle
from .handlers import Callbacks, Handlers
from .lazy import LazyModelAPI
from .lifecycle import HostLifecycle
from .local import LocalServer, ToolHandler
from .observe import CallHook, Observability
from .options import check_options
from .permissions import Permissions
from .queries import Queries
from .readcache import ReadCache
from .registry import Registry
from .router import Router
from .secrets import Redactor
from .supervisor import Supervisor
from .validation import Validation

__all__ = ["MCPHost"]

logger = logging.getLogger("mcphost.host")

_EMPTY: Final[list[Any]] = []
#: The clock of per-tool latency metrics (bound once: call_tool reads it twice per call).
#: An integer clock (nanoseconds): the latency histogram buckets integers, with no float math.
_clock: Final = time.perf_counter_ns
#: Whether DEBUG request records may be wanted, without a call: the request log's own cache
#: of ``isEnabledFor`` answers (emptied by ``logging`` whenever a level changes). Not known
#: yet counts as yes: ``observe.completed`` asks the logger itself (and so fills the cache).
_debug_maybe: Final[Callable[[int, bool], bool]] = vars(observe.requests_log)["_cache"].get
_NOT_YET: Final = frozenset({HostState.NEW, HostState.STARTING})

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | None


def _ignore(_params: JSONObject) -> None:
    return None


def _as_arguments(name: str, params: Any, what: str = "arguments") -> dict[str, Any]:
    if isinstance(params, Mapping):
        return dict(params)
    if params is None:
        return {}
    raise observe.refused(UsageError(f"{what} of {name!r} must be a mapping, not {type(params).__name__}"),
                          "tools/call")


class MCPHost:
    """A host for many MCP servers (every option is described in docs/api.md).

    Args:
        config: path of an ``mcp.json``, or a dict of its content (or give it to
            :meth:`initialize`).
        roots, validate_arguments, validate_output, validate_messages, request_timeout,
        shutdown_timeout, unavailable_after_timeouts, max_message_size, max_pages, bounds,
        environ, inherit_env, inputs, client_info, servers, require_all, watch, retry, log_level, trace_bodies,
        permissions, tool_search, handle_signals, transport_factory, keepalive, on_authorize, token_store:
            see docs/api.md ("MCPHost(config=None, **options)").
    """

    def __init__(
        self,
        config: ConfigSource = None,
        *,
        roots: Iterable[str | os.PathLike[str] | Root] | None = None,
        validate_arguments: bool = True,
        request_timeout: float | None = 60.0,
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
        tool_search: Embedder | None = None,
        keepalive: float = 0.0,
        on_authorize: Callable[[str], Awaitable[str]] | None = None,
        token_store: TokenStore | None = None,
    ) -> None:
        check_options(locals())  # every bad option is a UsageError, here rather than later
        self.validate_messages = validate_messages
        # None: no timeout (the deadlines' "0 or inf").
        self.request_timeout = 0.0 if request_timeout is None else request_timeout
        self.shutdown_timeout = shutdown_timeout
        self.max_message_size = max_message_size
        self._environ = dict(os.environ if environ is None else environ)
        self._servers: dict[str, ServerHandle] = {}
        self._call_hooks: list[CallHook] = []
        if bounds is None:
            bounds = Bounds(max_pages=max_pages)
        #: The limits on what servers send (``mcphost.Bounds``).
        self.bounds = bounds
        #: What the application registered (handlers, events) and the capabilities it declares.
        self.handlers = Handlers(roots)
        self._progress_handlers = self.handlers.progress  # the same list, one lookup less
        #: Input and output schema checks of tools.
        self.validation = Validation(arguments=validate_arguments, output=validate_output)
        #: Names, URIs, aliases and permissions: which server a request goes to.
        self.router = Router(self._servers)
        self._tool_routes = self.router.routes
        self.router.set_permissions(permissions)
        #: Discovery: the lists of each server, paged, bounded, refreshed on list_changed.
        self.registry = Registry(bounds=bounds, on_listed=self._on_listed)
        #: Secrets and paths out of what is said (filled when the configuration is loaded).
        self.redactor = Redactor()
        self.redactor.home = self._environ.get("HOME") or os.path.expanduser("~")
        #: The cache of reads and prompts (its settings come with the configuration).
        self.reads = ReadCache()
        local: dict[str, LocalServer] = {}  # the application's own tools, by server name
        #: Each server's lifecycle: start with retries, stop, restart, health.
        self.supervisor = Supervisor(
            self._servers, handlers=self.handlers, registry=self.registry, transport_factory=transport_factory,
            environ=self._environ, max_message_size=max_message_size, inherit_env=inherit_env,
            max_message_tokens=bounds.max_message_tokens, unavailable_after_timeouts=unavailable_after_timeouts,
            client_info=dict(client_info or {"name": "mcphost", "version": __version__}),
            validate_messages=validate_messages, handle_signals=handle_signals, retry=retry,
            redactor=self.redactor, reads=self.reads, local=local, trace_bodies=trace_bodies, keepalive=keepalive,
            # One store for the host's life: a restarted server finds its login.
            auth=AuthHooks(on_authorize, MemoryTokenStore() if token_store is None else token_store, self.redactor.add),
        )
        #: The host's own state and the commands that change it.
        self.lifecycle = HostLifecycle(
            self._servers, supervisor=self.supervisor, router=self.router, handlers=self.handlers,
            source=config, environ=self._environ, inputs=inputs, only=None if servers is None else tuple(servers),
            new_handle=self._new_handle, log_level=observe.check_level(log_level), require_all=require_all,
            watch=watch, redactor=self.redactor, reads=self.reads, local=local,
        )
        self.supervisor.shutdown = self.shutdown
        #: Prompts, resources, completion, tasks, roots, log levels, subscriptions.
        self.queries = Queries(self._servers, router=self.router, supervisor=self.supervisor,
                               handlers=self.handlers, lifecycle=self.lifecycle, bounds=bounds, reads=self.reads)
        #: Where the application registers its handlers.
        self.callbacks = Callbacks(self.handlers, self._servers, self.lifecycle)
        #: Metrics and call hooks.
        self.observability = Observability(self._servers, self._call_hooks)
        #: The model-API shapes: tools_for, dispatch, search (built on first use).
        self.models = LazyModelAPI(self._servers, self.router, self.queries.get_tools, self.call_tool, tool_search)
        self.router.resolve = self.models.resolve_alias

    def _new_handle(self, cfg: Any) -> ServerHandle:
        return ServerHandle(cfg, request_timeout=self.request_timeout, shutdown_timeout=self.shutdown_timeout,
                            call_hooks=self._call_hooks)

    @property
    def state(self) -> HostState:
        """The host's state: ``new``, ``starting``, ``ready``, ``stopping``, ``stopped``."""
        return self.lifecycle.state

    @property
    def config(self) -> Any:
        """The configuration in force (a ``HostConfig``), once :meth:`initialize` read it."""
        return self.lifecycle.config

    @property
    def permissions(self) -> Permissions | None:
        """The application's permissions (``mcphost.host.permissions``); settable."""
        return self.router.permissions

    @permissions.setter
    def permissions(self, value: Permissions | None) -> None:
        self.router.set_permissions(value)

    @property
    def validate_arguments(self) -> bool:
        """Arguments are checked against each tool's ``inputSchema`` before sending; settable."""
        return self.validation.arguments

    @validate_arguments.setter
    def validate_arguments(self, value: bool) -> None:
        self.validation.arguments = value

    # -- lifecycle: HostLifecycle -----------------------------------------------------------

    async def __aenter__(self) -> MCPHost:
        await self.initialize()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    async def initialize(self, config: ConfigSource = None, *, require_all: bool | None = None) -> dict[str, dict[str, Any]]:
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
        return await self.lifecycle.initialize(config, require_all)

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
        return await self.lifecycle.reload()

    async def shutdown(self) -> None:
        """Stop every server, in parallel; idempotent and safe to call from any task."""
        await self.lifecycle.shutdown()

    async def close(self) -> None:
        """:meth:`shutdown`, by the orchestrator specification's name for it."""
        await self.lifecycle.shutdown()

    async def add_server(self, name: str, entry: Mapping[str, Any] | ServerConfig, *, start: bool = True) -> None:
        """Add server ``name`` (an ``mcp.json`` entry or a ``ServerConfig``) to the running host
        (:meth:`HostLifecycle.add_server <mcphost.host.lifecycle.HostLifecycle.add_server>`)."""
        await self.lifecycle.add_server(name, entry, start=start)

    async def remove_server(self, name: str) -> None:
        """Stop server ``name`` and forget it (:meth:`HostLifecycle.remove_server <mcphost.host.lifecycle.HostLifecycle.remove_server>`)."""
        await self.lifecycle.remove_server(name)

    async def start_server(self, name: str) -> None:
        """Start a stopped, failed, unavailable or disabled server (a new process and session);
        raises as :meth:`initialize` does for one server (``RoutingError``: no such server)."""
        await self.lifecycle.start_server(name)

    async def stop_server(self, name: str) -> None:
        """Stop one server; its tools, prompts and resources leave :meth:`get_tools` at once."""
        await self.lifecycle.stop_server(name)

    async def restart_server(self, name: str) -> None:
        """Stop then start one server: a new process and session; its tools come back."""
        await self.lifecycle.restart_server(name)

    async def register_tools(self, server: str, tools: Sequence[Mapping[str, Any]], handler: ToolHandler) -> None:
        """Serve the application's own ``tools`` (MCP tool objects) as server ``server``:
        ``handler(name, arguments)`` runs each call (docs/api.md). They are listed,
        validated, routed, permitted and timed like any server's; the server starts now (or
        with the others, before ``initialize()``)."""
        await self.lifecycle.register_tools(server, tools, handler)

    def kill(self) -> list[str]:
        """Kill every running server's process tree now, without the shutdown ladder (a
        second Ctrl-C); returns the servers killed. ``shutdown()`` still finishes."""
        return self.supervisor.kill_now()

    # -- what the servers offer ---------------------------------------------------------------

    @property
    def servers(self) -> Mapping[str, ServerHandle]:
        """Each configured server's handle, by name."""
        return self._servers

    def get_tools(self, server: str | None = None, *, include_unavailable: bool = False) -> dict[str, ServerInfo]:
        """Every configured server (or only ``server``) with its state, its error and what
        it offers; a server that is not ready offers nothing, unless ``include_unavailable``
        (its last lists, for diagnostics)."""
        return self.queries.get_tools(server, include_unavailable=include_unavailable)

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
        With ``task=True`` (or ``{"ttl": ms}``) the call creates a server task (2025-11-25,
        or 2026-07-28's extension) and a :class:`~mcphost.client.tasks.TaskHandle` is returned
        at once; ``await`` it for the result. A tool whose ``execution.taskSupport`` is
        ``"required"`` runs as a task either way; without ``task=`` the task is followed
        to its end and its result returned, so a caller always gets a ``CallToolResult``.

        Raises:
            RoutingError: unknown server or tool (the message lists what exists).
            PermissionDeniedError: the tool is denied by the server's ``tools`` filter.
            ValidationError: the arguments do not match the tool's ``inputSchema``.
            UsageError: the arguments cannot be sent as JSON; the host is not running.
            ServerError, TimeoutError, ServerUnavailableError, ProtocolError.
        """
        route = self._tool_routes.get(name) if type(name) is str else None  # else: the router says why
        if route is None or route.generation != route.handle.route_generation:
            if self.lifecycle.state in _NOT_YET:
                raise observe.refused(UsageError(f"call_tool({name!r}) before initialize() finished"), "tools/call")
            route = self.router.tool(name)  # raises if the server is not ready, saying why
        handle = route.handle
        arguments = params if type(params) is dict else _as_arguments(name, params)
        if self.validation.arguments:
            valid = route.valid
            if valid is None:
                validator = await self.validation.input_validator_async(handle, route.tool)
                valid = route.valid = False if validator is False else validator.is_valid
            if valid is not False and not valid(arguments):
                self.validation.check_arguments(handle, route.tool, arguments)
        request: dict[str, Any] = {"name": route.name, "arguments": arguments}
        if progress is None and self._progress_handlers:
            progress = _ignore  # the application's on_progress handlers still hear it
        options = None
        if timeout is not None or meta or task or max_timeout or reset_timeout_on_progress or not route.plain:
            if meta:
                request["_meta"] = _as_arguments(name, meta, "meta")
            if task and route.task_support == "forbidden":
                # Spec 2025-11-25: a client MUST NOT task-augment a call the tool forbids.
                raise observe.refused(UsageError(
                    f"tool {route.name!r} does not support tasks (taskSupport is 'forbidden')", server=handle.name
                ), "tools/call")
            # (A 2026-07-28 server makes tasks itself, and its session follows them.)
            if task or (route.task_support == "required" and route.session.era == "legacy"):
                tracked = await requests.call_as_task(self.handlers, handle, route.session, request, task, timeout)
                return tracked if task else await tracked
            options = CallOptions.of(timeout, reset_timeout_on_progress, max_timeout)
        session = route.session
        started = _clock()
        try:
            call = session.start("tools/call", request, progress, options, True)
            del request  # sent: not kept alive while waiting (fewer live objects, fewer GC passes)
            result = await session.wait(call)  # (its future itself, mostly: no coroutine per call)
        except MCPHostError as exc:
            self.redactor.error(exc)  # no secret, no absolute path (TR10.3)
            observe.failed(handle, "tools/call", route.name, (_clock() - started) / 1e9, exc)
            if not route.retry_safe:
                raise  # it may have acted already: never sent twice (see mcphost.policy)
            # (No closure here: its cells would be made on every call, the fast path included.)
            return await recovery.retry_call(self.supervisor, self.call_tool, exc, route.name, name, params,
                                             timeout, progress, reset_timeout_on_progress, max_timeout, meta)
        except BaseException:  # cancelled while waiting (or worse): the call is given up
            session.abandon(call)
            raise
        elapsed = _clock() - started
        if type(result) is not dict or type(result.get("content", _EMPTY)) is not list:
            bad = ProtocolError(f"tools/call {route.name!r} returned a malformed result (expected an object "
                                "with a 'content' array)", server=handle.name)
            observe.failed(handle, "tools/call", route.name, elapsed / 1e9, bad, call.rid)
            raise bad
        is_error = result.get("isError") is True
        pending = route.pending  # the tool's latency histogram, nanoseconds: an append, no call
        pending.append(elapsed)
        if len(pending) >= PENDING:
            route.histogram.fold()
        if is_error:
            route.stats.is_errors += 1
        if handle.call_hooks or _debug_maybe(10, True):  # an on_call hook or DEBUG request logs want a record
            observe.completed(handle, "tools/call", route.name, elapsed / 1e9, is_error, call.rid)
        if (not route.plain and route.has_output and not is_error and self.validation.output != "off"
                and not self.validation.output_ok(handle, route.tool, result)):
            await self.validation.check_output_async(handle, route.tool, result)
        return result  # a CallToolResult, as checked above

    def _on_listed(self, handle: ServerHandle, kinds: tuple[str, ...]) -> None:
        self.handlers.emit({"type": "capabilities_changed", "server": handle.name, "data": list(kinds)})

    # -- prompts, resources and the rest: Queries ---------------------------------------------

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                         timeout: float | None = None, cache: bool = True, allow_stale: bool = False, scope: str | None = None) -> GetPromptResult:
        """``server.prompt`` rendered with ``arguments`` (:meth:`Queries.get_prompt <mcphost.host.queries.Queries.get_prompt>`)."""
        return await self.queries.get_prompt(name, arguments, timeout=timeout, cache=cache, allow_stale=allow_stale, scope=scope)

    async def get_resource(self, uri: str, *, server: str | None = None, timeout: float | None = None,
                           cache: bool = True, allow_stale: bool = False, scope: str | None = None) -> ReadResourceResult:
        """The resource at ``uri``, routed by URI (:meth:`Queries.get_resource <mcphost.host.queries.Queries.get_resource>`)."""
        return await self.queries.get_resource(uri, server=server, timeout=timeout, cache=cache,
                                               allow_stale=allow_stale, scope=scope)

    def route_resource(self, uri: str, server: str | None = None) -> ServerHandle:
        """The server ``uri`` is routed to (``RoutingError``: none, or several)."""
        return self.queries.route_resource(uri, server)

    async def complete(self, ref: Mapping[str, Any], argument: Mapping[str, Any],
                       context: Mapping[str, Any] | None = None, *, server: str | None = None,
                       timeout: float | None = None) -> JSONObject:
        """``completion/complete`` (:meth:`Queries.complete <mcphost.host.queries.Queries.complete>`)."""
        return await self.queries.complete(ref, argument, context, server=server, timeout=timeout)

    async def list_tasks(self, server: str) -> list[JSONObject]:
        """``tasks/list`` of one server (all pages)."""
        return await self.queries.list_tasks(server)

    async def list_skills(self, server: str) -> list[JSONObject]:
        """``skills/list`` of ``server``; reads no skill file (:meth:`Skills.list <mcphost.host.skills.Skills.list>`)."""
        return await self.queries.skills.list(server)

    async def load_skill(self, uri: str, *, server: str) -> JSONObject:
        """A listed skill's ``SKILL.md``, verified (:meth:`Skills.load <mcphost.host.skills.Skills.load>`)."""
        return await self.queries.skills.load(uri, server)

    async def read_skill_file(self, skill: str, uri: str, *, server: str) -> str | bytes:
        """One file of a listed skill, verified (:meth:`Skills.read_file <mcphost.host.skills.Skills.read_file>`)."""
        return await self.queries.skills.read_file(skill, uri, server)

    async def set_roots(self, roots: Iterable[str | os.PathLike[str] | Root]) -> None:
        """Replace the roots and tell every server (:meth:`Queries.set_roots <mcphost.host.queries.Queries.set_roots>`)."""
        await self.queries.set_roots(roots)

    async def set_log_level(self, server: str | None, level: str) -> None:
        """Send ``logging/setLevel`` to ``server`` (or every server declaring ``logging``)."""
        await self.queries.set_log_level(server, level)

    async def subscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """``resources/subscribe``: updates then arrive as ``resource_updated`` events."""
        await self.queries.subscribe_resource(uri, server=server)

    async def unsubscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """``resources/unsubscribe``."""
        await self.queries.unsubscribe_resource(uri, server=server)

    async def list_resources(self, server: str | None = None) -> list[JSONObject]:
        """``resources/list`` asked now (:meth:`Queries.list_resources <mcphost.host.queries.Queries.list_resources>`)."""
        return await self.queries.list_resources(server)

    def servers_with(self, capability: str, *, ready: bool = True) -> list[str]:
        """The servers that have ``capability``, by priority (:meth:`Queries.servers_with <mcphost.host.queries.Queries.servers_with>`)."""
        return self.queries.servers_with(capability, ready=ready)

    def servers_for(self, domain: str) -> list[str]:
        """The servers whose ``domains`` include ``domain``, by priority (lower first)."""
        return self.queries.servers_for(domain)

    async def gather_resources(self, servers: Iterable[str] | None = None,
                               uri_filter: Callable[[str], bool] | str | None = None, fail_fast: bool | None = None, *,
                               concurrency: int = 8, timeout: float | None = None) -> GatheredResources:
        """Every listed resource of ``servers`` (:meth:`Queries.gather_resources <mcphost.host.queries.Queries.gather_resources>`)."""
        return await self.queries.gather_resources(servers, uri_filter, fail_fast, concurrency=concurrency,
                                                   timeout=timeout)

    # -- the application's handlers: Callbacks ------------------------------------------------

    def register_callback(self, cb: Callable[[str, str, JSONObject], Any], *,
                          capabilities: Mapping[str, Any] | None = None, sampling: bool = True) -> None:
        """Receive every server request the host does not answer itself (:meth:`Callbacks.register_callback <mcphost.host.handlers.Callbacks.register_callback>`)."""
        self.callbacks.register_callback(cb, capabilities=capabilities, sampling=sampling)

    def on_sampling(self, handler: Callable[..., Any], *, tools: bool = False, with_key: bool = False, concurrency: int | None = None) -> None:
        """Serve ``sampling/createMessage`` (:meth:`Callbacks.on_sampling <mcphost.host.handlers.Callbacks.on_sampling>`)."""
        self.callbacks.on_sampling(handler, tools=tools, with_key=with_key, concurrency=concurrency)

    def on_elicitation(self, handler: Callable[..., Any], *, form: bool = True, url: bool = False,
                       with_key: bool = False, concurrency: int | None = None) -> None:
        """Serve ``elicitation/create`` (:meth:`Callbacks.on_elicitation <mcphost.host.handlers.Callbacks.on_elicitation>`)."""
        self.callbacks.on_elicitation(handler, form=form, url=url, with_key=with_key, concurrency=concurrency)

    def on_roots(self, handler: Callable[..., Any], *, with_key: bool = False, concurrency: int | None = None) -> None:
        """Answer ``roots/list`` per server (:meth:`Callbacks.on_roots <mcphost.host.handlers.Callbacks.on_roots>`)."""
        self.callbacks.on_roots(handler, with_key=with_key, concurrency=concurrency)

    def on_log(self, handler: Callable[[str, JSONObject], Any]) -> None:
        """Receive ``notifications/message`` params: ``handler(server, params)``."""
        self.callbacks.on_log(handler)

    def on_progress(self, handler: Callable[[str, JSONObject], Any]) -> None:
        """Receive every ``notifications/progress`` params: ``handler(server, params)``."""
        self.callbacks.on_progress(handler)

    def on_event(self, handler: Callable[[HostEvent], Any]) -> None:
        """Receive host events (:meth:`Callbacks.on_event <mcphost.host.handlers.Callbacks.on_event>` lists them)."""
        self.callbacks.on_event(handler)

    # -- metrics: Observability ----------------------------------------------------------------

    def get_metrics(self) -> dict[str, Any]:
        """Per-server state, counters and per-tool latency statistics."""
        return self.observability.get_metrics()

    def metrics_text(self) -> str:
        """Every server's metrics in the Prometheus text format (:meth:`Observability.metrics_text <mcphost.host.observe.Observability.metrics_text>`)."""
        return self.observability.metrics_text()

    def on_call(self, hook: CallHook) -> None:
        """Call ``hook(record)`` after every request the host sends (:meth:`Observability.on_call <mcphost.host.observe.Observability.on_call>`)."""
        self.observability.on_call(hook)

    # -- model APIs: ModelAPI -----------------------------------------------------------------

    def tools_for(self, provider: str = "openai", *, mode: str = "all", server: str | None = None) -> list[dict[str, Any]]:
        """The tools in ``provider``'s shape (:meth:`ModelAPI.tools_for <mcphost.host.tools_api.ModelAPI.tools_for>`)."""
        return self.models.tools_for(provider, mode=mode, server=server)

    def search_tools(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """The tools that best match ``query`` (:meth:`ModelAPI.search_tools <mcphost.host.tools_api.ModelAPI.search_tools>`)."""
        return self.models.search_tools(query, limit=limit)

    async def search_tools_async(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """:meth:`search_tools` with an async ``tool_search`` too (:meth:`ModelAPI.search_tools_async <mcphost.host.tools_api.ModelAPI.search_tools_async>`)."""
        return await self.models.search_tools_async(query, limit=limit)

    async def dispatch(self, tool_call: Mapping[str, Any], *, provider: str | None = None,
                       raise_errors: bool = False) -> dict[str, Any]:
        """Run a provider's tool call, return its tool-result message (:meth:`ModelAPI.dispatch <mcphost.host.tools_api.ModelAPI.dispatch>`)."""
        return await self.models.dispatch(tool_call, provider=provider, raise_errors=raise_errors)

    def resolve_tool_name(self, name: str) -> str:
        """The canonical ``server.tool`` of ``name`` (:meth:`ModelAPI.resolve_tool_name <mcphost.host.tools_api.ModelAPI.resolve_tool_name>`)."""
        return self.models.resolve_tool_name(name)
