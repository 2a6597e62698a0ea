"""What differs between operating systems when a server runs as a process tree.

Layer 2, the stdio room. The shutdown ladder (:mod:`.process`) is written once, against
:class:`ProcessTree`: start the child as the leader of a tree of its own, ask the tree to
stop, kill the tree, tell whether anything of it is still alive, find the processes that
left it. Three implementations, every system call injected so that each is tested on any
system (``tests/transports/test_stdio_platform.py``; ``docs/platforms.md`` says what is
verified where):

- :class:`Posix`: process groups (``start_new_session``, ``killpg``), and a process table
  read from Linux's ``/proc`` or, elsewhere (macOS, the BSDs), from ``ps``;
- :class:`~.windows.Windows`: a new process group and a Job Object that holds every
  process the server starts, killed whole;
- :class:`LeaderOnly`: what is left on a system with neither (only the leader is reached).

Descendants that leave the tree (``setsid()``, a daemon's double fork, which makes them
orphans: no longer descendants either) are found by a marker: every server's environment
carries :data:`MARKER` with a value of its own (:func:`new_marker`), which its descendants
inherit; a sweep of the process table for it finds them wherever they went (Linux
``/proc/<pid>/environ``, ``ps -E`` elsewhere). A child subreaper
(``PR_SET_CHILD_SUBREAPER``) was not chosen: it is a setting of the whole application
process, which would then inherit (and have to reap) every orphan of every library it
runs, and Linux-only. What escapes the marker: a process that clears its environment
before it leaves, or runs as another user.

A tree is named by its leader's pid: with ``start_new_session`` the process group id is
the leader's pid, and it stays so after the leader exits while members remain.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, Protocol

__all__ = ["LIMIT_KINDS", "MARKER", "NO_LIMITS", "LeaderOnly", "Limits", "Posix", "ProcessTree", "current",
           "new_marker"]

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
#: The environment variable that marks every process of one server's tree.
MARKER: Final = "MCPHOST_PROCESS_TREE"


def new_marker() -> str:
    """A value of :data:`MARKER` no other server (of this host or another) has."""
    # os.urandom is what secrets.token_hex reads; importing secrets would load hashlib and
    # OpenSSL's libcrypto (over 1 MB resident) into every host for sixteen hex digits.
    return f"{os.getpid()}-{os.urandom(8).hex()}"


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
        """Ask every process of the tree to stop (SIGTERM); False: nothing was left, or
        it could not be asked (the ladder then kills without waiting)."""

    def kill(self, leader: int) -> bool:
        """Kill every process of the tree at once (SIGKILL); False: nothing was left."""

    def alive(self, leader: int) -> bool:
        """Whether a process of the tree is still alive (zombies count as gone)."""

    def adopt(self, leader: int) -> None:
        """The leader was just spawned: take hold of its tree (Windows: its Job Object)."""

    def release(self, leader: int) -> None:
        """The ladder is over: let go of what :meth:`adopt` holds."""

    def strays(self, leader: int, marker: str | None = None) -> list[int]:
        """Live processes of the tree that left it, so that a signal to the tree does not
        reach them: descendants of ``leader`` in another group (``setsid()``), and any
        process, orphaned or not, whose environment holds ``MARKER=marker``. Empty where
        they cannot be found."""

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
        killpg: Callable[[int, int], None] | None = None,
        kill: Callable[[int, int], None] = os.kill,
        listdir: Callable[[str], list[str]] = os.listdir,
        read: Callable[[str], bytes] = _read_proc,
        waitpid: Callable[[int, int], Any] = os.waitpid,
        ps: Callable[[Sequence[str]], str] | None = None,
    ) -> None:
        self._killpg = killpg if killpg is not None else os.killpg
        self._kill = kill
        self._listdir = listdir
        self._read = read
        self._waitpid = waitpid
        #: Runs ``ps`` with these arguments and returns its output: the process table of
        #: a system without ``/proc`` (macOS, the BSDs). None: ``/proc``.
        self._ps = ps
        self._born: dict[int, int] = {}  # leader -> its start time (clock ticks since boot)

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
        return any(pgrp == leader and state not in (b"Z", b"X") for state, _, pgrp, _ in table.values())

    def adopt(self, leader: int) -> None:
        # The new session made the group; the leader's start time bounds the sweeps.
        row = None if self._ps is not None else self._stat(leader)
        if row is not None:
            self._born[leader] = row[3]

    def release(self, leader: int) -> None:
        self._born.pop(leader, None)

    def strays(self, leader: int, marker: str | None = None) -> list[int]:
        table = self._table()
        if table is None:
            return []
        children: dict[int, list[int]] = {}
        for pid, (state, ppid, _, _) in table.items():
            if state not in (b"Z", b"X"):
                children.setdefault(ppid, []).append(pid)
        found: list[int] = []
        todo = [leader]
        while todo:
            for child in children.get(todo.pop(), []):
                if table[child][2] != leader:
                    found.append(child)
                todo.append(child)
        if marker:
            own = os.getpid()
            for pid in self._marked(f"{MARKER}={marker}".encode(), table, self._born.get(leader, 0)):
                entry = table.get(pid)
                if pid != own and entry is not None and entry[2] != leader and entry[0] not in (b"Z", b"X") \
                        and pid not in found:
                    found.append(pid)
        return found

    def _marked(self, needle: bytes, table: dict[int, tuple[bytes, int, int, int]], born: int) -> list[int]:
        """The processes whose environment holds ``needle`` (``NAME=value``); on Linux only
        those started since ``born`` (the leader's start time) are read."""
        if self._ps is not None:
            # Each line: the pid, the command, then (for our own processes) the environment.
            out = self._ps(["-axEww", "-o", "pid=,command="]).encode("utf-8", "replace")
            return [int(line.split(None, 1)[0]) for line in out.splitlines()
                    if needle in line.split() and line.split(None, 1)[0].isdigit()]
        found = []
        for pid, entry in table.items():
            if entry[3] < born:
                continue  # older than the server: cannot have inherited its marker
            try:
                environ = self._read(f"/proc/{pid}/environ")
            except OSError:
                continue  # gone, or another user's
            if needle in environ.split(b"\0"):
                found.append(pid)
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

    def _table(self) -> dict[int, tuple[bytes, int, int, int]] | None:
        """pid -> (state, parent pid, process group, start time) for every process (the
        start time: 0 where unknown); None without a table."""
        if self._ps is not None:
            return _ps_table(self._ps)
        try:
            entries = self._listdir("/proc")
        except OSError:
            return None
        table: dict[int, tuple[bytes, int, int, int]] = {}
        for entry in entries:
            if entry.isdigit():
                row = self._stat(int(entry))
                if row is not None:
                    table[int(entry)] = row
        return table

    def _stat(self, pid: int) -> tuple[bytes, int, int, int] | None:
        """(state, parent pid, process group, start time) of one process from ``/proc``."""
        try:
            stat = self._read(f"/proc/{pid}/stat")
        except OSError:
            return None  # exited meanwhile, or not ours to read
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) <= 2:
            return None
        # Field 22 is the start time (clock ticks since boot); 0 where not shown.
        return fields[0], int(fields[1]), int(fields[2]), int(fields[19]) if len(fields) > 19 else 0


def _ps_table(ps: Callable[[Sequence[str]], str]) -> dict[int, tuple[bytes, int, int, int]] | None:
    try:
        out = ps(["-axo", "pid=,ppid=,pgid=,stat="])
    except (OSError, subprocess.SubprocessError):
        return None
    table: dict[int, tuple[bytes, int, int, int]] = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            table[int(fields[0])] = (fields[3][:1].encode(), int(fields[1]), int(fields[2]), 0)
    return table


def run_ps(args: Sequence[str]) -> str:  # pragma: no cover - macOS and the BSDs
    """``ps`` with ``args``: its output (bounded in time; a blocking call of tens of
    milliseconds, made only when a server stops)."""
    return subprocess.run(["ps", *args], capture_output=True, text=True, timeout=5, check=False).stdout


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

    def adopt(self, leader: int) -> None:
        return None

    def release(self, leader: int) -> None:
        return None

    def strays(self, leader: int, marker: str | None = None) -> list[int]:
        return []

    def kill_pid(self, pid: int) -> bool:
        return self._signal(pid, getattr(signal, "SIGKILL", signal.SIGTERM))

    def reap(self, leader: int) -> None:
        return None


def current() -> ProcessTree:
    """The implementation for the system this runs on."""
    if sys.platform == "win32":
        from .windows import Windows

        return Windows()
    if not hasattr(os, "killpg"):  # pragma: no cover - a POSIX without process groups
        return LeaderOnly()
    return Posix() if sys.platform.startswith("linux") else Posix(ps=run_ps)
