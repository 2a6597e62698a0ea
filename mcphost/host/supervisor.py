"""Starting, stopping and restarting servers: the only owner of their states.

Layer 4. The supervisor builds a server's transport (through the factory: it never names
one) and a new :class:`~mcphost.client.session.ClientSession` for every start, runs the
handshake and discovery within the server's start-up ``timeout``, and moves the server
through the transitions of :mod:`~mcphost.protocol.lifecycle` — each one checked, logged
and emitted as a ``state_changed`` event. Servers start in dependency layers, each layer
in parallel; shutdown stops every server in parallel, in a task of its own so a cancelled
caller cannot interrupt it. A SIGTERM handler (when the application has none) and an
``atexit`` hook make sure no server outlives the application.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import random
import re
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from ..client.renewal import RenewalPolicy
from ..client.session import ClientSession
from ..errors import (
    ConfigurationError,
    MCPHostError,
    ServerStartupError,
    ServerUnavailableError,
)
from ..logs import STATE_EVENTS
from ..policy import NO_RETRY, RetryPolicy
from ..protocol import lifecycle
from ..protocol.lifecycle import ServerState
from .handle import ServerHandle
from .handlers import Handlers
from .local import LocalServer
from .readcache import ReadCache
from .recovery import Recovery
from .registry import Registry
from .renewal import session_renewed, stop_reapplying
from .secrets import Redactor

if TYPE_CHECKING:
    from ..config import ServerConfig
    from ..transports.base import Transport

__all__ = ["Supervisor"]

logger = logging.getLogger("mcphost.host.supervisor")

_live: weakref.WeakSet[Supervisor] = weakref.WeakSet()


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
        inherit_env: bool = False,
        unavailable_after_timeouts: int = 1,
        client_info: dict[str, Any],
        validate_messages: str,
        handle_signals: bool,
        retry: RetryPolicy | None = None,
    ) -> None:
        if validate_messages not in ("strict", "lenient", "off"):
            raise ConfigurationError(
                f"validate_messages must be 'strict', 'lenient' or 'off', not {validate_messages!r}"
            )
        self.servers = servers
        self.environ = environ
        self.max_message_size = max_message_size
        self.inherit_env = inherit_env
        #: Secrets out of logs and errors (filled when the configuration is loaded).
        self.redactor = Redactor()
        self.redactor.home = environ.get("HOME") or os.path.expanduser("~")
        self.unavailable_after_timeouts = unavailable_after_timeouts
        # Stops of servers found unavailable, run in the background: awaited at shutdown.
        self._closing: set[asyncio.Task[None]] = set()
        self.handlers = handlers
        self.registry = registry
        self.transport_factory = transport_factory
        self.client_info = client_info
        self.validate_messages = validate_messages
        self.handle_signals = handle_signals
        self._signal_installed = False
        self._shutdown_task: asyncio.Task[None] | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        # The task running each server's start, so that a stop can cancel it rather than
        # wait for its time-out.
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
        #: The cache of reads and prompts (its settings come with the configuration).
        self.reads = ReadCache()
        #: The wire trace (mcphost.wire.<name> at DEBUG) includes message bodies.
        self.trace_bodies = False
        #: Servers of the application's own tools (register_tools), by name.
        self.local: dict[str, LocalServer] = {}
        #: How a session an HTTP server dropped is renewed (delays and bounds).
        self.renewal = RenewalPolicy()
        #: Logger levels the configuration changed, as they were (given back at shutdown).
        self.saved_levels: dict[str, int] = {}

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
        _live.add(self)
        self._install_signal_handler()
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
            outcomes = await asyncio.gather(*(self.start(h) for h in handles), return_exceptions=True)
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

    async def start(self, handle: ServerHandle, *, retry: bool = True) -> None:
        """Spawn/connect, handshake and discover within the server's start-up ``timeout``;
        a failed try is tried again per the server's retry policy (``retry=False``: once).

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
                await self._announced(handle, retry)
            finally:
                self._starting.pop(handle.name, None)

    async def _announced(self, handle: ServerHandle, retry: bool) -> None:
        """One start, told as events (server_starting, then server_ready or server_failed)
        whoever asked for it: initialize(), start_server(), restart_server(), a restart policy."""
        self.handlers.emit({"type": "server_starting", "server": handle.name})
        try:
            await self._start_retrying(handle, handle.config.retry or self.retry if retry else NO_RETRY)
        except MCPHostError as exc:
            self.handlers.emit({"type": "server_failed", "server": handle.name, "data": str(exc)})
            raise
        self.handlers.emit({"type": "server_ready", "server": handle.name})

    async def _start_retrying(self, handle: ServerHandle, policy: RetryPolicy) -> None:
        failed: list[ServerStartupError] = []
        while True:
            try:
                await self._start(handle)
                return
            except ServerStartupError as err:
                failed.append(err)
                if len(failed) > policy.retries or not err.transient:
                    raise _after_attempts(err, failed) from err.__cause__
            delay = policy.delay(len(failed), self.random())
            last = failed[-1]
            reason = last.message.splitlines()[0].removesuffix("; last stderr lines:")
            logger.info("%s: start failed (%s); try %d of %d in %.1f s", handle.name, reason,
                        len(failed) + 1, policy.retries + 1, delay, extra={"event": "server_retrying", "server": handle.name})
            self.handlers.emit({"type": "server_retrying", "server": handle.name, "data": {
                "attempt": len(failed) + 1, "attempts": policy.retries + 1, "delay": delay, "error": reason,
                "stderr_tail": last.stderr_tail[-10:]}})
            await self.sleep(delay)

    async def _start(self, handle: ServerHandle) -> None:
        self.set_state(handle, ServerState.STARTING)
        self.reads.restarted(handle.name)  # a new session: nothing the old one said holds
        handle.error = None
        timeout = handle.config.timeout
        if not handle.installed and is_package_runner(handle.config):
            # npx -y, uvx, pipx run: the first start may download the package first (over a
            # minute is common); it gets the longer of its timeout and INSTALL_TIMEOUT.
            timeout = max(timeout, INSTALL_TIMEOUT)
            self.handlers.emit({"type": "server_installing", "server": handle.name,
                                "data": {"timeout": timeout}})
        began = time.monotonic()
        try:
            await asyncio.wait_for(self._connect(handle), timeout)
        except asyncio.TimeoutError as exc:
            if isinstance(exc, MCPHostError):
                # A request of the start (initialize, a list) hit its request timeout: not
                # the start-up timeout (since 3.11 both are the builtin TimeoutError).
                await self._start_failed(handle, exc)
            tail = handle.stderr_tail()
            late = ServerStartupError(
                _with_tail(f"not ready within its start-up timeout of {timeout:g} s", tail),
                server=handle.name,
                stderr_tail=tail,
            )
            late.transient = True
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

    async def _start_failed(self, handle: ServerHandle, exc: MCPHostError) -> NoReturn:
        tail = getattr(exc, "stderr_tail", None) or handle.stderr_tail()
        err: ServerStartupError
        if isinstance(exc, ServerUnavailableError):
            cause = limit_cause(handle.config.limits, exc.exit_code, tail)
            text = f"server exited during start-up{_code(exc.exit_code)}" + (f": {cause}" if cause else "")
            err = ServerStartupError(_with_tail(text, tail), server=handle.name, stderr_tail=tail)
            err.transient = True
        elif isinstance(exc, ServerStartupError):
            err = exc
        else:
            err = ServerStartupError(f"start-up failed: {exc.message}", server=handle.name, stderr_tail=tail)
            err.transient = isinstance(exc, TimeoutError)  # a slow answer may come in time next try
        await self._fail(handle, err)
        raise err from exc

    def _make_transport(self, config: ServerConfig) -> Transport:
        # The application's own tools are always served in process, whatever the factory.
        if self.transport_factory is not None and config.name not in self.local:
            return self.transport_factory(config)
        from ..transports.factory import make_transport

        return make_transport(
            config, environ=self.environ, max_message_size=self.max_message_size,
            inherit_env=self.inherit_env, redact=self.redactor.text,
            in_process={name: local.serve for name, local in self.local.items()},
        )

    async def _connect(self, handle: ServerHandle) -> None:
        transport = self._make_transport(handle.config)
        trace = transport.trace
        if trace is not None:
            trace.bodies = self.trace_bodies
        handle.transport = transport
        handle.live = True
        await transport.start()
        name = handle.name
        handlers = self.handlers

        async def on_request(method: str, params: dict[str, Any]) -> Any:
            return await handlers.answer(name, method, params)

        def on_notification(method: str, params: dict[str, Any]) -> None:
            self.reads.notified(name, method, params)
            if not self.registry.changed(handle, method):
                handlers.notified(name, method, params)

        session = ClientSession(
            name,
            transport,
            client_info=self.client_info,
            capabilities_for=handlers.capabilities_for,
            request_timeout=handle.request_timeout,
            validate_messages=self.validate_messages,
            on_request=on_request,
            on_notification=on_notification,
            on_closed=lambda err: self._on_closed(handle, session, err),
            on_timeout=lambda method: self._on_timeout(handle, session, method),
        )
        session.forward_progress = bool(handlers.progress)
        session.renewal_policy = self.renewal
        session.on_renewed = lambda summary: session_renewed(
            handle, session, summary, registry=self.registry, handlers=handlers)
        handle.session = session
        handle.timeouts = 0
        self.redactor.install()  # the server's own logger exists now
        await session.open()
        await self.registry.discover(handle, session)

    async def _fail(self, handle: ServerHandle, err: MCPHostError) -> None:
        self.redactor.error(err)
        handle.error = err
        await self._close_io(handle)
        self.set_state(handle, ServerState.FAILED, str(err).splitlines()[0])

    def _on_closed(self, handle: ServerHandle, session: ClientSession, err: MCPHostError) -> None:
        """The session's transport went away by itself."""
        if handle.session is not session or handle.state is not ServerState.READY:
            return
        cause = limit_cause(handle.config.limits, getattr(err, "exit_code", None), getattr(err, "stderr_tail", []))
        if cause:
            err.message = f"{err.message.splitlines()[0].removesuffix('; last stderr lines:')}: {cause}"
            err.args = (err.message,)
        handle.error = self.redactor.error(err)
        logger.warning("%s", err)
        self.set_state(handle, ServerState.UNAVAILABLE, err.message.splitlines()[0])
        self.handlers.emit({"type": "server_exited", "server": handle.name, "data": str(err)})
        for tracked in list(self.handlers.tasks.values()):
            if tracked.server == handle.name:
                tracked.wake()
        self.recovery.failed(handle)

    def _on_timeout(self, handle: ServerHandle, session: ClientSession, method: str) -> None:
        """FR6.3: a server whose requests time out is marked unavailable. It is stopped
        (a server that does not answer holds a process and calls); ``restart_server``
        or a restart policy brings it back."""
        if handle.session is not session or handle.state is not ServerState.READY:
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
                if handle.session is session:
                    await self._close_io(handle, reason)

        task = asyncio.get_running_loop().create_task(close(), name=f"mcphost-unavailable-{handle.name}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        self.recovery.failed(handle)

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
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=bound)
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
        self._remove_signal_handler()
        self.redactor.uninstall()
        _live.discard(self)
    def kill_now(self) -> list[str]:
        """SIGKILL the process group of every server still running; their names."""
        killed = []
        for handle in self.servers.values():
            # Not only live ones: a server in the middle of its shutdown ladder is killed too.
            pgid = handle.transport.process_group() if handle.transport is not None else None
            if pgid is not None and sys.platform != "win32":
                with contextlib.suppress(OSError):
                    os.killpg(pgid, signal.SIGKILL)
                    killed.append(handle.name)
        return killed

    # -- signals --------------------------------------------------------------------------

    def _install_signal_handler(self) -> None:
        if not self.handle_signals or sys.platform == "win32" or self._signal_installed:
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

    #: Set by the host: its idempotent shutdown (the SIGTERM handler runs it).
    shutdown: Callable[[], Any] | None = None

    def _on_sigterm(self) -> None:
        logger.warning("SIGTERM received: shutting down every server")

        async def stop_then_exit() -> None:
            if self.shutdown is not None:
                await self.shutdown()
            # Now die of SIGTERM as the sender intended.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        asyncio.get_running_loop().create_task(stop_then_exit())


#: The first start of a server launched through a package runner may include a download.
INSTALL_TIMEOUT = 300.0
_RUNNERS = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx", "dlx"})


def is_package_runner(config: Any) -> bool:
    """Is the server started through a package runner that may download it first?"""
    command = getattr(config, "command", None)
    if not isinstance(command, str):
        return False
    name = os.path.basename(command).lower().removesuffix(".cmd").removesuffix(".exe")
    args = list(getattr(config, "args", ()))
    return name in _RUNNERS or (name in ("npm", "pnpm", "yarn") and bool(args) and args[0] in ("exec", "dlx"))


_OOM = re.compile(r"(?i)out of memory|MemoryError|allocation failed|cannot allocate memory|ENOMEM")
_EMFILE = re.compile(r"(?i)too many open files|EMFILE")
_NPROC = re.compile(r"(?i)resource temporarily unavailable|EAGAIN|can't start new thread")


def limit_cause(limits: Any, exit_code: int | None, tail: list[str]) -> str | None:
    """Whether a server that ended died of one of its configured limits, said plainly."""
    if limits is None or exit_code is None or exit_code == 0:
        return None
    text = "\n".join(tail[-20:])
    cpu = limits.cpu_seconds
    if cpu and exit_code in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"killed by its CPU limit ({cpu} s)"
    memory = limits.memory_bytes
    if memory and (_OOM.search(text) or exit_code in (-signal.SIGSEGV, -signal.SIGABRT)):
        return f"out of memory under its limit ({memory / (1 << 20):g} MiB)"
    if limits.open_files and _EMFILE.search(text):
        return f"ran out of file descriptors under its limit ({limits.open_files})"
    if limits.processes and _NPROC.search(text):
        return f"could not start a process under its limit ({limits.processes})"
    return None


def _after_attempts(err: ServerStartupError, failed: list[ServerStartupError]) -> ServerStartupError:
    """The last start error, saying how many tries there were and how the others failed."""
    err.attempts = list(failed)
    if len(failed) > 1:
        def reason(e: MCPHostError) -> str:
            return e.message.splitlines()[0].removesuffix("; last stderr lines:")

        last = reason(err)
        others = list(dict.fromkeys(r for r in map(reason, failed[:-1]) if r != last))
        note = f" (tried {len(failed)} times" + (f"; before: {'; '.join(others)})" if others else ")")
        first, sep, rest = err.message.partition("\n")
        head = first.removesuffix("; last stderr lines:")
        err.message = head + note + first[len(head):] + sep + rest
        err.args = (err.message,)
    return err


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


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at interpreter exit (tested in a child)
    """Last resort for an application that exits without shutdown(): no server outlives it.
    SIGTERM every group still running, wait up to the servers' graceful timeout, then
    SIGKILL what is left."""
    groups: dict[int, float] = {}
    for supervisor in list(_live):
        for handle in supervisor.servers.values():
            if handle.live and handle.transport is not None:
                pgid = handle.transport.process_group()
                if pgid is not None:
                    groups[pgid] = max(groups.get(pgid, 0.0), handle.shutdown_timeout)
    if not groups or sys.platform == "win32":
        return
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + max(groups.values())
    alive = set(groups)
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = {pgid for pgid in alive if _group_exists(pgid)}
    for pgid in alive:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


def _group_exists(pgid: int) -> bool:
    # Reap the leader if it is our child, so that a dead leader is not a zombie that keeps
    # its group answering; other members belong to init once the leader is gone.
    with contextlib.suppress(OSError):
        os.waitpid(pgid, os.WNOHANG)
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True
