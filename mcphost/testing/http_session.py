"""The fake server behind HTTP: one server per legacy session (or one for the modern era)
whose output goes to response streams instead of stdout.

The server's threads write whole lines tagged with the request they belong to; this module
turns each into an event on that request's :class:`Stream` (or on the session's standalone
GET stream) on the asyncio loop. A legacy stream keeps its events (bounded) so a client can
resume it with ``Last-Event-ID``; a modern stream is plain (2026-07-28 has no resumption),
and the modern server renames request ids so that clients which all count from 1 never meet.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
from typing import Any

from .common import JSON, META_SUBSCRIPTION, Call, Msg
from .server import FakeServer

#: Events a stream keeps for resumption; older ones are dropped.
MAX_HISTORY = 1000


class Stream:
    """The events of one response (or of the standalone GET stream), in order."""

    def __init__(self, number: int, sse: bool) -> None:
        self.number = number
        self.sse = sse
        self.events: list[tuple[int, bytes]] = []  # (sequence number, JSON message)
        self.seq = 0
        self.waiting: set[Any] = set()  # request ids whose response is still to come
        self.ids: set[Any] = set()  # every request id (internal) answered on this stream
        self.renames: dict[Any, Any] = {}  # internal request id -> the client's
        self.done = False
        self.attached = False
        self.closed_early = False  # the server closed it mid-call (SSE polling)
        self.wake = asyncio.Event()

    def push(self, data: bytes) -> None:
        if self.done:
            return
        try:
            msg = json.loads(data)
        except ValueError:
            msg = None
        if self.renames:
            data = _rename(data, self.renames)
        self.seq += 1
        self.events.append((self.seq, data))
        if len(self.events) > MAX_HISTORY:
            del self.events[0]
        if isinstance(msg, dict) and "method" not in msg and msg.get("id") in self.waiting:
            self.waiting.discard(msg["id"])
            if not self.waiting:
                self.done = True
        self.wake.set()

    def event_id(self, seq: int) -> str:
        return f"{self.number}-{seq}"


class HttpServer(FakeServer):
    """A fake server whose lines go to HTTP streams; one per legacy session, or the modern one."""

    def __init__(self, spec: Msg, era: str, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(spec, stdin_fd=-1, stdout=io.BytesIO(), era=era)
        self.loop = loop
        self.numbers = itertools.count(1)
        self.streams: dict[int, Stream] = {}
        self.by_request: dict[Any, Stream] = {}  # request id (internal) -> its stream
        self.standalone = self.new_stream(sse=True)  # the GET stream (legacy)
        self.rename = era == "modern"
        self._ids = itertools.count(1)
        self.closed = False

    def new_stream(self, sse: bool) -> Stream:
        stream = Stream(next(self.numbers), sse)
        self.streams[stream.number] = stream
        if len(self.streams) > 2 * MAX_HISTORY:
            for number in [n for n, s in self.streams.items() if s.done][: MAX_HISTORY]:
                del self.streams[number]
        return stream

    def feed(self, msg: JSON, stream: Stream | None) -> None:
        """Hand one client message to the server (on the loop); ``stream`` gets its answers."""
        if stream is not None and isinstance(msg, dict) and "method" in msg and "id" in msg:
            rid = msg["id"]
            if self.rename:
                internal = f"http-{next(self._ids)}"
                stream.renames[internal] = rid
                msg = {**msg, "id": internal}
                rid = internal
            stream.waiting.add(rid)
            stream.ids.add(rid)
            self.by_request[rid] = stream
        self._on_line(json.dumps(msg).encode("utf-8"))

    def find_tool(self, name: JSON) -> Msg | None:
        with self._cond:
            return next((t for t in self.tools if t.get("name") == name), None)

    def cancel(self, stream: Stream) -> None:
        """The client closed a modern response stream: that is the cancellation (spec A.9)."""
        with self._cond:
            for rid in stream.waiting:
                call = self.calls.get(rid)
                if call is not None:
                    call.cancelled = True
            self._cond.notify_all()

    def shutdown(self) -> None:
        with self._cond:
            self.closing = True
            for call in self.calls.values():
                call.cancelled = True
            self._cond.notify_all()
        self.closed = True
        for stream in list(self.streams.values()):
            stream.wake.set()

    # ---------------------------------------------------------------- output

    def write_raw(self, lines: Any, call: Call | None = None) -> None:
        stream = None if call is None or call.id is None else self.by_request.get(call.id)
        items = [bytes(line) for line in lines]
        self.loop.call_soon_threadsafe(self._route_lines, items, stream)

    def _route_lines(self, items: list[bytes], stream: Stream | None) -> None:
        for data in items:
            target = stream
            if target is not None and not target.sse and not _is_response(data):
                target = None  # a JSON response carries nothing but the response
            if target is None:
                if self.rename:
                    continue  # 2026-07-28 has no stream for messages of no request
                target = self.standalone
            target.push(data)
        if stream is not None and stream.done:
            for rid in stream.ids:
                if self.by_request.get(rid) is stream:
                    del self.by_request[rid]

    def close_stream(self, call: Call) -> None:
        """End ``call``'s SSE stream now, before its answer (the client resumes it)."""
        stream = self.by_request.get(call.id)
        if stream is not None:
            self.loop.call_soon_threadsafe(_close_early, stream)


def _close_early(stream: Stream) -> None:
    stream.closed_early = True
    stream.wake.set()


def _is_response(data: bytes) -> bool:
    try:
        msg = json.loads(data)
    except ValueError:
        return False
    return isinstance(msg, dict) and "method" not in msg


def _rename(data: bytes, renames: dict[Any, Any]) -> bytes:
    """Give the client back its own request ids (in the id and in the subscription id)."""
    try:
        msg = json.loads(data)
    except ValueError:
        return data
    if not isinstance(msg, dict):
        return data
    if "method" not in msg and msg.get("id") in renames:
        msg["id"] = renames[msg["id"]]
    for holder in (msg.get("params"), msg.get("result")):
        meta = holder.get("_meta") if isinstance(holder, dict) else None
        if isinstance(meta, dict) and meta.get(META_SUBSCRIPTION) in renames:
            meta[META_SUBSCRIPTION] = renames[meta[META_SUBSCRIPTION]]
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
