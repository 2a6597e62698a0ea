"""Child processes of stdio servers: spawn, stderr drain, shutdown ladder.

Layer 2 (I/O). One :class:`ServerProcess` per stdio server. It owns:

- the spawn: ``asyncio.create_subprocess_exec`` (never a shell, so arguments are never
  interpreted), in a new session and so a new process group, with an environment built
  from a small allow-list of the parent's variables plus the server's own ``env``;
- the stderr drain task: every line goes to the ``mcphost.server.<name>`` logger and the
  last 50 lines are kept for error messages;
- the shutdown ladder of the MCP stdio transport ("close the child's stdin, wait; then
  SIGTERM; then SIGKILL"), applied to the whole process group so that ``npx``-launched
  servers (npx runs node as a child) leave no orphan. Every step is bounded, and the
  ladder runs in its own task so a cancelled caller cannot interrupt it half-way.

Exit is detected by polling ``returncode`` rather than ``Process.wait()``, which on some
Python versions also waits for the pipes to close — never, if a grandchild holds them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .errors import ConfigurationError

__all__ = ["ENV_ALLOWLIST", "ServerProcess", "child_environment", "resolve_command"]

logger = logging.getLogger("mcphost.process")

# DESIGN §3: a child inherits only these, plus its own env.
ENV_ALLOWLIST: Final = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
     "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "COMSPEC")
    if sys.platform == "win32"
    else ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR")
)
STDERR_LINES: Final = 50
_STDERR_LINE_MAX: Final = 4096
_READ_SIZE: Final = 1 << 18


def child_environment(parent: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The environment of a child: the allow-listed parent variables, then ``own``."""
    env = {key: parent[key] for key in ENV_ALLOWLIST if key in parent}
    env.update(own)
    return env


def resolve_command(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """Find the executable the way the child's PATH would, or raise ConfigurationError."""
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return command
        raise ConfigurationError(f"command {os.path.basename(command)!r} not found or not executable")
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise ConfigurationError(f"command {command!r} not found on PATH")
    return found


class ServerProcess:
    """A spawned stdio server process and its stderr drain."""

    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        memory_limit: int | None = None,
        cpu_limit: int | None = None,
        read_limit: int = _READ_SIZE,
    ) -> None:
        self.name = name
        self.command = command
        self.args = list(args)
        self.env = dict(env)
        self.cwd = cwd
        self.memory_limit = memory_limit
        self.cpu_limit = cpu_limit
        self.read_limit = read_limit
        self.proc: asyncio.subprocess.Process | None = None
        self.pgid: int | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._stderr_done = asyncio.Event()
        self._shutdown_task: asyncio.Task[int | None] | None = None
        self.log = logging.getLogger(f"mcphost.server.{name}")

    async def start(self) -> None:
        """Spawn the process (raises ConfigurationError if the command cannot be run)."""
        executable = resolve_command(self.command, self.env, self.cwd)
        kwargs: dict[str, Any] = {}
        if sys.platform != "win32":
            kwargs["start_new_session"] = True  # own session => own process group
            if self.memory_limit or self.cpu_limit:
                kwargs["preexec_fn"] = self._apply_limits
        try:
            self.proc = await asyncio.create_subprocess_exec(
                executable,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                limit=self.read_limit,
                **kwargs,
            )
        except OSError as exc:
            raise ConfigurationError(
                f"cannot start command {os.path.basename(self.command)!r}: {exc.strerror or exc}",
                server=self.name,
            ) from exc
        self.pgid = self.proc.pid if sys.platform != "win32" else None
        self.log.debug("= started pid %s: %s %s", self.proc.pid, self.command, self.args)
        self._stderr_task = asyncio.get_running_loop().create_task(
            self._drain_stderr(), name=f"mcphost-stderr-{self.name}"
        )

    def _apply_limits(self) -> None:  # pragma: no cover - runs in the child after fork
        import resource

        if self.memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_limit, self.memory_limit))
        if self.cpu_limit:
            resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_limit, self.cpu_limit))

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    def stderr_lines(self) -> list[str]:
        return list(self.stderr_tail)

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        stream = self.proc.stderr
        pending = b""
        try:
            while True:
                chunk = await stream.read(_READ_SIZE)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    self._stderr_line(raw)
                if len(pending) > _STDERR_LINE_MAX:
                    self._stderr_line(pending)
                    pending = b""
            if pending:
                self._stderr_line(pending)
        except (OSError, ValueError) as exc:  # pragma: no cover - pipe errors are rare
            self.log.debug("! stderr read failed: %s", exc)
        finally:
            self._stderr_done.set()

    def _stderr_line(self, raw: bytes) -> None:
        line = raw[:_STDERR_LINE_MAX].decode("utf-8", "replace").rstrip("\r\n")
        if not line.strip():
            return
        self.stderr_tail.append(line)
        self.log.info("%s", line)

    async def wait_stderr(self, timeout: float) -> None:
        """Wait (bounded) until stderr reached EOF, so its tail is complete."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stderr_done.wait(), timeout)

    async def wait_exit(self, timeout: float) -> int | None:
        """Poll for the leader's exit for at most ``timeout`` seconds; return its code."""
        proc = self.proc
        if proc is None:
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.002
        while proc.returncode is None:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return proc.returncode

    def _signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the whole process group; False if nothing was left to signal."""
        if self.pgid is None:
            if self.proc is not None and self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
                return True
            return False
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover - group taken over by another user
            return False
        return True

    def _group_alive(self) -> bool:
        if self.pgid is None:
            return self.proc is not None and self.proc.returncode is None
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        # A group whose members are all zombies still answers signal 0. They are dead
        # already (their parent, often init, reaps them): waiting for them would only
        # stall the shutdown ladder until the SIGKILL deadline.
        return _group_has_live_member(self.pgid)

    async def _wait_group_gone(self, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.002
        while self._group_alive():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return True

    async def shutdown(self, timeout: float = 10.0) -> int | None:
        """Stop the process and its group; idempotent and safe from cancellation.

        The ladder, within ``timeout`` seconds: close stdin and wait up to half of it;
        SIGTERM the process group and wait for the rest; then SIGKILL the group. Members of
        the group that outlive the leader (an ``npx`` child) get the same treatment.
        Returns the leader's exit code.
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
            # let the cancellation through, so no process outlives a cancelled shutdown.
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=timeout + 5)
            raise

    async def _ladder(self, timeout: float) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        if proc.returncode is None and proc.stdin is not None:
            self.log.debug("x closing stdin of pid %s", proc.pid)
            with contextlib.suppress(Exception):
                proc.stdin.close()
            await self.wait_exit(max(0.0, timeout / 2))
        if proc.returncode is None:
            self.log.debug("x SIGTERM to group of pid %s", proc.pid)
            self._signal_group(signal.SIGTERM)
            await self.wait_exit(max(0.0, deadline - loop.time()))
        if proc.returncode is None:
            self.log.warning("x server %s ignored SIGTERM; sending SIGKILL", self.name)
            self._signal_group(signal.SIGKILL)
            await self.wait_exit(5.0)
        # The leader is gone; children in its group (npx's node) must not survive it.
        if self._group_alive():
            self._signal_group(signal.SIGTERM)
            if not await self._wait_group_gone(max(0.1, min(2.0, deadline - loop.time()))):
                self._signal_group(signal.SIGKILL)
                await self._wait_group_gone(5.0)
        await self.wait_stderr(1.0)
        if self._stderr_task is not None and not self._stderr_task.done():
            self._stderr_task.cancel()
        with contextlib.suppress(Exception):
            # Close the transport so asyncio does not warn about an unclosed pipe.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
        self.log.debug("x pid %s exited with %s", proc.pid, proc.returncode)
        return proc.returncode


def _group_has_live_member(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie (Linux ``/proc``;
    elsewhere every member counts as alive)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile, or not ours to read
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
