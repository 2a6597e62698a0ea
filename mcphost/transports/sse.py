"""The HTTP+SSE transport of MCP 2024-11-05 (deprecated since 2025-03-26, still served).

Layer 2, over :mod:`.remote`. The spec's steps:

1. "The client GETs the SSE endpoint" (``Accept: text/event-stream``);
2. the server's first event is ``endpoint``, whose data is the URI to POST to (it may be
   relative: it is resolved against the URL); one of another origin is refused (the
   messages would go to a server the configuration does not name);
3. every client message is a POST to that URI, answered ``202 Accepted`` (the body is
   ignored; an HTTP error fails a request at once, as in :mod:`.remote`);
4. every server message arrives on the GET stream as an ``event: message``.

``start()`` waits for the ``endpoint`` event (the host bounds the start); a 401 to the GET
is the authorizer's (when there is one) and the GET is made again once it has a token; the end of the
GET stream is the end of the session: the server is gone. Nothing is resumed: the version
defines no resumption, and the endpoint belongs to the stream that announced it.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Sequence
from typing import Any

from ..auth.errors import OAuthError
from ..errors import TransportError
from ..wire.http11 import Response, build_request
from ..wire.sse import Oversized, SSEDecoder
from .base import REQUEST, Gone
from .httpconn import Exchange, clip, header, target_of
from .oauth import MAX_AUTHORIZATIONS
from .remote import PostExchange, RemoteTransport

__all__ = ["SseTransport"]


class _EventStream(Exchange):
    """The GET of the event stream, for the whole session."""

    def __init__(self, transport: SseTransport) -> None:
        self.transport = transport
        self.decoder = SSEDecoder(max_line_size=transport.max_message_size + 64,
                                  max_event_size=transport.max_message_size)
        self.ok = False
        self.status = ""
        self.body = bytearray()
        #: A 401/403 the authorizer answers: (status, challenges, token generation).
        self.unauthorized: tuple[int, list[str], int] | None = None
        authorizer = transport.authorizer
        self.generation = authorizer.generation if authorizer is not None else 0

    def request(self) -> bytes:
        transport = self.transport
        headers = transport.merged([*transport.base_headers("GET"), ("Accept", "text/event-stream"),
                                    ("Cache-Control", "no-cache")])
        return build_request("GET", transport.target, headers)

    def on_response(self, response: Response) -> None:
        self.status = f"HTTP {response.status} {response.reason}".rstrip()
        ctype = (header(response, "content-type") or "").split(";", 1)[0].strip().lower()
        authorizer = self.transport.authorizer
        challenges = [v for k, v in response.headers if k == "www-authenticate"][:8]
        if response.status == 200 and ctype == "text/event-stream":
            self.ok = True
        elif response.status in (401, 403) and authorizer is not None and authorizer.handles(
                response.status, challenges):
            self.unauthorized = (response.status, challenges, self.generation)
        elif response.status == 200:
            self.transport.failed(f"GET {self.transport.origin.shown}: {self.status} with Content-Type "
                                  f"{ctype or 'none'!r}, not an event stream")
            self.abort()

    def on_data(self, chunk: bytes) -> None:
        transport = self.transport
        if not self.ok:
            if len(self.body) < 1024:
                self.body += chunk[:1024]
            return
        for event in self.decoder.feed(chunk):
            if isinstance(event, Oversized):
                transport.oversized(event)  # discarded; the stream goes on
            elif event.event == "endpoint":
                transport.endpoint_event(event.data)
            elif event.event == "message" and event.data:
                transport.deliver_raw(event.data)
            if transport.failure is not None:
                self.abort()
                return

    def on_end(self) -> None:
        ready = self.transport._ready
        if self.unauthorized is not None and ready is not None and not ready.done():
            ready.set_exception(_Unauthorized(*self.unauthorized))
        elif not self.ok:
            detail = clip(bytes(self.body))
            self.transport.failed(f"GET {self.transport.origin.shown}: {self.status}"
                                  + (f": {detail}" if detail else ""))
        else:  # once the messages before the end are delivered
            self.transport.in_order.then(lambda: self.transport.failed("the server closed the SSE stream"))

    def on_error(self, why: str) -> None:
        self.transport.in_order.then(lambda: self.transport.failed(f"the SSE stream was lost: {why}"))


class _Unauthorized(Exception):
    """The GET was refused with a challenge the authorizer answers."""


class _Post(PostExchange):
    """A message POSTed to the endpoint: its answer comes on the stream, not in the body."""

    transport: SseTransport

    def target(self) -> str:
        return self.transport.post_target

    def on_complete(self) -> None:
        self.finish()


class SseTransport(RemoteTransport):
    """MCP over the 2024-11-05 HTTP+SSE transport (the options of :class:`RemoteTransport`)."""

    def __init__(self, name: str, url: str, **options: Any) -> None:
        super().__init__(name, url, **options)
        #: The target messages are POSTed to (from the ``endpoint`` event).
        self.post_target = ""
        #: Why the stream cannot be used (before or after the start).
        self.failure: str | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stream: _EventStream | None = None

    async def start(self) -> None:
        await super().start()
        for attempt in range(MAX_AUTHORIZATIONS + 1):
            self._ready = asyncio.get_running_loop().create_future()
            self._stream = _EventStream(self)
            self.pool.submit(self._stream)
            try:
                await self._ready
                return
            except _Unauthorized as refused:
                await self._authorize_stream(refused, attempt)
            except BaseException:
                self.stop()
                raise

    async def _authorize_stream(self, refused: _Unauthorized, attempt: int) -> None:
        status, challenges, generation = refused.args
        assert self.authorizer is not None
        try:
            if attempt == MAX_AUTHORIZATIONS:
                raise OAuthError(f"still refused after {MAX_AUTHORIZATIONS} authorizations")
            await self.authorizer.authorize(status, challenges, generation)
        except OAuthError as exc:
            self.stop()
            why = f"GET {self.origin.shown}: HTTP {status}: authorization failed: {exc}"
            self.note(why)
            raise TransportError(why, server=self.name, http_status=status, transient=False) from None

    def resend(self, exchange: PostExchange) -> PostExchange | None:
        again = _Post(self, exchange.data, exchange.kind, exchange.rpc_method)
        self.pool.submit(again)
        return again

    def endpoint_event(self, data: str) -> None:
        if self.post_target:
            return  # announced once; a second one changes nothing
        try:
            parts = urllib.parse.urlsplit(urllib.parse.urljoin(self.url, data.strip()))
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            self.failed(f"the endpoint event is not a URL: {clip(data, 100)}")
            return
        origin = self.origin
        if (parts.scheme.lower(), (parts.hostname or "").lower(), port) != (origin.scheme, origin.host.lower(),
                                                                            origin.port):
            self.failed(f"the endpoint event names another origin ({parts.scheme}://{parts.hostname}:{port}); "
                        "messages are only sent to the configured server")
            return
        self.post_target = self.request_target(target_of(parts))
        ready = self._ready
        if ready is not None and not ready.done():
            ready.set_result(None)

    def failed(self, why: str) -> None:
        """The stream cannot serve: the start fails, or the server is gone."""
        if self.failure is not None:
            return
        self.failure = why
        ready = self._ready
        if ready is not None and not ready.done():
            self.note(why)
            # The stream answered, wrongly: another try would get the same answer.
            ready.set_exception(TransportError(why, server=self.name, transient=False))
        else:
            self.gone(why)

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        if not self.live or self.failure is not None:
            return
        self.messages_out += 1
        if self.trace.enabled():
            self.trace.messages(True, [data])
        self.pool.submit(_Post(self, data, kind, method))

    async def aclose(self, timeout: float) -> Gone:
        if not self._closing:
            self._closing = True
            self.stop()
            await self.pool.aclose()
        return self._gone or Gone("connection closed")
