"""The SSE streams of Streamable HTTP: what a response stream holds, and the GET of one.

Layer 2, used by :mod:`.http`. :class:`SseStream` is an SSE response stream (a POST's and
then its resumptions', or the standalone GET stream's): its decoder, bounded by the
message limit, and how many events it carried. :class:`GetStream` is one GET of such a
stream, the standalone one (the server's own requests and notifications) or the resumption
of a POST's (``Last-Event-ID``); what its end means is the transport's
(:meth:`~.http.StreamableHttpTransport.get_ended`: resumed, reopened with backoff).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..wire.http11 import Response, build_request
from ..wire.sse import SSEDecoder
from .httpconn import Exchange, header

if TYPE_CHECKING:
    from .http import StreamableHttpTransport

__all__ = ["GetStream", "SseStream", "content_type"]


def content_type(response: Response) -> str:
    value = header(response, "content-type") or ""
    return value.split(";", 1)[0].strip().lower()


class SseStream:
    """An SSE response stream: a POST's and then its resumptions', or the standalone GET's."""

    __slots__ = ("decoder", "events")

    def __init__(self, max_message_size: int) -> None:
        self.decoder = SSEDecoder(max_line_size=max_message_size + 64, max_event_size=max_message_size)
        self.events = 0


class GetStream(Exchange):
    """A GET of an SSE stream: the standalone stream, or the resumption of a POST's."""

    def __init__(self, transport: StreamableHttpTransport, stream: SseStream, post: Any) -> None:
        self.transport = transport
        self.stream = stream
        self.post = post
        self.last_event_id = stream.decoder.last_event_id
        self.events_before = stream.events
        self.ok = False
        self.sent_session: str | None = None
        #: When the server answered it (loop time; 0: not yet).
        self.opened_at = 0.0

    def request(self) -> bytes:
        transport = self.transport
        self.sent_session = transport.session.id
        ours = [*transport.base_headers(), ("Accept", "text/event-stream"), *transport.session.headers(self.sent_session)]
        if self.last_event_id:
            ours.append(("Last-Event-ID", self.last_event_id))
        return build_request("GET", transport.target, transport.merged(ours))

    def on_response(self, response: Response) -> None:
        transport = self.transport
        if transport.gate is not None and self.post is None:
            transport.open_gate()
        if response.status == 200 and content_type(response) == "text/event-stream":
            self.ok = True
            self.opened_at = asyncio.get_running_loop().time()
            transport.stream_opened(self)
            return
        self.abort()
        transport.get_refused(self, response)

    def on_data(self, chunk: bytes) -> None:
        if not self.ok:
            return
        post = self.post
        rid = post.rid if post is not None and not post.done else None
        self.transport.feed(self.stream, chunk, rid)

    def on_end(self) -> None:
        self.transport.get_ended(self, "the server ended the stream")

    def on_error(self, why: str) -> None:
        if self.transport.gate is not None and self.post is None:
            self.transport.open_gate()
        self.transport.get_ended(self, why)
