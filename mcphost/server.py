"""One configured server inside the host: start, discover, refresh, stop.

Layer 4. A :class:`ServerHandle` ties a :class:`~mcphost.config.ServerConfig` to its
transport, :class:`~mcphost.connection.Connection` and
:class:`~mcphost.protocol.legacy.Session`, and keeps what the server offers. Lists are replaced
whole (one assignment each), so a reader never sees a half-refreshed registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from .client.served_tasks import ClientTasks
from .connection import Connection
from .errors import (
    ConfigurationError,
    MCPHostError,
    ProtocolError,
    ServerStartupError,
    ServerUnavailableError,
)
from .metrics import Metrics
from .process import child_environment
from .protocol.legacy import Session
from .transports.base import Transport
from .transports.stdio import StdioTransport

if TYPE_CHECKING:
    from .config import ServerConfig

__all__ = ["ServerHandle", "LIST_KINDS"]

logger = logging.getLogger("mcphost.server")

# kind -> (method, result key, capability)
LIST_KINDS: Final = {
    "tools": ("tools/list", "tools", "tools"),
    "prompts": ("prompts/list", "prompts", "prompts"),
    "resources": ("resources/list", "resources", "resources"),
    "resourceTemplates": ("resources/templates/list", "resourceTemplates", "resources"),
}
_NOTIFY_KINDS: Final = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resourceTemplates"),
}


class ServerHandle:
    """Everything the host knows about one server."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        environ: Mapping[str, str],
        request_timeout: float,
        shutdown_timeout: float,
        max_message_size: int,
        max_pages: int,
        session_factory: Callable[[], Session],
        on_request: Callable[[ServerHandle, str, dict[str, Any]], Awaitable[Any]],
        on_notification: Callable[[ServerHandle, str, dict[str, Any]], None],
        on_exit: Callable[[ServerHandle, MCPHostError], None],
        on_listed: Callable[[ServerHandle, tuple[str, ...]], None],
        refresh_delay: float = 0.02,
        transport_factory: Callable[[ServerConfig], Transport] | None = None,
        validate_messages: str = "lenient",
    ) -> None:
        self.name = config.name
        self.validate_messages = validate_messages
        self._forward_progress = False
        #: Tasks this server asked the host to run (task-augmented sampling/elicitation).
        self.client_tasks: ClientTasks | None = None
        self.config = config
        #: Bumped whenever what a cached tool route knows may change: the tool list, the
        #: state, the connection. A route of an older generation is stale.
        self.route_generation = 0
        self._state = "disabled" if not config.enabled else "stopped"
        self.environ = environ
        self.request_timeout = config.request_timeout or request_timeout
        self.shutdown_timeout = config.shutdown_timeout or shutdown_timeout
        self.max_message_size = max_message_size
        self.max_pages = max_pages
        self.session = session_factory()
        self.connection: Connection | None = None
        self.transport: Transport | None = None
        self.error: MCPHostError | None = None
        self.metrics = Metrics()
        self.tools: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.resourceTemplates: list[dict[str, Any]] = []
        self.tool_index: dict[str, dict[str, Any]] = {}
        self.hidden_tools: set[str] = set()
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_exit = on_exit
        self._on_listed = on_listed
        self._transport_factory = transport_factory
        self._refresh_delay = refresh_delay
        self._dirty: set[str] = set()
        self._refresher: asyncio.Task[None] | None = None
        self._ready = False
        self.validators: dict[str, Any] = {}
        self.output_validators: dict[str, Any] = {}

    @property
    def state(self) -> str:
        """``stopped``, ``starting``, ``ready``, ``failed`` or ``disabled``."""
        return self._state

    @state.setter
    def state(self, value: str) -> None:
        self._state = value
        self.route_generation += 1

    # -- start ----------------------------------------------------------------------------

    def _make_transport(self) -> Transport:
        cfg = self.config
        if self._transport_factory is not None:
            return self._transport_factory(cfg)
        if cfg.type != "stdio":
            raise ConfigurationError(
                f"transport {cfg.type!r} is not supported by this version of mcphost "
                "(stdio only)",
                server=self.name,
            )
        assert cfg.command is not None
        env = child_environment(self.environ, cfg.env)
        limits = cfg.limits
        return StdioTransport(
            self.name,
            cfg.command,
            cfg.args,
            env=env,
            cwd=cfg.cwd,
            max_message_size=self.max_message_size,
            memory_limit=limits.memory_bytes if limits else None,
            cpu_limit=limits.cpu_seconds if limits else None,
        )

    async def start(self) -> None:
        """Spawn, initialize and discover, within the server's start-up ``timeout``."""
        self.state = "starting"
        self.error = None
        try:
            await asyncio.wait_for(self._start(), self.config.timeout)
        except asyncio.TimeoutError:
            tail = self._stderr_tail()
            err: MCPHostError = ServerStartupError(
                _with_tail(f"not ready within its start-up timeout of {self.config.timeout:g} s", tail),
                server=self.name,
                stderr_tail=tail,
            )
            await self._fail(err)
            raise err from None
        except asyncio.CancelledError:
            await self._fail(ServerStartupError("start was cancelled", server=self.name))
            raise
        except ConfigurationError as exc:
            exc.server = exc.server or self.name
            await self._fail(exc)
            raise
        except MCPHostError as exc:
            tail = getattr(exc, "stderr_tail", None) or self._stderr_tail()
            if isinstance(exc, ServerUnavailableError):
                text = f"server exited during start-up{_code(exc.exit_code)}"
                err = ServerStartupError(_with_tail(text, tail), server=self.name, stderr_tail=tail)
            elif isinstance(exc, ServerStartupError):
                err = exc
            else:
                text = f"start-up failed: {exc.message}"
                err = ServerStartupError(text, server=self.name, stderr_tail=tail)
            await self._fail(err)
            raise err from exc
        self.state = "ready"

    async def _start(self) -> None:
        transport = self._make_transport()
        self.transport = transport
        await transport.start()
        conn = Connection(
            self.name,
            transport,
            request_timeout=self.request_timeout,
            on_request=self._serve,
            on_notification=self._notified,
            on_closed=self._closed,
        )
        conn.forward_progress = self._forward_progress
        self.connection = conn
        self.client_tasks = ClientTasks(self.name, conn.notify)
        conn.start()
        session = self.session
        params = session.initialize_params()
        result = await conn.request("initialize", params, timeout=0)
        try:
            session.accept_initialize_result(result)
        except ProtocolError as exc:
            raise ProtocolError(exc.message, server=self.name) from None
        if self.validate_messages != "off":
            # Imported here: the schemas cost nothing to a host that never checks messages.
            from .protocol.messages import MessageChecker

            checker = MessageChecker(
                self.name, str(session.protocol_version), self.validate_messages, logger
            )
            checker.result("initialize", result)
            conn.checker = checker
        conn.notify("notifications/initialized")
        await self.discover()
        self._ready = True
        if self._dirty:
            self._schedule_refresh()

    def _stderr_tail(self) -> list[str]:
        process = getattr(self.transport, "process", None)
        return process.stderr_lines() if process is not None else []

    async def _fail(self, err: MCPHostError) -> None:
        self.error = err
        self.state = "failed"
        self.session.fail()
        await self.stop()
        self.state = "failed"

    # -- discovery ------------------------------------------------------------------------

    async def discover(self) -> None:
        """List every kind the server declares, then publish them together."""
        kinds = [k for k, (_, _, cap) in LIST_KINDS.items() if self.session.has_capability(cap)]
        lists = await asyncio.gather(*(self._list_all(k) for k in kinds))
        for kind, items in zip(kinds, lists):
            self._publish(kind, items)

    async def _list_all(self, kind: str) -> list[dict[str, Any]]:
        method, key, _ = LIST_KINDS[kind]
        conn = self.connection
        assert conn is not None
        items: list[dict[str, Any]] = []
        seen: set[Any] = set()
        cursor: Any = None
        for _page in range(self.max_pages):
            params = {"cursor": cursor} if cursor is not None else None
            result = await conn.request(method, params)
            if not isinstance(result, dict):
                raise ProtocolError(f"{method} result is not an object", server=self.name)
            page = result.get(key)
            if not isinstance(page, list):
                raise ProtocolError(f"{method} result has no {key!r} array", server=self.name)
            items.extend(item for item in page if isinstance(item, dict))
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
            marker = repr(cursor)
            if marker in seen:
                # Spec: keep fetching until nextCursor is absent — but a server repeating a
                # cursor would loop forever.
                logger.warning("%s: %s repeated cursor %r; stopping", self.name, method, cursor)
                return items
            seen.add(marker)
        logger.warning("%s: %s exceeded %d pages; stopping", self.name, method, self.max_pages)
        return items

    def _publish(self, kind: str, items: list[dict[str, Any]]) -> None:
        if kind == "tools":
            filt = self.config.tools
            visible = []
            hidden = set()
            for tool in items:
                name = tool.get("name")
                if not isinstance(name, str):
                    continue
                if filt.permits(name):
                    visible.append(tool)
                else:
                    hidden.add(name)
            self.tools = visible
            self.tool_index = {t["name"]: t for t in visible}
            self.hidden_tools = hidden
            # Validators are compiled per tool on first use, and again after a change.
            self.validators = {}
            self.output_validators = {}
            self.route_generation += 1
        else:
            setattr(self, kind, items)

    # -- refresh on list_changed ----------------------------------------------------------

    def mark_changed(self, kinds: tuple[str, ...]) -> None:
        self._dirty.update(kinds)
        if self._ready:
            self._schedule_refresh()

    def _schedule_refresh(self) -> None:
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.get_running_loop().create_task(
                self._refresh_loop(), name=f"mcphost-refresh-{self.name}"
            )

    async def _refresh_loop(self) -> None:
        # A short window coalesces a burst of list_changed into one refresh; a change that
        # arrives while a refresh runs triggers exactly one more.
        await asyncio.sleep(self._refresh_delay)
        while self._dirty and self.state == "ready":
            kinds = tuple(k for k in LIST_KINDS if k in self._dirty)
            self._dirty.clear()
            wanted = [k for k in kinds if self.session.has_capability(LIST_KINDS[k][2])]
            try:
                lists = await asyncio.gather(*(self._list_all(k) for k in wanted))
            except MCPHostError as exc:
                logger.warning("%s: refresh of %s failed: %s", self.name, ", ".join(wanted), exc)
                return
            for kind, items in zip(wanted, lists):
                self._publish(kind, items)
            self._on_listed(self, tuple(wanted))

    def set_forward_progress(self, forward: bool) -> None:
        """Whether progress notifications reach the host (it has ``on_progress`` handlers)."""
        self._forward_progress = forward
        if self.connection is not None:
            self.connection.forward_progress = forward

    # -- connection callbacks -------------------------------------------------------------

    async def _serve(self, method: str, params: dict[str, Any]) -> Any:
        return await self._on_request(self, method, params)

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        kinds = _NOTIFY_KINDS.get(method)
        if kinds is not None:
            self.mark_changed(kinds)
        self._on_notification(self, method, params)

    def _closed(self, err: MCPHostError) -> None:
        if self.state == "ready":
            self.state = "failed"
            self.error = err
            logger.warning("%s", err)
            self._on_exit(self, err)

    # -- requests -------------------------------------------------------------------------

    def require_ready(self) -> Connection:
        conn = self.connection
        if self.state != "ready" or conn is None or conn.closed:
            if self.state == "disabled":
                raise ServerUnavailableError("server is disabled in the configuration", server=self.name)
            err = self.error
            if isinstance(err, ServerUnavailableError):
                raise ServerUnavailableError(
                    err.message, server=self.name, exit_code=err.exit_code, stderr_tail=err.stderr_tail
                )
            reason = f": {err.message}" if err is not None else ""
            raise ServerUnavailableError(f"server is {self.state}{reason}", server=self.name)
        return conn

    # -- stop -----------------------------------------------------------------------------

    async def stop(self) -> None:
        """Shut the server down (idempotent)."""
        self._ready = False
        refresher = self._refresher
        if refresher is not None and not refresher.done():
            refresher.cancel()
            with contextlib.suppress(BaseException):
                await refresher
        if self.client_tasks is not None:
            self.client_tasks.close()
        conn = self.connection
        if conn is not None:
            await conn.aclose(self.shutdown_timeout)
        elif self.transport is not None:
            await self.transport.aclose(self.shutdown_timeout)
        if self.state not in ("failed", "disabled"):
            self.state = "stopped"
        self.session.close()

    def pid(self) -> int | None:
        process = getattr(self.transport, "process", None)
        return process.pid if process is not None else None


def _code(exit_code: int | None) -> str:
    if exit_code is None:
        return ""
    if exit_code < 0:
        return f" (killed by signal {-exit_code})"
    return f" with code {exit_code}"


def _with_tail(message: str, tail: list[str]) -> str:
    if not tail:
        return message
    return message + "; last stderr lines:\n  " + "\n  ".join(tail[-10:])


