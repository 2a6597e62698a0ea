"""``type: "http"``: Streamable HTTP, and the legacy transport when the server only speaks that.

Layer 2, over :mod:`.http` and :mod:`.sse`. The spec's "Backwards Compatibility" section
(2025-03-26) tells a client that wants to reach servers of either era to:

1. POST the ``InitializeRequest`` to the URL, as Streamable HTTP does;
2. if that fails with 400, 404 or 405, GET the URL expecting an SSE stream whose first
   event is ``endpoint``: the server is a 2024-11-05 HTTP+SSE one, and the session goes on
   over it.

:class:`HttpTransport` does that without reading a message: the *first message sent*
(whatever it is; the client session's first is its ``InitializeRequest``, or the modern
era's probe) is the probe. If its POST gets 400, 404 or 405 with a body that is not the
server's JSON-RPC error for it, that message is sent again over the legacy transport, and
every message after it too; the session above sees one request and one answer. A URL that
serves neither fails the start with both answers ("HTTP 404 Not Found to initialize, and
no legacy HTTP+SSE endpoint at this URL either: GET 127.0.0.1:8080: HTTP 404 Not Found").
``legacy_fallback=False`` turns the probe off (a 400 is then just an error).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from ..errors import MCPHostError
from .base import Gone
from .http import StreamableHttpTransport
from .remote import PostExchange
from .sse import SseTransport

__all__ = ["HttpTransport"]

logger = logging.getLogger("mcphost.transports.http")

# The options the legacy transport shares with this one.
_SHARED = ("max_message_size", "max_message_tokens", "max_connections", "connect_timeout", "max_header_size",
           "idle_timeout", "ssl_context", "proxy", "authorizer")


class HttpTransport(StreamableHttpTransport):
    """Streamable HTTP with the spec's fallback to HTTP+SSE (the options of
    :class:`~mcphost.transports.http.StreamableHttpTransport`, and ``legacy_fallback``)."""

    def __init__(self, name: str, url: str, *, legacy_fallback: bool = True, **options: Any) -> None:
        super().__init__(name, url, **options)
        self.legacy_fallback = legacy_fallback
        self._legacy_options = {key: options[key] for key in _SHARED if key in options}
        #: The legacy transport, once the server turned out to speak only that.
        self.legacy: SseTransport | None = None
        self._switch: asyncio.Task[None] | None = None
        self._waiting: list[tuple[bytes, int, str | None, bool, Sequence[tuple[str, str]]]] = []
        self._own_drain = False

    # ``needs_drain`` is the legacy transport's once it carries the session.
    @property
    def needs_drain(self) -> bool:
        legacy = self.legacy
        return legacy.needs_drain if legacy is not None else self._own_drain

    @needs_drain.setter
    def needs_drain(self, value: bool) -> None:
        self._own_drain = value

    def refused_first(self, post: PostExchange) -> bool:
        if not self.legacy_fallback or self.legacy is not None or self._switch is not None or not self.live:
            return False
        status = f"HTTP {post.status} {post.reason}".rstrip()
        logger.info("%s: %s to the first message; trying the legacy HTTP+SSE transport at the same URL",
                    self.name, status)
        self._switch = asyncio.get_running_loop().create_task(self._fall_back(post, status))
        self.divert = self._divert
        return True

    async def _fall_back(self, post: PostExchange, status: str) -> None:
        legacy = SseTransport(self.name, self.url, headers=self.headers, **self._legacy_options)
        legacy.trace.bodies = self.trace.bodies
        try:
            await legacy.start()
        except MCPHostError as exc:
            await legacy.aclose(0)
            waiting, self._waiting = self._waiting, []
            what = post.rpc_method or "the first message"
            self.fail_request(post.rid, f"{status} to {what}, and no legacy HTTP+SSE endpoint at this URL "
                                        f"either: {exc.message}", status=post.status or None)
            self.divert = None
            for data, kind, method, now, headers in waiting:  # sent as they would have been
                self.send(data, kind, method, now, headers)
            return
        except asyncio.CancelledError:
            self.divert = None
            await legacy.aclose(0)
            raise
        if not self.live:
            self.divert = None
            await legacy.aclose(0)
            return
        logger.info("%s: the server speaks the legacy HTTP+SSE transport (2024-11-05)", self.name)
        self.legacy = legacy
        self.stop()  # this transport's connections are not needed any more
        if self._receiver is not None:
            legacy.set_receiver(self._receiver)
        legacy.send(post.data, post.kind, post.rpc_method)
        waiting, self._waiting = self._waiting, []
        for data, kind, method, now, headers in waiting:
            legacy.send(data, kind, method, now, headers)

    # -- the contract, handed to the legacy transport once it carries the session -----------

    def _divert(self, data: bytes, kind: int, method: str | None, now: bool,
                headers: Sequence[tuple[str, str]]) -> None:
        """``send`` while the probe switches to the legacy transport, and once it did."""
        legacy = self.legacy
        if legacy is not None:
            legacy.send(data, kind, method, now, headers)
        else:
            self._waiting.append((data, kind, method, now, headers))

    def negotiated(self, version: str) -> None:
        if self.legacy is None:  # the legacy transport has no version header, no GET stream
            super().negotiated(version)

    def forget(self, request_id: Any) -> None:
        legacy = self.legacy
        if legacy is not None:
            legacy.forget(request_id)
        else:
            super().forget(request_id)

    def give_up(self, reason: str) -> None:
        legacy = self.legacy
        if legacy is not None:
            legacy.give_up(reason)
        else:
            super().give_up(reason)

    async def drain(self) -> None:
        legacy = self.legacy
        await (legacy.drain() if legacy is not None else super().drain())

    def tail(self) -> list[str]:
        legacy = self.legacy
        return [*super().tail(), *legacy.tail()] if legacy is not None else super().tail()

    def statistics(self) -> dict[str, Any]:
        legacy = self.legacy
        if legacy is None:
            return super().statistics()
        return {**legacy.statistics(), "transport": "sse (legacy, found by the probe)"}

    async def aclose(self, timeout: float) -> Gone:
        switch = self._switch
        if switch is not None and not switch.done():
            switch.cancel()
            await asyncio.gather(switch, return_exceptions=True)
        gone = await super().aclose(timeout)
        legacy = self.legacy
        return await legacy.aclose(timeout) if legacy is not None else gone
