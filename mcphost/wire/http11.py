"""HTTP/1.1, client side: response events in (RFC 9112); request bytes out from :mod:`.http11_request`.

Sans-I/O (layer 1). ``build_request`` (of :mod:`.http11_request`, named here too) turns a
method, target, headers and body into bytes; ``ResponseParser`` is fed what the connection
reads and returns ``Response``, ``Data`` and ``EndOfMessage`` events, one response after
another on a kept-alive connection.

Everything a server controls is bounded (header block, header count, chunk-size line,
optionally the body), and every malformed input raises ``HttpProtocolError`` with a message
naming what was wrong: a transport fails the connection on it and never sees an
``IndexError`` or a ``UnicodeDecodeError`` from here.

Cost is linear in the input: the parser keeps one buffer and a read position, finds line
ends and the end of the head with ``bytes.find`` (resuming where the last search stopped),
and copies body bytes once. Nothing steps through the input a byte at a time in Python.

A server sends the same head again and again but for its ``Content-Length``: the last head
framed by one plain ``Content-Length`` is kept as a template (the bytes before and after
the length's digits, and what they meant), and a read that is exactly one response whose
head is the template with other digits is taken from it without parsing the head again.
The outcome is exactly the full parse's: only the digits differ, checked as it checks them.
A connection that knows what such a head means to it (a ``200`` JSON answer) takes the body
alone with :meth:`ResponseParser.feed_same`: no event, no head object per response.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Union

from .http11_request import LAST_CHUNK, HttpProtocolError, build_request, encode_chunk

__all__ = [
    "LAST_CHUNK", "Data", "EndOfMessage", "Event", "HttpProtocolError", "Response",
    "ResponseParser", "build_request", "encode_chunk",
]

DEFAULT_MAX_HEADER_SIZE: Final = 64 * 1024
DEFAULT_MAX_HEADERS: Final = 100
DEFAULT_MAX_CHUNK_LINE: Final = 1024
# RFC 9110 §5.6.2: token = 1*tchar.
_TOKEN: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ]. The SP before
# an empty reason is often left out by servers; it is accepted missing.
_STATUS: Final = re.compile(rb"HTTP/([0-9])\.([0-9]) ([0-9]{3})(?: (.*))?", re.S)
# Control characters other than HTAB are not allowed in a field value or reason phrase.
_CTL: Final = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_HEX: Final = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS: Final = re.compile(r"[0-9]{1,19}")
# RFC 9112 §2.2: a client SHOULD ignore empty lines received before the status line.
_BLANK: Final = re.compile(rb"[\r\n]*")
_OWS: Final = b" \t"
# The fast path of ``_head``, for header lines with nothing unusual: CRLF line ends, no
# control character, every name a token (so no obs-fold either). ``bytes.translate`` with
# these as ``delete`` leaves nothing exactly when a value (or a name) is made of them.
_FIELD_BYTES: Final = bytes(b for b in range(256) if b in (9, 10, 13) or 0x20 <= b != 0x7F)
_TOKEN_BYTES: Final = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# The longest Content-Length value accepted (as _DIGITS).
_MAX_DIGITS: Final = 19

# Parser states.
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER = range(6)
_UNTIL_CLOSE, _SWITCHED, _CLOSED, _FAILED = range(6, 10)


@dataclass(frozen=True, slots=True)
class Response:
    """A final response head: header names lower-cased, in order, repeats kept."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    http_version: str = "1.1"


@dataclass(frozen=True, slots=True)
class Data:
    """Some bytes of the body (the chunking is the network's, not the message's)."""

    chunk: bytes


@dataclass(frozen=True, slots=True)
class EndOfMessage:
    """The body of the current response is complete."""


Event = Union[Response, Data, EndOfMessage]

#: Every end is the same (the event carries nothing).
_END: Final = EndOfMessage()


def _take(buf: bytearray, start: int, stop: int) -> bytes:
    """``bytes(buf[start:stop])`` in one copy instead of two (bodies can be large)."""
    with memoryview(buf) as view:
        return view[start:stop].tobytes()


def _plain_fields(fields: bytes, max_headers: int) -> list[tuple[str, str]] | None:
    """The header lines ``fields`` (the last one's LF cut off) as (lower-case name, value),
    or ``None`` if anything about them needs the careful path."""
    crlf = fields.count(b"\r\n")
    if (fields.translate(None, _FIELD_BYTES) or not fields.endswith(b"\r") or crlf >= max_headers
            or fields.count(b"\n") != crlf or fields.count(b"\r") != crlf + 1):
        return None
    out = []
    for line in fields[:-1].split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon or not name or name.translate(None, _TOKEN_BYTES):
            return None
        out.append((name.decode("ascii").lower(), value.strip(_OWS).decode("latin-1")))
    return out


class _Template:
    """A head kept to recognise the next ones: the bytes before its Content-Length digits
    and after them, the request it answered (method, expect_body), what it means (its
    ``Response``, the index of content-length in its headers, keep_alive)."""

    __slots__ = ("before", "behind", "expect_body", "index", "keep_alive", "method", "response")

    def __init__(self, before: bytes, behind: bytes, method: str, expect_body: bool, response: Response,
                 index: int, keep_alive: bool) -> None:
        self.before = before
        self.behind = behind
        self.method = method
        self.expect_body = expect_body
        self.response = response
        self.index = index
        self.keep_alive = keep_alive


class ResponseParser:
    """Incremental parser of the responses on one connection.

    ``feed`` returns the events the data completed; ``feed_eof`` says the server closed the
    connection (it ends a body read until close, and is an error inside any other body).
    Which responses have a body depends on the request (RFC 9112 §6.3: none after HEAD);
    say it with ``method`` and ``expect_body`` here or with ``set_request`` before the next
    response. Interim 1xx responses (100 Continue, 103 Early Hints) are skipped. A 101
    Switching Protocols (or a 2xx to CONNECT) gives ``Response`` and ``EndOfMessage`` and
    ends HTTP on the connection: later bytes collect in ``trailing_data``.

    After an error the parser stays failed: every later call raises again.
    """

    __slots__ = ("_body_size", "_buf", "_error", "_expect_body", "_method", "_remaining", "_same", "_scan",
                 "_state", "_template", "_templated", "_total", "_trailer_count", "_trailer_size", "keep_alive",
                 "max_body_size", "max_chunk_line", "max_header_size", "max_headers")

    def __init__(
        self,
        method: str = "GET",
        *,
        expect_body: bool = True,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_headers: int = DEFAULT_MAX_HEADERS,
        max_chunk_line: int = DEFAULT_MAX_CHUNK_LINE,
        max_body_size: int | None = None,
    ) -> None:
        if min(max_header_size, max_headers, max_chunk_line) <= 0:
            raise ValueError("limits must be positive")
        if max_body_size is not None and max_body_size < 0:
            raise ValueError("max_body_size must not be negative")
        self.max_header_size = max_header_size
        self.max_headers = max_headers
        self.max_chunk_line = max_chunk_line
        self.max_body_size = max_body_size
        self._method = method.upper()
        self._expect_body = expect_body
        self._buf = bytearray()
        self._state = _HEAD
        self._scan = 0  # bytes of the head already known to hold no terminator
        self._remaining = 0
        self._total = 0
        self._body_size = 0
        self._trailer_size = 0
        self._trailer_count = 0
        self._error = ""
        #: The last head framed by one plain Content-Length.
        self._template: _Template | None = None
        #: The last head parsed was the template's (and ``_same``: the digits of the last
        #: response :meth:`feed_same` took).
        self._templated = False
        self._same = b""
        #: Whether the connection may carry another request after this response (RFC 9112
        #: §9.3): false for HTTP/1.0 without keep-alive, ``Connection: close``, or a body
        #: read until close. Valid once ``Response`` was returned.
        self.keep_alive = True

    def set_request(self, method: str = "GET", *, expect_body: bool = True) -> None:
        """Say which request the next response answers (``HEAD`` or ``expect_body=False``: no body)."""
        self._method = method.upper()
        self._expect_body = expect_body

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of an event (the start of a next response, or
        bytes a server sent past the end of the last one)."""
        return len(self._buf)

    @property
    def trailing_data(self) -> bytes:
        """Bytes received after a 101 (or CONNECT) response: they belong to the new protocol."""
        return bytes(self._buf) if self._state in (_SWITCHED, _CLOSED) else b""

    @property
    def head_template(self) -> Response | None:
        """The head of the last response when it is the template's (else ``None``): a token
        for :meth:`feed_same` (the same object while the template lasts; its
        ``content-length`` is the one of the response that made the template)."""
        template = self._template
        return template.response if template is not None and self._templated else None

    def feed_same(self, data: bytes, head: Response) -> bytes | None:
        """The body of ``data`` when it is one whole response whose head is ``head`` (a
        :attr:`head_template` seen before) but for its Content-Length digits; the parser is
        then where :meth:`feed` would leave it (:meth:`same_events` gives what ``feed``
        would have returned). Else ``None``, nothing changed."""
        template = self._template
        if (template is None or template.response is not head or self._state != _HEAD or self._buf
                or template.method != self._method or template.expect_body != self._expect_body):
            return None
        before = template.before
        if not data.startswith(before):
            return None
        # Neither the template's head nor digits hold a blank line: the first one ends it.
        at = len(before)
        end = data.find(b"\n\r\n", at)
        n = end - at - len(template.behind)
        if not 0 < n <= _MAX_DIGITS or end + 3 > self.max_header_size:
            return None
        digits = data[at:at + n]
        if not digits.isdigit() or not data.startswith(template.behind, at + n):
            return None
        length = int(digits)
        end += 3
        if len(data) != end + length or (self.max_body_size is not None and length > self.max_body_size):
            return None
        self.keep_alive = template.keep_alive
        self._body_size = length
        self._same = digits
        return data[end:]

    def same_events(self, body: bytes) -> list[Event]:
        """The events of the response :meth:`feed_same` just took (``body``: what it returned)."""
        template = self._template
        assert template is not None
        return self._events_of(template, self._same, body)

    def feed(self, data: bytes) -> list[Event]:
        """Add ``data`` and return the events it completed."""
        template = self._template
        if template is not None and self._state == _HEAD and not self._buf:
            body = self.feed_same(data, template.response)
            if body is not None:
                self._templated = True
                return self._events_of(template, self._same, body)
        self._check_usable()
        if self._state == _CLOSED:
            raise self._fail("data after the end of the stream")
        self._buf += data
        if self._state == _SWITCHED:
            return []
        events: list[Event] = []
        try:
            pos = self._run(events)
        except HttpProtocolError as exc:
            self._state = _FAILED
            self._error = str(exc)
            raise
        if pos:
            del self._buf[:pos]
        return events

    @staticmethod
    def _events_of(template: _Template, digits: bytes, body: bytes) -> list[Event]:
        head = template.response
        headers = head.headers.copy()
        headers[template.index] = ("content-length", digits.decode("ascii"))
        response = Response(head.status, head.reason, headers, head.http_version)
        return [response, Data(body), _END] if body else [response, _END]

    def feed_eof(self) -> list[Event]:
        """The server closed the connection: end a body read until close, or fail."""
        self._check_usable()
        state = self._state
        if state == _UNTIL_CLOSE:
            self._state = _CLOSED
            return [_END]
        if state == _HEAD:
            if _BLANK.fullmatch(self._buf) is None:
                raise self._fail("connection closed inside a response head")
        elif state == _LENGTH:
            raise self._fail(
                f"connection closed with {self._remaining} of {self._total} body bytes missing"
            )
        elif state in (_CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER):
            raise self._fail("connection closed inside a chunked body")
        if state != _SWITCHED:
            self._buf.clear()
        self._state = _CLOSED
        return []

    def _check_usable(self) -> None:
        if self._state == _FAILED:
            raise HttpProtocolError(f"parser already failed: {self._error}")

    def _fail(self, message: str) -> HttpProtocolError:
        self._state = _FAILED
        self._error = message
        return HttpProtocolError(message)

    def _run(self, events: list[Event]) -> int:
        """Parse from the start of the buffer; return how many bytes were consumed."""
        buf = self._buf
        pos = 0
        while True:
            state = self._state
            if state == _HEAD:
                if pos == len(buf):
                    return pos  # nothing more yet (the usual end of a read)
                found = self._find_head(pos)
                if isinstance(found, int):
                    return found
                pos = self._head(events, *found)
                if self._state == _SWITCHED:
                    return pos
            elif state in (_LENGTH, _CHUNK_DATA):
                n = min(len(buf) - pos, self._remaining)
                if n == 0:
                    return pos
                events.append(Data(_take(buf, pos, pos + n)))
                pos += n
                self._remaining -= n
                if self._remaining:
                    return pos
                if state == _LENGTH:
                    events.append(_END)
                    self._state = _HEAD
                else:
                    self._state = _CHUNK_CRLF
            elif state == _CHUNK_SIZE:
                pos = self._chunk_size(pos)
                if self._state == _CHUNK_SIZE:
                    return pos
            elif state == _CHUNK_CRLF:
                # RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF.
                tail = bytes(buf[pos : pos + 2])
                if tail[:1] == b"\n":
                    pos += 1
                elif tail == b"\r\n":
                    pos += 2
                elif tail in (b"", b"\r"):
                    return pos
                else:
                    raise HttpProtocolError(f"missing CRLF after chunk data: {tail!r}")
                self._state = _CHUNK_SIZE
            elif state == _TRAILER:
                pos = self._trailer(events, pos)
                if self._state == _TRAILER:
                    return pos
            else:  # _UNTIL_CLOSE
                n = len(buf) - pos
                if n:
                    self._count_body(n)
                    events.append(Data(_take(buf, pos, len(buf))))
                return len(buf)

    def _find_head(self, pos: int) -> tuple[int, int, int] | int:
        """The head at ``pos``: (start, end of its last line, after it), or bytes consumed."""
        buf = self._buf
        # Blank lines before the head are skipped; once the head began there are none.
        if buf[pos] in b"\r\n":
            found = _BLANK.match(buf, pos)
            start = found.end() if found else pos
        else:
            start = pos
        scan = start + self._scan
        # RFC 9112 §2.2: a recipient MAY recognize a single LF as a line terminator.
        crlf = buf.find(b"\n\r\n", scan)
        lf = buf.find(b"\n\n", scan, crlf + 2 if crlf >= 0 else len(buf))
        if lf < 0 and crlf < 0:
            if len(buf) - start > self.max_header_size:
                raise HttpProtocolError(f"header block over {self.max_header_size} bytes")
            # Resume the search where it stopped: the terminator may begin in the last 2 bytes.
            self._scan = max(0, len(buf) - start - 2)
            return start
        end, after = (lf, lf + 2) if lf >= 0 else (crlf, crlf + 3)
        if after - start > self.max_header_size:  # the block counts its line ends
            raise HttpProtocolError(f"header block over {self.max_header_size} bytes")
        self._scan = 0
        return start, end, after

    def _head(self, events: list[Event], start: int, end: int, after: int) -> int:
        """Parse one head, emit what it means, choose how the body is framed."""
        block = _take(self._buf, start, end)
        headers_plain = True
        first = block.find(b"\n")
        status_line = (block if first < 0 else block[:first]).removesuffix(b"\r")
        match = _STATUS.fullmatch(status_line)
        if match is None or (match[4] is not None and _CTL.search(match[4])):
            raise HttpProtocolError(f"bad status line: {status_line[:100]!r}")
        if match[1] != b"1":
            raise HttpProtocolError(f"unsupported HTTP version: {status_line[:100]!r}")
        status = int(match[3])
        if status < 100:
            raise HttpProtocolError(f"bad status code: {status_line[:100]!r}")
        self._templated = False
        headers = None if first < 0 else _plain_fields(block[first + 1 :], self.max_headers)
        if headers is None:  # folded lines, bare LFs, or something to refuse: line by line
            headers_plain = False
            headers = self._headers(block.split(b"\n"))
        if 100 <= status < 200 and status != 101:
            return after  # RFC 9110 §15.2: interim responses; the final one follows.
        version = "1." + match[2].decode()
        reason = (match[4] or b"").decode("latin-1")
        events.append(Response(status, reason, headers, version))
        connection: set[str] = set()
        te: list[str] = []
        cl: list[str] = []
        for name, value in headers:
            if name == "content-length":
                cl.append(value)
            elif name == "transfer-encoding":
                te.append(value)
            elif name == "connection":
                connection.update(token.strip().lower() for token in value.split(","))
        self.keep_alive = "close" not in connection and (version != "1.0" or "keep-alive" in connection)
        method = self._method
        if status == 101 or (method == "CONNECT" and 200 <= status < 300):
            events.append(_END)
            self._state = _SWITCHED
            return after
        self._body_size = 0
        # RFC 9112 §6.3: the rules that decide the length of a response body, in order.
        if not self._expect_body or method == "HEAD" or status in (204, 304):
            events.append(_END)
            return after
        if te:
            if cl:
                # §6.3 point 3: both present "ought to be handled as an error".
                raise HttpProtocolError("response has both Transfer-Encoding and Content-Length")
            codings = [c.strip().lower() for v in te for c in v.split(",") if c.strip()]
            # Only chunked is supported: no request of ours offers any other coding (TE).
            if codings != ["chunked"]:
                raise HttpProtocolError(f"unsupported Transfer-Encoding: {', '.join(te)!r}")
            self._state = _CHUNK_SIZE
        elif cl:
            # §6.3 point 5: a list of identical values is accepted as that value.
            values = {v.strip(" \t") for item in cl for v in item.split(",")}
            if len(values) != 1 or not _DIGITS.fullmatch(next(iter(values))):
                raise HttpProtocolError(f"bad Content-Length: {', '.join(cl)!r}")
            value = values.pop()
            length = int(value)
            if headers_plain and cl == [value]:  # one plain value: a template
                self._keep_template(block, status, reason, headers, version, value)
            self._count_body(length)
            if length == 0:
                events.append(_END)
            else:
                self._state = _LENGTH
                self._remaining = self._total = length
        else:
            # §6.3 point 8: no framing, the body is everything until the server closes.
            self.keep_alive = False
            self._state = _UNTIL_CLOSE
        return after

    def _keep_template(self, block: bytes, status: int, reason: str, headers: list[tuple[str, str]],
                       version: str, value: str) -> None:
        """Keep the head ``block`` (plain fields, one Content-Length ``value``: digits, as
        checked) as the template of the next ones. Plain fields: every line ends with CRLF
        and holds no other LF, so the line naming content-length starts after an LF."""
        at = block.lower().find(b"\ncontent-length:")
        digits = block.find(value.encode("ascii"), at + 16) if at >= 0 else -1
        if digits < 0:
            return
        index = next(i for i, (name, _) in enumerate(headers) if name == "content-length")
        self._template = _Template(block[:digits], block[digits + len(value):], self._method, self._expect_body,
                                   Response(status, reason, headers, version), index, self.keep_alive)
        self._templated = True

    def _headers(self, lines: list[bytes]) -> list[tuple[str, str]]:
        fields: list[list[bytes]] = []
        for raw in lines[1:]:
            line = raw.removesuffix(b"\r")
            if line[:1] in (b" ", b"\t"):
                # RFC 9112 §5.2: a user agent MUST replace each received obs-fold with SP.
                if not fields:
                    raise HttpProtocolError(f"continuation line before any header: {line[:100]!r}")
                fields[-1][1] += b" " + line.strip(_OWS)
                continue
            colon = line.find(b":")
            # §5.1: no whitespace is allowed between the field name and the colon.
            if colon <= 0 or not _TOKEN.fullmatch(line, 0, colon):
                raise HttpProtocolError(f"bad header line: {line[:100]!r}")
            fields.append([line[:colon], line[colon + 1 :].strip(_OWS)])
            if len(fields) > self.max_headers:
                raise HttpProtocolError(f"more than {self.max_headers} headers")
        out = []
        for name, value in fields:
            if _CTL.search(value):
                raise HttpProtocolError(f"bad header value for {name.decode()!r}: control character")
            out.append((name.decode("ascii").lower(), value.decode("latin-1")))
        return out

    def _chunk_size(self, pos: int) -> int:
        buf = self._buf
        limit = self.max_chunk_line  # the line without its CRLF
        nl = buf.find(b"\n", pos, pos + limit + 2)
        if nl < 0:
            if len(buf) - pos > limit + 1:
                raise HttpProtocolError(f"chunk-size line over {limit} bytes")
            return pos
        line = bytes(buf[pos:nl]).removesuffix(b"\r")
        if len(line) > limit:
            raise HttpProtocolError(f"chunk-size line over {limit} bytes")
        # RFC 9112 §7.1.1: chunk extensions are ignored (BWS is allowed before the ';').
        size = line.split(b";", 1)[0].rstrip(_OWS)
        if not _HEX.fullmatch(size):
            raise HttpProtocolError(f"bad chunk-size line: {line[:100]!r}")
        n = int(size, 16)
        if n == 0:
            self._state = _TRAILER
            self._trailer_size = self._trailer_count = 0
        else:
            self._count_body(n)
            self._state = _CHUNK_DATA
            self._remaining = n
        return nl + 1

    def _trailer(self, events: list[Event], pos: int) -> int:
        """Skip the trailer section (§7.1.2: a recipient MAY discard it), bounded like a head."""
        buf = self._buf
        limit = self.max_header_size - self._trailer_size
        while True:
            nl = buf.find(b"\n", pos, pos + limit + 1)
            if nl < 0:
                if len(buf) - pos > limit:
                    raise HttpProtocolError(f"trailer block over {self.max_header_size} bytes")
                return pos
            blank = nl == pos or (nl == pos + 1 and buf[pos] == 13)
            limit -= nl + 1 - pos
            self._trailer_size += nl + 1 - pos
            pos = nl + 1
            if blank:
                events.append(_END)
                self._state = _HEAD
                return pos
            self._trailer_count += 1
            if self._trailer_count > self.max_headers:
                raise HttpProtocolError(f"more than {self.max_headers} trailer fields")

    def _count_body(self, n: int) -> None:
        self._body_size += n
        if self.max_body_size is not None and self._body_size > self.max_body_size:
            raise HttpProtocolError(f"body over max_body_size ({self.max_body_size} bytes)")
