"""Child processes of stdio servers: spawn, stderr drain, shutdown ladder.

Layer 2 (I/O). One :class:`ServerProcess` per stdio server. It owns:

- the spawn: ``loop.subprocess_exec`` (never a shell, so arguments are never
  interpreted), in a new session and so a new process group, with an environment built
  from a small allow-list of the parent's variables plus the server's own ``env``;
- the pipes, through a protocol rather than streams: stdout bytes are handed to
  ``on_stdout`` as the event loop reads them (no reader task to wake, no stream buffer to
  copy through: a call's response is acted on in the same loop turn it arrives), and
  writes go straight to the stdin pipe;
- stderr: every line goes to the ``mcphost.server.<name>`` logger as it arrives and the
  last 50 lines are kept for error messages;
- the shutdown ladder of the MCP stdio transport ("close the child's stdin, wait; then
  SIGTERM; then SIGKILL"), applied to the whole process group so that ``npx``-launched
  servers (npx runs node as a child) leave no orphan. Every step is bounded, and the
  ladder runs in its own task so a cancelled caller cannot interrupt it half-way.

Exit is detected by polling ``returncode`` rather than waiting for the transport to
close, which also waits for the pipes to close — never, if a grandchild holds them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast

from .errors import ConfigurationError

__all__ = ["ENV_ALLOWLIST", "ServerProcess", "child_environment", "resolve_command"]

logger = logging.getLogger("mcphost.process")

# DESIGN §3: a child inherits only these, plus its own env. Beyond the basics: what makes
# package runners (npx, uvx) and TLS work behind a proxy or a private CA, and the
# per-user folders they keep caches in.
ENV_ALLOWLIST: Final = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
     "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "COMSPEC")
    if sys.platform == "win32"
    else ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
) + (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "PYTHONUTF8",
)
#: Variables passed on by prefix: the package runners' own settings (npm's registry and
#: proxy, uv's and pip's index URL, trusted host, certificate: uvx, pipx and npx start most
#: servers and must reach a private index); XDG folders.
ENV_PREFIXES: Final = ("npm_config_", "NPM_CONFIG_", "UV_", "PIP_", "PIPX_", "XDG_")
STDERR_LINES: Final = 50
#: How long a server gets to exit on its own once its stdin is closed, before SIGTERM (the
#: official SDK waits 2 s too; a server that ignores EOF should not cost half the timeout).
STDIN_GRACE: Final = 2.0
_STDERR_LINE_MAX: Final = 4096
_WRITE_HIGH_WATER: Final = 1 << 20


def child_environment(
    parent: Mapping[str, str], own: Mapping[str, str], *, inherit: bool = False, name: str = ""
) -> dict[str, str]:
    """The environment of a child: the allow-listed parent variables (every one with
    ``inherit``), then ``own``. The names left out are logged once per call at DEBUG."""
    if inherit:
        env = dict(parent)
    else:
        env = {key: parent[key] for key in ENV_ALLOWLIST if key in parent}
        env.update((k, v) for k, v in parent.items() if k.startswith(ENV_PREFIXES))
        if logger.isEnabledFor(logging.DEBUG):
            dropped = sorted(k for k in parent if k not in env)
            if dropped:
                # Names only: values may be secrets.
                logger.debug("%s: not passed to the server: %s", name or "server", ", ".join(dropped))
    env.update(own)
    return env


def resolve_command(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """Find the executable the way the child's PATH would, or raise ConfigurationError.

    Commands run without a shell: ``"npx -y pkg /tmp"`` is one (missing) program, not four
    words; when that is what is wrong, the error says where the arguments go."""
    try:
        return _resolve(command, env, cwd)
    except ConfigurationError:
        first, _, rest = command.strip().partition(" ")
        if rest and shutil.which(first, path=env.get("PATH", os.defpath)) is not None:
            raise ConfigurationError(
                f'command {os.path.basename(first)!r} is followed by its arguments in "command": '
                'put them in "args" (commands run without a shell)'
            ) from None
        raise


def _resolve(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return command
        raise ConfigurationError(f"command {os.path.basename(command)!r} not found or not executable")
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise ConfigurationError(f"command {command!r} not found on PATH")
    return found


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
        memory_limit: int | None = None,
        cpu_limit: int | None = None,
        files_limit: int | None = None,
        process_limit: int | None = None,
        stdin_grace: float = STDIN_GRACE,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.name = name
        #: Applied to every stderr line before it is logged or kept (secrets out).
        self.redact = redact
        self.stdin_grace = stdin_grace
        self.command = command
        self.args = list(args)
        self.env = dict(env)
        self.cwd = cwd
        self.memory_limit = memory_limit
        self.cpu_limit = cpu_limit
        self.files_limit = files_limit
        self.process_limit = process_limit
        self.on_stdout: Callable[[bytes], None] | None = None
        self.on_stdout_eof: Callable[[], None] | None = None
        #: Called once when the leader process exits, even while a grandchild that
        #: inherited its stdout keeps the pipe open (no EOF would ever come).
        self.on_exit: Callable[[], None] | None = None
        #: Called with True when writers should wait (``write_paused``), False when not.
        self.on_write_paused: Callable[[bool], None] | None = None
        self.pgid: int | None = None
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
        executable = resolve_command(self.command, self.env, self.cwd)
        kwargs: dict[str, Any] = {}
        if sys.platform != "win32":
            kwargs["start_new_session"] = True  # own session => own process group
            if self.memory_limit or self.cpu_limit or self.files_limit or self.process_limit:
                kwargs["preexec_fn"] = self._apply_limits
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _ChildProtocol(self),
                executable,
                *self.args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
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
        self.pgid = pid if sys.platform != "win32" else None
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

    def _apply_limits(self) -> None:  # pragma: no cover - runs in the child after fork
        import resource

        # Memory through RLIMIT_DATA, not RLIMIT_AS: V8 reserves gigabytes of address space
        # it never touches, so an address-space limit kills every Node server at start.
        if self.memory_limit:
            resource.setrlimit(resource.RLIMIT_DATA, (self.memory_limit, self.memory_limit))
        if self.cpu_limit:
            # The soft limit sends SIGXCPU (a clear cause); the hard one, a second later, SIGKILL.
            resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_limit, self.cpu_limit + 1))
        if self.files_limit:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.files_limit, self.files_limit))
        if self.process_limit:
            resource.setrlimit(resource.RLIMIT_NPROC, (self.process_limit, self.process_limit))

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

    def _signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the whole process group; False if nothing was left to signal."""
        if self.pgid is None:
            if self._transport is not None and self.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self._transport.send_signal(sig)
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
            return self._transport is not None and self.returncode is None
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

        The ladder, within ``timeout`` seconds: close stdin and wait up to half of it (at
        most ``stdin_grace`` seconds);
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
        transport = self._transport
        if transport is None:
            return None
        pid = transport.get_pid()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        # Descendants that left the group (setsid()) are invisible to killpg: note the
        # whole tree now, while the server still holds it together (Linux /proc).
        strays = [p for p in _descendants(pid) if _pgid_of(p) != self.pgid] if pid else []
        if self.returncode is None and self._stdin is not None:
            self.log.debug("x closing stdin of pid %s", pid)
            with contextlib.suppress(Exception):
                self._stdin.close()
            await self.wait_exit(max(0.0, min(timeout / 2, self.stdin_grace)))
        if self.returncode is None:
            self.log.debug("x SIGTERM to group of pid %s", pid)
            self._signal_group(signal.SIGTERM)
            await self.wait_exit(max(0.0, deadline - loop.time()))
        if self.returncode is None:
            self.log.warning("x server %s ignored SIGTERM; sending SIGKILL", self.name)
            self._signal_group(signal.SIGKILL)
            await self.wait_exit(5.0)
        # The leader is gone; children in its group (npx's node) must not survive it.
        if self._group_alive():
            self._signal_group(signal.SIGTERM)
            if not await self._wait_group_gone(max(0.1, min(2.0, deadline - loop.time()))):
                self._signal_group(signal.SIGKILL)
                await self._wait_group_gone(5.0)
        for stray in strays:
            # Its own session: no signal to the group reached it. Only processes that were
            # descendants when the shutdown began can be found (docs/reliability.md).
            with contextlib.suppress(OSError):
                os.kill(stray, signal.SIGKILL)
                self.log.debug("x killed pid %s, which had left the group", stray)
        await self.wait_stderr(1.0)
        with contextlib.suppress(Exception):
            # Close the pipes so that asyncio does not warn about an unclosed transport.
            transport.close()
        self.log.debug("x pid %s exited with %s", pid, self.returncode)
        return self.returncode


def _proc_stat(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    return stat[stat.rfind(b")") + 2 :].split()


def _pgid_of(pid: int) -> int | None:
    fields = _proc_stat(pid)
    return int(fields[2]) if fields and len(fields) > 2 else None


def _descendants(root: int) -> list[int]:
    """Live descendants of ``root`` (Linux ``/proc``; elsewhere none are found)."""
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for pid in entries:
        fields = _proc_stat(pid)
        if fields and len(fields) > 1 and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


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
