"""A stdio server's process: spawn, pipes, stderr, and the ONE shutdown ladder.

Layer 2, the stdio room. One :class:`ServerProcess` per stdio server. It owns:

- the spawn: ``loop.subprocess_exec`` (never a shell, so arguments are never
  interpreted) as the leader of a process tree of its own (:mod:`.platform`), with the
  environment :mod:`.command` built;
- the pipes, through a protocol rather than streams: stdout bytes are handed to
  ``on_stdout`` as the event loop reads them (no reader task to wake, no stream buffer to
  copy through: a call's response is acted on in the same loop turn it arrives), and
  writes go straight to the stdin pipe;
- stderr: every line goes to the ``mcphost.server.<name>`` logger as it arrives and the
  last 50 lines are kept for error messages;
- the shutdown ladder of the MCP stdio transport ("close the child's stdin, wait; then
  SIGTERM; then SIGKILL"), applied to the whole tree so that ``npx``-launched servers (npx
  runs node as a child) leave no orphan. Every step is bounded, and the ladder runs in its
  own task so a cancelled caller cannot interrupt it half-way. Its two synchronous forms
  live here too: :meth:`ServerProcess.kill_now` (a second Ctrl-C) and the ``atexit`` hook
  that ends the trees of an application that exits without shutting down (SIGTERM, the
  process's ``exit_grace``, SIGKILL). Nothing outside this room signals a server.

Exit is detected by polling ``returncode`` rather than waiting for the transport to
close, which also waits for the pipes to close — never, if a grandchild holds them.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import logging
import os
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Final, cast

from ...errors import ConfigurationError
from . import platform
from .command import command_line
from .platform import MARKER, NO_LIMITS, Limits, ProcessTree, new_marker

__all__ = ["STDIN_GRACE", "ServerProcess"]

logger = logging.getLogger("mcphost.transports.stdio.process")

STDERR_LINES: Final = 50
#: How long a server gets to exit on its own once its stdin is closed, before SIGTERM (the
#: official SDK waits 2 s too; a server that ignores EOF should not cost half the timeout).
STDIN_GRACE: Final = 2.0
_STDERR_LINE_MAX: Final = 4096
_WRITE_HIGH_WATER: Final = 1 << 20


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Hands the child's pipe events to its :class:`ServerProcess`."""

    def __init__(self, owner: ServerProcess) -> None:
        self._owner = owner

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self._owner._stdout_data(cast(bytes, data))
        elif fd == 2:
            self._owner._stderr_data(cast(bytes, data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._owner._stdout_closed()
        elif fd == 2:
            self._owner._stderr_closed()
        elif fd == 0:
            self._owner._stdin_closed()

    def process_exited(self) -> None:
        self._owner._exited()

    def pause_writing(self) -> None:
        self._owner._pause_writers()

    def resume_writing(self) -> None:
        self._owner._resume_writers()


class ServerProcess:
    """A spawned stdio server process: its pipes, stderr log and shutdown ladder.

    Set ``on_stdout`` (called with each chunk read from stdout), ``on_stdout_eof``
    (called once, when stdout closes) and ``on_write_paused`` before :meth:`start`.
    """

    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        limits: Limits = NO_LIMITS,
        stdin_grace: float = STDIN_GRACE,
        exit_grace: float = 10.0,
        redact: Callable[[str], str] | None = None,
        tree: ProcessTree | None = None,
    ) -> None:
        self.name = name
        #: Applied to every stderr line before it is logged or kept (secrets out).
        self.redact = redact
        self.stdin_grace = stdin_grace
        self.command = command
        self.args = list(args)
        self.env = dict(env)
        self.cwd = cwd
        #: Resource limits applied to the child (POSIX).
        self.limits = limits
        #: How long the ``atexit`` hook waits after SIGTERM before SIGKILL (the server's
        #: graceful shutdown timeout).
        self.exit_grace = exit_grace
        #: The operating system's side: groups, signals, survivors.
        self.tree: ProcessTree = tree if tree is not None else platform.current()
        #: The value of :data:`~.platform.MARKER` in the server's environment: its
        #: descendants inherit it, so that those that leave the tree are still found.
        self.marker = new_marker()
        self.on_stdout: Callable[[bytes], None] | None = None
        self.on_stdout_eof: Callable[[], None] | None = None
        #: Called once when the leader process exits, even while a grandchild that
        #: inherited its stdout keeps the pipe open (no EOF would ever come).
        self.on_exit: Callable[[], None] | None = None
        #: Called with True when writers should wait (``write_paused``), False when not.
        self.on_write_paused: Callable[[bool], None] | None = None
        #: The leader's pid, which names its tree; None until started.
        self.leader: int | None = None
        #: The ladder (or :meth:`kill_now`) had to kill the server: it did not stop when asked.
        self.forced = False
        #: The ladder ran to its end: nothing of the tree is ours to signal any more.
        self.ended = False
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._stdin_lost = False
        #: The stdin pipe holds more than its high-water mark: writers should ``drain()``.
        self.write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._stderr_pending = b""
        self._stderr_done = asyncio.Event()
        self._stdout_done = asyncio.Event()
        self._shutdown_task: asyncio.Task[int | None] | None = None
        self.log = logging.getLogger(f"mcphost.server.{name}")

    async def start(self) -> None:
        """Spawn the process (raises ConfigurationError if the command cannot be run)."""
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise ConfigurationError(
                f"working directory {os.path.basename(self.cwd.rstrip(os.sep)) or self.cwd!r} "
                "(cwd) does not exist or is not a directory",
                server=self.name,
            )
        argv = command_line(self.command, self.args, self.env, self.cwd)
        kwargs = self.tree.spawn_options(self.limits)
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _ChildProtocol(self),
                *argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**self.env, MARKER: self.marker},
                cwd=self.cwd,
                **kwargs,
            )
        except OSError as exc:
            raise ConfigurationError(
                f"cannot start command {os.path.basename(self.command)!r}: {exc.strerror or exc}",
                server=self.name,
            ) from exc
        self._transport = transport
        self._stdin = cast("asyncio.WriteTransport | None", transport.get_pipe_transport(0))
        if self._stdin is not None:
            # Writers are asked to wait only past 1 MiB: a burst of requests is never held
            # back, a runaway writer is.
            self._stdin.set_write_buffer_limits(high=_WRITE_HIGH_WATER)
        pid = transport.get_pid()
        self.leader = pid
        self.tree.adopt(pid)
        _running.add(self)
        _install_exit_hook()
        # The arguments are not logged: they may hold secrets expanded from ${...}.
        self.log.debug("= started pid %s: %s (%d arguments)", pid, self.command, len(self.args))

    # -- pipes ----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Write to the child's stdin; never raises (a gone child shows as stdout EOF)."""
        stdin = self._stdin
        if stdin is None or self._stdin_lost:
            return
        try:
            stdin.write(data)
        except (OSError, RuntimeError) as exc:  # pragma: no cover - closed under our feet
            self._stdin_lost = True
            self.log.debug("! stdin write failed: %s", exc)

    async def drain(self) -> None:
        """Wait until the stdin pipe is below its low-water mark (or gone)."""
        if not self.write_paused or self._stdin_lost:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _pause_writers(self) -> None:
        self.write_paused = True
        if self.on_write_paused is not None:
            self.on_write_paused(True)

    def _resume_writers(self) -> None:
        self.write_paused = False
        if self.on_write_paused is not None:
            self.on_write_paused(False)
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _stdin_closed(self) -> None:
        self._stdin_lost = True
        self._resume_writers()

    def _stdout_data(self, data: bytes) -> None:
        handler = self.on_stdout
        if handler is not None:
            handler(data)

    def _exited(self) -> None:
        handler = self.on_exit
        if handler is not None:
            handler()

    def _stdout_closed(self) -> None:
        self._stdout_done.set()
        handler = self.on_stdout_eof
        if handler is not None:
            handler()

    def _stderr_data(self, data: bytes) -> None:
        pending = self._stderr_pending + data
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            self._stderr_line(raw)
        if len(pending) > _STDERR_LINE_MAX:
            self._stderr_line(pending)
            pending = b""
        self._stderr_pending = pending

    def _stderr_closed(self) -> None:
        if self._stderr_pending:
            self._stderr_line(self._stderr_pending)
            self._stderr_pending = b""
        self._stderr_done.set()

    @property
    def pid(self) -> int | None:
        return self._transport.get_pid() if self._transport is not None else None

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode() if self._transport is not None else None

    def stderr_lines(self) -> list[str]:
        return list(self.stderr_tail)

    def _stderr_line(self, raw: bytes) -> None:
        line = raw[:_STDERR_LINE_MAX].decode("utf-8", "replace").rstrip("\r\n")
        if not line.strip():
            return
        if self.redact is not None:
            line = self.redact(line)
        self.stderr_tail.append(line)
        self.log.info("%s", line)

    async def wait_stdout_eof(self, timeout: float) -> None:
        """Wait (bounded) until stdout reached EOF."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stdout_done.wait(), timeout)

    async def wait_stderr(self, timeout: float) -> None:
        """Wait (bounded) until stderr reached EOF, so its tail is complete."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stderr_done.wait(), timeout)

    async def wait_exit(self, timeout: float) -> int | None:
        """Poll for the leader's exit for at most ``timeout`` seconds; return its code."""
        transport = self._transport
        if transport is None:
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.002
        while transport.get_returncode() is None:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return transport.get_returncode()

    def _tree_alive(self) -> bool:
        leader = self.leader
        return leader is not None and self.tree.alive(leader)

    async def _wait_group_gone(self, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.002
        while self._tree_alive():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return True

    async def shutdown(self, timeout: float = 10.0) -> int | None:
        """Stop the process and its tree; idempotent and safe from cancellation.

        The ladder, within ``timeout`` seconds: close stdin and wait up to half of it (at
        most ``stdin_grace`` seconds); SIGTERM the tree and wait for the rest; then SIGKILL
        the tree. Members of the tree that outlive the leader (an ``npx`` child) get the
        same treatment, and so do descendants that had left it. Returns the leader's exit
        code.
        """
        if self._shutdown_task is None:
            self._shutdown_task = asyncio.get_running_loop().create_task(
                self._ladder(timeout), name=f"mcphost-shutdown-{self.name}"
            )
        task = self._shutdown_task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            # Our caller is cancelled; the ladder still finishes (it is bounded) before we
            # let the cancellation through, so no process outlives a cancelled shutdown. A
            # second cancellation during this wait goes through at once.
            await asyncio.wait({task}, timeout=timeout + 5)
            raise

    async def _ladder(self, timeout: float) -> int | None:
        transport = self._transport
        leader = self.leader
        if transport is None or leader is None:
            return None
        try:
            return await self._steps(transport, leader, timeout)
        except BaseException:
            # shutdown() shields the ladder: what stops it half-way is the application's
            # own teardown (asyncio.run cancelling every task after a second Ctrl-C, a
            # KeyboardInterrupt inside it). The rest of the ladder is done now, at once.
            if not self.ended:
                self.log.warning("x stopping %s was interrupted: killing its processes now", self.name)
                self.kill_now()
                self.ended = True
                _running.discard(self)
                self.tree.release(leader)
            raise

    async def _steps(self, transport: asyncio.SubprocessTransport, leader: int, timeout: float) -> int | None:
        tree = self.tree
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        # Descendants that left the tree (setsid()) are out of reach of a signal to it:
        # note them now, while the server still holds them together (the marker finds
        # those that were orphaned too, now and at the end).
        # (A sweep reads the whole process table: a thread's work, not the loop's.)
        strays = await asyncio.to_thread(tree.strays, leader, self.marker)
        if self.returncode is None and self._stdin is not None:
            self.log.debug("x closing stdin of pid %s", leader)
            with contextlib.suppress(Exception):
                self._stdin.close()
            await self.wait_exit(max(0.0, min(timeout / 2, self.stdin_grace)))
        if self.returncode is None:
            self.log.debug("x SIGTERM to the tree of pid %s", leader)
            asked = tree.terminate(leader)
            # Not asked (nothing left, or no way to ask: a Windows server without the
            # host's console): its exit is only collected, briefly, before the kill.
            remaining = max(0.0, deadline - loop.time())
            await self.wait_exit(remaining if asked else min(remaining, 0.5))
        if self.returncode is None:
            self.log.warning("x server %s ignored SIGTERM; sending SIGKILL", self.name)
            self.forced = True
            tree.kill(leader)
            await self.wait_exit(5.0)
        # The leader is gone; the rest of its tree (npx's node) must not survive it.
        if self._tree_alive():
            tree.terminate(leader)
            if not await self._wait_group_gone(max(0.1, min(2.0, deadline - loop.time()))):
                tree.kill(leader)
                await self._wait_group_gone(5.0)
        await asyncio.to_thread(self._kill_strays, strays or None)  # (none noted: swept for now)
        self.ended = True
        tree.release(leader)
        _running.discard(self)
        await self.wait_stderr(1.0)
        with contextlib.suppress(Exception):
            # Close the pipes so that asyncio does not warn about an unclosed transport.
            transport.close()
        self.log.debug("x pid %s exited with %s", leader, self.returncode)
        return self.returncode

    def _kill_strays(self, found: Sequence[int] | None = None) -> None:
        """SIGKILL the processes that left the tree (``found``, else swept for), then
        those still found (a few rounds: one may be starting another as it dies)."""
        leader = self.leader
        assert leader is not None
        for _ in range(3):
            if found is None:
                found = self.tree.strays(leader, self.marker)
            if not found:
                return
            for stray in found:
                if self.tree.kill_pid(stray):
                    self.log.debug("x killed pid %s, which had left the tree", stray)
            found = None

    def tree_running(self) -> bool:
        """Whether something of the tree may still run: started, its ladder not finished,
        and the leader alive or members left behind it."""
        leader = self.leader
        if leader is None or self.ended:
            return False
        return self.returncode is None or self.tree.alive(leader)

    def kill_now(self) -> bool:
        """Kill the whole tree at once, without the ladder (synchronous: a second Ctrl-C),
        and every process that left it; False if nothing of it was running. A shutdown
        under way still finishes."""
        leader = self.leader
        if leader is None or self.ended:
            return False
        killed = self.tree_running() and self.tree.kill(leader)
        strays = self.tree.strays(leader, self.marker)
        if not killed and not strays:
            return False
        self._kill_strays(strays)
        self.forced = True
        self.log.debug("x killed the tree of pid %s at once", leader)
        return True


#: Processes started and not yet through their ladder (for the exit hook).
_running: weakref.WeakSet[ServerProcess] = weakref.WeakSet()
_hook_installed = False


def _install_exit_hook() -> None:
    global _hook_installed
    if not _hook_installed:
        _hook_installed = True
        atexit.register(_end_leftovers)


def _end_leftovers(clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """The synchronous ladder, for an application that exits without shutting its servers
    down: SIGTERM every tree still running, wait up to the longest ``exit_grace``, SIGKILL
    what is left; at once for an interrupted one. Then the processes that left the trees.
    Returns the names of the servers it had to stop."""
    everyone = [p for p in list(_running) if p.leader is not None and not p.ended]
    left = [p for p in everyone if p.tree_running()]
    # A ladder that began and never ended was interrupted (a second Ctrl-C while asyncio
    # shut down), and an application that dies of Ctrl-C was interrupted as a whole (the
    # second press may come before a ladder begins): those trees go now, without a grace.
    at_once = isinstance(getattr(sys, "last_value", None), KeyboardInterrupt)
    interrupted = [p for p in left if at_once or p._shutdown_task is not None]
    for process in interrupted:
        process.log.debug("x application exits while %s was stopping: killing it now", process.name)
        process.kill_now()
    left = [p for p in left if p not in interrupted]
    for process in left:
        assert process.leader is not None
        process.log.debug("x application exits: SIGTERM to the tree of pid %s", process.leader)
        process.tree.terminate(process.leader)
    deadline = clock() + max((p.exit_grace for p in left), default=0.0)

    def alive(process: ServerProcess) -> bool:
        assert process.leader is not None
        # A dead leader that is our own child is collected first: a zombie leader would
        # keep its tree answering.
        process.tree.reap(process.leader)
        return process.tree.alive(process.leader)

    waiting = [p for p in left if alive(p)]
    while waiting and clock() < deadline:
        sleep(0.02)
        waiting = [p for p in waiting if alive(p)]
    for process in waiting:
        assert process.leader is not None
        process.forced = process.tree.kill(process.leader) or process.forced
    for process in everyone:
        if process not in interrupted:  # (kill_now() swept for those)
            process._kill_strays()  # what left the trees, even of a server that had exited
        process.ended = True
        _running.discard(process)
    return [p.name for p in interrupted + left]
