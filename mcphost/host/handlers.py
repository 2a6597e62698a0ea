"""The application's side: its handlers for what servers ask, and the events it hears.

Layer 4. Servers ask the client for roots, sampling and elicitation, or anything else (the
generic callback); the application registers a handler for each. What the client declares
in the handshake follows from what is registered (:meth:`Handlers.capabilities_for`).
Notifications that concern the application (log messages, progress, resource updates,
task status) go to its handlers and events. A handler that raises is logged; one that is
async runs as a task of its own, so a slow one never holds up the reader. Those tasks are
held by the handlers' :class:`~mcphost.rpc.taskset.TaskSet` (cancelled at shutdown) and
bounded: past :data:`HANDLER_TASKS` running at once, a further notification's async handler
is not run (counted, and logged once per thousand), so a server's flood of log messages
cannot make the host hold tens of thousands of tasks.

A handler registered ``with_key=True`` is also told which of the server's questions it
answers: ``key=`` the question's key in a 2026-07-28 server's ``inputRequests``
(:data:`~mcphost.client.era.INPUT_KEY`), ``None`` for a handshake-era server's request (a
gateway relays it under that key). ``concurrency=`` sets how many of one server's questions
of that kind the handler answers at once (:attr:`Handlers.limits`; more wait, then are
refused).
"""

from __future__ import annotations

import inspect
import logging
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from ..client.era import INPUT_KEY
from ..errors import RpcError, UsageError
from ..protocol import jsonrpc
from ..protocol.legacy import client_capabilities
from ..rpc.taskset import TaskSet
from ..types import HostEvent, JSONObject, Root

if TYPE_CHECKING:
    from ..client.tasks import TaskHandle
    from .handle import ServerHandle
    from .lifecycle import HostLifecycle

__all__ = ["HANDLER_TASKS", "Callbacks", "EventHandler", "Handlers", "LOG_LEVELS", "normalise_roots"]

#: Async application handlers (events, logs, progress) running at once, at most.
HANDLER_TASKS: Final = 256

logger = logging.getLogger("mcphost.host")

EventHandler = Callable[[HostEvent], Any]
#: MCP log levels (RFC 5424 names) -> Python logging levels.
LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class Handlers:
    """What the application registered, and the dispatch of server requests to it."""

    def __init__(self, roots: Iterable[str | os.PathLike[str] | Root] | None) -> None:
        self.roots: list[Root] = normalise_roots(roots or [])
        #: ``roots`` was given (even empty): the client declares the roots capability. A
        #: client that declares it invites ``roots/list`` (and server-everything, for one,
        #: then does not exit when its stdin closes).
        self.roots_given = roots is not None
        self.callback: Callable[[str, str, JSONObject], Any] | None = None
        #: The callback serves sampling (FR5.3): ``sampling`` is declared for it.
        self.callback_sampling = False
        self.events: list[EventHandler] = []
        self.log: list[Callable[[str, JSONObject], Any]] = []
        self.progress: list[Callable[[str, JSONObject], Any]] = []
        self.sampling: Callable[[str, JSONObject], Any] | None = None
        self.sampling_tools = False
        self.elicitation: Callable[[str, JSONObject], Any] | None = None
        self.elicitation_form = True
        self.elicitation_url = False
        self.roots_handler: Callable[[str], Any] | None = None
        #: The handlers (by method) registered ``with_key=True``.
        self.keyed: set[str] = set()
        #: Server requests of one method a server may have answered at once (over the
        #: client session's defaults), from ``concurrency=``.
        self.limits: dict[str, int] = {}
        self.extra_capabilities: dict[str, Any] = {}
        #: Server tasks the application follows, by (server, task id).
        self.tasks: weakref.WeakValueDictionary[tuple[str, str], TaskHandle] = weakref.WeakValueDictionary()
        #: The application's async handlers running now (cancelled when the host stops).
        self.running = TaskSet("handlers", HANDLER_TASKS)

    def capabilities_for(self, version: str) -> dict[str, Any]:
        """The ``ClientCapabilities`` to declare for ``version``."""
        return client_capabilities(
            version,
            roots=self.roots_given or self.roots_handler is not None,
            sampling=self.sampling is not None or (self.callback is not None and self.callback_sampling),
            sampling_tools=self.sampling_tools,
            elicitation_form=self.elicitation is not None and self.elicitation_form,
            elicitation_url=self.elicitation is not None and self.elicitation_url,
            task_requests=True,
            extra=self.extra_capabilities,
        )

    def stream_events(self, server: str) -> Callable[[bool, str], None]:
        """What a transport tells of ``server``'s own messages (``Transport.watch_stream``)
        as events: they may be lost while calls still work, then they come again."""

        def told(back: bool, why: str) -> None:
            self.emit({"type": "notifications_restored" if back else "notifications_interrupted",
                       "server": server, "data": why})

        return told

    def emit(self, event: HostEvent) -> None:
        for handler in list(self.events):
            self.call(handler, (event,), "event handler")

    def call(self, handler: Callable[..., Any], args: tuple[Any, ...], what: str) -> None:
        """Call an application handler from the reader; an async one runs as a task held by
        :attr:`running` (not run at all past its limit, or once the host stopped)."""
        try:
            outcome = handler(*args)
            if inspect.isawaitable(outcome):
                self.running.start(outcome, what)
        except Exception:
            logger.exception("%s failed", what)

    # -- server requests ------------------------------------------------------------------

    async def answer(self, server: str, method: str, params: JSONObject) -> Any:
        """Answer a server request the session admitted (capability declared)."""
        keyed = {"key": INPUT_KEY.get()} if method in self.keyed else {}
        if method == "roots/list":
            if self.roots_handler is not None:
                roots = await _maybe_await(self.roots_handler(server, **keyed))
                return {"roots": normalise_roots(roots)}
            return {"roots": [dict(r) for r in self.roots]}
        if method == "sampling/createMessage" and self.sampling is not None:
            if (params.get("tools") or params.get("toolChoice")) and not self.sampling_tools:
                raise RpcError(jsonrpc.INVALID_PARAMS, "this client does not support tools in sampling")
            return await _maybe_await(self.sampling(server, params, **keyed))
        if method == "elicitation/create" and self.elicitation is not None:
            mode = params.get("mode", "form")
            if (mode == "url" and not self.elicitation_url) or (mode == "form" and not self.elicitation_form):
                raise RpcError(jsonrpc.INVALID_PARAMS, f"elicitation mode {mode!r} is not supported")
            return await _maybe_await(self.elicitation(server, params, **keyed))
        cb = self.callback
        if cb is None:
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"the host has no handler for {method!r}")
        return await _maybe_await(cb(server, method, params))

    # -- notifications --------------------------------------------------------------------

    def notified(self, server: str, method: str, params: JSONObject) -> None:
        """A notification for the application (list changes are the registry's)."""
        if method == "notifications/progress":  # first: one may come with every call
            for progress_handler in list(self.progress):
                self.call(progress_handler, (server, params), "on_progress handler")
        elif method == "notifications/message":
            level = LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            server_log = logging.getLogger(f"mcphost.server.{server}")
            if server_log.isEnabledFor(level):
                server_log.log(level, "%s", params.get("data"))
            for log_handler in list(self.log):
                self.call(log_handler, (server, params), "on_log handler")
        elif method == "notifications/resources/updated":
            self.emit({"type": "resource_updated", "server": server, "data": params})
        elif method == "notifications/elicitation/complete":
            self.emit({"type": "elicitation_complete", "server": server, "data": params})
        elif method == "notifications/tasks/status":
            tracked = self.tasks.get((server, str(params.get("taskId"))))
            if tracked is not None:
                tracked.update(cast(Any, {k: v for k, v in params.items() if k != "_meta"}))
            self.emit({"type": "task_status", "server": server, "data": params})


class Callbacks:
    """Where the application registers its handlers and event listeners (``MCPHost``'s
    ``register_callback`` and ``on_*`` methods delegate here)."""

    def __init__(
        self, handlers: Handlers, servers: Mapping[str, ServerHandle], lifecycle: HostLifecycle
    ) -> None:
        self._handlers = handlers
        self._servers = servers
        self._lifecycle = lifecycle

    def register_callback(
        self, cb: Callable[[str, str, JSONObject], Any], *, capabilities: Mapping[str, Any] | None = None,
        sampling: bool = True,
    ) -> None:
        """Receive every server request the host does not answer itself.

        ``cb(server, method, params)`` returns the result dict (or an awaitable of it); a
        raised exception is sent back as a JSON-RPC error (an ``int`` attribute ``code``
        chooses the code; ``-32603`` otherwise; :class:`~mcphost.RpcError` sets all three).
        It declares ``sampling`` (FR5.3: a server's ``sampling/createMessage`` reaches it;
        ``sampling=False`` declares nothing), unless :meth:`on_sampling` serves sampling;
        pass ``capabilities=`` (merged into the ``ClientCapabilities`` sent at
        ``initialize``) for anything else it serves. Capabilities are declared in the
        handshake: register before :meth:`initialize`.
        """
        _callable("register_callback", cb)
        self._handlers.callback = cb
        self._handlers.callback_sampling = bool(sampling)
        if capabilities is not None and not isinstance(capabilities, Mapping):
            raise UsageError(f"capabilities must be a mapping (or None), not {type(capabilities).__name__}")
        if capabilities:
            self._handlers.extra_capabilities.update(capabilities)

    def on_sampling(self, handler: Callable[..., Any], *, tools: bool = False, with_key: bool = False,
                    concurrency: int | None = None) -> None:
        """Serve ``sampling/createMessage``: ``handler(server, params) -> CreateMessageResult``.
        Declares ``sampling`` (``sampling.tools`` with ``tools=True``, 2025-11-25+). Register
        before :meth:`initialize`: capabilities are declared in the handshake.

        ``with_key=True``: ``handler(server, params, key=...)``, ``key`` the question's key
        in a 2026-07-28 server's ``inputRequests`` (``None``: a handshake-era request).
        ``concurrency``: questions of one server answered at once (default 4)."""
        self._before_start("on_sampling")
        _callable("on_sampling", handler)
        self._handlers.sampling = handler
        self._handlers.sampling_tools = tools
        self._options("on_sampling", "sampling/createMessage", with_key, concurrency)

    def on_elicitation(
        self, handler: Callable[..., Any], *, form: bool = True, url: bool = False, with_key: bool = False,
        concurrency: int | None = None,
    ) -> None:
        """Serve ``elicitation/create``: ``handler(server, params) -> ElicitResult``. Declares
        ``elicitation`` (form and/or URL mode; none below 2025-06-18). ``with_key`` and
        ``concurrency`` (default 4) as for :meth:`on_sampling`."""
        self._before_start("on_elicitation")
        _callable("on_elicitation", handler)
        self._handlers.elicitation = handler
        self._handlers.elicitation_form = form
        self._handlers.elicitation_url = url
        self._options("on_elicitation", "elicitation/create", with_key, concurrency)

    def on_roots(self, handler: Callable[..., Any], *, with_key: bool = False, concurrency: int | None = None) -> None:
        """Answer ``roots/list`` per server: ``handler(server) -> list of roots``
        (``handler(server, key=...)`` ``with_key=True``; ``concurrency`` default 16)."""
        _callable("on_roots", handler)
        self._handlers.roots_handler = handler
        self._options("on_roots", "roots/list", with_key, concurrency)

    def _options(self, what: str, method: str, with_key: bool, concurrency: int | None) -> None:
        if not isinstance(with_key, bool):
            raise UsageError(f"{what}(): with_key must be True or False, not {type(with_key).__name__}")
        if concurrency is not None and (type(concurrency) is not int or concurrency < 1):
            raise UsageError(f"{what}(): concurrency must be a whole number of 1 or more (or None), "
                             f"not {concurrency!r}")
        handlers = self._handlers
        if with_key:
            handlers.keyed.add(method)
        else:
            handlers.keyed.discard(method)
        if concurrency is None:
            handlers.limits.pop(method, None)
        else:
            handlers.limits[method] = concurrency

    def on_log(self, handler: Callable[[str, JSONObject], Any]) -> None:
        """Receive ``notifications/message`` params: ``handler(server, params)``."""
        _callable("on_log", handler)
        self._handlers.log.append(handler)

    def on_progress(self, handler: Callable[[str, JSONObject], Any]) -> None:
        """Receive every ``notifications/progress`` params: ``handler(server, params)``."""
        _callable("on_progress", handler)
        self._handlers.progress.append(handler)
        for handle in self._servers.values():
            if handle.session is not None:
                handle.session.forward_progress = True

    def on_event(self, handler: EventHandler) -> None:
        """Receive host events: ``{"type", "server", "data"}``. Types: ``state_changed``
        (data: ``from``, ``to``, ``reason``), ``server_starting``, ``server_ready``,
        ``server_failed``, ``server_exited``, ``capabilities_changed`` (data: the kinds
        re-listed), ``resource_updated``, ``elicitation_complete``, ``task_status``,
        ``server_installing``, ``server_retrying`` / ``request_retrying`` (data:
        ``attempt``, ``attempts``, ``delay``, ``error``), ``server_restarting``,
        ``server_gave_up``, ``session_renewed`` (an HTTP server's session was renewed:
        its log level and subscriptions told again, its lists fetched again),
        ``notifications_interrupted`` / ``notifications_restored`` (data: the reason; a
        Streamable HTTP server's GET stream keeps failing: its own requests and
        notifications may be lost while calls work; then it is back)."""
        _callable("on_event", handler)
        self._handlers.events.append(handler)

    def _before_start(self, what: str) -> None:
        self._lifecycle.warn_if_started(what)


def _callable(method: str, handler: Any) -> None:
    """A handler given to ``method`` must be callable: said now, not when it is called."""
    if not callable(handler):
        raise UsageError(f"{method}() takes a function, not {type(handler).__name__}")


def _file_uri(path: str) -> str:
    from pathlib import Path  # loaded by the first root given as a path, not by every host

    return Path(path).resolve().as_uri()


def normalise_roots(roots: Iterable[str | os.PathLike[str] | Root]) -> list[Root]:
    out: list[Root] = []
    for root in roots:
        if isinstance(root, os.PathLike):
            root = os.fspath(root)
        if isinstance(root, str):
            uri = root if "://" in root else _file_uri(root)
            out.append({"uri": uri, "name": os.path.basename(root.rstrip("/")) or root})
        elif isinstance(root, Mapping) and isinstance(root.get("uri"), str):
            out.append(cast(Root, dict(root)))
        else:
            raise UsageError(f"invalid root {root!r}: expected a path, a URI or {{'uri': ...}}")
    return out


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value
