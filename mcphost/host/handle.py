"""What the host holds for one configured server: its state, session and offerings.

Layer 4. A :class:`ServerHandle` is a record: the supervisor sets its state and session,
the registry its lists, the router and validation read them. Lists are replaced whole (one
assignment each), so a reader never sees a half-refreshed registry. Each start makes a new
transport and a new :class:`~mcphost.client.session.ClientSession`, so a stopped server
starts again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import MCPHostError, ServerUnavailableError
from ..metrics import Metrics
from ..protocol.lifecycle import ServerState

if TYPE_CHECKING:
    from ..client.session import ClientSession
    from ..config import ServerConfig
    from ..transports.base import Gone, Transport

__all__ = ["ServerHandle"]


class ServerHandle:
    """Everything the host knows about one server."""

    def __init__(self, config: ServerConfig, *, request_timeout: float, shutdown_timeout: float,
                 call_hooks: list[Any] | None = None) -> None:
        self.name = config.name
        self.config = config
        #: Bumped whenever what a cached tool route knows may change: the tool list, the
        #: state, the session. A route of an older generation is stale.
        self.route_generation = 0
        self._state = ServerState.STOPPED if config.enabled else ServerState.DISABLED
        #: When (time.monotonic) the server entered its state.
        self.state_since = time.monotonic()
        #: The host's on_call hooks (one list shared by every server).
        self.call_hooks: list[Any] = call_hooks if call_hooks is not None else []
        #: Reads and prompts of this server looked up in the host's cache, by result.
        self.cache_stats: dict[str, int] = dict.fromkeys(("hit", "miss", "stale", "expired", "evicted"), 0)
        self.request_timeout = config.request_timeout or request_timeout
        self.shutdown_timeout = config.shutdown_timeout or shutdown_timeout
        self.session: ClientSession | None = None
        self.transport: Transport | None = None
        #: The transport of the current start is open (closed once stopped or failed).
        self.live = False
        #: How the last session's transport ended (exit code, stderr tail), once closed.
        self.last_gone: Gone | None = None
        #: Why the server is not ready (its last start failure or how it went away).
        self.error: MCPHostError | None = None
        self.metrics = Metrics()
        self.metrics.started_at = time.monotonic()
        self.restarts = 0
        #: Restarts in a row by the restart policy, and when the server last became ready.
        self.failures_in_row = 0
        self.ready_since: float | None = None
        #: Requests that timed out since the server last started.
        self.timeouts = 0
        #: The method of a timed-out request that is being tried again: its timeout is not
        #: counted unless the retry times out too (see ``Supervisor._on_timeout``).
        self.timeout_grace: str | None = None
        #: Seconds its last successful start took (spawn, handshake, discovery).
        self.start_seconds: float | None = None
        #: It started once: a package runner has its package by now (no install timeout).
        self.installed = False
        self.tools: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.resourceTemplates: list[dict[str, Any]] = []
        self.tool_index: dict[str, dict[str, Any]] = {}
        self.hidden_tools: set[str] = set()
        #: Compiled validators per tool name, dropped when the tool list changes.
        self.validators: dict[str, Any] = {}
        self.output_validators: dict[str, Any] = {}
        # The registry's refresh on list_changed.
        self.dirty: set[str] = set()
        self.refresher: asyncio.Task[None] | None = None
        self.listening = False  # discovery is done: list_changed refreshes from now on
        #: What the application told the server, re-applied after a renewed session: the
        #: last ``logging/setLevel`` level and the URIs subscribed to.
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        #: Sessions renewed since the server started, and the re-application under way.
        self.renewals = 0
        self.reapplying: asyncio.Task[None] | None = None

    @property
    def state(self) -> ServerState:
        return self._state

    def set_state(self, state: ServerState) -> None:
        """For the supervisor only (it checks the transition and tells everyone)."""
        self._state = state
        self.state_since = time.monotonic()
        self.route_generation += 1

    def clear_offerings(self) -> None:
        """The server is gone or stopped: what it offered is no longer offered."""
        self.tools = []
        self.prompts = []
        self.resources = []
        self.resourceTemplates = []
        self.tool_index = {}
        self.hidden_tools = set()
        self.validators = {}
        self.output_validators = {}
        self.route_generation += 1

    def require_ready(self) -> ClientSession:
        """The session, if the server is ready; else ``ServerUnavailableError`` saying why."""
        session = self.session
        if self._state is not ServerState.READY or session is None or session.closed:
            if self._state is ServerState.DISABLED:
                raise ServerUnavailableError(
                    "server is disabled in the configuration (or not selected)", server=self.name
                )
            err = self.error
            if isinstance(err, ServerUnavailableError):
                raise ServerUnavailableError(
                    err.message, server=self.name, exit_code=err.exit_code, stderr_tail=err.stderr_tail
                )
            reason = f": {err.message}" if err is not None else ""
            raise ServerUnavailableError(f"server is {self._state.value}{reason}", server=self.name,
                                         stderr_tail=getattr(err, "stderr_tail", None))
        return session

    def info(self, include_unavailable: bool = False,
             visible: Callable[[ServerHandle, list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
             ) -> dict[str, Any]:
        """What ``get_tools()`` shows of this server: what it offers only while it is ready
        (FR6.7), unless ``include_unavailable`` (diagnostics: the last lists it gave);
        ``visible`` leaves out the tools the application's permissions deny."""
        s = self.session
        offered = self._state is ServerState.READY or include_unavailable
        return {
            "state": self._state.value,
            "serverInfo": s.server_info if s else None,
            "protocolVersion": s.protocol_version if s else None,
            "era": s.era if s and s.protocol_version else None,
            "instructions": s.instructions if s else None,
            "capabilities": s.server_capabilities if s else {},
            "tools": (visible(self, self.tools) if visible else list(self.tools)) if offered else [],
            "prompts": list(self.prompts) if offered else [],
            "resources": list(self.resources) if offered else [],
            "resourceTemplates": list(self.resourceTemplates) if offered else [],
            "error": str(self.error) if self.error is not None else None,
            "priority": self.config.priority,
            "domains": list(self.config.domains),
            "declaredCapabilities": list(self.config.declared_capabilities),
        }

    def metrics_snapshot(self) -> dict[str, Any]:
        """What ``get_metrics()`` shows of this server."""
        session = self.session
        transport = self.transport.statistics() if self.transport is not None else {}
        connection = session.peer.stats.as_dict() if session is not None else {}
        if connection:
            connection["noise_lines"] = self.transport.vitals().noise_lines if self.transport is not None else 0
        entry: dict[str, Any] = {
            "state": self._state.value,
            "stateSeconds": round(time.monotonic() - self.state_since, 3),
            "pid": self.pid(),
            "error": str(self.error) if self.error is not None else None,
            "pending": session.pending if session is not None else 0,
            "restarts": self.restarts,
            "start_seconds": self.start_seconds,
            "connection": connection,
            "transport": transport,
            "cache": dict(self.cache_stats),
        }
        entry.update(self.metrics.snapshot())
        # Requests: those sent and answered or failed (arguments refused before sending are
        # errors, not requests); successes: those that got a result without isError; rates
        # and the average latency (FR9.3) over the time since the server was configured.
        entry.update(self.metrics.summary(self.metrics_seconds()))
        return entry

    def metrics_seconds(self) -> float:
        """Seconds the server's metrics cover (since its handle was made; a reload that
        restarts the server keeps them)."""
        if self.metrics.started_at is None:
            self.metrics.started_at = time.monotonic()
        return round(time.monotonic() - self.metrics.started_at, 3)

    def pid(self) -> int | None:
        """The local process serving the server (its last one, once stopped), if any."""
        return self.transport.vitals().pid if self.transport is not None else None

    def stderr_tail(self) -> list[str]:
        return self.transport.tail() if self.transport is not None else []
