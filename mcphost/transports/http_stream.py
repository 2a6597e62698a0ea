"""The SSE streams of Streamable HTTP: what a response stream holds, and the GET of one.

Layer 2, used by :mod:`.http`. :class:`SseStream` is an SSE response stream (a POST's and
then its resumptions', or the standalone GET stream's): its decoder, bounded by the
message limit, and how many events it carried. :class:`GetStream` is one GET of such a
stream, the standalone one (the server's own requests and notifications) or the resumption
of a POST's (``Last-Event-ID``); what its end means is the transport's
(:meth:`~.http.StreamableHttpTransport.get_ended`: resumed, reopened with backoff).
The standalone stream, when the server ends it, is opened again after its ``retry``, never
sooner than ``MIN_STREAM_RETRY_MS``, backing off (doubling, ``MAX_RETRY_MS`` at most) while
the tries fail (a stream that lasted less than ``STABLE_STREAM`` failed, whatever it
carried); after ``resume_attempts + 1`` failures in a row that is said (a warning,
``statistics()["get_stream"] == "retrying"``), and the stream is tried again at the longest
wait and after the next answered request (once a second at most), never given up for good.
:func:`stale_session` tells a 400 that refuses a session the server lost (taken like the
spec's 404) from one that refuses the request.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any, Final

from .._json import loads
from ..wire.http11 import Response, build_request
from ..wire.sse import SSEDecoder
from .httpconn import Exchange, header

if TYPE_CHECKING:
    from .http import StreamableHttpTransport

__all__ = ["DEFAULT_RETRY_MS", "MAX_RETRY_MS", "MIN_STREAM_RETRY_MS", "STABLE_STREAM", "GetStream", "SseStream",
           "StreamRetry", "content_type", "stale_session", "stream_delay"]

#: Waited before a resumption or a reopening when the server gave no ``retry`` (milliseconds).
DEFAULT_RETRY_MS: Final = 1000
#: A longer wait (the server's ``retry`` or the backoff) is cut to this (milliseconds).
MAX_RETRY_MS: Final = 30_000
#: The standalone GET stream is never opened again sooner than this after it ended (a
#: server's ``retry: 0`` included); each try in a row that fails doubles the wait, up to
#: ``MAX_RETRY_MS``.
MIN_STREAM_RETRY_MS: Final = 500
#: A GET stream that stayed open this long (seconds) ended normally: the next try waits only
#: the server's ``retry``. One that ended sooner counts as a failed try, events or not.
STABLE_STREAM: Final = 10.0


def stream_delay(retry: int | None, failures: int) -> float:
    """The wait (seconds) before the next try of the standalone GET stream, after
    ``failures`` failed tries in a row and the server's last ``retry`` (milliseconds)."""
    wait: int = max(DEFAULT_RETRY_MS if retry is None else retry, MIN_STREAM_RETRY_MS)
    wait <<= min(max(0, failures - 1), 16)
    return min(wait, MAX_RETRY_MS) / 1000


_SESSION: Final = re.compile(rb"session", re.IGNORECASE)


def stale_session(body: bytes | bytearray, rid: Any) -> bool:
    """A 400 body that refuses the session rather than the request: it speaks of the
    session, and is not the server's JSON-RPC error for request ``rid`` (server-everything
    answers an unknown session id with ``400 {"error": {"message": "Bad Request: No valid
    session ID provided"}, "id": null}``; the spec says 404)."""
    if not _SESSION.search(body):
        return False
    try:
        decoded = loads(bytes(body))
    except ValueError:
        return True
    return not (isinstance(decoded, dict) and rid is not None and decoded.get("id") == rid)


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
        ours = [*transport.base_headers("GET"), ("Accept", "text/event-stream"), *transport.session.headers(self.sent_session)]
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
        self.ended("the server ended the stream")

    def on_error(self, why: str) -> None:
        if self.transport.gate is not None and self.post is None:
            self.transport.open_gate()
        self.ended(why)

    def ended(self, why: str) -> None:
        """The stream ended: told once the messages it carried are delivered."""
        transport = self.transport
        transport.in_order.then(lambda: transport.get_ended(self, why))

    def on_connect_failed(self, why: str) -> None:
        # No connection to reopen the stream on: after a few tries in a row (a server being
        # restarted comes back), the server went away, which is how a dead idle server is
        # noticed without a ping.
        self.transport.get_unreachable(self, why)


class StreamRetry:
    """The tries of the standalone GET stream: failures in a row, whether that was said
    (``given_up``), when the last began (loop time), tries in a row that found no
    connection."""

    __slots__ = ("failures", "given_up", "timer", "tried", "unreachable")

    def __init__(self) -> None:
        self.failures = 0
        self.given_up = False
        self.timer: asyncio.TimerHandle | None = None
        self.tried = 0.0
        self.unreachable = 0

    def ended(self, get: GetStream) -> float:
        """``get`` ended: count it (a failure unless it lasted ``STABLE_STREAM``) and
        return the wait before the next try (seconds)."""
        lasted = asyncio.get_running_loop().time() - get.opened_at if get.opened_at else 0.0
        self.failures = 0 if get.ok and lasted >= STABLE_STREAM else self.failures + 1
        return stream_delay(get.stream.decoder.retry, self.failures)
