"""ServerProcess on its own: the pipes as a protocol, stderr, write back-pressure."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from mcphost.transports.stdio.platform import Posix
from mcphost.transports.stdio.process import ServerProcess

pytestmark = pytest.mark.usefixtures("no_leftovers")


def child(code: str) -> ServerProcess:
    return ServerProcess("t", sys.executable, ["-c", code], env=dict(os.environ))


async def test_stdout_is_pushed_in_order_then_eof_once() -> None:
    proc = child("import sys\nfor i in range(3): sys.stdout.write(f'line {i}\\n'); sys.stdout.flush()")
    chunks: list[bytes] = []
    ends: list[bool] = []
    eof = asyncio.Event()

    def on_eof() -> None:
        ends.append(True)
        eof.set()

    proc.on_stdout = chunks.append
    proc.on_stdout_eof = on_eof
    await proc.start()
    assert await proc.wait_exit(10) == 0
    await asyncio.wait_for(eof.wait(), 10)
    assert b"".join(chunks) == b"line 0\nline 1\nline 2\n"
    assert ends == [True]
    await proc.shutdown(2)


async def test_stderr_lines_are_logged_and_kept_with_a_last_partial_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcphost.server.t")
    proc = child("import sys\nsys.stderr.write('first\\n\\n  \\nsecond\\r\\nno newline at the end')")
    await proc.start()
    assert await proc.wait_exit(10) == 0
    await proc.wait_stderr(5)
    assert proc.stderr_lines() == ["first", "second", "no newline at the end"]
    logged = [r.getMessage() for r in caplog.records if r.name == "mcphost.server.t"]
    assert "first" in logged and "no newline at the end" in logged
    await proc.shutdown(2)


async def test_writes_past_the_high_water_mark_make_writers_wait_until_the_child_goes() -> None:
    # The child never reads its stdin: past 1 MiB queued, writers are asked to wait, and
    # drain() returns once the pipe is gone (nothing waits forever on a dead child).
    proc = child("import time\ntime.sleep(30)")
    await proc.start()
    for _ in range(40):
        proc.write(b"x" * 65536 + b"\n")
    assert proc.write_paused
    drained = asyncio.get_running_loop().create_task(proc.drain())
    # Nothing can resume the writes while the child lives and does not read: the drain is
    # still waiting after a bounded wait on it.
    done, _ = await asyncio.wait({drained}, timeout=0.1)
    assert not done
    await proc.shutdown(1)
    await asyncio.wait_for(drained, 5)
    proc.write(b"dropped\n")  # after the end: dropped, never raises


async def test_writes_resume_when_the_child_reads() -> None:
    proc = child("import sys\nwhile sys.stdin.buffer.read(1 << 16): pass")
    seen: list[bool] = []
    proc.on_write_paused = seen.append
    await proc.start()
    for _ in range(40):
        proc.write(b"y" * 65536 + b"\n")
    assert proc.write_paused
    await asyncio.wait_for(proc.drain(), 10)
    assert not proc.write_paused
    assert seen == [True, False]
    await proc.shutdown(5)


async def test_stdin_grace_bounds_the_wait_before_sigterm() -> None:
    # Ignores EOF on stdin, dies of SIGTERM: the ladder must not wait half of a long timeout.
    proc = ServerProcess(
        "t", sys.executable, ["-c", "import sys, time\nsys.stdin.read()\ntime.sleep(60)"],
        env=dict(os.environ), stdin_grace=0.2,
    )
    await proc.start()
    code = await asyncio.wait_for(proc.shutdown(timeout=60), 20)  # half the timeout is 30 s
    assert code == -signal.SIGTERM


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to tell zombies apart")
def test_a_group_of_zombies_counts_as_gone() -> None:
    import subprocess

    # Our own unreaped child is a zombie: signal 0 still reaches its group, yet nothing in
    # it is alive, so the shutdown ladder must not wait for it.
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        # Wait for the exit itself, leaving the child unreaped (WNOWAIT), bounded.
        exited = threading.Thread(
            target=os.waitid, args=(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT), daemon=True
        )
        exited.start()
        exited.join(10)
        assert not exited.is_alive(), "the child never exited"
        assert _proc_state(child.pid) == "Z"
        os.killpg(child.pid, 0)  # the group "exists"...
        assert not Posix().alive(child.pid)  # ...but only as a zombie
    finally:
        child.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                               start_new_session=True)
    try:
        assert Posix().alive(sleeper.pid)
    finally:
        os.killpg(sleeper.pid, signal.SIGKILL)
        sleeper.wait()


def _proc_state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()



class FakeTree:
    """A process tree that stops on SIGTERM unless ``stubborn``; records what it is sent."""

    def __init__(self, stubborn: bool) -> None:
        self.stubborn = stubborn
        self.running = True
        self.sent: list[str] = []

    def spawn_options(self, limits: object) -> dict[str, object]:
        return {}

    def terminate(self, leader: int) -> bool:
        self.sent.append("TERM")
        self.running = self.running and self.stubborn
        return True

    def kill(self, leader: int) -> bool:
        self.sent.append("KILL")
        self.running = False
        return True

    def alive(self, leader: int) -> bool:
        return self.running

    def reap(self, leader: int) -> None:
        pass

    def strays(self, leader: int, marker: str | None = None) -> list[int]:
        assert marker
        self.sent.append("SWEEP")
        return []


def test_the_exit_hook_terms_every_tree_then_kills_what_is_left_after_the_grace() -> None:
    from mcphost.transports.stdio import process as room

    now = [0.0]
    processes = []
    for name, stubborn, grace in (("polite", False, 1.0), ("stubborn", True, 3.0)):
        proc = ServerProcess(name, "x", [], env={}, exit_grace=grace, tree=FakeTree(stubborn))  # type: ignore[arg-type]
        proc.leader = 1000 + len(processes)
        processes.append(proc)
        room._running.add(proc)
    done = ServerProcess("done", "x", [], env={}, tree=FakeTree(False))  # type: ignore[arg-type]
    done.leader, done.ended = 2000, True  # its ladder ran: not touched again
    room._running.add(done)

    def sleep(seconds: float) -> None:
        now[0] += seconds

    assert sorted(room._end_leftovers(clock=lambda: now[0], sleep=sleep)) == ["polite", "stubborn"]
    polite, stubborn = (p.tree for p in processes)
    # Then what left each tree is swept for (by its marker).
    assert polite.sent == ["TERM", "SWEEP"] and not processes[0].forced  # type: ignore[attr-defined]
    assert stubborn.sent == ["TERM", "KILL", "SWEEP"] and processes[1].forced  # type: ignore[attr-defined]
    assert 3.0 <= now[0] < 3.1  # the longest grace, then no longer
    assert done.tree.sent == []  # type: ignore[attr-defined]
    assert all(p.ended for p in processes) and room._end_leftovers() == []


def test_the_exit_hook_kills_at_once_after_ctrl_c_or_an_interrupted_ladder(monkeypatch: pytest.MonkeyPatch) -> None:
    # An application dying of Ctrl-C (the interpreter's last exception is KeyboardInterrupt),
    # or a ladder that began and never ended (asyncio torn down under it): no SIGTERM and
    # no grace (it was 10 s by default, "npm exec children running for many seconds").
    from mcphost.transports.stdio import process as room

    def make(name: str) -> ServerProcess:
        proc = ServerProcess(name, "x", [], env={}, exit_grace=30.0, tree=FakeTree(True))  # type: ignore[arg-type]
        proc.leader = 3000
        room._running.add(proc)
        return proc

    def sleep(seconds: float) -> None:
        raise AssertionError("the hook waited")

    ladder = make("ladder")
    ladder._shutdown_task = object()  # type: ignore[assignment]
    assert room._end_leftovers(sleep=sleep) == ["ladder"]
    assert ladder.tree.sent == ["KILL", "SWEEP"] and ladder.forced  # type: ignore[attr-defined]

    monkeypatch.setattr(room.sys, "last_value", KeyboardInterrupt(), raising=False)
    plain = make("plain")
    assert room._end_leftovers(sleep=sleep) == ["plain"]
    assert plain.tree.sent == ["KILL", "SWEEP"] and plain.forced  # type: ignore[attr-defined]


class NoWayToAsk(Posix):
    """A tree that cannot be asked to stop (a Windows server without the host's console)."""

    def terminate(self, leader: int) -> bool:
        return False


async def test_a_tree_that_cannot_be_asked_to_stop_is_killed_without_the_graceful_wait() -> None:
    # It ignores EOF and SIGTERM, and is never asked anyway: the ladder does not wait out
    # its 60 s graceful timeout for an answer that cannot come.
    code = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
    proc = ServerProcess("mute", sys.executable, ["-c", code], env=dict(os.environ), stdin_grace=0.1,
                         tree=NoWayToAsk())
    await proc.start()
    code_seen = await asyncio.wait_for(proc.shutdown(60), 20)
    assert code_seen == -signal.SIGKILL and proc.forced
