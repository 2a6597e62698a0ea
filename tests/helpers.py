"""Test helpers: fake servers in an mcp.json, process-table checks, npx availability."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import time
from typing import Any

import pytest

from mcphost.testing import config, server_config


def fake(spec: dict[str, Any] | None = None, **faults: Any) -> dict[str, Any]:
    """An mcp.json server entry for the fake server."""
    return server_config(spec, **faults)


def fake_config(**servers: dict[str, Any]) -> dict[str, Any]:
    return config(servers)


ECHO_TOOL = {
    "name": "echo",
    "description": "Echo the arguments back",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def _process_table() -> list[tuple[int, str, int, int]]:
    """(pid, state, ppid, pgrp) of every process in /proc."""
    table = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        table.append((int(entry), fields[0], int(fields[1]), int(fields[2])))
    return table


def group_alive(pgid: int) -> bool:
    """Does any process (zombies excluded) remain in process group ``pgid``?"""
    return any(pgrp == pgid and state not in ("Z", "X") for _, state, _, pgrp in _process_table())


def descendants(pid: int) -> list[int]:
    """Live (non-zombie) descendants of ``pid`` from the process table."""
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for child, state, parent, _ in _process_table():
        children.setdefault(parent, []).append(child)
        states[child] = state
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if states.get(child) not in ("Z", "X"):
                out.append(child)
            todo.append(child)
    return out


async def wait_for(predicate: Any, timeout: float = 10.0) -> bool:
    """Wait (bounded) until ``predicate()`` is true; polls the event loop, no fixed sleep."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


class HostEvents(list[dict[str, Any]]):
    """The events a host reports (``host.on_event``), kept in order, with a bounded wait."""

    def __init__(self, host: Any) -> None:
        super().__init__()
        self._changed = asyncio.Event()
        host.on_event(self._record)

    def _record(self, event: Any) -> None:
        self.append(dict(event))
        self._changed.set()

    async def until(self, predicate: Any, timeout: float = 10.0) -> dict[str, Any]:
        """The first event (already seen or still to come) for which ``predicate(event)`` is
        true; ``asyncio.TimeoutError`` if none comes within ``timeout`` seconds."""

        async def first() -> dict[str, Any]:
            checked = 0
            while True:
                for event in self[checked:]:
                    if predicate(event):
                        return event
                checked = len(self)
                self._changed.clear()  # nothing can be appended between the check and here
                await self._changed.wait()

        return await asyncio.wait_for(first(), timeout)


NPX = shutil.which("npx")
needs_npx = pytest.mark.skipif(NPX is None, reason="npx is not installed: interop tests need Node")


def clocked(host: Any) -> list[float]:
    """Replace the waiting of ``host`` (an ``MCPHost``: its supervisor's ``sleep``) by a record
    of the delays asked for, with no jitter: every backoff is exact, and no test waits for it."""
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(0)

    host.supervisor.sleep = sleep
    host.supervisor.random = lambda: 0.0
    return delays


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (a server may still lose it to a race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts(port: int) -> bool:
    """Whether something on 127.0.0.1 accepts connections on ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


class LoopLag:
    """How long the event loop was kept from running a task that asks to wake every 5 ms.

    ``worst`` is the most CPU time the loop's thread spent between two of its wake-ups: the
    work that held the loop, whatever the operating system did meanwhile (on a loaded
    machine a process can wait a second for a core, which no code of ours can change).
    ``worst_wall`` is the longest gap by the clock, scheduling included.
    """

    def __init__(self) -> None:
        self.worst = 0.0
        self.worst_wall = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.get_running_loop().create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        last, last_cpu = time.perf_counter(), time.thread_time()
        while True:
            await asyncio.sleep(0.005)
            now, cpu = time.perf_counter(), time.thread_time()
            self.worst_wall = max(self.worst_wall, now - last - 0.005)
            self.worst = max(self.worst, cpu - last_cpu)
            last, last_cpu = now, cpu
