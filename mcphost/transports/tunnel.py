"""A ``CONNECT`` tunnel through an HTTP proxy, for an ``https`` server (TLS inside it).

Layer 2, used by :mod:`.httpconn` (which proxy: :mod:`.proxy`). The proxy's answer to
``CONNECT`` is bounded (``MAX_TUNNEL_HEAD``) and must be HTTP; anything but 200 is an
``OSError`` that says the proxy's status (407: check the user and password).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Final

from .proxy import Proxy

__all__ = ["MAX_TUNNEL_HEAD", "open_tunnel"]

#: The most a proxy's answer to CONNECT may hold before its blank line.
MAX_TUNNEL_HEAD: Final = 16 * 1024


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _Tunnel(asyncio.Protocol):
    """A connection to a proxy until it answers ``CONNECT`` (then TLS takes it over)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.head: asyncio.Future[tuple[int, str]] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if self.head.done():
            return
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_TUNNEL_HEAD:
                self.head.set_exception(OSError("the proxy's answer to CONNECT is too long"))
            return
        line = bytes(self.buffer[: self.buffer.find(b"\r\n")]).decode("latin-1")
        parts = line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            self.head.set_exception(OSError(f"the proxy's answer to CONNECT is not HTTP: {_clip(line, 80)}"))
            return
        self.head.set_result((int(parts[1]), parts[2].strip() if len(parts) > 2 else ""))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            self.head.set_exception(OSError("the proxy closed the connection"))


async def open_tunnel(proxy: Proxy, origin: Any, context: ssl.SSLContext) -> asyncio.Transport:
    """A TLS transport to ``origin`` (an :class:`~.httpconn.Origin`) through a ``CONNECT``
    tunnel of ``proxy``; ``OSError`` naming what the proxy said when it refuses."""
    loop = asyncio.get_running_loop()
    tunnel = _Tunnel()
    raw, _ = await loop.create_connection(lambda: tunnel, proxy.host, proxy.port)
    try:
        authority = origin.shown
        head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
        if proxy.authorization is not None:
            head += f"Proxy-Authorization: {proxy.authorization}\r\n"
        raw.write((head + "\r\n").encode("latin-1"))
        status, reason = await tunnel.head
        if status != 200:
            hint = " (check the user and password in the proxy URL)" if status == 407 else ""
            raise OSError(f"the proxy {proxy.shown} refused the tunnel: HTTP {status} {reason}".rstrip() + hint)
        secure = await loop.start_tls(raw, tunnel, context, server_hostname=origin.host)
        if secure is None:
            raise OSError("the proxy closed the tunnel")
    except BaseException:
        raw.abort()
        raise
    return secure
