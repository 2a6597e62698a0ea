"""One request to an authorization server (metadata, registration, token), on a connection of its own.

Layer 2, over :mod:`.httpconn`: the answer is bounded (``MAX_BODY``), redirects are not
followed, and a request that gets no answer fails with
:class:`~mcphost.auth.errors.OAuthError` within ``FETCH_TIMEOUT``. Used by :mod:`.oauth`.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Final

from .._json import loads
from ..auth.errors import OAuthError
from ..auth.flow import Request
from ..version import __version__
from ..wire.http11 import Response, build_request
from .http_pool import ConnectionPool
from .httpconn import Exchange, describe, parse_url

__all__ = ["FETCH_TIMEOUT", "MAX_BODY", "fetch", "json_body"]

#: The most of an authorization server's answer read.
MAX_BODY: Final = 1 << 20
#: Seconds for one request to an authorization server.
FETCH_TIMEOUT: Final = 30.0
_USER_AGENT: Final = f"mcphost/{__version__}"


class _Fetch(Exchange):
    def __init__(self, request: bytes, method: str, done: asyncio.Future[tuple[int, list[tuple[str, str]], bytes]]) -> None:
        self._request = request
        self.method = method
        self.done = done
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()

    def request(self) -> bytes:
        return self._request

    def on_response(self, response: Response) -> None:
        self.status = response.status
        self.headers = response.headers

    def on_data(self, chunk: bytes) -> None:
        if len(self.body) + len(chunk) > MAX_BODY:
            self.abort()
            self.on_error(f"the answer is over {MAX_BODY} bytes")
            return
        self.body += chunk

    def on_end(self) -> None:
        if not self.done.done():
            self.done.set_result((self.status, self.headers, bytes(self.body)))

    def on_error(self, why: str) -> None:
        if not self.done.done():
            self.done.set_exception(OAuthError(why))


async def fetch(request: Request, ssl_context: ssl.SSLContext | None = None,
                timeout: float = FETCH_TIMEOUT) -> tuple[int, list[tuple[str, str]], bytes]:
    """Send ``request`` on a connection of its own; its status, headers and body (bounded).
    Redirects are not followed. ``OAuthError`` when no answer came."""
    try:
        origin, target = parse_url(request.url, "auth")
    except Exception:
        raise OAuthError(f"not a valid URL: {request.url.split('?')[0][:200]!r}") from None
    head = [("Host", origin.host_header), ("User-Agent", _USER_AGENT), ("Connection", "close"), *request.headers]
    data = build_request(request.method, target, head, request.body if request.method == "POST" else None)
    pool = ConnectionPool(origin, ssl_context=ssl_context if origin.secure else None, max_connections=1,
                          connect_timeout=timeout)
    done: asyncio.Future[tuple[int, list[tuple[str, str]], bytes]] = asyncio.get_running_loop().create_future()
    pool.submit(_Fetch(data, request.method, done))
    try:
        return await asyncio.wait_for(done, timeout)
    except asyncio.TimeoutError:
        raise OAuthError(f"no answer from {origin.shown} within {timeout:g} s") from None
    except OSError as exc:
        raise OAuthError(describe(exc)) from None
    finally:
        await pool.aclose()


def json_body(body: bytes) -> Any:
    """``body`` decoded as JSON, or None when it is not JSON."""
    try:
        return loads(body)
    except ValueError:
        return None
