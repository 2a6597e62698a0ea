"""The transports server-everything is reached over, for the interop suites (the fixtures
that give them are in ``conftest.py``).

One test body per behaviour: a test that takes the ``target`` fixture runs once per
transport, ``stdio`` (``npx ... server-everything`` spawned by the host), ``http``
(Streamable HTTP) and ``sse`` (legacy HTTP+SSE); ``remote`` gives the two HTTP ones only.
The HTTP servers are processes of their own (:class:`EverythingServer`), started on first
use and shared by the whole session, so a test's own process checks (``no_leftovers``)
never see them start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from remote_everything import EverythingServer

from mcphost import MCPHost

#: The server's name in every configuration here.
SERVER = "everything"
TRANSPORTS = ["stdio", "http", "sse"]
REMOTE = ["http", "sse"]
STDIO_ENTRY: dict[str, Any] = {
    "command": "npx",
    "args": ["-y", "@modelcontextprotocol/server-everything"],
    "timeout": 180,
}
#: The stdio server does not exit when its stdin closes: a short ladder keeps shutdown quick.
SHUTDOWN_TIMEOUT = {"stdio": 1.0, "http": 2.0, "sse": 2.0}


class Servers:
    """The session's HTTP server processes, started on first use, stopped at its end."""

    def __init__(self) -> None:
        self.running: dict[str, EverythingServer] = {}
        self.failed: dict[str, RuntimeError] = {}

    def get(self, mode: str) -> EverythingServer:
        if mode in self.failed:
            raise self.failed[mode]
        if mode not in self.running:
            server = EverythingServer(mode)
            self.running[mode] = server  # stopped below even if the start fails half-way
            try:
                server.start()
            except RuntimeError as exc:
                self.failed[mode] = exc
                raise
        return self.running[mode]

    def stop(self) -> None:
        for server in self.running.values():
            try:
                server.stop()
            finally:
                server.remove_log()


@dataclass(frozen=True)
class Target:
    """server-everything over one transport: its configuration and hosts for it."""

    transport: str
    #: The HTTP server process (None over stdio: each host spawns its own).
    server: EverythingServer | None = None

    @property
    def remote(self) -> bool:
        return self.server is not None

    def config(self, name: str = SERVER, *, typed: bool = True) -> dict[str, Any]:
        """One server entry; ``typed=False`` leaves the type to be inferred (from the
        command, or from the URL's path)."""
        if self.server is None:
            return {"mcpServers": {name: dict(STDIO_ENTRY)}}
        entry: dict[str, Any] = {"url": self.server.url}
        if typed:
            entry["type"] = self.transport
        return {"mcpServers": {name: entry}}

    def new_host(self, *, typed: bool = True, **kwargs: Any) -> MCPHost:
        kwargs.setdefault("shutdown_timeout", SHUTDOWN_TIMEOUT[self.transport])
        return MCPHost(self.config(typed=typed), **kwargs)
