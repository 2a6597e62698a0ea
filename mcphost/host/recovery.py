"""Getting a server back, and trying a request again: the restart and retry policies at work.

Layer 4. Two things, both driven by :mod:`mcphost.policy`:

- **Restarts** (:class:`Recovery`). A ready server that fails by itself (its process exits,
  its requests time out) is ``unavailable``. With ``restart: {"policy": "on-failure"}`` it is
  restarted after a backoff, up to ``maxAttempts`` times in a row (the count starts again
  once a restart has stayed ready for ``stable`` seconds); then it is left ``failed`` with
  the last error. One task per server, cancelled by ``stop_server``, ``restart_server`` and
  shutdown. With the default policy (``never``) nothing happens: ``restart_server`` brings
  it back (FR6.5).
- **Probes** (:meth:`Recovery.probe`). A remote server made unavailable by a time-out
  (FR6.3) may only have been slow: its connection is kept, and it is sent a ``ping`` after
  1 s, 2 s, 4 s... 30 s (``PROBE_BACKOFF``, ``PROBES`` tries, about 2 minutes in all); the
  first answer returns it to ``ready`` (``server_recovered``). Nothing is restarted
  (FR6.5): a server that never answers has its connection closed, as without probes. Only
  without a restart policy (which restarts it instead) and for remote servers (a local
  process that stopped answering is stopped at once).
- **Keep-alive** (:meth:`Recovery.keep_alive`, off by default: FR6.8). With
  ``MCPHost(keepalive=seconds)``, a ready remote server from which nothing came for that
  long is sent a ``ping``: a dead server (no GET stream to lose) is noticed like one that
  fails a call (unavailable, the restart policy), a hung one times out (FR6.3).
- **Retries of requests** (:func:`retry`). Only requests that are safe to send twice (lists,
  reads, ``prompts/get``, tools annotated read-only or idempotent) and only transient
  failures (a time-out, an unavailable server) are tried again, after a backoff. A request
  that timed out was already cancelled (``notifications/cancelled``) before it failed. When
  the server is unavailable and no restart is coming, there is nothing to wait for: the
  error is raised at once. While a restart is under way, the retry waits for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ..errors import ConfigurationError, MCPHostError, ServerStartupError, TimeoutError
from ..policy import Backoff, RetryPolicy, is_transient
from ..protocol.lifecycle import ServerState

if TYPE_CHECKING:
    from ..client.session import ClientSession
    from .handle import ServerHandle
    from .supervisor import Supervisor

__all__ = ["PROBES", "PROBE_BACKOFF", "RETRIED_METHODS", "Recovery", "grace", "retry", "retry_call", "retry_safe", "retrying"]

logger = logging.getLogger("mcphost.host.recovery")

_T = TypeVar("_T")

#: The requests the host tries again after a transient failure, known by their method alone
#: (``tools/call`` depends on the tool's annotations, which the timeout does not see).
RETRIED_METHODS: frozenset[str] = frozenset({"prompts/get", "resources/read", "completion/complete",
                                              "tasks/list"})

#: The waits before each ``ping`` of an unavailable remote server, and how many there are.
PROBE_BACKOFF: Final = Backoff(initial=1.0, maximum=30.0, multiplier=2.0, jitter=0.0)
PROBES: Final = 8

#: Set while a retry runs its request again: a nested failure is not retried twice over.
retrying: contextvars.ContextVar[bool] = contextvars.ContextVar("mcphost_retrying", default=False)


def grace(handle: ServerHandle, method: str, policy: RetryPolicy) -> bool:
    """A request of ``method`` timed out: is its timeout left uncounted until its retry
    has run? Yes for a request the host tries again (:data:`RETRIED_METHODS`, when
    ``policy`` allows a retry) unless one is already waiting for its verdict: without this,
    the timeout would mark the server unavailable (FR6.3) and the retry (FR7.1) would find
    nothing to talk to. The retry settles it: an answer clears it (:func:`retry`), a second
    timeout counts."""
    if handle.timeout_grace is None and method in RETRIED_METHODS and policy.retries > 0:
        handle.timeout_grace = method
        logger.info("%s: %s timed out; it is tried again before the server is considered unavailable",
                    handle.name, method, extra={"event": "request_timeout_grace", "server": handle.name})
        return True
    handle.timeout_grace = None
    return False


class Recovery:
    """Restarts servers that failed by themselves, per their restart policy."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.tasks: dict[str, asyncio.Task[None]] = {}
        #: The probes of unavailable servers under way, and the keep-alive pings, by server.
        self.probes: dict[str, asyncio.Task[None]] = {}
        self.alive: dict[str, asyncio.Task[None]] = {}
        self.closed = False

    def failed(self, handle: ServerHandle) -> None:
        """``handle`` just became unavailable by itself: restart it if its policy says so."""
        policy = handle.config.restart
        if not policy.enabled or self.closed or handle.name in self.tasks:
            return
        since = handle.ready_since
        if since is not None and self.supervisor.clock() - since >= policy.stable:
            handle.failures_in_row = 0  # it had been fine for a while: a new episode
        if handle.failures_in_row >= policy.max_attempts:
            self._give_up(handle)
            return
        task = asyncio.get_running_loop().create_task(self._run(handle), name=f"mcphost-restart-{handle.name}")
        self.tasks[handle.name] = task
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        for name, running in list(self.tasks.items()):
            if running is task:
                del self.tasks[name]

    async def _run(self, handle: ServerHandle) -> None:
        supervisor = self.supervisor
        policy = handle.config.restart
        while True:
            handle.failures_in_row += 1
            attempt = handle.failures_in_row
            delay = policy.backoff.delay(attempt, supervisor.random())
            logger.warning("%s: restarting in %.1f s (restart %d of %d)", handle.name, delay, attempt,
                           policy.max_attempts, extra={"event": "server_restarting", "server": handle.name})
            supervisor.handlers.emit({"type": "server_restarting", "server": handle.name, "data": {
                "attempt": attempt, "attempts": policy.max_attempts, "delay": delay}})
            await supervisor.sleep(delay)
            try:
                await supervisor.restart(handle, retry=False)
                return
            except (ConfigurationError, ServerStartupError) as err:
                logger.warning("%s: restart %d failed: %s", handle.name, attempt, err.message.splitlines()[0])
                if attempt >= policy.max_attempts:
                    self._give_up(handle)
                    return

    def _give_up(self, handle: ServerHandle) -> None:
        attempts = handle.config.restart.max_attempts
        why = handle.error.message.splitlines()[0] if handle.error is not None else "it failed"
        message = f"gave up after {attempts} restart(s) in a row: {why}"
        logger.error("%s: %s", handle.name, message, extra={"event": "server_gave_up", "server": handle.name})
        # A new error (errors are not changed once made), keeping what the last one knew.
        last = handle.error if handle.state is not ServerState.UNAVAILABLE else None
        handle.error = ServerStartupError(message, server=handle.name,
                                          stderr_tail=getattr(last, "stderr_tail", None),
                                          attempts=list(getattr(last, "attempts", [])))
        self.supervisor.handlers.emit({"type": "server_gave_up", "server": handle.name, "data": message})

    def probe(self, handle: ServerHandle, session: ClientSession, close: Callable[[], None]) -> None:
        """``handle`` timed out and is unavailable, its ``session`` still open: ping it on a
        backoff; ``close()`` its connection if it never answers."""
        if self.closed or handle.name in self.probes:
            close()
            return
        task = asyncio.get_running_loop().create_task(self._probe(handle, session, close),
                                                      name=f"mcphost-probe-{handle.name}")
        self.probes[handle.name] = task
        task.add_done_callback(lambda _: self.probes.pop(handle.name, None))

    async def _probe(self, handle: ServerHandle, session: ClientSession, close: Callable[[], None]) -> None:
        supervisor = self.supervisor
        for attempt in range(1, PROBES + 1):
            await supervisor.sleep(PROBE_BACKOFF.delay(attempt))
            if handle.session is not session or handle.state is not ServerState.UNAVAILABLE:
                return  # stopped or restarted meanwhile
            if session.closed:
                break  # its connection went away meanwhile: nothing to probe
            try:
                await session.request("ping", timeout=handle.request_timeout or PROBE_BACKOFF.maximum)
            except MCPHostError as exc:
                logger.info("%s: probe %d of %d failed: %s", handle.name, attempt, PROBES, exc.message.splitlines()[0])
                if session.closed:
                    break
                continue
            if handle.session is session and handle.state is ServerState.UNAVAILABLE:
                supervisor.recovered(handle, f"it answered a ping (probe {attempt} of {PROBES})")
            return
        else:
            logger.warning("%s: no answer to %d pings; its connection is closed", handle.name, PROBES)
        close()

    def keep_alive(self, handle: ServerHandle, session: ClientSession, interval: float) -> None:
        """Ping ``handle`` whenever nothing came from it for ``interval`` seconds, while
        ``session`` is its session (the task of an earlier session ends)."""
        if self.closed:
            return
        earlier = self.alive.get(handle.name)
        if earlier is not None:
            earlier.cancel()
        task = asyncio.get_running_loop().create_task(self._keep_alive(handle, session, interval),
                                                      name=f"mcphost-keepalive-{handle.name}")
        self.alive[handle.name] = task

        def done(_: asyncio.Task[None]) -> None:
            if self.alive.get(handle.name) is task:
                del self.alive[handle.name]

        task.add_done_callback(done)

    async def _keep_alive(self, handle: ServerHandle, session: ClientSession, interval: float) -> None:
        seen: Any = None
        while True:
            await self.supervisor.sleep(interval)
            transport = handle.transport
            if handle.session is not session or session.closed or transport is None:
                return
            received = transport.statistics().get("bytes_in")
            if handle.state is not ServerState.READY or received != seen:
                seen = received  # not idle (or probed instead): no ping
                continue
            try:
                await session.request("ping", timeout=handle.request_timeout or interval)
            except MCPHostError as exc:
                # A time-out counts (FR6.3, the session tells the supervisor); a server gone
                # is told by its transport.
                logger.info("%s: keep-alive ping failed: %s", handle.name, exc.message.splitlines()[0])
            seen = transport.statistics().get("bytes_in")

    def pending(self, name: str) -> asyncio.Task[None] | None:
        """The restart under way for server ``name``, if any."""
        task = self.tasks.get(name)
        return task if task is not None and not task.done() else None

    async def cancel(self, name: str) -> None:
        """Stop the restart or the probe of ``name`` (the application stops or restarts it
        itself)."""
        for task in (self.tasks.pop(name, None), self.probes.pop(name, None), self.alive.pop(name, None)):
            if task is not None and task is not asyncio.current_task() and not task.done():
                task.cancel()
                await asyncio.wait({task})

    async def close(self) -> None:
        """No more restarts (the host shuts down)."""
        self.closed = True
        for name in {*self.tasks, *self.probes, *self.alive}:
            await self.cancel(name)


async def retry(
    supervisor: Supervisor,
    handle: ServerHandle,
    policy: RetryPolicy,
    first: MCPHostError,
    again: Callable[[], Awaitable[_T]],
    what: str,
) -> _T:
    """Try ``again()`` after ``first`` failed, per ``policy``; raise the last error.

    ``again`` routes afresh (a restarted server has a new session). It runs with
    :data:`retrying` set, so the host does not start a retry of its own inside it.
    """
    error = first
    for attempt in range(1, policy.retries + 1):
        if not is_transient(error):
            break
        restart = supervisor.recovery.pending(handle.name)
        if handle.state is not ServerState.READY and restart is None:
            break  # unavailable, and nothing will bring it back: no use waiting
        delay = policy.delay(attempt, supervisor.random())
        logger.info("%s: %s failed (%s); try %d of %d in %.1f s", handle.name, what,
                    error.message.splitlines()[0], attempt + 1, policy.retries + 1, delay,
                    extra={"event": "request_retrying", "server": handle.name})
        supervisor.handlers.emit({"type": "request_retrying", "server": handle.name, "data": {
            "request": what, "attempt": attempt + 1, "attempts": policy.retries + 1, "delay": delay,
            "error": error.message.splitlines()[0]}})
        await supervisor.sleep(delay)
        restart = supervisor.recovery.pending(handle.name)
        if restart is not None:
            await asyncio.wait({restart})  # bounded by the restart policy itself
        token = retrying.set(True)
        try:
            result = await again()
        except MCPHostError as exc:
            error = supervisor.redactor.error(exc)
        else:
            handle.timeout_grace = None  # it answered: the timeout before was a slow moment
            return result
        finally:
            retrying.reset(token)
        if not isinstance(error, TimeoutError):
            handle.timeout_grace = None  # it answered (wrongly), or went away: no pending verdict
    raise error


async def retry_safe(
    supervisor: Supervisor, run: Callable[[], Awaitable[_T]], what: str, failed: MCPHostError | None = None
) -> _T:
    """``run()`` (a request that is safe to send twice), tried again per the retry policy
    of the server that failed it; ``failed``: its first try already failed so."""
    if failed is None:
        try:
            return await run()
        except MCPHostError as exc:
            failed = supervisor.redactor.error(exc)
    handle = supervisor.servers.get(failed.server) if failed.server else None
    if handle is None or retrying.get() or not is_transient(failed):
        raise failed
    policy = handle.config.retry or supervisor.retry
    return await retry(supervisor, handle, policy, failed, run, what)



async def retry_call(supervisor: Supervisor, call_tool: Callable[..., Awaitable[Any]], failed: MCPHostError,
                     tool: str, name: str, *args: Any) -> Any:
    """A ``tools/call`` of a tool safe to call twice, tried again after ``failed``."""
    params, timeout, progress, reset, max_timeout, meta = args

    def again() -> Awaitable[Any]:
        return call_tool(name, params, timeout=timeout, progress=progress, reset_timeout_on_progress=reset,
                         max_timeout=max_timeout, meta=meta)

    return await retry_safe(supervisor, again, f"tools/call {tool}", failed)
