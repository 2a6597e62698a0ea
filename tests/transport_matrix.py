"""One test body over every transport: the hosts of a test made over memory, stdio,
Streamable HTTP or legacy HTTP+SSE, from the same fake server configuration.

A test takes the ``new_host`` fixture (``tests/conftest.py``), runs once per transport, and
makes its hosts with ``new_host(config, **options)`` where it would write
``MCPHost(config, **options)``; ``config`` holds fake server entries
(``mcphost.testing.server_config``):

- ``memory``: the fake server in this process, over the in-memory transport
  (``tests/inprocess.py``);
- ``stdio``: the fake server as a child process, as configured;
- ``http`` / ``sse``: the fake server behind an HTTP front (``tests/fake_http.py``), the
  entries rewritten to ``"type": "http"`` / ``"sse"`` and its URL.
"""

from __future__ import annotations

from typing import Any

from fake_http import FakeHttpFront
from inprocess import inprocess_factory

from mcphost import MCPHost

TRANSPORTS = ["memory", "stdio", "http", "sse"]
REMOTE = ("http", "sse")


class HostMaker:
    """Makes a test's hosts over ``transport`` (see the module docstring)."""

    def __init__(self, transport: str, front: FakeHttpFront | None = None) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")
        if (front is not None) != (transport in REMOTE):
            raise ValueError(f"{transport}: an HTTP front is needed for, and only for, {REMOTE}")
        self.transport = transport
        self.front = front

    @property
    def remote(self) -> bool:
        return self.front is not None

    def __call__(self, config: dict[str, Any], **kwargs: Any) -> MCPHost:
        if self.transport == "memory":
            kwargs.setdefault("transport_factory", inprocess_factory)
        elif self.front is not None:
            config = self.front.config(config, self.transport)
        return MCPHost(config, **kwargs)

    def __repr__(self) -> str:
        return f"HostMaker({self.transport!r})"
