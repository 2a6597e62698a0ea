"""The gateway: one :class:`~mcphost.MCPHost` served to any number of MCP clients.

Layer 5. ``Gateway(config, naming=..., **host_options)`` builds the host and its backend
(:class:`~mcphost.gateway.view.HostBackend`), ``start()`` starts the servers, and
``connect(transport)`` serves one client connection (a
:class:`~mcphost.server.session.ServerSession` over that transport). Every client shares the
host: its processes, its caches, its metrics. ``aclose()`` ends the sessions, then the host.
:func:`serve_stdio` is ``mcphost serve --stdio``: one session over the process's own stdin
and stdout, until the client closes its end; :func:`serve_http` is ``mcphost serve --http``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from .. import MCPHost
from ..server.modern import RoundStore
from ..server.session import ServerLimits, ServerSession
from ..server.tasks import TaskLimits
from ..transports.base import Transport
from ..wire.framing import DEFAULT_MAX_SIZE
from .http import HttpGateway, HttpOptions
from .naming import Naming
from .stdio import stdio_transport
from .view import HostBackend

__all__ = ["Gateway", "serve_http", "serve_stdio"]

logger = logging.getLogger("mcphost.gateway")

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | None


class Gateway:
    """An MCP server in front of the servers of ``config`` (see the module docstring).

    Args:
        config: what :class:`~mcphost.MCPHost` takes (a path or a dict).
        naming: ``dot``, ``underscore``, ``pass-through`` or ``search``
            (:mod:`~mcphost.gateway.naming`).
        limits: what one client may hold (:class:`~mcphost.server.session.ServerLimits`).
        coalesce: seconds ``list_changed`` notifications are gathered before they go out.
        task_limits: what the tasks of clients may hold (:class:`~mcphost.server.tasks.TaskLimits`).
        host_options: passed to :class:`~mcphost.MCPHost`.
    """

    def __init__(self, config: ConfigSource = None, *, naming: str = "dot", limits: ServerLimits | None = None,
                 coalesce: float = 0.05, task_limits: TaskLimits | None = None, **host_options: Any) -> None:
        self.naming = Naming(naming)
        self.limits = limits or ServerLimits()
        self.host = MCPHost(config, **host_options)
        self.backend = HostBackend(self.host, self.naming, coalesce=coalesce, task_limits=task_limits)
        self.sessions: set[ServerSession] = set()
        #: What :meth:`start` answered: each server's ``ok``, ``state`` and ``error``.
        self.started: dict[str, dict[str, Any]] = {}
        self._opened = 0

    async def start(self) -> dict[str, dict[str, Any]]:
        """Start the servers (what ``MCPHost.initialize`` does; its answer: each server's
        ``ok``, ``state`` and ``error``)."""
        started = self.started = await self.host.initialize()
        self.naming.bind(list(self.host.servers))
        for name, outcome in started.items():
            if not outcome.get("ok"):
                logger.warning("%s did not start and is not served: %s", name, outcome.get("error"))
        return started

    def connect(self, transport: Transport, rounds: RoundStore | None = None) -> ServerSession:
        """Serve one client over ``transport`` (already started); ``rounds``: the store of
        2026-07-28 multi-round requests it shares with others (default: its own)."""
        self._opened += 1
        session = ServerSession(transport, self.backend, name=f"client-{self._opened}", limits=self.limits,
                                rounds=rounds)
        self.sessions.add(session)
        session.start()
        return session

    def forget(self, session: ServerSession) -> None:
        """``session`` has ended: the gateway stops holding it."""
        self.sessions.discard(session)

    async def aclose(self) -> None:
        """End every session, then the host (its servers stop)."""
        for session in list(self.sessions):
            await session.aclose()
        self.sessions.clear()
        await self.backend.aclose()
        await self.host.shutdown()

    async def __aenter__(self) -> Gateway:
        try:
            await self.start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


Report = Callable[[dict[str, dict[str, Any]]], None]


async def serve_stdio(config: ConfigSource, *, naming: str = "dot", limits: ServerLimits | None = None,
                      max_message_size: int = DEFAULT_MAX_SIZE, started: Report | None = None,
                      **host_options: Any) -> None:
    """Serve the gateway on this process's stdin and stdout until the client closes them;
    ``started`` is told how each server's start went."""
    async with Gateway(config, naming=naming, limits=limits, **host_options) as gateway:
        if started is not None:
            started(gateway.started)
        transport = stdio_transport(max_message_size)
        await transport.start()
        session = gateway.connect(transport)
        await session.wait_closed()
        logger.info("the client ended the session")


async def serve_http(config: ConfigSource, host: str = "127.0.0.1", port: int = 8808, *, naming: str = "dot",
                     limits: ServerLimits | None = None, http: HttpOptions | None = None,
                     ready: Callable[[tuple[str, int]], None] | None = None, started: Report | None = None,
                     **host_options: Any) -> None:
    """Serve the gateway over Streamable HTTP on ``host:port`` until cancelled; ``started`` is
    told how each server's start went, ``ready`` the address bound (``port=0``: any free port)."""
    async with Gateway(config, naming=naming, limits=limits, **host_options) as gateway:
        if started is not None:
            started(gateway.started)
        front = HttpGateway(gateway, http)
        address = await front.start(host, port)
        logger.info("serving MCP on http://%s:%d%s", address[0], address[1], front.options.path)
        if ready is not None:
            ready(address)
        try:
            await asyncio.Event().wait()
        finally:
            await front.aclose()
