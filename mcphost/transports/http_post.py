"""A message POSTed over Streamable HTTP, and its answer: nothing, one JSON message, or an SSE stream.

Layer 2, for :mod:`.http` (which holds the session, the streams and what a lost session
means). :class:`StreamablePost` says what each answer means (spec "Transports: Streamable
HTTP"): 202 to a notification or a response; a JSON message (or batch), or an SSE stream
that ends after the response, to a request; a 404 to a message sent with a session id is
the session lost; a stream that ends before its response is resumed. An answer in one read
with the head the connection saw last (a ``200`` JSON answer) is taken whole
(:meth:`StreamablePost.whole`): its body decoded as it came and handed to the receiver, in
the read's callback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..wire.http11 import Response
from .base import REQUEST
from .http_stream import GetStream, SseStream, content_type, stale_session
from .httpconn import header
from .remote_post import PostExchange, request_id

if TYPE_CHECKING:
    from .http import StreamableHttpTransport

__all__ = ["StreamablePost"]

logger = logging.getLogger("mcphost.transports.http")

_NONE, _JSON, _SSE = range(3)

class StreamablePost(PostExchange):
    """A message POSTed to the MCP endpoint and its JSON or SSE answer."""

    transport: StreamableHttpTransport
    # What most exchanges keep as they are: class defaults, not set per message.
    mode = _NONE
    body_size = 0
    stream: SseStream | None = None
    resumes = 0
    timer: asyncio.TimerHandle | None = None
    get: GetStream | None = None  # the resumption under way
    #: A JSON answer's chunks (mostly one: decoded as it came, no copy); made with the head.
    body: list[bytes]

    def __init__(self, transport: StreamableHttpTransport, data: bytes, kind: int, method: str | None,
                 headers: Sequence[tuple[str, str]] = ()) -> None:
        # (PostExchange.__init__, inline: one call less per message; the two set the same
        # attributes, which tests/transports/test_http_transport.py checks.)
        self.transport = transport
        self.data = data
        self.kind = kind
        self.rpc_method = method
        self.headers = headers
        self.urgent = kind != REQUEST
        self.rid = request_id(data) if kind == REQUEST else None
        authorizer = transport.authorizer
        self.auth_generation = authorizer.generation if authorizer is not None else 0
        #: The session the message belongs to: the one current when it was sent (a
        #: message sent before a renewal carries the old id, gets 404 and is sent again).
        self.sent_session = transport.session.id

    def request(self) -> bytes:
        transport = self.transport
        data = self.data
        state = (self.sent_session, transport.session.protocol_version)
        if not self.headers and transport.authorizer is None:
            cached = transport.post_head  # (what post_request does then, inline)
            if cached is not None and cached[0] == (transport.target, state, None):
                return b"%sContent-Length: %d\r\n\r\n%s" % (cached[1], len(data), data)
        return transport.post_request(transport.target, data, state, self.headers)

    def on_success(self, response: Response) -> None:
        transport = self.transport
        session = transport.session
        if self.sent_session is None:
            # The first message of a session is sent without an id; its answer names it.
            transport.took_session(response)
        elif self.kind == REQUEST and self.sent_session == session.id:
            session.used = True
            if transport.stream_retry.given_up:
                transport.exchange_succeeded()
        if response.status in (202, 204):
            return
        ctype = content_type(response)
        if ctype == "text/event-stream":
            self.mode = _SSE
            self.stream = SseStream(transport.max_message_size)
        elif ctype == "application/json" or ctype.endswith("+json"):
            self.mode = _JSON
            self.body = []
            length = header(response, "content-length")
            if length is not None and length.isdigit() and int(length) > transport.max_message_size:
                self.too_large(f"a message of {int(length)} bytes")
        elif self.kind == REQUEST:
            self.finish()
            self.abort()
            transport.broke_binding(self.rid, f"HTTP {response.status} with Content-Type {ctype or 'none'!r} "
                                              "(expected application/json or text/event-stream)")

    def plain(self, response: Response) -> bool:
        # A 200 JSON answer with nothing in its head for the authorizer (a DPoP nonce).
        if response.status != 200:
            return False
        ctype = content_type(response)
        return ((ctype == "application/json" or ctype.endswith("+json"))
                and (self.transport.authorizer is None or header(response, "dpop-nonce") is None))

    def whole(self, body: bytes, head: Response) -> bool:
        # What on_success, on_body and on_complete do with a JSON answer, for the request of
        # a current session (the first message's answer names the session: the long way).
        transport = self.transport
        sent = self.sent_session
        if (self.kind != REQUEST or self.done or sent is None or sent != transport.session.id
                or transport.stream_retry.given_up or len(body) > transport.max_message_size):
            return False
        self.status = head.status
        self.reason = head.reason
        self.mode = _JSON
        transport.session.used = True
        if body and not body.isspace():
            transport.answer(body)
        if not self.done:
            transport.in_order.then(self.unanswered)
        return True

    def on_failure(self, response: Response) -> None:
        transport = self.transport
        if response.status == 404 and self.sent_session is not None:
            self.finish()
            self.abort()
            transport.session_expired(self)
        elif response.status in (400, 404, 405) and self is transport.first:
            self.probing = True  # the body decides (RemoteTransport.http_failed)

    def on_end(self) -> None:
        body = self.error_body
        if (self.status == 400 and self.sent_session is not None and body is not None
                and stale_session(body, self.rid)):
            # A server that answers a session it no longer knows with 400 instead of the
            # spec's 404 (server-everything does): the same renewal, with the same bounds.
            self.finish()
            self.transport.session_expired(self)
            return
        super().on_end()

    def too_large(self, what: str) -> None:
        self.finish()
        self.abort()
        self.transport.undeliverable(
            self.rid, f"the server sent {what} (limit {self.transport.max_message_size} bytes)")

    def on_body(self, chunk: bytes) -> None:
        if self.mode == _JSON:
            self.body.append(chunk)
            self.body_size += len(chunk)
            if self.body_size > self.transport.max_message_size:
                self.too_large("a message over the limit")
        elif self.mode == _SSE:
            assert self.stream is not None
            self.transport.feed(self.stream, chunk, self.rid if not self.done else None)

    def on_complete(self) -> None:
        transport = self.transport
        if self.mode == _JSON:
            body = b"".join(self.body)  # (one chunk: that very bytes object)
            self.body = []
            if body and not body.isspace():
                transport.deliver_raw(body)
        elif self.mode == _SSE:
            assert self.stream is not None
            self.stream.decoder.feed_eof()
            if self.kind == REQUEST:  # once the messages before the end are delivered
                transport.in_order.then(lambda: transport.resume(self, "the stream ended before the response"))
            return
        elif not self.done and self.kind == REQUEST and transport.standalone is not None:
            # 202 to a request: its answer may still come on the standalone stream.
            logger.debug("%s: HTTP %d to %s; waiting for its response on the GET stream",
                         transport.name, self.status, self.rpc_method)
            return
        super().on_complete()

    def on_error(self, why: str) -> None:
        if self.mode == _SSE and not self.done and self.kind == REQUEST and self.transport.live:
            assert self.stream is not None
            self.stream.decoder.feed_eof()
            self.transport.in_order.then(lambda: self.transport.resume(self, why))
        else:
            super().on_error(why)

    def finish(self) -> None:
        if not self.done:
            self.done = True
            if type(self.rid) in (int, str):
                self.transport.requests.pop(self.rid, None)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def cancel(self) -> None:
        """The request was given up: close its stream (or its resumption)."""
        self.cancelled = True
        self.finish()
        self.abort()
        if self.get is not None:
            self.get.abort()
            self.get = None
