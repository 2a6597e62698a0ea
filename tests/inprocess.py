"""The fake server served in this process, over the in-memory transport (no subprocess).

``inprocess_factory`` is a ``transport_factory`` for ``MCPHost``: for each server entry
made by ``mcphost.testing.server_config`` it runs that spec's :class:`FakeServer` in a
thread and connects it to the host through a :func:`memory_pair`. Faults that belong to
a process (exit codes, signals, children) are not for this mode.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
from collections.abc import Callable
from typing import Any

from mcphost._json import dumps
from mcphost.testing.server import FakeServer
from mcphost.transports.base import Gone
from mcphost.transports.memory import MemoryTransport, memory_pair


class LineOutput(io.RawIOBase):
    """A fake server's stdout: each whole line goes to ``deliver(line)`` on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[bytes], Any]) -> None:
        super().__init__()
        self._loop = loop
        self._deliver = deliver
        self._buf = b""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._buf += bytes(data)
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            if line.strip():
                try:
                    self._loop.call_soon_threadsafe(self._deliver, line)
                except RuntimeError:  # the host's loop is closed: as a closed pipe would
                    raise OSError("the host is gone") from None
        return len(data)


class _ServerEnd:
    """Receives what the host sends and writes it to the fake server's stdin pipe."""

    def __init__(self, write_fd: int) -> None:
        self._fd = write_fd

    def on_messages(self, messages: list[Any]) -> None:
        if self._fd >= 0:
            os.write(self._fd, b"".join(dumps(m) + b"\n" for m in messages))

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        raise AssertionError(reason)

    def on_gone(self, gone: Gone) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # stdin EOF: the fake server ends
            self._fd = -1


def spec_of(args: Any, name: str) -> dict[str, Any]:
    """The fake server spec of a server entry's ``args`` (from ``server_config``)."""
    args = list(args)
    if "--spec" not in args:
        raise ValueError(f"{name}: not a fake server entry")
    spec = json.loads(args[args.index("--spec") + 1])
    assert isinstance(spec, dict)
    return spec


def inprocess_factory(config: Any) -> MemoryTransport:
    loop = asyncio.get_running_loop()
    client, server = memory_pair(config.name)
    read_fd, write_fd = os.pipe()
    server.set_receiver(_ServerEnd(write_fd))
    fake = FakeServer(spec_of(config.args, config.name), stdin_fd=read_fd, stdout=LineOutput(loop, server.send), stderr=io.StringIO())

    def run() -> None:
        try:
            fake.run()
        finally:
            os.close(read_fd)

    threading.Thread(target=run, name=f"inprocess-{config.name}", daemon=True).start()
    return client
