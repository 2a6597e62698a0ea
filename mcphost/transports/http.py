"""Streamable HTTP (MCP 2025-03-26, 2025-06-18, 2025-11-25): one POST per message.

Layer 2, over :mod:`.remote` and :mod:`.httpconn` (connections, pool), :mod:`.http_post` (a
message POSTed and what its answer means), :mod:`.http_session`
(the session id, the version header, what is held while the session is lost) and the
codecs of :mod:`mcphost.wire` (HTTP/1.1, Server-Sent Events). The transport knows no MCP
beyond what the HTTP binding says (spec "Transports: Streamable HTTP"); it never looks at a
message's method:

- every message is a POST to the URL with ``Accept: application/json, text/event-stream``;
  a notification or a response is answered ``202 Accepted``; a request is answered with one
  JSON message (or a batch) or with an SSE stream of messages that ends after the response;
- the session (``Mcp-Session-Id``) and what happens when the server loses it: see
  :mod:`.http_session`; the client session starts the new one (:meth:`session_opening`,
  then :meth:`release_held`);
- ``negotiated(version)`` (told by the session after the handshake) adds
  ``MCP-Protocol-Version`` to every later request and opens the standalone GET stream for
  the server's own requests and notifications at once, on the connection the handshake
  left idle ("The server MAY ... return HTTP 405"); requests wait for the server's answer
  to it (``GATE_WAIT`` at most), so what the server sends at once has a stream to go on;
- the standalone GET stream, when the server ends it, is opened again with a floor and a
  backoff, never given up for good (see :mod:`.http_stream`);
- a stream that ends before its response is resumed: after the server's ``retry`` the
  client GETs with ``Last-Event-ID`` (2025-11-25, SEP-1699), at most ``resume_attempts``
  times; a stream without an event id cannot be resumed and its request fails;
- a request given up (``forget``) closes its response stream; ``send(..., headers)``: on its POST;
- ``aclose()`` DELETEs the session (bounded; 405 is fine) and closes every connection.

Failures a caller sees at once: an HTTP error status (a JSON-RPC error response for the
request, see :mod:`.remote`), a response too large (``max_message_size``), a stream that
ends and cannot be resumed, a connection lost before the response. A server that cannot be
reached any more is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from .._json import loads
from ..wire.http11 import Response
from ..wire.sse import Oversized, SSEDecoder
from .base import REQUEST, Gone, SessionListener
from .counted import COUNTED, Raw
from .http_post import StreamablePost
from .http_session import EXPIRED, HttpSession, SessionDelete
from .http_stream import (
    DEFAULT_RETRY_MS,
    MAX_RETRY_MS,
    STABLE_STREAM,
    GetStream,
    SseStream,
    StreamRetry,
)
from .httpconn import header
from .remote import NOT_JSON, RemoteTransport

__all__ = ["StreamableHttpTransport"]

logger = logging.getLogger("mcphost.transports.http")

DEFAULT_RESUME_ATTEMPTS: Final = 2
#: How long requests wait for the server to answer the GET stream opened after the
#: handshake (a server that sends no head until its first event is not waited for longer).
GATE_WAIT: Final = 1.0
#: How long ``aclose`` waits for the answer to its DELETE at most.
DELETE_WAIT: Final = 2.0


class StreamableHttpTransport(RemoteTransport):
    """MCP over Streamable HTTP to one endpoint URL.

    Args:
        name: the server's name (for messages and the wire trace).
        url: the MCP endpoint, ``http://`` or ``https://``.
        headers: sent on every request (``Authorization``...).
        max_message_size: the largest message accepted (a JSON body or one SSE event).
        max_connections: connections to the server at most (the GET stream is one).
        idle_timeout: seconds an unused keep-alive connection stays open (one is kept).
        connect_timeout: seconds to open a connection (TLS included).
        resume_attempts: resumptions of one broken response stream at most.
        stream: open the standalone GET stream after the handshake.
        ssl_context: for ``https``; ``ssl.create_default_context()`` when not given.
    """

    request_streams = True

    def __init__(self, name: str, url: str, *, headers: Iterable[tuple[str, str]] = (),
                 resume_attempts: int = DEFAULT_RESUME_ATTEMPTS, stream: bool = True, **options: Any) -> None:
        super().__init__(name, url, headers=headers, **options)
        self.resume_attempts = resume_attempts
        self.open_stream = stream
        #: The session id, the version header, and what is held while the session is lost.
        self.session = HttpSession(name)
        #: Where :meth:`send` hands every message instead (``send``'s arguments), when a
        #: subclass carries the session another way (:mod:`.http_auto`'s legacy fallback).
        self.divert: Callable[[bytes, int, str | None, bool, Sequence[tuple[str, str]]], None] | None = None
        #: Requests sent whose outcome is not known yet, by id.
        self.requests: dict[Any, StreamablePost] = {}
        #: The first message sent without headers of its own (the spec's probe of a legacy
        #: server looks at its answer; HTTP+SSE predates the per-message headers).
        self.first: StreamablePost | None = None
        #: The standalone GET stream (while it is open or being opened).
        self.standalone: GetStream | None = None
        self._standalone_stream: SseStream | None = None
        #: The tries of the GET stream (``given_up``: it failed ``resume_attempts + 1`` in a
        #: row; it is still tried, and after a successful exchange, once a second at most).
        self.stream_retry = StreamRetry()
        self._timers: set[asyncio.TimerHandle] = set()
        #: Requests waiting for the first answer to the GET stream (``None``: not waiting).
        self.gate: list[StreamablePost] | None = None
        self._gate_timer: asyncio.TimerHandle | None = None

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id`` of the current session (``None``: none)."""
        return self.session.id

    # -- sending ----------------------------------------------------------------------------

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        if self.divert is not None:
            self.divert(data, kind, method, now, headers)
            return
        if self._gone is not None or self._closing:  # (not live: inline, once per message)
            return
        self.messages_out += 1
        if self.trace.maybe(10, True) and self.trace.enabled():
            self.trace.messages(True, [data])
        post = StreamablePost(self, data, kind, method, headers)
        if self.first is None and not headers:  # (a message with headers of its own is no handshake)
            self.first = post
        if type(post.rid) in (int, str):
            self.requests[post.rid] = post
        session = self.session
        if session.lost and not session.opening:  # (session.holding, inline)
            session.hold(post, False)  # it goes on the new session
        elif self.gate is not None and kind == REQUEST and not session.opening:
            self.gate.append(post)  # after the GET stream is answered
        else:
            self.pool.submit(post)

    def forget(self, request_id: Any) -> None:
        # Spec: a disconnect is not a cancellation, but once cancelled the response is not
        # wanted: its stream is closed (and a connection freed); held, it is not sent.
        if type(request_id) not in (int, str):
            return
        post = self.requests.get(request_id)
        if post is not None:
            post.cancel()
        for held in self.session.forget(request_id):
            held.cancel()

    def negotiated(self, version: str) -> None:
        """The session agreed on ``version``: say it on every later request (spec
        2025-06-18 "Protocol Version Header") and open the server's GET stream."""
        self.session.protocol_version = version
        if self.live and self.open_stream and self.standalone is None:
            # Opened now, on the connection the handshake left idle, so that what the server
            # sends right after the handshake (list changes...) has a stream to go on; the
            # session's requests wait until the server answered it (at most GATE_WAIT).
            self._standalone_stream = SseStream(self.max_message_size)
            self.standalone = GetStream(self, self._standalone_stream, None)
            self.gate = []
            self._gate_timer = self._later(GATE_WAIT, self.open_gate)
            self.pool.submit(self.standalone)

    def open_gate(self) -> None:
        """The GET stream was answered (or waited for long enough): send what waited."""
        held, self.gate = self.gate, None
        if self._gate_timer is not None:
            self._gate_timer.cancel()
            self._gate_timer = None
        for post in held or ():
            if post.cancelled or not self.live:
                continue
            post.sent_session = self.session.id
            if self.session.holding:
                self.session.hold(post, False)
            else:
                self.pool.submit(post)

    def post_headers(self, state: Any = None) -> list[tuple[str, str]]:
        session = state[0] if state is not None else None
        return self.merged([*self.base_headers(), ("Content-Type", "application/json"),
                            ("Accept", "application/json, text/event-stream"), *self.session.headers(session)])

    def took_session(self, response: Response) -> None:
        note = self.session.took(header(response, "mcp-session-id"))
        if note is not None:
            self.note(note)

    # -- receiving --------------------------------------------------------------------------

    def deliver(self, messages: list[Any]) -> None:
        requests = self.requests
        if requests:
            for msg in messages:
                for one in msg if type(msg) is list else (msg,):
                    if type(one) is dict and "method" not in one:
                        rid = one.get("id")
                        post = requests.get(rid) if type(rid) in (int, str) else None
                        if post is not None:
                            post.finish()
        super().deliver(messages)

    def answer(self, body: bytes) -> None:
        """A JSON answer in one piece (not empty): decoded and delivered now, in its turn
        (what :meth:`deliver_raw` does, without its steps for a list of messages)."""
        in_order = self.in_order
        if in_order.busy or len(body) > COUNTED:
            in_order.push([body])
            return
        trace = self.trace
        if trace.maybe(10, True) and trace.enabled():
            msg = self.decode(body)
        else:
            try:
                msg = loads(body)
            except ValueError:
                msg = self.decode(body)  # (noted there)
        receiver = self._receiver
        if msg is NOT_JSON or self._gone is not None or self._closing:  # (not live)
            return
        if receiver is None or type(msg) is not dict or "method" in msg:
            self.deliver([msg])
            return
        rid = msg.get("id")
        if type(rid) in (int, str):
            post = self.requests.pop(rid, None)
            if post is not None:  # (post.finish(), inline: it is in requests while not done)
                post.done = True
                if post.timer is not None:
                    post.finish()
        self.messages_in += 1
        receiver.on_messages([msg])

    def feed(self, stream: SseStream, chunk: bytes, rid: Any) -> None:
        """Body bytes of an SSE stream (``rid``: the request whose stream it is, if any):
        the messages of the events they complete are delivered together, in this read's
        callback (one push, one ``on_messages``)."""
        raws: list[Raw] = []
        for event in stream.decoder.feed(chunk):
            stream.events += 1
            if isinstance(event, Oversized):
                if raws:  # (what came before it first)
                    self.in_order.push(raws)
                    raws = []
                self.oversized(event, rid)  # discarded; the stream goes on
            # A priming event (an id and empty data) carries no message; another event type
            # is not MCP's.
            elif event.data and event.event == "message":
                raws.append(event.data)
        if raws and self.live:
            self.in_order.push(raws)
            if self.stream_retry.given_up and self.standalone is not None and stream is self._standalone_stream:
                self.stream_back(self.standalone)

    def response_lost(self, rid: Any) -> None:
        post = self.requests.get(rid) if type(rid) in (int, str) else None
        if post is not None:
            post.finish()

    def statistics(self) -> dict[str, Any]:
        return {**super().statistics(), "sessions_lost": self.session.losses,
                "get_stream": ("retrying" if self.stream_retry.given_up else "open" if self.standalone is not None
                               else "none")}

    # -- a lost session ---------------------------------------------------------------------

    def watch_session(self, listener: SessionListener | None) -> None:
        self.session.listener = listener

    @contextlib.contextmanager
    def session_opening(self) -> Iterator[None]:
        self.session.opening += 1
        try:
            yield
        finally:
            self.session.opening -= 1

    def session_expired(self, post: StreamablePost | None) -> None:
        """A message sent with the session id got 404 (``post``; ``None``: the GET stream)."""
        if not self.live:
            return
        session = self.session
        if post is not None and post.sent_session != session.id:
            # Sent on a session lost since: it goes on the next one.
            if session.lost:
                session.hold(post, True)
            else:
                self.resend(post)
            return
        if post is not None:
            session.hold(post, True)
        if session.lost:
            return
        lost = session.lose()
        if lost is None:
            self.gone(EXPIRED)
            return
        self.reconnects += 1
        if self.standalone is not None:
            self.standalone.abort()
            self.standalone = None  # opened again on the new session
        listener = session.listener
        assert listener is not None
        listener(lost)

    def release_held(self) -> None:
        """Send what waited for the new session; open the GET stream again."""
        if not self.live:
            return
        for post, again in self.session.reopened():
            if post.cancelled:
                continue
            if again:
                self.resend(post)
            else:
                post.sent_session = self.session.id  # held: it was never sent
                self.pool.submit(post)
        if self.open_stream and self.standalone is None and self._standalone_stream is not None:
            self.stream_retry.failures = 0
            self._open_standalone()

    def resend(self, post: Any) -> StreamablePost:
        again = StreamablePost(self, post.data, post.kind, post.rpc_method, post.headers)
        if again.rid is not None and type(again.rid) in (int, str):
            self.requests[again.rid] = again
        self.pool.submit(again)
        return again

    # -- resuming ---------------------------------------------------------------------------

    def resume(self, post: StreamablePost, why: str) -> None:
        """``post``'s stream ended before its response: GET it again after ``retry``."""
        if not self.live or post.done:
            return
        assert post.stream is not None
        decoder = post.stream.decoder
        if not decoder.last_event_id:
            post.finish()
            self.fail_request(post.rid, f"the response stream ended before the response ({why}); "
                                        "it cannot be resumed (no event id)")
            return
        if post.resumes >= self.resume_attempts:
            post.finish()
            self.fail_request(post.rid, f"the response stream ended before the response ({why}) "
                                        f"after {post.resumes} resumption(s)")
            return
        post.resumes += 1
        self.reconnects += 1
        delay = self._retry_delay(decoder)
        logger.debug("%s: resuming the stream of request %r in %.3f s (%s)", self.name, post.rid, delay, why)
        post.timer = self._later(delay, self._resume_now, post)

    def _resume_now(self, post: StreamablePost) -> None:
        post.timer = None
        if self.live and not post.done:
            assert post.stream is not None
            post.get = GetStream(self, post.stream, post)
            self.pool.submit(post.get)

    def _retry_delay(self, decoder: SSEDecoder) -> float:
        retry = decoder.retry if decoder.retry is not None else DEFAULT_RETRY_MS
        return min(retry, MAX_RETRY_MS) / 1000

    def _later(self, delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        timers = self._timers

        def fire() -> None:
            timers.discard(handle)
            callback(*args)

        handle = asyncio.get_running_loop().call_later(delay, fire)
        timers.add(handle)
        return handle

    def _open_standalone(self) -> None:
        stream = self._standalone_stream
        self.stream_retry.timer = None
        if not self.live or stream is None or self.standalone is not None:
            return
        self.stream_retry.tried = asyncio.get_running_loop().time()
        self.standalone = GetStream(self, stream, None)
        self.pool.submit(self.standalone)

    def get_refused(self, get: GetStream, response: Response) -> None:
        status = f"HTTP {response.status} {response.reason}".rstrip()
        session = self.session
        if response.status == 404 and get.sent_session is not None:
            if get is self.standalone:
                self.standalone = None  # opened again on the new session
            if get.sent_session == session.id:
                self.session_expired(None)
            elif not session.lost and get.post is None and self.standalone is None:
                self._open_standalone()  # the session was renewed since: open it on the new one
            if get.post is None:
                return
        post = get.post
        if post is not None:
            post.get = None
            if not post.done:
                post.finish()
                self.fail_request(post.rid, "the response stream ended before the response and "
                                            f"could not be resumed ({status})")
        elif get is self.standalone:
            self.standalone = None
            if response.status == 405:
                logger.debug("%s: the server offers no GET stream (HTTP 405)", self.name)
            else:
                self.http_errors += 1
                self.note(f"the GET stream was refused: {status}")

    def get_unreachable(self, get: GetStream, why: str) -> None:
        """No connection could be made for ``get``: the server is gone once the standalone
        stream failed so ``resume_attempts + 1`` times in a row."""
        if get is self.standalone:
            self.stream_retry.unreachable += 1
            if self.stream_retry.unreachable > self.resume_attempts:
                self.gone(why)
                return
        self.get_ended(get, why)

    def get_ended(self, get: GetStream, why: str) -> None:
        if not self.live:
            return
        get.stream.decoder.feed_eof()
        post = get.post
        if post is not None:
            post.get = None
            self.resume(post, why)
            return
        if get is not self.standalone:
            return
        # The standalone stream: opened again (with Last-Event-ID) with a floor and a backoff
        # (:class:`.http_stream.StreamRetry`): a server that sends one event and closes with
        # ``retry: 0`` must not get a connection per event.
        self.standalone = None
        self.reconnects += 1
        tries = self.stream_retry
        delay = tries.ended(get)
        if tries.failures > self.resume_attempts and not tries.given_up:
            tries.given_up = True
            self.note(f"the GET stream failed {tries.failures} tries in a row ({why}): the server's own "
                      f"requests and notifications are not received until it opens again (tried every "
                      f"{delay:g} s and after the next successful call)")
            self.tell_stream(False, f"the GET stream failed {tries.failures} tries in a row ({why})")
        logger.debug("%s: the GET stream ended (%s); opening it again in %.3f s", self.name, why, delay)
        tries.timer = self._later(delay, self._open_standalone)

    def exchange_succeeded(self) -> None:
        """A request was answered: a GET stream given up is tried again now (not more than
        once a second), the server being there."""
        tries = self.stream_retry
        if (tries.given_up and self.standalone is None and self.live and not self.session.lost
                and asyncio.get_running_loop().time() - tries.tried >= 1.0):
            if tries.timer is not None:
                tries.timer.cancel()
                self._timers.discard(tries.timer)
            self._open_standalone()

    def stream_opened(self, get: GetStream) -> None:
        """The GET stream was answered: after a give-up, it counts as back once it carried
        a message or stayed open ``STABLE_STREAM``."""
        if get is self.standalone:
            self.stream_retry.unreachable = 0
            if self.stream_retry.given_up:
                self._later(STABLE_STREAM, self.stream_back, get)

    def stream_back(self, get: GetStream) -> None:
        if get is self.standalone and get.ok and self.stream_retry.given_up:
            self.stream_retry.given_up = False
            self.tell_stream(True, "the GET stream is open again")  # logged, and told

    # -- closing ----------------------------------------------------------------------------

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self.requests.clear()
        self.session.clear()
        self.gate = None
        self._gate_timer = None
        self.standalone = None
        super().stop()

    async def aclose(self, timeout: float) -> Gone:
        if not self._closing:
            live = self._gone is None
            self._closing = True
            if self.standalone is not None:
                self.standalone.abort()
            if live and self.session.id is not None:
                # Spec: "Clients that no longer need a particular session ... SHOULD send an
                # HTTP DELETE to the MCP endpoint with the Mcp-Session-Id header"; 405: the
                # server does not allow it.
                done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
                self.pool.submit(SessionDelete(self, done))
                with contextlib.suppress(asyncio.TimeoutError):
                    status = await asyncio.wait_for(done, max(0.0, min(timeout, DELETE_WAIT)))
                    logger.debug("%s: DELETE of the session: HTTP %d", self.name, status)
            self.stop()
            await self.pool.aclose()
        return self._gone or Gone("connection closed")

