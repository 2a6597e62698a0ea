"""The ``MCPHost`` facade: many servers from one configuration, one API.

Layer 4. The host composes everything below it: it loads the configuration, starts the
servers in dependency layers (each layer in parallel; all-or-nothing), routes
``server.tool`` names and resource URIs, answers what servers ask of the client, and shuts
everything down. Each server is a :class:`~mcphost.server.ServerHandle`; the host's own
tasks are only those the handles and connections own, so ``shutdown()`` can run from any
task and is idempotent.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import inspect
import logging
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, cast

from .client.served_tasks import TASK_METHODS
from .client.tasks import TaskHandle
from .connection import Connection
from .errors import (
    ConfigurationError,
    MCPHostError,
    PermissionDeniedError,
    ProtocolError,
    RoutingError,
    ServerStartupError,
    TimeoutError,
    ValidationError,
)
from .protocol import jsonrpc
from .protocol.jsonrpc import RpcError
from .protocol.legacy import Session, client_capabilities
from .protocol.uritemplate import compile_template
from .server import ServerHandle
from .types import (
    GetPromptResult,
    HostEvent,
    JSONObject,
    ReadResourceResult,
    Root,
    ServerInfo,
)
from .version import __version__
from .wire.framing import DEFAULT_MAX_SIZE

__all__ = ["MCPHost"]

logger = logging.getLogger("mcphost.host")

EventHandler = Callable[[HostEvent], Any]
_LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_live_hosts: weakref.WeakSet[MCPHost] = weakref.WeakSet()


_ROUTE_CACHE: Final = 4096
# Server requests the host can run as client-side tasks (2025-11-25).
_TASK_CAPABLE: Final = frozenset({"sampling/createMessage", "elicitation/create"})
_EMPTY: Final[list[Any]] = []
#: The clock of per-tool latency metrics (bound once: call_tool reads it twice per call).
_clock: Final = time.perf_counter


class _ToolRoute:
    """What ``call_tool`` needs of one tool, worked out once per tool list of its server."""

    __slots__ = ("connection", "generation", "handle", "has_output", "name", "plain", "stats",
                 "task_support", "tool", "validator")

    def __init__(
        self, handle: ServerHandle, connection: Connection, name: str, tool: dict[str, Any]
    ) -> None:
        self.handle = handle
        #: Valid while the handle's route generation is this one (same tools, same state,
        #: same connection).
        self.generation = handle.route_generation
        self.connection = connection
        self.name = name
        self.tool = tool
        self.validator: Any = None  # compiled on first use; False when there is none
        self.has_output = "outputSchema" in tool
        execution = tool.get("execution")
        self.task_support = execution.get("taskSupport") if isinstance(execution, dict) else None
        self.stats = handle.metrics.tool(name)
        #: Neither an outputSchema to check nor a task it must run as.
        self.plain = not self.has_output and self.task_support != "required"


class MCPHost:
    """A host for many MCP servers.

    Args:
        config: path of an ``mcp.json`` (or a dict of its content); may be given later to
            :meth:`initialize`.
        roots: roots offered to servers that ask (``roots/list``): ``file://`` URIs or paths.
        validate_arguments: check ``call_tool`` arguments against the tool's
            ``inputSchema`` before sending.
        request_timeout: default seconds per request (a server's ``requestTimeout`` and a
            call's ``timeout=`` override it).
        shutdown_timeout: seconds each server gets to exit before it is killed.
        max_message_size: largest message accepted from a server, in bytes.
        max_pages: cap on pages followed when listing.
        environ: the environment used for ``${VAR}`` expansion and inherited by servers
            (defaults to ``os.environ``).
        inputs: values for ``${input:id}``, or a callable ``(InputSpec) -> str`` (may be
            async) asked for each input the configuration uses.
        client_info: ``clientInfo`` sent in ``initialize``.
        handle_signals: on SIGTERM, shut every server down before the process exits.
        validate_output: what a ``structuredContent`` that does not match the tool's
            ``outputSchema`` does: ``"error"`` (raise ``ValidationError``), ``"warn"``
            (log once per tool and return the result) or ``"off"``.
        validate_messages: what the host does with a message from a server that does not
            match the MCP schema of the negotiated version (results of the host's
            requests, the server's requests and notifications): ``"strict"`` (a result
            raises ``ProtocolError`` naming the field; a request is refused with -32602; a
            notification is dropped), ``"lenient"`` (log a warning once per server,
            kind and method, and use the message if it is still usable) or ``"off"``.
            Unless it is off, the host also checks the answers of the application's
            handlers (sampling, elicitation) and sends an error instead of a malformed one.
        servers: start only these servers of the configuration (and the servers they
            depend on); the others are listed as disabled. An unknown name is a
            ``RoutingError`` raised by :meth:`initialize`.
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
        inputs: Mapping[str, str] | Callable[[Any], Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handle_signals: bool = True,
        validate_output: str = "error",
        validate_messages: str = "lenient",
        servers: Iterable[str] | None = None,
    ) -> None:
        self._config_source = config
        self._only = None if servers is None else tuple(servers)
        self._roots: list[Root] = _normalise_roots(roots or [])
        self.validate_arguments = validate_arguments
        if validate_output not in ("error", "warn", "off"):
            raise ConfigurationError(
                f"validate_output must be 'error', 'warn' or 'off', not {validate_output!r}"
            )
        self.validate_output = validate_output
        if validate_messages not in ("strict", "lenient", "off"):
            raise ConfigurationError(
                "validate_messages must be 'strict', 'lenient' or 'off', not "
                f"{validate_messages!r}"
            )
        self.validate_messages = validate_messages
        self.request_timeout = request_timeout
        self.shutdown_timeout = shutdown_timeout
        self.max_message_size = max_message_size
        self.max_pages = max_pages
        self._environ = dict(os.environ if environ is None else environ)
        self._inputs = inputs
        self._client_info = dict(client_info or {"name": "mcphost", "version": __version__})
        self._handle_signals = handle_signals
        self._servers: dict[str, ServerHandle] = {}
        self._tool_routes: dict[str, _ToolRoute] = {}
        self._callback: Callable[[str, str, JSONObject], Any] | None = None
        self._event_handlers: list[EventHandler] = []
        self._log_handlers: list[Callable[[str, JSONObject], Any]] = []
        self._progress_handlers: list[Callable[[str, JSONObject], Any]] = []
        self._sampling: Callable[[str, JSONObject], Any] | None = None
        self._sampling_tools = False
        self._elicitation: Callable[[str, JSONObject], Any] | None = None
        self._elicitation_form = True
        self._elicitation_url = False
        self._roots_handler: Callable[[str], Any] | None = None
        self._extra_capabilities: dict[str, Any] = {}
        self._tasks: weakref.WeakValueDictionary[tuple[str, str], TaskHandle] = (
            weakref.WeakValueDictionary()
        )
        self._state = "new"
        self._shutdown_task: asyncio.Task[None] | None = None
        self._signal_installed = False
        self.config: Any = None

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> MCPHost:
        await self.initialize()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    async def initialize(
        self, config: str | os.PathLike[str] | Mapping[str, Any] | None = None
    ) -> None:
        """Load the configuration and start every enabled server.

        Servers start in parallel (in dependency layers), each within its ``timeout``. If
        any fails, every server already started is shut down and the error names every
        server that failed and why.

        Raises:
            ConfigurationError: the configuration is invalid.
            ServerStartupError: one or more servers failed to start.
        """
        if self._state != "new":
            raise MCPHostError(f"initialize() called on a host that is {self._state}")
        self._state = "starting"
        source = config if config is not None else self._config_source
        if source is None:
            source = "mcp.json"
        try:
            self.config = self._select(await self._load_config(source))
            self._build_handles()
            self._install_signal_handler()
            _live_hosts.add(self)
            await self._start_all()
        except BaseException:
            await self.shutdown()
            raise
        self._state = "ready"

    async def _load_config(self, source: str | os.PathLike[str] | Mapping[str, Any]) -> Any:
        from . import config as config_mod

        home = self._environ.get("HOME") or os.path.expanduser("~")
        if isinstance(source, Mapping):
            inputs = await self._resolve_inputs(config_mod.required_inputs(source), None)
            return config_mod.config_from_data(
                source, environ=self._environ, user_home=home, workspace_folder=os.getcwd(),
                inputs=inputs, read_text=_read_text,
            )
        path = os.fspath(source)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigurationError(
                f"{os.path.basename(path)}: configuration file not found", path=path
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"{os.path.basename(path)}: cannot read configuration: {exc}", path=path
            ) from None
        inputs = await self._resolve_inputs(config_mod.required_inputs(text, path=path), path)
        return config_mod.parse_config(
            text,
            path=os.path.abspath(path),
            environ=self._environ,
            user_home=home,
            inputs=inputs,
            read_text=_read_text,
        )

    async def _resolve_inputs(self, specs: list[Any], path: str | None) -> dict[str, str]:
        provided = self._inputs
        if not specs:
            return {}
        if isinstance(provided, Mapping):
            return {k: str(v) for k, v in provided.items()}
        values: dict[str, str] = {}
        if provided is None:
            return values  # the loader names the first input that has no value
        for spec in specs:
            value = provided(spec)
            if inspect.isawaitable(value):
                value = await value
            if value is not None:
                values[spec.id] = str(value)
        return values

    def _select(self, config: Any) -> Any:
        """The configuration with every server outside ``servers=`` (and their
        dependencies) disabled."""
        if self._only is None:
            return config
        known = config.servers
        unknown = [name for name in self._only if name not in known]
        if unknown:
            listed = ", ".join(known) or "none"
            raise RoutingError(f"unknown server {unknown[0]!r} (servers: {listed})")
        keep: set[str] = set()
        todo = list(self._only)
        while todo:
            name = todo.pop()
            if name not in keep:
                keep.add(name)
                todo.extend(known[name].dependencies)
        servers = {
            name: cfg if name in keep else dataclasses.replace(cfg, enabled=False)
            for name, cfg in known.items()
        }
        return dataclasses.replace(config, servers=servers)

    def _build_handles(self) -> None:
        for name, cfg in self.config.servers.items():
            self._servers[name] = ServerHandle(
                cfg,
                environ=self._environ,
                request_timeout=self.request_timeout,
                shutdown_timeout=self.shutdown_timeout,
                max_message_size=self.max_message_size,
                max_pages=self.max_pages,
                session_factory=self._new_session,
                on_request=self._serve_request,
                on_notification=self._on_notification,
                on_exit=self._on_server_exit,
                on_listed=self._on_listed,
                validate_messages=self.validate_messages,
            )
            self._servers[name].set_forward_progress(bool(self._progress_handlers))

    def _new_session(self) -> Session:
        return Session(client_info=self._client_info, capabilities_for=self._capabilities_for)

    def _capabilities_for(self, version: str) -> dict[str, Any]:
        return client_capabilities(
            version,
            roots=True,
            sampling=self._sampling is not None,
            sampling_tools=self._sampling_tools,
            elicitation_form=self._elicitation is not None and self._elicitation_form,
            elicitation_url=self._elicitation is not None and self._elicitation_url,
            task_requests=True,
            extra=self._extra_capabilities,
        )

    async def _start_all(self) -> None:
        failures: dict[str, MCPHostError] = {}
        for layer in self.config.start_order():
            handles = [self._servers[name] for name in layer]
            for handle in handles:
                self._emit({"type": "server_starting", "server": handle.name})
            outcomes = await asyncio.gather(
                *(h.start() for h in handles), return_exceptions=True
            )
            for handle, outcome in zip(handles, outcomes):
                if isinstance(outcome, MCPHostError):
                    failures[handle.name] = outcome
                    self._emit({"type": "server_failed", "server": handle.name, "data": str(outcome)})
                elif isinstance(outcome, BaseException):
                    raise outcome
                else:
                    self._emit({"type": "server_ready", "server": handle.name})
            if failures:
                break
        if failures:
            names = ", ".join(failures)
            details = "\n".join(f"- {err}" for err in failures.values())
            only = next(iter(failures.values())) if len(failures) == 1 else None
            if only is not None and isinstance(only, ConfigurationError):
                raise only
            raise ServerStartupError(
                f"{len(failures)} server(s) failed to start: {names}\n{details}",
                server=only.server if only is not None else None,
                stderr_tail=getattr(only, "stderr_tail", None),
                failures=failures,
            )

    async def shutdown(self) -> None:
        """Stop every server, in parallel; idempotent and safe to call from any task."""
        if self._shutdown_task is None:
            self._shutdown_task = asyncio.get_running_loop().create_task(
                self._shutdown(), name="mcphost-shutdown"
            )
        task = self._shutdown_task
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=self.shutdown_timeout + 10)
            raise

    async def _shutdown(self) -> None:
        self._state = "stopping"
        handles = list(self._servers.values())
        results = await asyncio.gather(*(h.stop() for h in handles), return_exceptions=True)
        for tracked in list(self._tasks.values()):
            tracked.wake()  # each sees its server gone and ends with ServerUnavailableError
        for handle, result in zip(handles, results):
            if isinstance(result, BaseException):
                logger.error("%s: shutdown failed: %r", handle.name, result)
        self._remove_signal_handler()
        _live_hosts.discard(self)
        self._state = "stopped"

    # -- signals --------------------------------------------------------------------------

    def _install_signal_handler(self) -> None:
        if not self._handle_signals or sys.platform == "win32":
            return
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the application handles SIGTERM itself
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
            self._signal_installed = True

    def _remove_signal_handler(self) -> None:
        if self._signal_installed:
            self._signal_installed = False
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    def _on_sigterm(self) -> None:
        logger.warning("SIGTERM received: shutting down every server")

        async def stop_then_exit() -> None:
            await self.shutdown()
            # Now die of SIGTERM as the sender intended.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        asyncio.get_running_loop().create_task(stop_then_exit())

    # -- queries --------------------------------------------------------------------------

    @property
    def servers(self) -> Mapping[str, ServerHandle]:
        return self._servers

    def get_tools(self) -> dict[str, ServerInfo]:
        """Every configured server with its state and everything it offers."""
        out: dict[str, ServerInfo] = {}
        for name, h in self._servers.items():
            s = h.session
            out[name] = {
                "state": cast(Any, h.state),
                "serverInfo": cast(Any, s.server_info),
                "protocolVersion": s.protocol_version,
                "instructions": s.instructions,
                "capabilities": cast(Any, s.server_capabilities),
                "tools": cast(Any, list(h.tools)),
                "prompts": cast(Any, list(h.prompts)),
                "resources": cast(Any, list(h.resources)),
                "resourceTemplates": cast(Any, list(h.resourceTemplates)),
            }
        return out

    def get_metrics(self) -> dict[str, Any]:
        """Per-server state, counters and per-tool latency statistics."""
        out: dict[str, Any] = {}
        for name, h in self._servers.items():
            conn = h.connection
            entry: dict[str, Any] = {
                "state": h.state,
                "pid": h.pid(),
                "error": str(h.error) if h.error is not None else None,
                "pending": conn.pending if conn else 0,
                "connection": conn.stats.as_dict() if conn else {},
            }
            entry.update(h.metrics.snapshot())
            out[name] = entry
        return out

    # -- routing --------------------------------------------------------------------------

    def _handle(self, server: str) -> ServerHandle:
        handle = self._servers.get(server)
        if handle is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise RoutingError(f"unknown server {server!r} (servers: {known})")
        return handle

    def _split(self, qualified: str, what: str) -> tuple[ServerHandle, str]:
        if not isinstance(qualified, str) or "." not in qualified:
            raise RoutingError(
                f"{what} name {qualified!r} must be qualified as 'server.{what}'"
            )
        server, _, name = qualified.partition(".")
        if not name:
            raise RoutingError(f"{what} name {qualified!r} has nothing after 'server.'")
        return self._handle(server), name

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
        With ``task=True`` (or ``{"ttl": ms}``), or for a tool whose
        ``execution.taskSupport`` is ``"required"``, the call creates a server task
        (protocol 2025-11-25) and a :class:`~mcphost.client.tasks.TaskHandle` is returned at
        once; ``await`` it for the result.

        Raises:
            RoutingError: unknown server or tool (the message lists what exists).
            PermissionDeniedError: the tool is denied by the server's ``tools`` filter.
            ValidationError: the arguments do not match the tool's ``inputSchema``.
            ServerError, TimeoutError, ServerUnavailableError, ProtocolError.
        """
        route = self._tool_routes.get(name)
        if route is None or route.generation != route.handle.route_generation:
            route = self._route_tool(name)  # raises if the server is not ready, saying why
        handle = route.handle
        conn = route.connection
        if type(params) is dict:
            arguments = params
        else:
            arguments = dict(params) if params is not None else {}
        if self.validate_arguments:
            validator = route.validator
            if validator is None:
                validator = route.validator = self._input_validator(handle, route.tool)
            if validator is not False and not validator.is_valid(arguments):
                self._validate_arguments(handle, route.tool, arguments)
        request: dict[str, Any] = {"name": route.name, "arguments": arguments}
        if meta:
            request["_meta"] = dict(meta)
        if task or not route.plain:  # else the common case: nothing about tasks to decide
            if task and route.task_support == "forbidden":
                # Spec 2025-11-25: a client MUST NOT task-augment a call the tool forbids.
                raise RoutingError(
                    f"tool {route.name!r} does not support tasks (taskSupport is 'forbidden')",
                    server=handle.name,
                )
            if task or route.task_support == "required":
                return await self._call_as_task(handle, conn, request, task, timeout)
        if progress is None and self._progress_handlers:
            progress = _ignore  # the application's on_progress handlers still hear it
        stats = route.stats
        started = _clock()
        try:
            call = conn.start_request(  # positional: this is the hot path
                "tools/call", request, timeout, progress, reset_timeout_on_progress, max_timeout,
                True,  # request is ours: the progress token goes straight into it
            )
            # Sent: not kept alive while waiting. Fewer live objects per call in flight
            # means fewer garbage-collector passes under load.
            del request
            try:
                if conn.transport.needs_drain:
                    await conn.transport.drain()
                result = await call.future
            except asyncio.CancelledError:
                conn.abandon(call)
                raise
        except MCPHostError as exc:
            stats.record(
                _clock() - started,
                error=str(exc),
                timeout=isinstance(exc, TimeoutError),
            )
            raise
        elapsed = _clock() - started
        if type(result) is not dict or type(result.get("content", _EMPTY)) is not list:
            stats.record(elapsed, error="malformed result")
            raise ProtocolError(
                f"tools/call {route.name!r} returned a malformed result (expected an object "
                "with a 'content' array)",
                server=handle.name,
            )
        is_error = result.get("isError") is True
        stats.record_result(elapsed, is_error)
        if not route.plain and route.has_output and not is_error and self.validate_output != "off":
            self._check_output(handle, route.tool, result)
        return result  # a CallToolResult, as checked above

    def _route_tool(self, name: str) -> _ToolRoute:
        """Resolve ``server.tool`` (the slow path, raising the routing errors) and cache it."""
        handle, tool_name = self._split(name, "tool")
        conn = handle.require_ready()  # a server that is not running says so before "unknown tool"
        tool = handle.tool_index.get(tool_name)
        if tool is None:
            if tool_name in handle.hidden_tools:
                raise PermissionDeniedError(
                    f"tool {tool_name!r} is denied by the server's tools filter", server=handle.name
                )
            known = ", ".join(sorted(handle.tool_index)) or "none"
            raise RoutingError(
                f"unknown tool {tool_name!r} (tools of {handle.name}: {known})", server=handle.name
            )
        route = _ToolRoute(handle, conn, tool_name, tool)
        if len(self._tool_routes) >= _ROUTE_CACHE:
            self._tool_routes.clear()
        self._tool_routes[name] = route
        return route

    def _input_validator(self, handle: ServerHandle, tool: dict[str, Any]) -> Any:
        validator = handle.validators.get(tool["name"])
        if validator is None:
            validator = handle.validators[tool["name"]] = self._compile(handle, tool, "inputSchema")
        return validator

    def _check_output(self, handle: ServerHandle, tool: dict[str, Any], result: dict[str, Any]) -> None:
        """Spec (2025-06-18+): with an outputSchema, "the client SHOULD validate" results."""
        name = tool["name"]
        validator = handle.output_validators.get(name)
        if validator is None:
            validator = self._compile(handle, tool, "outputSchema")
            handle.output_validators[name] = validator
        if validator is False:
            return
        try:
            if "structuredContent" not in result:
                raise ValidationError(
                    "the tool declares an outputSchema but returned no structuredContent",
                    keyword="outputSchema",
                )
            validator.validate(result["structuredContent"])
        except ValidationError as exc:
            message = f"structuredContent of tool {name!r} does not match its outputSchema: {exc.message}"
            if self.validate_output == "warn":
                logger.warning("%s: %s", handle.name, message)
                return
            raise exc.restated(message, server=handle.name) from None

    async def _call_as_task(
        self,
        handle: ServerHandle,
        conn: Any,
        request: dict[str, Any],
        task: bool | Mapping[str, Any],
        timeout: float | None,
    ) -> TaskHandle:
        if not handle.session.has_tasks:
            raise RoutingError(
                f"tool {request['name']!r} needs a task, and tasks need protocol 2025-11-25 "
                f"(negotiated {handle.session.protocol_version})",
                server=handle.name,
            )
        request["task"] = dict(task) if isinstance(task, Mapping) else {}
        created = await self._timed(handle, conn.request("tools/call", request, timeout=timeout), "tools/call")
        info = created.get("task") if isinstance(created, dict) else None
        if not isinstance(info, dict) or not isinstance(info.get("taskId"), str):
            raise ProtocolError("tools/call with a task returned no CreateTaskResult", server=handle.name)
        tracked = TaskHandle(handle.name, conn, cast(Any, info), timeout=timeout)
        self._tasks[(handle.name, tracked.task_id)] = tracked
        tracked.follow()
        return tracked

    async def list_tasks(self, server: str) -> list[JSONObject]:
        """``tasks/list`` of one server (all pages)."""
        handle = self._handle(server)
        conn = handle.require_ready()
        out: list[JSONObject] = []
        cursor: Any = None
        for _ in range(self.max_pages):
            params = {"cursor": cursor} if cursor is not None else None
            result = await self._timed(handle, conn.request("tasks/list", params), "tasks/list")
            page = result.get("tasks") if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise ProtocolError("tasks/list returned no 'tasks' array", server=handle.name)
            out.extend(page)
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        return out

    def _validate_arguments(
        self, handle: ServerHandle, tool: dict[str, Any], arguments: dict[str, Any]
    ) -> None:
        validator = self._input_validator(handle, tool)
        if validator is False:
            return
        try:
            validator.validate(arguments)
        except ValidationError as exc:
            message = f"invalid arguments for tool {tool['name']!r}: {exc.message}"
            raise exc.restated(message, server=handle.name) from None

    def _compile(self, handle: ServerHandle, tool: dict[str, Any], key: str) -> Any:
        schema = tool.get(key)
        if not isinstance(schema, (dict, bool)):
            return False
        try:
            from .schema import compile as compile_schema
        except ImportError:  # pragma: no cover - the validator ships with the package
            return False
        dialect = handle.session.version.schema_dialect
        try:
            return compile_schema(schema, default_dialect=dialect)
        except MCPHostError as exc:
            logger.warning(
                "%s: %s of tool %r is invalid (%s); it is not used for validation",
                handle.name, key, tool["name"], exc,
            )
            return False

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> GetPromptResult:
        """Get ``server.prompt`` rendered with ``arguments`` (string values)."""
        handle, prompt_name = self._split(name, "prompt")
        conn = handle.require_ready()
        known = {p.get("name") for p in handle.prompts}
        if prompt_name not in known:
            listing = ", ".join(sorted(str(n) for n in known)) or "none"
            raise RoutingError(
                f"unknown prompt {prompt_name!r} (prompts of {handle.name}: {listing})",
                server=handle.name,
            )
        params: dict[str, Any] = {"name": prompt_name}
        if arguments:
            params["arguments"] = {k: v if isinstance(v, str) else str(v) for k, v in arguments.items()}
        result = await self._timed(handle, conn.request("prompts/get", params, timeout=timeout), "prompts/get")
        if type(result) is not dict or type(result.get("messages")) is not list:
            raise ProtocolError("prompts/get returned a malformed result (no 'messages' array)", server=handle.name)
        return cast(GetPromptResult, result)

    def route_resource(self, uri: str, server: str | None = None) -> ServerHandle:
        """The server that serves ``uri``: exact URIs first, then templates."""
        if server is not None:
            return self._handle(server)
        exact = [h for h in self._servers.values() if any(r.get("uri") == uri for r in h.resources)]
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            names = ", ".join(h.name for h in exact)
            raise RoutingError(f"resource {uri!r} is offered by several servers ({names}); pass server=")
        matched = []
        for h in self._servers.values():
            for tpl in h.resourceTemplates:
                text = tpl.get("uriTemplate")
                if not isinstance(text, str):
                    continue
                try:
                    if compile_template(text).match(uri) is not None:
                        matched.append(h)
                        break
                except ValueError:
                    continue
        if len(matched) == 1:
            return matched[0]
        if len(matched) > 1:
            names = ", ".join(h.name for h in matched)
            raise RoutingError(f"resource {uri!r} matches templates of several servers ({names}); pass server=")
        raise RoutingError(f"no server offers resource {uri!r} (no exact URI or template matches)")

    async def get_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> ReadResourceResult:
        """Read a resource, routed by URI (exact, then RFC 6570 template) or by ``server=``."""
        handle = self.route_resource(uri, server)
        conn = handle.require_ready()
        result = await self._timed(
            handle, conn.request("resources/read", {"uri": uri}, timeout=timeout), "resources/read"
        )
        if type(result) is not dict or type(result.get("contents")) is not list:
            raise ProtocolError("resources/read returned a malformed result (no 'contents' array)", server=handle.name)
        return cast(ReadResourceResult, result)

    async def _timed(self, handle: ServerHandle, awaitable: Awaitable[Any], method: str) -> Any:
        stats = handle.metrics.method(method)
        started = time.perf_counter()
        try:
            result = await awaitable
        except MCPHostError as exc:
            stats.record(time.perf_counter() - started, error=str(exc), timeout=isinstance(exc, TimeoutError))
            raise
        stats.record(time.perf_counter() - started)
        return result

    # -- what servers ask of the client ---------------------------------------------------

    def register_callback(
        self,
        cb: Callable[[str, str, JSONObject], Any],
        *,
        capabilities: Mapping[str, Any] | None = None,
    ) -> None:
        """Receive every server request the host does not answer itself.

        ``cb(server, method, params)`` returns the result dict (or an awaitable of it); a
        raised exception is sent back to the server as a JSON-RPC error (an ``int`` attribute
        ``code`` on the exception chooses the code; ``-32603`` otherwise). The catch-all
        declares no client capability by itself: pass ``capabilities=`` (merged into the
        ``ClientCapabilities`` sent at ``initialize``) for what it serves.
        """
        self._callback = cb
        if capabilities:
            self._extra_capabilities.update(capabilities)

    def on_sampling(
        self, handler: Callable[[str, JSONObject], Any], *, tools: bool = False
    ) -> None:
        """Serve ``sampling/createMessage``: ``handler(server, params) -> CreateMessageResult``.

        Declares the ``sampling`` capability (and ``sampling.tools`` with ``tools=True``,
        from 2025-11-25). Register before :meth:`initialize`: capabilities are declared in
        the handshake.
        """
        self._before_start("on_sampling")
        self._sampling = handler
        self._sampling_tools = tools

    def on_elicitation(
        self, handler: Callable[[str, JSONObject], Any], *, form: bool = True, url: bool = False
    ) -> None:
        """Serve ``elicitation/create``: ``handler(server, params) -> ElicitResult``.

        Declares ``elicitation`` (form and/or URL mode; none below 2025-06-18).
        """
        self._before_start("on_elicitation")
        self._elicitation = handler
        self._elicitation_form = form
        self._elicitation_url = url

    def on_roots(self, handler: Callable[[str], Any]) -> None:
        """Answer ``roots/list`` per server: ``handler(server) -> list of roots``."""
        self._roots_handler = handler

    def on_log(self, handler: Callable[[str, JSONObject], Any]) -> None:
        """Receive ``notifications/message`` params: ``handler(server, params)``."""
        self._log_handlers.append(handler)

    def on_progress(self, handler: Callable[[str, JSONObject], Any]) -> None:
        """Receive every ``notifications/progress`` params: ``handler(server, params)``."""
        self._progress_handlers.append(handler)
        for handle in self._servers.values():
            handle.set_forward_progress(True)

    def on_event(self, handler: EventHandler) -> None:
        """Receive host events: ``{"type", "server", "data"}``.

        Types: ``server_starting``, ``server_ready``, ``server_failed``, ``server_exited``,
        ``capabilities_changed`` (data: the kinds re-listed), ``resource_updated`` (data:
        the params), ``elicitation_complete`` (data: the params), ``task_status``.
        """
        self._event_handlers.append(handler)

    def _before_start(self, what: str) -> None:
        if self._state != "new":
            logger.warning(
                "%s registered after initialize(): servers already started were not told "
                "of the capability", what,
            )

    def _emit(self, event: HostEvent) -> None:
        for handler in list(self._event_handlers):
            _call_handler(handler, (event,), "event handler")

    async def _serve_request(self, handle: ServerHandle, method: str, params: JSONObject) -> Any:
        session = handle.session
        if not session.accepts_server_request(method):
            raise RpcError(
                jsonrpc.METHOD_NOT_FOUND,
                f"{method} is not available: the client did not declare that capability "
                f"(protocol {session.protocol_version})",
            )
        tasks = handle.client_tasks
        if method in TASK_METHODS and tasks is not None:
            return await tasks.handle(method, params)
        if (
            isinstance(params.get("task"), dict)
            and method in _TASK_CAPABLE
            and "tasks" in session.client_caps
            and tasks is not None
        ):
            # Run as a task the server follows: answered now, the handler runs on.
            return tasks.create(method, params, lambda: self._answer(handle, method, params))
        return await self._answer(handle, method, params)

    async def _answer(self, handle: ServerHandle, method: str, params: JSONObject) -> Any:
        if method == "roots/list":
            if self._roots_handler is not None:
                roots = await _maybe_await(self._roots_handler(handle.name))
                return {"roots": _normalise_roots(roots)}
            return {"roots": [dict(r) for r in self._roots]}
        if method == "sampling/createMessage" and self._sampling is not None:
            if (params.get("tools") or params.get("toolChoice")) and not self._sampling_tools:
                raise RpcError(jsonrpc.INVALID_PARAMS, "this client does not support tools in sampling")
            return await _maybe_await(self._sampling(handle.name, params))
        if method == "elicitation/create" and self._elicitation is not None:
            mode = params.get("mode", "form")
            if (mode == "url" and not self._elicitation_url) or (mode == "form" and not self._elicitation_form):
                raise RpcError(jsonrpc.INVALID_PARAMS, f"elicitation mode {mode!r} is not supported")
            return await _maybe_await(self._elicitation(handle.name, params))
        cb = self._callback
        if cb is None:
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"the host has no handler for {method!r}")
        return await _maybe_await(cb(handle.name, method, params))

    def _on_notification(self, handle: ServerHandle, method: str, params: JSONObject) -> None:
        name = handle.name
        if method == "notifications/progress":  # first: one may come with every call
            if self._progress_handlers:
                for progress_handler in list(self._progress_handlers):
                    _call_handler(progress_handler, (name, params), "on_progress handler")
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            handle_log = logging.getLogger(f"mcphost.server.{name}")
            if handle_log.isEnabledFor(level):
                handle_log.log(level, "%s", params.get("data"))
            for log_handler in list(self._log_handlers):
                _call_handler(log_handler, (name, params), "on_log handler")
        elif method == "notifications/resources/updated":
            self._emit({"type": "resource_updated", "server": name, "data": params})
        elif method == "notifications/elicitation/complete":
            self._emit({"type": "elicitation_complete", "server": name, "data": params})
        elif method == "notifications/tasks/status":
            tracked = self._tasks.get((name, str(params.get("taskId"))))
            if tracked is not None:
                tracked.update(cast(Any, {k: v for k, v in params.items() if k != "_meta"}))
            self._emit({"type": "task_status", "server": name, "data": params})

    # -- client-initiated utilities (issue: the whole client side) ------------------------

    async def set_roots(self, roots: Iterable[str | os.PathLike[str] | Root]) -> None:
        """Replace the roots and send ``notifications/roots/list_changed`` to every server."""
        self._roots = _normalise_roots(roots)
        for handle in self._servers.values():
            conn = handle.connection
            if handle.state == "ready" and conn is not None:
                conn.notify("notifications/roots/list_changed")

    async def set_log_level(self, server: str | None, level: str) -> None:
        """Send ``logging/setLevel`` to ``server`` (or every server declaring ``logging``)."""
        if level not in _LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r} (one of {', '.join(_LOG_LEVELS)})")
        handles = [self._handle(server)] if server else [
            h for h in self._servers.values() if h.state == "ready" and h.session.has_capability("logging")
        ]
        for handle in handles:
            conn = handle.require_ready()
            if not handle.session.has_capability("logging"):
                raise RoutingError("server does not declare the logging capability", server=handle.name)
            await self._timed(handle, conn.request("logging/setLevel", {"level": level}), "logging/setLevel")

    async def subscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """``resources/subscribe``: updates then arrive as ``resource_updated`` events."""
        await self._subscription("resources/subscribe", uri, server)

    async def unsubscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """``resources/unsubscribe``."""
        await self._subscription("resources/unsubscribe", uri, server)

    async def _subscription(self, method: str, uri: str, server: str | None) -> None:
        handle = self.route_resource(uri, server)
        conn = handle.require_ready()
        if not handle.session.has_capability("resources", "subscribe"):
            raise RoutingError("server does not support resource subscriptions", server=handle.name)
        await self._timed(handle, conn.request(method, {"uri": uri}), method)

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        timeout: float | None = None,
    ) -> JSONObject:
        """``completion/complete`` for a prompt argument or a resource-template variable.

        Args:
            ref: ``{"type": "ref/prompt", "name": "server.prompt"}`` or
                ``{"type": "ref/resource", "uri": "..."}`` (routed like get_resource).
            argument: ``{"name": ..., "value": ...}``.
            context: ``{"arguments": {...}}`` already chosen (2025-06-18+).

        Returns:
            The ``completion`` object: ``{"values": [...], "total"?, "hasMore"?}``.
        """
        kind = ref.get("type")
        sent = dict(ref)
        if kind == "ref/prompt":
            handle, name = self._split(str(ref.get("name")), "prompt")
            sent["name"] = name
        elif kind == "ref/resource":
            uri = str(ref.get("uri"))
            handle = self._handle(server) if server else self._route_template(uri)
        else:
            raise RoutingError(f"completion ref type {kind!r} is not 'ref/prompt' or 'ref/resource'")
        conn = handle.require_ready()
        if not handle.session.supports_completions():
            raise RoutingError("server does not declare the completions capability", server=handle.name)
        params: dict[str, Any] = {"ref": sent, "argument": dict(argument)}
        if context and handle.session.has_structured_content:  # context exists from 2025-06-18
            params["context"] = dict(context)
        result = await self._timed(
            handle, conn.request("completion/complete", params, timeout=timeout), "completion/complete"
        )
        completion = result.get("completion") if isinstance(result, dict) else None
        if not isinstance(completion, dict):
            raise ProtocolError("completion/complete returned no 'completion' object", server=handle.name)
        return completion

    def _route_template(self, uri: str) -> ServerHandle:
        matched = [h for h in self._servers.values() if any(
            t.get("uriTemplate") == uri for t in h.resourceTemplates)]
        if len(matched) == 1:
            return matched[0]
        return self.route_resource(uri)

    def _on_server_exit(self, handle: ServerHandle, err: MCPHostError) -> None:
        self._emit({"type": "server_exited", "server": handle.name, "data": str(err)})

    def _on_listed(self, handle: ServerHandle, kinds: tuple[str, ...]) -> None:
        self._emit({"type": "capabilities_changed", "server": handle.name, "data": list(kinds)})


def _normalise_roots(roots: Iterable[str | os.PathLike[str] | Root]) -> list[Root]:
    out: list[Root] = []
    for root in roots:
        if isinstance(root, os.PathLike):
            root = os.fspath(root)
        if isinstance(root, str):
            uri = root if "://" in root else Path(root).resolve().as_uri()
            out.append({"uri": uri, "name": os.path.basename(root.rstrip("/")) or root})
        elif isinstance(root, Mapping) and isinstance(root.get("uri"), str):
            out.append(cast(Root, dict(root)))
        else:
            raise ConfigurationError(f"invalid root {root!r}: expected a path, a URI or {{'uri': ...}}")
    return out


def _read_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _ignore(_params: JSONObject) -> None:
    return None


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _call_handler(handler: Callable[..., Any], args: tuple[Any, ...], what: str) -> None:
    """Call an application handler from the reader; an async one runs as its own task."""
    try:
        outcome = handler(*args)
        if inspect.isawaitable(outcome):
            asyncio.get_running_loop().create_task(_guard(outcome, what))
    except Exception:
        logger.exception("%s failed", what)


async def _guard(awaitable: Awaitable[Any], what: str) -> None:
    try:
        await awaitable
    except Exception:
        logger.exception("%s failed", what)


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at interpreter exit
    # Last resort for an application that exits without shutdown(): no server outlives it.
    for host in list(_live_hosts):
        for handle in host._servers.values():
            process = getattr(handle.transport, "process", None)
            pgid = getattr(process, "pgid", None)
            if pgid is not None and process is not None and process.returncode is None:
                with contextlib.suppress(OSError):
                    os.killpg(pgid, signal.SIGTERM)


