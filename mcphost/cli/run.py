"""Running a host for one command: progress while servers start, Ctrl-C that tells the truth.

First Ctrl-C (or SIGTERM): the command stops and every server is shut down through its
ladder; what is being stopped is printed, and while it takes time, what is still waited
on. Second Ctrl-C: every server's process group is killed at once (SIGKILL). The last line
says what happened to the servers named at the first signal ("2 server(s) stopped, 1
killed"). Ctrl-C is an interruption (exit status 130); SIGTERM is a termination, said so,
with exit status 143 (128 + 15, as a shell reports it). No process of a server's tree (npx
and its npm children included) is left either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from ..transports.factory import may_install_first
from .report import clean, excerpt

__all__ = ["Interrupts", "run", "started_host"]


class Interrupts:
    """What Ctrl-C does to one command: the first stops it, the second kills servers."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.host: Any = None
        self.task: asyncio.Task[Any] | None = None
        self.presses = 0
        self.first_press = 0.0
        self.killed: list[str] = []
        #: The signal that stopped the command (SIGINT or SIGTERM), and what was running then.
        self.signal: signal.Signals | None = None
        self.stopping: list[str] = []

    def install(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self.on_signal, signal.SIGINT)
            loop.add_signal_handler(signal.SIGTERM, self.on_signal, signal.SIGTERM)

    @property
    def what(self) -> str:
        return "terminated (SIGTERM)" if self.signal is signal.SIGTERM else "interrupted"

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signal or signal.SIGINT)

    def on_signal(self, sig: signal.Signals = signal.SIGINT) -> None:
        self.presses += 1
        host = self.host
        running = _running(host)
        if self.presses == 1:
            self.signal = sig
            self.first_press = time.monotonic()
            self.stopping = running
            if running:
                again = " (Ctrl-C again to kill them now)" if sig is signal.SIGINT else ""
                self._say(f"{self.what}: stopping {len(running)} server(s): {', '.join(running)}{again}")
            else:
                self._say(self.what)
            if self.task is not None:
                self.task.cancel()
        elif host is not None:
            self.killed = sorted(set(self.killed) | set(host.kill()))
            if self.killed:
                self._say(f"killing {', '.join(self.killed)} now")

    def _say(self, text: str) -> None:
        self.out.write("\r\x1b[K" if self.out.isatty() else "")
        print(f"mcphost: {text}", file=self.out, flush=True)

    def summary(self) -> str:
        """What became of the servers named when the signal came (the same count)."""
        host = self.host
        if host is None or not self.stopping:
            return self.what
        names = [n for n in self.stopping if n in host.servers]
        # Killed: by a second Ctrl-C, or by the ladder's SIGKILL (it ignored SIGTERM).
        killed = [n for n in names if n in self.killed or _forced(host.servers[n].last_gone)]
        stopped = len(names) - len(killed)
        parts = [f"{stopped} server(s) stopped"]
        if killed:
            parts.append(f"{len(killed)} killed")
        return f"{self.what}; " + ", ".join(parts)


def _forced(gone: Any) -> bool:
    """Whether the server's process had to be killed (it did not stop when asked)."""
    process = gone.process if gone is not None else None
    return process is not None and process.forced


def _running(host: Any) -> list[str]:
    if host is None:
        return []
    return [n for n, h in host.servers.items() if h.state.value in ("starting", "ready", "stopping")]


async def _progress(host: Any, out: TextIO, interrupts: Interrupts) -> None:
    """Tell the user which servers are still being waited on, and for how long."""
    started = time.monotonic()
    tty = out.isatty()
    last_line = 0.0
    while True:
        await asyncio.sleep(0.25)
        stopping = interrupts.presses > 0
        wanted = "stopping" if stopping else "starting"
        waiting = [name for name, h in host.servers.items() if h.state.value == wanted]
        if not waiting:
            continue
        elapsed = time.monotonic() - started
        if stopping:
            # The ladder: stdin closed, SIGTERM, then SIGKILL at the graceful timeout.
            left = max(0.0, host.shutdown_timeout - (time.monotonic() - interrupts.first_press))
            text = f"stopping {', '.join(waiting)}: killed in {left:.0f} s unless they exit (Ctrl-C: now)"
        else:
            installing = [n for n in waiting if not host.servers[n].installed and may_install_first(host.servers[n].config)]
            whose = "its package" if len(installing) == 1 else "their packages"
            note = f"; {', '.join(installing)} may be downloading {whose}" if installing else ""
            text = f"waiting for {', '.join(waiting)} ({elapsed:.1f} s{note})"
        text = "mcphost: " + text
        if tty:
            out.write("\r\x1b[K" + text)
            out.flush()
        elif elapsed - last_line >= 2.0:
            last_line = elapsed
            out.write(text + "\n")
            out.flush()


async def started_host(interrupts: Interrupts, config: str, on_host: Callable[[Any], None] | None = None,
                       **options: Any) -> Any:
    """A host with its servers started, showing progress on stderr meanwhile."""
    from ..host import MCPHost

    host = MCPHost(config, handle_signals=False, **options)
    if on_host is not None:
        on_host(host)
    interrupts.host = host
    err = sys.stderr

    said: dict[str, str] = {}

    def on_event(event: Any) -> None:
        if event.get("type") != "server_retrying":
            return
        name, data = event["server"], event["data"]
        why = data["error"]
        lines = excerpt([line for line in data.get("stderr_tail") or [] if line.strip() not in why], 1)
        if lines:
            why += f" (stderr: {lines[0]})"
        if said.get(name) == why:
            why = "failed the same way"
        else:
            said[name] = why
        err.write(("\r\x1b[K" if err.isatty() else "") + f"mcphost: {clean(name)}: {clean(why)}; trying again "
                  f"in {data['delay']:.1f} s (try {data['attempt']} of {data['attempts']})\n")
        err.flush()

    host.on_event(on_event)
    ticker = asyncio.get_running_loop().create_task(_progress(host, err, interrupts))
    try:
        await host.initialize()
    finally:
        ticker.cancel()
        if err.isatty():
            err.write("\r\x1b[K")
            err.flush()
    return host


async def stop_host(host: Any, interrupts: Interrupts) -> None:
    """Shut ``host`` down, telling what is still waited on."""
    ticker = asyncio.get_running_loop().create_task(_progress(host, sys.stderr, interrupts))
    try:
        await host.shutdown()
    finally:
        ticker.cancel()


def run(command: Callable[[Interrupts], Awaitable[int]]) -> int:
    """Run one command in its own event loop; 130 after Ctrl-C, 143 after SIGTERM."""
    interrupts = Interrupts(sys.stderr)

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None
        interrupts.install(task)
        try:
            return await command(interrupts)
        except asyncio.CancelledError:
            if interrupts.presses:
                return interrupts.exit_code
            raise

    code = asyncio.run(main())
    if interrupts.presses:
        print(f"mcphost: {interrupts.summary()}", file=sys.stderr)
    return code
