"""One Streamable HTTP session of the gateway: its SSE streams and the transport its
server session sends through.

Layer 5. A POST that carries requests opens a :class:`Stream` for them: a priming event
first (an event id, a ``retry`` and no data: spec 2025-11-25, Transports, "the server SHOULD
immediately send an SSE event consisting of an event ID and an empty data field"), then
every message that relates to those requests (progress, log messages, sampling...,
marked by :data:`~mcphost.server.context.RELATED`), then their responses; then it ends.
The standalone GET stream carries everything else. Every event is kept (the last
``replay`` of each stream) so that a client that lost its connection resumes with
``Last-Event-ID``: what it missed is sent again, and an unfinished stream goes on on the
new connection. A client that reads too slowly (``max_buffer`` bytes unsent) loses its
connection, not the events.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from collections.abc import Sequence
from typing import Any, Final

from .._json import loads
from ..server.context import RELATED
from ..transports.base import REQUEST, RESPONSE, BaseTransport, Gone, Receiver
from .httpwire import Wire, sse_event

__all__ = ["HttpSession", "Stream"]

logger = logging.getLogger("mcphost.gateway")

_STANDALONE: Final = "0"


class Stream:
    """One SSE stream: its events (kept for replay) and the connection it is written to."""

    __slots__ = ("done", "events", "finished", "id", "json_mode", "max_buffer", "retry_ms", "sent", "seq",
                 "waiting", "writer")

    def __init__(self, sid: str, *, replay: int, retry_ms: int, max_buffer: int, json_mode: bool = False) -> None:
        self.id = sid
        self.events: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=replay)
        self.seq = 0
        #: The number of the last event written to a connection.
        self.sent = 0
        self.writer: Wire | None = None
        #: Request ids whose responses this stream still owes.
        self.waiting: set[Any] = set()
        self.retry_ms = retry_ms
        self.max_buffer = max_buffer
        #: Every response was sent: the stream ends.
        self.finished = False
        self.done = asyncio.Event()
        #: A client that accepts only JSON: the responses are gathered, not streamed.
        self.json_mode = json_mode

    def prime(self, writer: Wire) -> None:
        """Attach a new connection, send the priming event, then what no connection got yet."""
        before = self.sent
        self.writer = writer
        self.seq += 1
        writer.write(sse_event(f"{self.id}-{self.seq}", b"", self.retry_ms))
        for number, data in self.events:
            if number > before:
                writer.write(sse_event(f"{self.id}-{number}", data))
        self.sent = self.seq

    def push(self, data: bytes) -> None:
        self.seq += 1
        self.events.append((self.seq, data))
        if self.json_mode:
            return
        writer = self.writer
        if writer is None or writer.is_closing():
            return
        writer.write(sse_event(f"{self.id}-{self.seq}", data))
        self.sent = self.seq
        if writer.buffered() > self.max_buffer:
            logger.info("stream %s: the client reads too slowly; its connection is closed", self.id)
            self.detach()
            writer.close()

    def replay_after(self, seq: int, writer: Wire) -> None:
        """Attach ``writer`` (a resumed stream) and send every event after ``seq``."""
        self.writer = writer
        for number, data in self.events:
            if number > seq:
                writer.write(sse_event(f"{self.id}-{number}", data))
        self.sent = max(self.sent, self.seq)

    def detach(self) -> None:
        self.writer = None

    def finish(self) -> None:
        self.finished = True
        self.done.set()
        if self.writer is not None and not self.writer.is_closing():
            # The end goes out with the last response, in the same write.
            self.writer.end_stream()


class HttpSession(BaseTransport):
    """The transport of one server session over Streamable HTTP (see the module docstring)."""

    def __init__(self, session_id: str, *, replay: int, retry_ms: int, max_buffer: int, max_streams: int) -> None:
        self.session_id = session_id
        self.needs_drain = False
        self.replay = replay
        self.retry_ms = retry_ms
        self.max_buffer = max_buffer
        self.max_streams = max_streams
        self.streams: dict[str, Stream] = {}
        self.standalone = self.streams[_STANDALONE] = Stream(_STANDALONE, replay=replay, retry_ms=retry_ms,
                                                             max_buffer=max_buffer)
        self.by_request: dict[Any, Stream] = {}
        self._numbers = itertools.count(1)
        self._receiver: Receiver | None = None
        self._closed = False
        self.last_seen = 0.0
        self._stats = {"bytes_in": 0, "bytes_out": 0, "messages_in": 0, "messages_out": 0}

    # -- from HTTP requests ------------------------------------------------------------------

    def open_stream(self, request_ids: list[Any], json_mode: bool) -> Stream | None:
        """A stream for the responses to ``request_ids`` (``None``: too many open)."""
        if len(self.streams) > self.max_streams:
            self._forget_finished()
            if len(self.streams) > self.max_streams:
                return None
        stream = Stream(str(next(self._numbers)), replay=self.replay, retry_ms=self.retry_ms,
                        max_buffer=self.max_buffer, json_mode=json_mode)
        stream.waiting.update(request_ids)
        self.streams[stream.id] = stream
        for rid in request_ids:
            self.by_request[rid] = stream
        return stream

    def _forget_finished(self) -> None:
        for sid, stream in list(self.streams.items()):
            if stream.finished and stream.writer is None and sid != _STANDALONE:
                del self.streams[sid]

    def deliver(self, messages: list[Any], size: int) -> None:
        self._stats["bytes_in"] += size
        self._stats["messages_in"] += len(messages)
        if self._receiver is not None:
            self._receiver.on_messages(messages)

    # -- the transport contract ----------------------------------------------------------------

    async def start(self) -> None:
        return None

    def set_receiver(self, receiver: Receiver) -> None:
        self._receiver = receiver

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        if self._closed:
            return
        self._stats["bytes_out"] += len(data)
        self._stats["messages_out"] += 1
        if kind == RESPONSE:
            rid = loads(data).get("id")
            stream = self.by_request.pop(rid, None) if type(rid) in (int, str) else None
            if stream is None:
                self.standalone.push(data)  # an answer nobody waits for any more
                return
            stream.push(data)
            stream.waiting.discard(rid)
            if not stream.waiting:
                stream.finish()
            return
        stream = self.by_request.get(RELATED.get())
        if stream is None or stream.json_mode:
            stream = self.standalone
        stream.push(data)

    async def drain(self) -> None:
        return None

    async def aclose(self, timeout: float) -> Gone:
        self.end("the session was closed", tell=False)  # never on_gone after aclose (the contract)
        return Gone("the session was closed")

    def end(self, reason: str, *, tell: bool = True) -> None:
        """The session is over: every stream ends, the server session hears it once."""
        if self._closed:
            return
        self._closed = True
        for stream in self.streams.values():
            # finish() ends each attached stream's response (the last chunk): the connection
            # stays the client's, to carry its next request. Closing it as well would race the
            # client's reuse of a connection it was just told is whole (a reset on its next
            # request, seen under load).
            stream.finish()
            stream.detach()
        receiver = self._receiver
        if receiver is not None and tell:
            receiver.on_gone(Gone(reason))

    @property
    def closed(self) -> bool:
        return self._closed

    def busy(self) -> bool:
        """A stream is connected or a response is still owed."""
        return bool(self.by_request) or any(s.writer is not None for s in self.streams.values())

    def tail(self) -> list[str]:
        return []

    def statistics(self) -> dict[str, Any]:
        return dict(self._stats)
