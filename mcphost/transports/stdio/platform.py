"""What differs between operating systems when a server runs as a process tree.

Layer 2, the stdio room. The shutdown ladder (:mod:`.process`) is written once, against
:class:`ProcessTree`: start the child as the leader of a tree of its own, ask the tree to
stop, kill the tree, tell whether anything of it is still alive, find the descendants that
left it. :class:`Posix` does this with process groups (``start_new_session``,
``killpg``) and, where there is one, Linux's ``/proc``; :class:`LeaderOnly` is what is
left where neither exists (Windows today: only the leader is stopped, see
``docs/reliability.md``). Every system call is injected, so an implementation is tested
without spawning anything (``tests/transports/test_stdio_platform.py``) and a Windows
(job objects) or macOS (``proc_listpids``) one is added beside these with its own fakes.

A tree is named by its leader's pid: with ``start_new_session`` the process group id is
the leader's pid, and it stays so after the leader exits while members remain.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, Protocol

__all__ = ["LIMIT_KINDS", "NO_LIMITS", "LeaderOnly", "Limits", "Posix", "ProcessTree", "current"]

logger = logging.getLogger("mcphost.transports.stdio.platform")


class Limits(NamedTuple):
    """Resource limits of a server's process (``limits`` in mcp.json); None: no limit."""

    memory: int | None = None
    cpu: int | None = None
    files: int | None = None
    processes: int | None = None


NO_LIMITS: Final = Limits()

#: What :meth:`ProcessTree.limit_hit` may answer: the limit a process most likely died of.
LIMIT_KINDS: Final = ("memory", "cpu", "files", "processes")


class ProcessTree(Protocol):
    """The operating system's side of one server's process tree."""

    def spawn_options(self, limits: Limits) -> dict[str, Any]:
        """Keyword arguments for ``subprocess_exec`` that make the child the leader of a
        tree of its own (so that signals reach its children, and not the host) under
        ``limits`` (where the system has them)."""

    def limit_hit(self, limits: Limits, exit_code: int | None, tail: Sequence[str]) -> str | None:
        """Which of ``limits`` the process most likely died of (one of
        :data:`LIMIT_KINDS`), from its exit code and last stderr lines; None: none."""

    def terminate(self, leader: int) -> bool:
        """Ask every process of the tree to stop (SIGTERM); False: nothing was left."""

    def kill(self, leader: int) -> bool:
        """Kill every process of the tree at once (SIGKILL); False: nothing was left."""

    def alive(self, leader: int) -> bool:
        """Whether a process of the tree is still alive (zombies count as gone)."""

    def strays(self, leader: int) -> list[int]:
        """Live descendants of ``leader`` that left its tree (``setsid()``): a signal to
        the tree does not reach them. Empty where they cannot be found."""

    def kill_pid(self, pid: int) -> bool:
        """Kill one process (a stray); False if it was already gone."""

    def reap(self, leader: int) -> None:
        """Collect the exit of a leader that is our own child, outside an event loop (at
        interpreter exit), so that a dead leader does not keep its tree answering."""


def _read_proc(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class Posix:
    """Process groups and signals; ``/proc`` (Linux) for zombies and strays."""

    def __init__(
        self,
        *,
        killpg: Callable[[int, int], None] = os.killpg if sys.platform != "win32" else lambda g, s: None,
        kill: Callable[[int, int], None] = os.kill,
        listdir: Callable[[str], list[str]] = os.listdir,
        read: Callable[[str], bytes] = _read_proc,
        waitpid: Callable[[int, int], Any] = os.waitpid,
    ) -> None:
        self._killpg = killpg
        self._kill = kill
        self._listdir = listdir
        self._read = read
        self._waitpid = waitpid

    def spawn_options(self, limits: Limits) -> dict[str, Any]:
        options: dict[str, Any] = {"start_new_session": True}  # a new session: a new process group
        if any(limits):
            options["preexec_fn"] = functools.partial(_apply_limits, limits)
        return options

    def limit_hit(self, limits: Limits, exit_code: int | None, tail: Sequence[str]) -> str | None:
        if exit_code is None or exit_code == 0:
            return None
        text = "\n".join(tail[-20:])
        if limits.cpu and exit_code in (-signal.SIGXCPU, -signal.SIGKILL):
            return "cpu"  # the soft limit sends SIGXCPU, the hard one (a second later) SIGKILL
        if limits.memory and (_OOM.search(text) or exit_code in (-signal.SIGSEGV, -signal.SIGABRT)):
            return "memory"
        if limits.files and _EMFILE.search(text):
            return "files"
        if limits.processes and _NPROC.search(text):
            return "processes"
        return None

    def _signal(self, leader: int, sig: int) -> bool:
        try:
            self._killpg(leader, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover - the group id was taken by another user
            return False
        return True

    def terminate(self, leader: int) -> bool:
        return self._signal(leader, signal.SIGTERM)

    def kill(self, leader: int) -> bool:
        return self._signal(leader, signal.SIGKILL)

    def alive(self, leader: int) -> bool:
        if not self._signal(leader, 0):
            return False
        # A group whose members are all zombies still answers signal 0. They are dead
        # already (their parent, often init, reaps them): waiting for them would only
        # stall the ladder until its SIGKILL deadline.
        table = self._table()
        if table is None:
            return True  # no /proc: every member that answers counts as alive
        return any(pgrp == leader and state not in (b"Z", b"X") for state, _, pgrp in table.values())

    def strays(self, leader: int) -> list[int]:
        table = self._table()
        if table is None:
            return []
        children: dict[int, list[int]] = {}
        for pid, (state, ppid, _) in table.items():
            if state not in (b"Z", b"X"):
                children.setdefault(ppid, []).append(pid)
        found: list[int] = []
        todo = [leader]
        while todo:
            for child in children.get(todo.pop(), []):
                if table[child][2] != leader:
                    found.append(child)
                todo.append(child)
        return found

    def kill_pid(self, pid: int) -> bool:
        try:
            self._kill(pid, signal.SIGKILL)
        except OSError:
            return False
        return True

    def reap(self, leader: int) -> None:
        try:
            self._waitpid(leader, os.WNOHANG)
        except OSError:
            pass  # not our child, or reaped already

    def _table(self) -> dict[int, tuple[bytes, int, int]] | None:
        """pid -> (state, parent pid, process group) for every process; None without /proc."""
        try:
            entries = self._listdir("/proc")
        except OSError:
            return None
        table: dict[int, tuple[bytes, int, int]] = {}
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                stat = self._read(f"/proc/{entry}/stat")
            except OSError:
                continue  # exited meanwhile, or not ours to read
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2:
                table[int(entry)] = (fields[0], int(fields[1]), int(fields[2]))
        return table


_OOM: Final = re.compile(r"(?i)out of memory|MemoryError|allocation failed|cannot allocate memory|ENOMEM")
_EMFILE: Final = re.compile(r"(?i)too many open files|EMFILE")
_NPROC: Final = re.compile(r"(?i)resource temporarily unavailable|EAGAIN|can't start new thread")


def _apply_limits(limits: Limits) -> None:  # pragma: no cover - runs in the child after fork
    import resource

    # Memory through RLIMIT_DATA, not RLIMIT_AS: V8 reserves gigabytes of address space
    # it never touches, so an address-space limit kills every Node server at start.
    if limits.memory:
        resource.setrlimit(resource.RLIMIT_DATA, (limits.memory, limits.memory))
    if limits.cpu:
        # The soft limit sends SIGXCPU (a clear cause); the hard one, a second later, SIGKILL.
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu, limits.cpu + 1))
    if limits.files:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.files, limits.files))
    if limits.processes:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))


class LeaderOnly:
    """Where there are no process groups: only the leader is reached (``os.kill``, which
    terminates the process on Windows); its children cannot be found or signalled."""

    def __init__(self, *, kill: Callable[[int, int], None] = os.kill) -> None:
        self._kill = kill

    def spawn_options(self, limits: Limits) -> dict[str, Any]:
        return {}  # no limit applies (docs/reliability.md)

    def limit_hit(self, limits: Limits, exit_code: int | None, tail: Sequence[str]) -> str | None:
        return None

    def _signal(self, leader: int, sig: int) -> bool:
        try:
            self._kill(leader, sig)
        except OSError:
            return False
        return True

    def terminate(self, leader: int) -> bool:
        return self._signal(leader, signal.SIGTERM)

    def kill(self, leader: int) -> bool:
        return self._signal(leader, getattr(signal, "SIGKILL", signal.SIGTERM))

    def alive(self, leader: int) -> bool:
        return False  # nothing beyond the leader is known; its own exit is watched directly

    def strays(self, leader: int) -> list[int]:
        return []

    def kill_pid(self, pid: int) -> bool:
        return self._signal(pid, getattr(signal, "SIGKILL", signal.SIGTERM))

    def reap(self, leader: int) -> None:
        return None


def current() -> ProcessTree:
    """The implementation for the system this runs on."""
    return LeaderOnly() if sys.platform == "win32" else Posix()
