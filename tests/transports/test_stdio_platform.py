"""The operating system's side of a server's process tree, with the system calls injected:
nothing is spawned or signalled here."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from mcphost.errors import ConfigurationError
from mcphost.transports.stdio.platform import NO_LIMITS, LeaderOnly, Limits, Posix


class FakeSystem:
    """A process table (/proc) and the signals sent, for :class:`Posix`."""

    def __init__(self, table: dict[int, tuple[str, int, int]] | None) -> None:
        #: pid -> (state, parent pid, process group); None: a system without /proc.
        self.table = table
        self.sent: list[tuple[str, int, int]] = []
        #: pid -> its environment as /proc/<pid>/environ gives it.
        self.environ: dict[int, bytes] = {}
        #: pid -> its start time (field 22 of its stat); absent: a short stat line.
        self.starts: dict[int, int] = {}
        self.environ_read: list[int] = []
        self.reaped: list[int] = []
        self.gone_groups: set[int] = set()

    def killpg(self, pgid: int, sig: int) -> None:
        members = [pid for pid, (_, _, pg) in (self.table or {}).items() if pg == pgid]
        if pgid in self.gone_groups or (self.table is not None and not members):
            raise ProcessLookupError(pgid)
        self.sent.append(("group", pgid, sig))

    def kill(self, pid: int, sig: int) -> None:
        if self.table is not None and pid not in self.table:
            raise ProcessLookupError(pid)
        self.sent.append(("pid", pid, sig))

    def listdir(self, path: str) -> list[str]:
        assert path == "/proc"
        if self.table is None:
            raise FileNotFoundError(path)
        return [*map(str, self.table), "self", "meminfo"]

    def read(self, path: str) -> bytes:
        pid = int(path.split("/")[2])
        if self.table is None or pid not in self.table:
            raise FileNotFoundError(path)
        if path.endswith("/environ"):
            self.environ_read.append(pid)
            if pid not in self.environ:
                raise PermissionError(path)  # another user's
            return self.environ[pid]
        state, ppid, pgrp = self.table[pid]
        # comm may hold spaces and parentheses: the fields start after the last ")".
        if pid in self.starts:  # fields 6 to 21, then 22: the start time
            return f"{pid} (node (x) y) {state} {ppid} {pgrp} {'0 ' * 16}{self.starts[pid]} 0 0".encode()
        return f"{pid} (node (x) y) {state} {ppid} {pgrp} 0 0 0".encode()

    def waitpid(self, pid: int, options: int) -> Any:
        assert options == os.WNOHANG
        self.reaped.append(pid)
        return (0, 0)

    def posix(self) -> Posix:
        return Posix(killpg=self.killpg, kill=self.kill, listdir=self.listdir, read=self.read,
                     waitpid=self.waitpid)


def test_terminate_and_kill_signal_the_whole_group() -> None:
    system = FakeSystem({100: ("S", 1, 100), 101: ("S", 100, 100)})
    tree = system.posix()
    assert tree.terminate(100) and tree.kill(100)
    assert system.sent == [("group", 100, signal.SIGTERM), ("group", 100, signal.SIGKILL)]


def test_a_group_that_is_gone_is_not_signalled_and_says_so() -> None:
    system = FakeSystem({})
    tree = system.posix()
    assert not tree.terminate(100)
    assert not tree.kill(100)
    assert not tree.alive(100)


def test_a_group_of_zombies_is_not_alive_but_one_live_member_is() -> None:
    system = FakeSystem({100: ("Z", 1, 100), 101: ("Z", 100, 100)})
    assert not system.posix().alive(100)  # signal 0 still reaches it, /proc says all dead
    system.table = {100: ("Z", 1, 100), 101: ("S", 100, 100)}
    assert system.posix().alive(100)  # npx's node outlives npx


def test_without_proc_every_member_that_answers_counts_as_alive() -> None:
    system = FakeSystem(None)
    tree = system.posix()
    assert tree.alive(100)
    system.gone_groups.add(100)
    assert not tree.alive(100)
    assert tree.strays(100) == []  # nothing can be found


def test_strays_are_the_descendants_that_left_the_group() -> None:
    system = FakeSystem({
        100: ("S", 1, 100),      # the leader
        101: ("S", 100, 100),    # its child, in the group
        102: ("S", 101, 102),    # a grandchild that called setsid()
        103: ("S", 102, 102),    # ...and its own child
        104: ("Z", 100, 104),    # a zombie that left: already dead
        200: ("S", 1, 200),      # someone else's process
    })
    assert sorted(system.posix().strays(100)) == [102, 103]


def test_kill_pid_and_reap() -> None:
    system = FakeSystem({102: ("S", 1, 102)})
    tree = system.posix()
    assert tree.kill_pid(102) and not tree.kill_pid(999)
    assert system.sent == [("pid", 102, signal.SIGKILL)]
    tree.reap(100)
    assert system.reaped == [100]


def test_the_child_gets_a_session_of_its_own_and_limits_only_when_set() -> None:
    tree = FakeSystem({}).posix()
    assert tree.spawn_options(NO_LIMITS) == {"start_new_session": True}
    options = tree.spawn_options(Limits(memory=1 << 20))
    assert options["start_new_session"] is True and callable(options["preexec_fn"])


@pytest.mark.parametrize(("limits", "code", "tail", "hit"), [
    (Limits(cpu=1), -signal.SIGXCPU, [], "cpu"),
    (Limits(cpu=1), -signal.SIGKILL, [], "cpu"),      # the hard limit, a second later
    (Limits(), -signal.SIGXCPU, [], None),            # no CPU limit was set
    (Limits(memory=1 << 20), 1, ["MemoryError"], "memory"),
    (Limits(memory=1 << 20), -signal.SIGABRT, [], "memory"),
    (Limits(files=16), 1, ["OSError: [Errno 24] Too many open files"], "files"),
    (Limits(processes=4), 1, ["RuntimeError: can't start new thread"], "processes"),
    (Limits(memory=1 << 20), 0, ["MemoryError"], None),  # it exited fine
    (Limits(memory=1 << 20), None, ["MemoryError"], None),
    (Limits(memory=1 << 20), 3, ["plain failure"], None),
])
def test_the_limit_a_process_died_of(limits: Limits, code: int | None, tail: list[str], hit: str | None) -> None:
    assert FakeSystem({}).posix().limit_hit(limits, code, tail) == hit


def test_leader_only_reaches_the_leader_and_knows_nothing_more() -> None:
    sent: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        if pid == 999:
            raise OSError("no such process")
        sent.append((pid, sig))

    tree = LeaderOnly(kill=kill)
    assert tree.spawn_options(Limits(memory=1)) == {}  # no limit applies there
    assert tree.terminate(100) and tree.kill(100) and not tree.kill(999)
    assert [pid for pid, _ in sent] == [100, 100]
    assert not tree.alive(100) and tree.strays(100) == []
    assert tree.limit_hit(Limits(cpu=1), -9, []) is None


def test_processes_that_carry_the_marker_are_strays_wherever_they_went() -> None:
    # 100 leads the tree; 300 double-forked out of it (orphaned: its parent is init) but
    # kept the environment; 301 is a zombie with it; 400 is another server's; 500 is
    # another user's (its environment cannot be read); 102 is in the group (the group
    # signals reach it).
    mark = b"MCPHOST_PROCESS_TREE=1-abc"
    system = FakeSystem({100: ("S", 1, 100), 102: ("S", 100, 100), 300: ("S", 1, 300),
                         301: ("Z", 1, 301), 400: ("S", 1, 400), 500: ("S", 1, 500)})
    system.environ = {100: b"PATH=/bin\0" + mark + b"\0", 102: mark + b"\0", 300: b"A=1\0" + mark + b"\0",
                      301: mark + b"\0", 400: b"MCPHOST_PROCESS_TREE=1-abcd\0"}
    tree = system.posix()
    assert tree.strays(100, "1-abc") == [300]
    assert tree.strays(100) == []  # without the marker only descendants are found
    assert tree.kill_pid(300) and system.sent == [("pid", 300, signal.SIGKILL)]


def test_without_proc_the_table_and_the_marker_come_from_ps() -> None:
    # macOS and the BSDs: ``ps -axo pid=,ppid=,pgid=,stat=`` for the table, ``ps -axEww``
    # for the environments (shown after the command, for our own processes only).
    calls: list[list[str]] = []

    def ps(args: Any) -> str:
        calls.append(list(args))
        if args[0] == "-axo":
            return ("    1     0     1 Ss\n  100     1   100 S\n  101   100   100 S+\n  102   100   102 S\n"
                    "  300     1   300 S\n  301     1   301 Z\n  400     1   400 S\n")
        return ("  100 node server.js PATH=/bin MCPHOST_PROCESS_TREE=7-x\n"
                "  300 /usr/bin/daemon --fork HOME=/ MCPHOST_PROCESS_TREE=7-x\n"
                "  301 (zombie)\n  400 other MCPHOST_PROCESS_TREE=7-xy\n  nonsense\n")

    system = FakeSystem(None)
    tree = Posix(killpg=system.killpg, kill=system.kill, ps=ps)
    assert tree.strays(100, "7-x") == [102, 300]  # 102 by descent (setsid), 300 by the marker
    assert calls == [["-axo", "pid=,ppid=,pgid=,stat="], ["-axEww", "-o", "pid=,command="]]
    assert tree.alive(100)


def test_a_failing_ps_finds_nothing_rather_than_raising() -> None:
    def ps(args: Any) -> str:
        raise OSError("no ps")

    tree = Posix(killpg=lambda g, s: None, ps=ps)
    assert tree.strays(100, "7-x") == []
    assert tree.alive(100)  # the group answers: it counts as alive


class FakeJobs:
    """The Win32 job object calls, for :class:`Windows`: jobs hold pids; what is called."""

    def __init__(self) -> None:
        self.jobs: dict[int, set[int]] = {}
        self.calls: list[tuple[str, int]] = []
        self.fail: set[str] = set()
        self.console = True

    def create_job(self) -> int:
        if "create" in self.fail:
            raise OSError("access denied")
        handle = 10 + len(self.jobs)
        self.jobs[handle] = set()
        return handle

    def assign(self, job: int, pid: int) -> None:
        if "assign" in self.fail:
            raise OSError("the process is in another job")
        self.jobs[job].add(pid)
        self.calls.append(("assign", pid))

    def active(self, job: int) -> int:
        return len(self.jobs[job])

    def terminate(self, job: int) -> None:
        self.calls.append(("terminate", job))
        self.jobs[job].clear()

    def close(self, job: int) -> None:
        self.calls.append(("close", job))
        self.jobs[job].clear()  # KILL_ON_JOB_CLOSE

    def ctrl_break(self, pid: int) -> None:
        if not self.console:
            raise OSError("no console")
        self.calls.append(("break", pid))


def test_windows_puts_the_tree_in_a_job_and_kills_the_job() -> None:
    from mcphost.transports.stdio.windows import CREATE_NEW_PROCESS_GROUP, Windows

    jobs = FakeJobs()
    killed: list[tuple[int, int]] = []
    tree = Windows(api=jobs, kill=lambda pid, sig: killed.append((pid, sig)))
    assert tree.spawn_options(Limits(memory=1 << 20)) == {"creationflags": CREATE_NEW_PROCESS_GROUP}
    tree.adopt(500)
    job = next(iter(jobs.jobs))
    jobs.jobs[job] |= {501, 502}  # npx's node and its child: in the job from birth
    assert tree.alive(500)
    assert tree.terminate(500) and jobs.calls[-1] == ("break", 500)  # CTRL_BREAK_EVENT to its group
    jobs.jobs[job].discard(500)  # the leader went; its children did not
    assert tree.alive(500)
    assert tree.kill(500) and jobs.calls[-1] == ("terminate", job)
    assert not tree.alive(500) and not tree.kill(500) and not tree.terminate(500)
    assert tree.strays(500, "marker") == []  # nothing leaves a job
    tree.release(500)
    assert jobs.calls[-1] == ("close", job) and killed == []
    assert tree.kill_pid(77) and killed == [(77, 15)]  # TerminateProcess, no SIGKILL name
    assert tree.limit_hit(Limits(cpu=1), -9, []) is None


def test_windows_without_a_console_or_a_job_still_stops_the_leader() -> None:
    from mcphost.transports.stdio.windows import Windows

    jobs = FakeJobs()
    jobs.console = False
    killed: list[tuple[int, int]] = []
    tree = Windows(api=jobs, kill=lambda pid, sig: killed.append((pid, sig)))
    tree.adopt(600)
    assert not tree.terminate(600)  # no console shared: nothing asked, the ladder's kill follows
    jobs.fail = {"assign"}
    tree.adopt(700)  # not in a job (already in another one): only the leader is reached
    assert ("close", 11) in jobs.calls
    assert not tree.alive(700)
    assert tree.kill(700) and killed == [(700, 15)]
    jobs.fail = {"create"}
    tree.adopt(800)
    tree.release(800)
    assert tree.kill(800) and killed[-1] == (800, 15)


def _files(*paths: str) -> Any:
    known = {p.lower() for p in paths}
    return lambda path: path.lower() in known


def test_windows_finds_commands_through_pathext_and_runs_npm_shims_through_node() -> None:
    from mcphost.transports.stdio.command import command_line

    node_dir = "C:\\Program Files\\nodejs"
    env = {"Path": f"C:\\Windows\\system32;\"{node_dir}\";C:\\Users\\u\\.local\\bin",
           "PATHEXT": ".COM;.EXE;.BAT;.CMD"}
    isfile = _files(f"{node_dir}\\npx.cmd", f"{node_dir}\\node.exe",
                    f"{node_dir}\\node_modules\\npm\\bin\\npx-cli.js", "C:\\Users\\u\\.local\\bin\\uvx.exe",
                    "C:\\tools\\serve.bat", "D:\\work\\bin\\server.exe")
    run = lambda command, args, cwd=None: command_line(command, args, env, cwd, windows=True, isfile=isfile)  # noqa: E731
    # npx is npx.cmd; cmd.exe is skipped: the node.exe beside it runs npm's script.
    assert run("npx", ["-y", "@scope/server", "a&b"]) == [
        f"{node_dir}\\node.exe", f"{node_dir}\\node_modules\\npm\\bin\\npx-cli.js", "-y", "@scope/server", "a&b"]
    assert run("uvx", ["mcp-server-git"]) == ["C:\\Users\\u\\.local\\bin\\uvx.EXE", "mcp-server-git"]
    assert run("UVX.EXE", []) == ["C:\\Users\\u\\.local\\bin\\UVX.EXE"]
    assert run("bin\\server", ["--x"], cwd="D:\\work") == ["D:\\work\\bin\\server.EXE", "--x"]
    assert run("C:\\tools\\serve.bat", ["plain", "with space"]) == ["C:\\tools\\serve.bat", "plain", "with space"]
    with pytest.raises(ConfigurationError, match=r"args\[1\] holds '&'.*cmd.exe"):
        run("C:\\tools\\serve.bat", ["ok", "x & calc.exe"])
    with pytest.raises(ConfigurationError, match="not found on PATH"):
        run("missing", [])
    with pytest.raises(ConfigurationError, match="not found"):
        run("C:\\nowhere\\x", [])


def test_the_platform_room_imports_where_posix_calls_do_not_exist(tmp_path: Any) -> None:
    # As on Windows: no SIGKILL, killpg, setsid, WNOHANG; sys.platform says win32. The room
    # imports, picks the job-object tree, and names no missing call until one is made.
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import os, signal, sys, asyncio, subprocess, shutil  # the standard library is Windows-ready there\n"
        "for name in ('SIGKILL', 'SIGXCPU'):\n"
        "    delattr(signal, name)\n"
        "for name in ('killpg', 'setsid', 'WNOHANG', 'getpgid'):\n"
        "    delattr(os, name)\n"
        "sys.platform = 'win32'\n"
        "import mcphost\n"
        "from mcphost.transports.stdio import StdioTransport, platform\n"
        "from mcphost.transports.stdio.windows import Windows\n"
        "tree = platform.current()\n"
        "assert isinstance(tree, Windows), tree\n"
        "print(sorted(tree.spawn_options(platform.NO_LIMITS)))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['creationflags']"


def test_the_marker_sweep_reads_only_processes_younger_than_the_server() -> None:
    # A process older than the server cannot have inherited its environment: the sweep
    # does not read it (reading every environment of a busy machine costs milliseconds).
    mark = b"MCPHOST_PROCESS_TREE=1-abc"
    system = FakeSystem({50: ("S", 1, 50), 100: ("S", 1, 100), 300: ("S", 1, 300)})
    system.starts = {50: 1000, 100: 5000, 300: 5100}
    system.environ = {50: mark, 100: mark, 300: mark}
    tree = system.posix()
    tree.adopt(100)
    assert tree.strays(100, "1-abc") == [300]
    assert 50 not in system.environ_read
    tree.release(100)
    system.environ_read.clear()
    assert tree.strays(100, "1-abc") == [50, 300]  # not adopted: every process is read
    assert 50 in system.environ_read
