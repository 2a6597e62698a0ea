"""Server-Sent Events: a ``text/event-stream`` body in, events out (WHATWG HTML §9.2.6).

Sans-I/O (layer 1). ``SSEDecoder.feed`` takes the body bytes as they arrive and returns
the events they completed. The parsing follows "Interpreting an event stream" step by step
(each rule is quoted where it is implemented); what the spec leaves to the user agent is
stated here: the reconnection time is kept in ``retry`` and also given on the event that
carried it, and ``Event.id`` is the last event ID at dispatch, ``None`` while it is empty.

Bytes are split into lines before they are decoded: CR and LF never occur inside a UTF-8
sequence, so decoding each line with U+FFFD for invalid bytes gives what decoding the whole
stream would, and a character split across two chunks simply waits in the line buffer.

Lines and event data are bounded (``max_line_size``, ``max_event_size``) because the
server controls them, and the bound is on memory, not on characters: an event's data is
kept as the bytes of its lines, each followed by its LF, in one buffer (no object per
line), so an event of millions of short or empty ``data:`` lines holds what it counts --
``max_event_size`` bytes at most -- and is decoded once, at dispatch. An event whose data goes over is discarded as it streams (nothing of
it is kept past its first 512 characters) and dispatched as an :class:`Oversized` item with
its size and first characters, so the caller can fail just the call it answered and read
on; an overlong line of another field is ignored. The common chunk (lines ended by LF, no
CR) is split with one ``bytes.split``; the only Python step is per line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .framing import Oversized

__all__ = ["Event", "Oversized", "SSEDecoder", "SSEProtocolError"]

DEFAULT_MAX_LINE_SIZE: Final = 16 * 1024 * 1024
DEFAULT_MAX_EVENT_SIZE: Final = 64 * 1024 * 1024
_BOM: Final = b"\xef\xbb\xbf"
#: How much of a discarded event is kept (to tell which call it answered).
_HEAD: Final = 512
#: A data line longer than this is appended to the event's data as it arrives, not held whole.
_STREAMED: Final = 64 * 1024


class SSEProtocolError(ValueError):
    """Kept for callers that caught it: the decoder no longer raises (an event over the
    bounds is returned as :class:`Oversized`)."""


@dataclass(frozen=True, slots=True)
class Event:
    """A dispatched event.

    ``event`` is the type (``"message"`` when the stream named none), ``data`` the data lines
    joined by ``"\\n"``, ``id`` the last event ID at dispatch (``None`` when empty: never set,
    or reset by an empty ``id`` field), ``retry`` a reconnection time in milliseconds that
    came in this event's block, if any.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Incremental event-stream parser.

    ``last_event_id`` persists across events (send it as ``Last-Event-ID`` when
    reconnecting) and ``retry`` holds the latest reconnection time. ``feed_eof`` ends one
    stream and readies the decoder for the next (a reconnection), keeping both.
    """

    __slots__ = (
        "_data",
        "_drop_head",
        "_dropped",
        "_event_type",
        "_id_buffer",
        "_line",
        "_open_size",
        "_retry_field",
        "_skip_lf",
        "_skip_line",
        "_skip_line_head",
        "_skip_line_size",
        "_start",
        "last_event_id",
        "max_event_size",
        "max_line_size",
        "retry",
    )

    def __init__(
        self,
        last_event_id: str = "",
        *,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    ) -> None:
        if max_line_size <= 0 or max_event_size <= 0:
            raise ValueError("limits must be positive")
        self.max_line_size = max_line_size
        self.max_event_size = max_event_size
        self.last_event_id = last_event_id
        self.retry: int | None = None
        self._id_buffer = last_event_id
        self._line = bytearray()  # the unterminated line so far
        self._start: bytes | None = b""  # stream start held to look for the BOM; None: past it
        self._skip_lf = False  # the last chunk ended with CR: an LF next ends no line
        self._data = bytearray()  # the data lines' bytes, each followed by LF
        self._event_type = ""
        self._retry_field: int | None = None
        self._dropped = -1  # the size of the event being discarded (-1: none is)
        self._drop_head = b""
        self._skip_line = False  # discarding the rest of an overlong line
        self._skip_line_head = b""
        self._skip_line_size = 0
        self._open_size = 0  # the bytes of the long data line under way (0: none is)

    def feed(self, data: bytes) -> list[Event | Oversized]:
        """Add ``data`` and return the events it completed."""
        if self._start is not None:
            # "One leading U+FEFF BYTE ORDER MARK character must be ignored if any are present."
            data = self._start + data
            if len(data) < 3 and _BOM.startswith(data):
                self._start = data
                return []
            self._start = None
            if data.startswith(_BOM):
                data = data[3:]
        if not data:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        if self._skip_line:
            data = self._skip_rest_of_line(data)
            if not data:
                return []
        if b"\r" in data:
            # Lines end with "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character pair,
            # a single U+000A LINE FEED (LF) character not preceded by a U+000D CARRIAGE RETURN
            # (CR) character, and a single U+000D CARRIAGE RETURN (CR) character not followed
            # by a U+000A LINE FEED (LF) character". A CR ending the chunk ends its line; the
            # LF that may start the next chunk is its pair.
            self._skip_lf = data[-1:] == b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        rest = lines.pop()
        if self._open_size:
            # A long data line under way: its value goes straight into the event's data.
            if not lines:
                self._data_piece(rest, False)
                return []
            self._data_piece(lines[0], True)
            self._open_size = 0
            del lines[0]
        line = self._line
        if lines and line:
            lines[0] = bytes(line) + lines[0]
            line.clear()
        events = self._lines(lines) if lines else []
        line += rest
        if len(line) > self.max_line_size:
            # Too long already: the rest of it is discarded as it comes.
            self._skip_line = True
            self._skip_line_head = bytes(line[: _HEAD + 8])
            self._skip_line_size = len(line)
            line.clear()
        elif len(line) > _STREAMED and line.startswith(b"data:"):
            # A long data line is not held twice (as a line, then as data) nor copied
            # whole when it ends: what comes of it is appended to the data as it arrives.
            value = bytes(line[6:] if line[5:6] == b" " else line[5:])
            self._open_size = len(line) - len(value)
            line.clear()
            self._data_piece(value, False)
        return events

    def _data_piece(self, value: bytes, end: bool) -> None:
        """More of the long data line under way (``end``: its last part)."""
        self._open_size += len(value)
        if self._open_size > self.max_line_size and self._dropped < 0:
            self._drop(value, len(value) + end)
        else:
            self._data_line(value, end)

    def _skip_rest_of_line(self, data: bytes) -> bytes:
        """Drop ``data`` up to the end of the overlong line; return what follows it."""
        ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
        if not ends:
            self._skip_line_size += len(data)
            return b""
        cut = min(ends)
        self._skip_line_size += cut
        if data[cut : cut + 2] == b"\r\n":
            cut += 2
        else:
            self._skip_lf = data[cut : cut + 1] == b"\r" and cut + 1 == len(data)
            cut += 1
        self._skip_line = False
        self._overlong(self._skip_line_head, self._skip_line_size)
        return data[cut:]

    def _overlong(self, head: bytes, size: int) -> None:
        """A line over ``max_line_size``: a data line discards its event; another is ignored."""
        name, colon, value = head.partition(b":")
        if name == b"data":
            if colon and value[:1] == b" ":
                value = value[1:]
            self._drop(value, size)

    def feed_eof(self) -> list[Event]:
        """The stream ended: "any pending data must be discarded" (no event is dispatched).

        The decoder is then ready for a new stream (a reconnection): a BOM is looked for
        again, ``last_event_id`` and ``retry`` are kept.
        """
        self._line.clear()
        self._open_size = 0
        self._start = b""
        self._skip_lf = False
        self._skip_line = False
        self._reset_event()
        # The ID buffer goes back to what was last dispatched: an undispatched id is lost too.
        self._id_buffer = self.last_event_id
        return []

    @property
    def buffered(self) -> int:
        """Bytes held: the unterminated line and the data of the event under way."""
        return len(self._line) + len(self._data)

    def _reset_event(self) -> None:
        self._data = bytearray()
        self._event_type = ""
        self._retry_field = None
        self._dropped = -1
        self._drop_head = b""

    def _drop(self, more: bytes, size: int) -> None:
        """The event's data went over a bound: keep its size and first bytes only."""
        if self._dropped < 0:
            self._drop_head = (bytes(self._data[:_HEAD]) + more[:_HEAD])[:_HEAD]
            self._dropped = len(self._data) + size
            self._data = bytearray()
        else:
            self._dropped += size

    def _lines(self, lines: list[bytes]) -> list[Event | Oversized]:
        events: list[Event | Oversized] = []
        limit = self.max_line_size
        for raw in lines:
            if not raw:
                # "If the line is empty (a blank line): Dispatch the event."
                event = self._dispatch()
                if event is not None:
                    events.append(event)
                continue
            if len(raw) > limit:
                self._overlong(raw[: _HEAD + 8], len(raw))
                continue
            if raw[:1] == b":":
                continue  # "If the line starts with a U+003A COLON character (:): Ignore the line."
            # "If the line contains a U+003A COLON character: Collect the characters on the
            # line before the first U+003A COLON character (:), and let field be that string.
            # Collect the characters on the line after the first U+003A COLON character (:),
            # and let value be that string. If value starts with a U+0020 SPACE character,
            # remove it from value." Otherwise the whole line is the field, the value empty.
            name, colon, value = raw.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data_line(value)
            else:
                self._field(name, value.decode("utf-8", "replace"))
        return events

    def _data_line(self, value: bytes, end: bool = True) -> None:
        # "Append the field value to the data buffer, then append a single U+000A LINE FEED
        # (LF) character to the data buffer." Kept as bytes: LF never occurs inside a UTF-8
        # sequence, so decoding the whole buffer at dispatch gives what decoding each line
        # would. Each line costs its bytes and its LF, which is exactly what it holds.
        cost = len(value) + end
        if self._dropped >= 0:
            self._dropped += cost
        elif len(self._data) + cost > self.max_event_size:
            self._drop(value, cost)
        else:
            data = self._data
            data += value
            if end:
                data.append(10)

    def _field(self, name: bytes, value: str) -> None:
        if name == b"event":
            self._event_type = value  # "Set the event type buffer to field value."
        elif name == b"id":
            # "If the field value does not contain U+0000 NULL, then set the last event ID
            # buffer to the field value. Otherwise, ignore the field."
            if "\0" not in value:
                self._id_buffer = value
        elif name == b"retry":
            # "If the field value consists of only ASCII digits, then interpret the field value
            # as an integer in base ten, and set the event stream's reconnection time to that
            # integer. Otherwise, ignore the field." (An empty value is not a number.)
            if value.isascii() and value.isdigit():
                # Digits beyond what any delay needs are capped, not converted (int() refuses
                # very long strings).
                self.retry = self._retry_field = int(value) if len(value) <= 18 else 10**18
        # "Otherwise: The field is ignored."

    def _dispatch(self) -> Event | Oversized | None:
        # "Set the last event ID string of the event source to the value of the last event
        # ID buffer. The buffer does not get reset".
        self.last_event_id = self._id_buffer
        if self._dropped >= 0:
            dropped = Oversized(self._drop_head, self._dropped)
            self._reset_event()
            return dropped
        # "If the data buffer is an empty string, set the data buffer and the event type
        # buffer to the empty string and return."
        if not self._data:
            self._reset_event()
            return None
        event = Event(
            # "If the event type buffer has a value other than the empty string, change the
            # type of the newly created event to equal the value of the event type buffer."
            self._event_type or "message",
            # "If the data buffer's last character is a U+000A LINE FEED (LF) character, then
            # remove the last character from the data buffer."
            str(memoryview(self._data)[:-1], "utf-8", "replace"),  # not copied before decoding
            self.last_event_id or None,
            self._retry_field,
        )
        self._reset_event()
        return event
