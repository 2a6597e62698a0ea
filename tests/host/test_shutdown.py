"""The shutdown ladder through the host: EOF, SIGTERM, SIGKILL; grandchildren; a cancelled
shutdown still finishes."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from helpers import ECHO_TOOL, descendants, fake, fake_config, group_alive, needs_npx, wait_for

from mcphost import MCPHost

pytestmark = pytest.mark.usefixtures("no_leftovers")


async def test_shutdown_escalates_for_server_ignoring_eof_and_sigterm() -> None:
    cfg = fake_config(
        stubborn=fake({"tools": [ECHO_TOOL]}, ignoreStdinEof=True, ignoreSigterm=True),
        polite=fake({"tools": [ECHO_TOOL]}),
    )
    host = MCPHost(cfg, shutdown_timeout=0.6)
    await host.initialize()
    pid = host.servers["stubborn"].pid()
    await host.shutdown()
    assert pid is not None and not group_alive(pid)
    assert host.servers["stubborn"].last_gone.exit_code == -signal.SIGKILL  # type: ignore[union-attr]
    # Idempotent.
    await host.shutdown()


async def test_shutdown_kills_grandchildren(tmp_path: Path) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, spawnChild=True))
    host = MCPHost(cfg)
    await host.initialize()
    pid = host.servers["a"].pid()
    assert pid is not None
    assert await wait_for(lambda: any("child pid" in line for line in host.servers["a"].transport.process.stderr_lines()))  # type: ignore[union-attr]
    await host.shutdown()
    assert not group_alive(pid)


async def test_shutdown_survives_cancellation() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, ignoreStdinEof=True))
    host = MCPHost(cfg, shutdown_timeout=0.5)
    stopping = asyncio.Event()
    host.on_event(lambda e: stopping.set()
                  if e["type"] == "state_changed" and e["data"]["to"] == "stopping" else None)
    await host.initialize()
    pid = host.servers["a"].pid()
    task = asyncio.ensure_future(host.shutdown())
    # Cancelled once the shutdown has begun: the server ignores EOF, so the ladder is
    # waiting to send SIGTERM.
    await asyncio.wait_for(stopping.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pid is not None and not group_alive(pid)
    assert host.get_tools()["a"]["state"] == "stopped"


async def test_a_grandchild_that_left_the_group_does_not_survive_shutdown(tmp_path: Path) -> None:
    import shutil

    setsid = shutil.which("setsid")
    if setsid is None:
        pytest.skip("setsid(1) is not installed")
    marker = tmp_path / "stray.pid"
    entry = fake({"tools": [ECHO_TOOL]})
    # sh starts a grandchild in a session of its own, then becomes the server (exec).
    script = f'{setsid} sh -c \'echo $$ > "{marker}"; exec sleep 1000\' & exec "$0" "$@"'
    entry = {**entry, "command": "sh", "args": ["-c", script, entry["command"], *entry["args"]]}
    async with MCPHost({"mcpServers": {"a": entry}}, shutdown_timeout=2) as host:
        assert (await host.call_tool("a.echo", {}))["content"]
        assert await wait_for(lambda: marker.exists() and marker.read_text().strip() != "")
        stray = int(marker.read_text())
        assert Path(f"/proc/{stray}").exists()
    assert await wait_for(lambda: not Path(f"/proc/{stray}").exists()
                          or "Z" in Path(f"/proc/{stray}/stat").read_text().rsplit(")", 1)[1][:3])


def _dead(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="the sweep reads /proc (Linux)")
async def test_a_daemon_that_double_forked_out_of_the_tree_does_not_survive_shutdown(tmp_path: Path) -> None:
    # The classic daemon: setsid() in a child, a grandchild forked, the child exits. The
    # grandchild is in no group of the server's and, orphaned, no descendant of it either;
    # it ignores SIGTERM. Before the environment marker it outlived every shutdown.
    import sys

    pidfile = tmp_path / "daemon.pid"
    entry = fake({"tools": [ECHO_TOOL]})
    script = str(Path(__file__).resolve().parent.parent / "data" / "daemonizing_server.py")
    entry = {**entry, "command": sys.executable, "args": [script, str(pidfile), entry["command"], *entry["args"]]}
    async with MCPHost({"mcpServers": {"a": entry}}, shutdown_timeout=1) as host:
        assert (await host.call_tool("a.echo", {}))["content"]
        assert await wait_for(pidfile.exists)
        daemon = int(pidfile.read_text())
        assert not _dead(daemon) and daemon not in descendants(host.servers["a"].pid() or 0)
    assert await wait_for(lambda: _dead(daemon))


async def test_the_sigterm_shutdown_is_held_by_the_supervisor_then_dies_of_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The handler's shutdown runs in a task the supervisor holds (a task no one holds may be
    # collected mid-run); once every server is stopped the application dies of SIGTERM as the
    # sender intended.
    import os

    from mcphost.host import signals as module

    died: list[tuple[int, int]] = []
    monkeypatch.setattr(module.os, "kill", lambda pid, sig: died.append((pid, sig)))
    monkeypatch.setattr(module.signal, "signal", lambda sig, handler: None)
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}))
    host = MCPHost(cfg, handle_signals=False)
    await host.initialize()
    pid = host.servers["a"].pid()
    sigterm = host.supervisor.sigterm
    sigterm.on_sigterm()
    task = sigterm.task
    assert isinstance(task, asyncio.Task) and not task.done()
    assert died == []
    await asyncio.wait_for(task, 30)
    assert died == [(os.getpid(), signal.SIGTERM)]
    assert host.get_tools()["a"]["state"] == "stopped"
    assert pid is not None and not group_alive(pid)


NPM_EXEC = {"command": "npm", "args": ["exec", "--yes", "--", "@modelcontextprotocol/server-everything"],
            "timeout": 180}


@pytest.mark.parametrize(("runner", "sig"), [
    ("fake", signal.SIGINT),
    ("fake", signal.SIGTERM),
    pytest.param("npm exec", signal.SIGINT, marks=[pytest.mark.interop, needs_npx]),
])
async def test_a_library_applications_second_ctrl_c_kills_every_server_at_once(runner: str, sig: int) -> None:
    # An application of its own (asyncio.run, async with MCPHost, no signal handling): the
    # first Ctrl-C starts the ladder, which waits (the server ignores EOF and SIGTERM; its
    # child stands for npm exec's node) up to the 60 s graceful timeout; the second Ctrl-C
    # tears asyncio down. Before: the servers lived on for the exit hook's whole grace
    # (measured 10 s with the default timeout); now they are killed at once (0.05 s).
    # SIGTERM the same way (the host's own handler): the first runs the graceful shutdown,
    # the second kills every server's tree at once and the application dies of SIGTERM
    # (before: the second was ignored and the application took the whole 60 s).
    import json
    import os
    import sys

    stubborn = fake({"tools": [ECHO_TOOL]}, ignoreStdinEof=True, ignoreSigterm=True, spawnChild=True)
    polite = fake({"tools": [ECHO_TOOL]}, spawnChild=True) if runner == "fake" else NPM_EXEC
    app = str(Path(__file__).resolve().parent.parent / "data" / "library_app.py")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # Under coverage a child Python gets coverage's own SIGTERM handler (it writes its data):
    # this application's SIGTERM must be the host's, as in real life, so it runs unmeasured.
    env.pop("COVERAGE_PROCESS_CONFIG", None)
    env.pop("COVERAGE_PROCESS_START", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, app, json.dumps(fake_config(polite=polite, stubborn=stubborn)),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    try:
        ready = (await asyncio.wait_for(proc.stdout.readline(), 200)).split()
        assert ready[:1] == [b"ready"], ready
        groups = [int(pid) for pid in ready[1:]]
        assert len(groups) == 2 and all(group_alive(g) for g in groups)
        proc.send_signal(sig)
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"stopping\n"
        proc.send_signal(sig)
        code = await asyncio.wait_for(proc.wait(), 30)
        assert code == -signal.SIGTERM if sig == signal.SIGTERM else code != 0
        # The application has exited: nothing of either server is left (the stubborn one
        # would have had 60 s more under the ladder, and the exit hook's grace after it; one
        # the dead application did not kill would live on). What was killed may still be a
        # zombie for a moment, until init reaps it.
        assert await wait_for(lambda: not any(group_alive(g) for g in groups), timeout=5)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
