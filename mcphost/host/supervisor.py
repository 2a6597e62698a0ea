"""Starting, stopping and restarting servers: the only owner of their states.

Layer 4. For every start the supervisor has its :class:`~mcphost.host.connector.Connector`
build a transport and a new session and run the handshake and discovery, within the
server's start-up ``timeout`` (tried again per the retry policy), and moves the server
through the transitions of :mod:`~mcphost.protocol.lifecycle` — each one checked, logged
and emitted as a ``state_changed`` event. Servers start in dependency layers, each layer
in parallel; shutdown stops every server in parallel, in a task of its own so a cancelled
caller cannot interrupt it. A SIGTERM handler (:mod:`.signals`, when the application has
none) shuts down before the application dies of the signal; the process room of the stdio transport
(``transports/stdio``) holds the one shutdown ladder, its ``atexit`` hook and the
immediate kill, which the supervisor reaches only through the transport contract.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from .._json import MAX_TOKENS
from ..errors import (
    ConfigurationError,
    MCPHostError,
    ServerStartupError,
    ServerUnavailableError,
    UsageError,
)
from ..logs import STATE_EVENTS
from ..policy import NO_RETRY, RetryPolicy
from ..protocol import lifecycle
from ..protocol.lifecycle import ServerState
from . import startup_errors
from .connector import Connector
from .handle import ServerHandle
from .handlers import Handlers
from .local import LocalServer
from .readcache import ReadCache
from .recovery import Recovery, grace
from .registry import Registry
from .renewal import stop_reapplying
from .secrets import Redactor
from .signals import SigtermShutdown
from .startclock import StartClocks

if TYPE_CHECKING:
    from ..client.session import ClientSession
    from ..config import ServerConfig
    from ..transports.base import AuthHooks, Transport

__all__ = ["Supervisor"]

logger = logging.getLogger("mcphost.host.supervisor")


class Supervisor:
    """Runs the servers of one host (``servers``: name -> handle, shared with the host)."""

    def __init__(
        self,
        servers: dict[str, ServerHandle],
        *,
        handlers: Handlers,
        registry: Registry,
        transport_factory: Callable[[ServerConfig], Transport] | None,
        environ: Mapping[str, str],
        max_message_size: int,
        max_message_tokens: int = MAX_TOKENS,
        inherit_env: bool = False,
        unavailable_after_timeouts: int = 1,
        client_info: dict[str, Any],
        validate_messages: str,
        handle_signals: bool,
        redactor: Redactor,
        reads: ReadCache,
        local: dict[str, LocalServer],
        trace_bodies: bool = False,
        retry: RetryPolicy | None = None,
        keepalive: float = 0.0,
        auth: AuthHooks | None = None,
    ) -> None:
        if validate_messages not in ("strict", "lenient", "off"):
            raise UsageError(
                f"validate_messages must be 'strict', 'lenient' or 'off', not {validate_messages!r}"
            )
        self.servers = servers
        #: The host's: secrets out of logs and errors (filled when the configuration is loaded).
        self.redactor = redactor
        self.starts = StartClocks()  # start-up clocks, stopped while a person logs in
        #: How a start connects: transport, session wired to the host, discovery.
        self.connector = Connector(
            handlers=handlers, registry=registry, reads=reads, redactor=redactor,
            transport_factory=transport_factory, environ=environ, max_message_size=max_message_size,
            max_message_tokens=max_message_tokens, inherit_env=inherit_env, client_info=client_info,
            validate_messages=validate_messages, local=local, trace_bodies=trace_bodies,
            auth=self.starts.told_by(auth),  # a login stops the start-up clock
            on_closed=self._on_closed, on_timeout=self._on_timeout,
        )
        self.unavailable_after_timeouts = unavailable_after_timeouts
        #: Seconds of silence after which a ready remote server is pinged (0: never, FR6.8).
        self.keepalive = keepalive
        # Stops of servers found unavailable, run in the background: awaited at shutdown.
        self._closing: set[asyncio.Task[None]] = set()
        self.handlers = handlers
        self.registry = registry
        self.handle_signals = handle_signals
        #: The SIGTERM handler and the shutdown task it starts (installed by start_all).
        self.sigterm = SigtermShutdown(self._shutdown_host, self.kill_now)
        self._shutdown_task: asyncio.Task[None] | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        # Each server's start task: a stop cancels it rather than wait for its time-out.
        self._starting: dict[str, asyncio.Task[Any]] = {}
        #: The dependency layers of the last start (stopped in reverse).
        self.layers: list[list[str]] = []
        #: The retry policy of servers that set none.
        self.retry = retry if retry is not None else RetryPolicy()
        # Waiting, jitter and time, replaceable by tests (an injected clock).
        self.sleep: Callable[[float], Any] = asyncio.sleep
        self.random: Callable[[], float] = random.random
        self.clock: Callable[[], float] = time.monotonic
        self.recovery = Recovery(self)
        #: The host's cache of reads and prompts: told of restarts here.
        self.reads = reads

    # -- states ---------------------------------------------------------------------------

    def set_state(self, handle: ServerHandle, new: ServerState, reason: str | None = None) -> None:
        """The one place a server's state changes: checked, logged, emitted."""
        old = handle.state
        if old is new:
            return
        lifecycle.check(old, new)
        handle.set_state(new)
        logger.info("%s: %s -> %s%s", handle.name, old.value, new.value, f" ({reason})" if reason else "",
                    extra={"event": STATE_EVENTS[new.value], "server": handle.name})
        data: dict[str, Any] = {"from": old.value, "to": new.value}
        if reason:
            data["reason"] = reason
        self.handlers.emit({"type": "state_changed", "server": handle.name, "data": data})

    def _lock(self, name: str) -> asyncio.Lock:
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = asyncio.Lock()
        return lock

    # -- start ----------------------------------------------------------------------------

    async def start_all(self, layers: list[list[str]], require_all: bool = True) -> dict[str, dict[str, Any]]:
        """Start the enabled servers layer by layer, each layer in parallel; a server
        starts only once every server it depends on is ready.

        With ``require_all`` (the default) it is all-or-nothing: the first layer with a
        failure ends the start, and the caller stops what started. Without, every server
        that can start does; one whose dependency is not ready is not started, and its
        error says why.

        Returns:
            ``{name: {"ok", "state", "error"}}`` for every server started or tried.

        Raises:
            ServerStartupError: with ``require_all``, naming every server that failed and
                why (a single ``ConfigurationError`` is raised as it is).
        """
        if self.handle_signals:
            self.sigterm.install()
        deadline = self._deadline(self.retry)  # TR9.3: the whole host starts within the budget
        self.layers = [list(layer) for layer in layers]
        failures: dict[str, MCPHostError] = {}
        for layer in layers:
            handles = []
            for name in layer:
                handle = self.servers[name]
                blocked = [d for d in handle.config.dependencies if self.servers[d].state is not ServerState.READY]
                if blocked:
                    err = ServerStartupError(
                        f"not started: it depends on {', '.join(blocked)}, which did not start",
                        server=name,
                    )
                    handle.error = err
                    self.set_state(handle, ServerState.FAILED, err.message)
                    failures[name] = err
                    self.handlers.emit({"type": "server_failed", "server": name, "data": str(err)})
                else:
                    handles.append(handle)
            # start() emits server_starting, then server_ready or server_failed.
            outcomes = await asyncio.gather(*(self.start(h, deadline=deadline) for h in handles),
                                            return_exceptions=True)
            for handle, outcome in zip(handles, outcomes):
                if isinstance(outcome, asyncio.CancelledError):
                    # Its start was cancelled by a stop (this task was not: gather returned).
                    outcome = ServerStartupError("start was cancelled (the server was stopped)", server=handle.name)
                    self.handlers.emit({"type": "server_failed", "server": handle.name, "data": str(outcome)})
                if isinstance(outcome, MCPHostError):
                    failures[handle.name] = outcome
                elif isinstance(outcome, BaseException):
                    raise outcome
            if failures and require_all:
                break
        if failures and require_all:
            raise startup_errors.host_failed(failures)
        return {
            name: {
                "ok": self.servers[name].state is ServerState.READY,
                "state": self.servers[name].state.value,
                "error": str(failures[name]) if name in failures else None,
            }
            for layer in layers
            for name in layer
        }

    def not_started(self, errors: Mapping[str, MCPHostError]) -> None:
        """Servers the configuration could not make (an unset ``${VAR}`` with
        ``require_all=False``): FAILED with their error from the start, never tried."""
        for name, err in errors.items():
            handle = self.servers[name]
            handle.error = self.redactor.error(err)
            handle.set_state(ServerState.FAILED)  # its first state: no transition to check
            logger.warning("%s", err, extra={"event": "server_failed", "server": name})
            self.handlers.emit({"type": "server_failed", "server": name, "data": str(err)})

    async def start(self, handle: ServerHandle, *, retry: bool = True, deadline: float | None = None) -> None:
        """Spawn/connect, handshake and discover within the server's start-up ``timeout``;
        a failed try is tried again per the server's retry policy (``retry=False``: once),
        within its ``start_budget`` (``deadline``: the host start's, on :attr:`clock`).

        Raises:
            ServerStartupError: why it failed (stderr tail attached; ``attempts`` holds the
                error of every try); the server is FAILED.
            ConfigurationError: its transport cannot be built or its command run (never
                tried again: the same configuration fails the same way).
        """
        task = asyncio.current_task()
        async with self._lock(handle.name):
            if handle.state is ServerState.READY:
                return
            if task is not None:
                self._starting[handle.name] = task
            try:
                await self._announced(handle, retry, deadline)
            finally:
                self._starting.pop(handle.name, None)

    async def _announced(self, handle: ServerHandle, retry: bool, deadline: float | None = None) -> None:
        """One start, told as events (server_starting, then server_ready or server_failed)
        whoever asked for it: initialize(), start_server(), restart_server(), a restart policy."""
        self.handlers.emit({"type": "server_starting", "server": handle.name})
        try:
            await self._start_retrying(handle, handle.config.retry or self.retry if retry else NO_RETRY, deadline)
        except MCPHostError as exc:
            self.handlers.emit({"type": "server_failed", "server": handle.name, "data": str(exc)})
            raise
        self.handlers.emit({"type": "server_ready", "server": handle.name})

    def _deadline(self, policy: RetryPolicy) -> float | None:
        return None if policy.start_budget is None else self.clock() + policy.start_budget

    async def _start_retrying(self, handle: ServerHandle, policy: RetryPolicy, deadline: float | None = None) -> None:
        """Try again per ``policy`` within its start budget (TR9.3): the first try has its
        whole start-up timeout, a retry what is left of the budget, none once it is spent."""
        if deadline is None:
            deadline = self._deadline(policy)
        failed: list[ServerStartupError] = []
        logins = self.starts.paused(handle.name)  # the budget moves on by the time spent logging in
        while True:
            left = None if deadline is None or not failed else deadline + self.starts.since(handle.name, logins) - self.clock()
            try:
                await self._start(handle, left)
                return
            except ServerStartupError as err:
                failed.append(err)
                if len(failed) > policy.retries or not err.transient:
                    raise self._gave_up(handle, startup_errors.after_attempts(err, failed)) from err.__cause__
            delay = policy.delay(len(failed), self.random())
            last = failed[-1]
            reason = startup_errors.headline(last)
            if deadline is not None and self.clock() + delay >= deadline + self.starts.since(handle.name, logins):
                spent = f"its start budget of {policy.start_budget or self.retry.start_budget or 0:g} s is spent"
                logger.info("%s: start failed (%s); %s", handle.name, reason, spent,
                            extra={"event": "server_start_budget_spent", "server": handle.name})
                raise self._gave_up(handle, startup_errors.after_attempts(last, failed, spent)) from last.__cause__
            logger.info("%s: start failed (%s); try %d of %d in %.1f s", handle.name, reason,
                        len(failed) + 1, policy.retries + 1, delay, extra={"event": "server_retrying", "server": handle.name})
            self.handlers.emit({"type": "server_retrying", "server": handle.name, "data": {
                "attempt": len(failed) + 1, "attempts": policy.retries + 1, "delay": delay, "error": reason,
                "stderr_tail": last.stderr_tail[-10:]}})
            await self.sleep(delay)

    def _gave_up(self, handle: ServerHandle, err: ServerStartupError) -> ServerStartupError:
        handle.error = self.redactor.error(err)  # the server's error says how many tries there were
        return err

    async def _start(self, handle: ServerHandle, left: float | None = None) -> None:
        """One try, within the start-up timeout (or ``left`` of the start budget, if less)."""
        self.set_state(handle, ServerState.STARTING)
        self.reads.restarted(handle.name)  # a new session: nothing the old one said holds
        handle.error = None
        timeout = handle.config.timeout
        from ..transports.factory import may_install_first

        if not handle.installed and may_install_first(handle.config):
            # npx -y, uvx, pipx run: the first start may download the package first (over a
            # minute is common); it gets the longer of its timeout and INSTALL_TIMEOUT.
            timeout = max(timeout, startup_errors.INSTALL_TIMEOUT)
            self.handlers.emit({"type": "server_installing", "server": handle.name,
                                "data": {"timeout": timeout}})
        cut = left is not None and left < timeout
        if cut:
            timeout = max(left or 0.0, 0.0)
        began = time.monotonic()
        try:
            await self.starts.run(handle.name, self.connector.connect(handle), timeout)  # not counting a login
        except asyncio.TimeoutError as exc:
            if isinstance(exc, MCPHostError):
                # A request of the start (initialize, a list) hit its request timeout: not
                # the start-up timeout (since 3.11 both are the builtin TimeoutError).
                await self._start_failed(handle, exc)
            late = startup_errors.out_of_time(handle.name, timeout, handle.stderr_tail(), budget=cut)
            await self._fail(handle, late)
            raise late from None
        except asyncio.CancelledError:
            await self._fail(handle, ServerStartupError("start was cancelled", server=handle.name))
            raise
        except ConfigurationError as exc:
            exc.server = exc.server or handle.name
            await self._fail(handle, exc)
            raise
        except MCPHostError as exc:
            await self._start_failed(handle, exc)
        handle.start_seconds = time.monotonic() - began
        handle.installed = True
        handle.ready_since = self.clock()
        self.set_state(handle, ServerState.READY)
        if self.keepalive and handle.config.url is not None and handle.session is not None:
            self.recovery.keep_alive(handle, handle.session, self.keepalive)

    async def _start_failed(self, handle: ServerHandle, exc: MCPHostError) -> NoReturn:
        gone = handle.session.gone if handle.session is not None else None
        err = startup_errors.translate(handle.name, exc, handle.stderr_tail(), handle.config.limits, gone)
        err.__cause__ = exc  # chained before the redactor sees it: a traceback shows the cause cleaned
        await self._fail(handle, err)
        raise err from exc

    async def _fail(self, handle: ServerHandle, err: MCPHostError) -> None:
        self.redactor.error(err)
        handle.error = err
        await self._close_io(handle)
        self.set_state(handle, ServerState.FAILED, str(err).splitlines()[0])

    def _on_closed(self, handle: ServerHandle, session: ClientSession, err: MCPHostError) -> None:
        """The session's transport went away by itself."""
        if handle.session is not session or handle.state is not ServerState.READY:
            return
        err = startup_errors.unavailable_with_cause(err, handle.config.limits, session.gone)
        handle.error = self.redactor.error(err)
        logger.warning("%s", err)
        self.set_state(handle, ServerState.UNAVAILABLE, startup_errors.headline(err))
        self.handlers.emit({"type": "server_exited", "server": handle.name, "data": str(err)})
        for tracked in list(self.handlers.tasks.values()):
            if tracked.server == handle.name:
                tracked.wake()
        self.recovery.failed(handle)

    def _on_timeout(self, handle: ServerHandle, session: ClientSession, method: str) -> None:
        """A server whose requests time out is marked unavailable (FR6.3), and stopped (a
        server that does not answer holds a process and calls); ``restart_server`` or a
        restart policy brings it back. A request the host tries again gets its retry first
        (:func:`~mcphost.host.recovery.grace`), so that retries (FR7.1) happen at all."""
        if handle.session is not session or handle.state is not ServerState.READY:
            return
        if grace(handle, method, handle.config.retry or self.retry):
            return
        handle.timeouts += 1
        limit = self.unavailable_after_timeouts
        if not limit or handle.timeouts < limit:
            return
        what = "a request" if limit == 1 else f"{handle.timeouts} requests"
        reason = f"{what} timed out ({method}): the server is considered unavailable"
        err = ServerUnavailableError(reason, server=handle.name)
        handle.error = err
        logger.warning("%s", err)
        self.set_state(handle, ServerState.UNAVAILABLE, reason)
        self.handlers.emit({"type": "server_unavailable", "server": handle.name, "data": reason})

        async def close() -> None:
            async with self._lock(handle.name):
                if handle.session is session and handle.state is ServerState.UNAVAILABLE:
                    await self._close_io(handle, reason)

        def close_later() -> None:
            task = asyncio.get_running_loop().create_task(close(), name=f"mcphost-unavailable-{handle.name}")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

        if handle.config.url is not None and not handle.config.restart.enabled:
            self.recovery.probe(handle, session, close_later)  # a remote server may only be slow
            return
        close_later()
        self.recovery.failed(handle)

    def recovered(self, handle: ServerHandle, how: str) -> None:
        """An unavailable server whose connection was kept answered again: ready."""
        handle.timeouts = 0
        handle.error = None
        handle.ready_since = self.clock()
        logger.info("%s: available again: %s", handle.name, how,
                       extra={"event": "server_recovered", "server": handle.name})
        self.set_state(handle, ServerState.READY, how)
        self.handlers.emit({"type": "server_recovered", "server": handle.name, "data": how})

    # -- stop -----------------------------------------------------------------------------

    async def stop(self, handle: ServerHandle) -> None:
        """Stop the server (idempotent); its tools leave the registry. A start in progress
        is cancelled (the server is then FAILED: "start was cancelled"), and so is a restart
        its policy had planned."""
        await self.recovery.cancel(handle.name)
        starting = self._starting.get(handle.name)
        if starting is not None and starting is not asyncio.current_task() and not starting.done():
            starting.cancel()
            await asyncio.wait({starting})
        async with self._lock(handle.name):
            await self._stop(handle)

    async def _stop(self, handle: ServerHandle) -> None:
        if handle.state in (ServerState.DISABLED, ServerState.STOPPED):
            return
        if handle.state is ServerState.FAILED and not handle.live:
            return  # nothing runs: it stays FAILED with its error until started again
        self.set_state(handle, ServerState.STOPPING)
        await self._fetch_finished_tasks(handle)
        try:
            await self._close_io(handle)
        except Exception as exc:
            self.set_state(handle, ServerState.FAILED, f"stop failed: {exc!r}")
            raise
        handle.clear_offerings()
        self.set_state(handle, ServerState.STOPPED)

    async def _fetch_finished_tasks(self, handle: ServerHandle) -> None:
        """Tasks the server reported finished keep their results: their ``tasks/result``
        is waited for (the shutdown timeout at most) before the server is closed."""
        fetching = [following for tracked in list(self.handlers.tasks.values())
                    if tracked.server == handle.name and tracked.fetching
                    and (following := tracked.fetched()) is not None]
        if fetching and handle.live:
            _, pending = await asyncio.wait(fetching, timeout=handle.shutdown_timeout)
            if pending:
                logger.warning("%s: stopped while fetching the results of %d finished task(s)",
                               handle.name, len(pending))

    async def _close_io(self, handle: ServerHandle, reason: str = "server was shut down") -> None:
        """Close the session (or the bare transport) of the current start; what is still
        pending fails with ``reason``."""
        await self.registry.stop(handle)
        await stop_reapplying(handle)
        if not handle.live:
            return
        # The transport stays on the handle after it is closed (its pid, its statistics).
        session, transport = handle.session, handle.transport
        handle.session = None
        handle.live = False
        shutdown = handle.shutdown_timeout
        if session is not None:
            handle.last_gone = await session.aclose(shutdown, reason)
        elif transport is not None:
            handle.last_gone = await transport.aclose(shutdown)
        for tracked in list(self.handlers.tasks.values()):
            if tracked.server == handle.name:
                tracked.wake()

    async def restart(self, handle: ServerHandle, *, retry: bool = True) -> None:
        """Stop then start (tried again per the retry policy unless ``retry=False``): a new
        process (or connection) and a new session."""
        if self.recovery.pending(handle.name) is not asyncio.current_task():
            await self.recovery.cancel(handle.name)
        async with self._lock(handle.name):
            await self._stop(handle)
            handle.restarts += 1
            await self._announced(handle, retry)

    async def shutdown_once(self) -> None:
        """Stop every server, once, in a task of its own: a cancelled caller cannot cut the
        shutdown ladder short (it still waits, bounded, for the ladder to finish)."""
        if self._shutdown_task is None:
            self._shutdown_task = asyncio.get_running_loop().create_task(
                self.stop_all(), name="mcphost-shutdown"
            )
        task = self._shutdown_task
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            bound = max((h.shutdown_timeout for h in self.servers.values()), default=0.0) + 10
            await asyncio.wait({task}, timeout=bound)  # a second cancellation goes through
            raise

    async def stop_all(self) -> None:
        """Stop every server: dependents before what they depend on (the start layers in
        reverse), each layer in parallel; failures are logged, never raised."""
        await self.recovery.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        ordered = [name for layer in reversed(self.layers) for name in layer]
        layers = [list(layer) for layer in reversed(self.layers)]
        rest = [name for name in self.servers if name not in ordered]
        if rest:
            layers.insert(0, rest)  # started by hand, outside any layer: first
        for layer in layers:
            handles = [self.servers[name] for name in layer if name in self.servers]
            results = await asyncio.gather(*(self.stop(h) for h in handles), return_exceptions=True)
            for handle, result in zip(handles, results):
                if isinstance(result, BaseException):
                    logger.error("%s: shutdown failed: %r", handle.name, result)
        self.sigterm.remove()
        self.redactor.uninstall()

    def kill_now(self) -> list[str]:
        """End at once, without the graceful steps, whatever every server's transport runs
        locally (a second Ctrl-C); the names of the servers killed."""
        # Not only live ones: a server in the middle of its shutdown ladder is killed too.
        return [handle.name for handle in self.servers.values()
                if handle.transport is not None and handle.transport.kill_now()]

    #: Set by the host: its idempotent shutdown (the SIGTERM handler runs it).
    shutdown: Callable[[], Any] | None = None

    async def _shutdown_host(self) -> None:
        if self.shutdown is not None:
            await self.shutdown()
