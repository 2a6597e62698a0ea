"""WebSocket, client side: the opening handshake and the framing (RFC 6455).

Sans-I/O (layer 1). ``handshake_request`` builds the upgrade request and
``check_handshake_response`` checks the answer (§4.1; the response head itself is parsed by
``wire.http11``, whose 101 leaves the bytes that follow in ``trailing_data``). Frames are
built by ``encode_frame`` and its helpers (``text``, ``binary``, ``ping``, ``pong``,
``close``), always masked as §5.3 requires of a client; the mask is random unless a test
injects it. ``FrameDecoder`` is fed what the connection reads and returns ``Message``,
``Ping``, ``Pong`` and ``Close`` events, whole messages reassembled from their fragments.

Every violation raises ``WebSocketProtocolError`` carrying the ``close_code`` to send
before failing the connection (§7.4.1: 1002 protocol error, 1007 invalid UTF-8, 1009 too
big); a handshake failure carries ``None``, as there is no connection to close yet. A
message over ``max_message_size`` is refused when the header announcing it arrives, before
its payload is buffered. A fragmented message is bounded in memory and in work, not only in
payload bytes: its fragments are appended to one buffer (no object held per frame, so what
is held is the payload, at most ``max_message_size``), the frames are counted, and a message
of more than ``max_fragments`` frames is refused (1009) -- millions of empty continuation
frames cost a counter, not a list, and stop at the bound. Masking XORs whole payloads as integers, not byte by byte.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, Union

from mcphost.wire.http11 import HttpProtocolError, build_request

__all__ = [
    "Close", "FrameDecoder", "Message", "Opcode", "Ping", "Pong", "WebSocketProtocolError",
    "accept_key", "apply_mask", "binary", "check_handshake_response", "close", "encode_frame",
    "handshake_request", "ping", "pong", "text",
]

DEFAULT_MAX_MESSAGE_SIZE: Final = 16 * 1024 * 1024
#: The most frames one data message may be cut into (16 MiB in 4 KiB fragments is 4,096).
DEFAULT_MAX_FRAGMENTS: Final = 65536
# §1.3: the GUID concatenated to the key to form Sec-WebSocket-Accept.
_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_CONTROL: Final = 125  # §5.5: "All control frames MUST have a payload length of 125 bytes or less"
_OWN_HEADERS: Final = frozenset(
    {"host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
     "sec-websocket-protocol", "sec-websocket-extensions"}
)


class Opcode(IntEnum):
    """§5.2 opcodes; the others are reserved and refused."""

    CONTINUATION = 0
    TEXT = 1
    BINARY = 2
    CLOSE = 8
    PING = 9
    PONG = 10


_OPCODES: Final = frozenset(int(op) for op in Opcode)


class WebSocketProtocolError(ValueError):
    """The peer broke RFC 6455 (or a frame to build is malformed); ``close_code`` says how."""

    def __init__(self, message: str, close_code: int | None = 1002) -> None:
        super().__init__(message)
        self.close_code = close_code


@dataclass(frozen=True, slots=True)
class Message:
    """A whole data message: ``str`` for text (strict UTF-8), ``bytes`` for binary."""

    opcode: Opcode
    payload: bytes | str


@dataclass(frozen=True, slots=True)
class Ping:
    """A ping; §5.5.2 says to answer it with a pong carrying the same payload."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class Pong:
    """A pong (solicited or not)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class Close:
    """The server's close frame; ``code`` is ``None`` when it carried no status (1005)."""

    code: int | None
    reason: str


FrameEvent = Union[Message, Ping, Pong, Close]


# --- the opening handshake (§4.1) ---


def accept_key(key: str) -> str:
    """§4.2.2: base64 of the SHA-1 of the key concatenated with the GUID."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def handshake_request(
    host: str,
    target: str,
    headers: Iterable[tuple[str, str]] = (),
    key: str | None = None,
    *,
    protocols: Sequence[str] = (),
) -> tuple[bytes, str]:
    """The upgrade request and its key (keep it for ``check_handshake_response``).

    ``key`` defaults to a fresh random one (§4.1: "a randomly selected 16-byte value that
    has been base64-encoded"); ``protocols`` are offered as Sec-WebSocket-Protocol.
    """
    if key is None:
        key = base64.b64encode(os.urandom(16)).decode("ascii")
    else:
        try:
            raw = base64.b64decode(key.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raw = b""
        if len(raw) != 16:
            raise WebSocketProtocolError(f"bad Sec-WebSocket-Key: {key!r}", None)
    extra = list(headers)
    for name, _ in extra:
        if name.lower() in _OWN_HEADERS:
            raise WebSocketProtocolError(f"header {name!r} is set by the handshake itself", None)
    own = [
        ("Host", host),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", key),
        ("Sec-WebSocket-Version", "13"),
    ]
    if protocols:
        own.append(("Sec-WebSocket-Protocol", ", ".join(protocols)))
    try:
        return build_request("GET", target, own + extra), key
    except HttpProtocolError as exc:
        raise WebSocketProtocolError(str(exc), None) from None


def check_handshake_response(
    status: int,
    headers: Iterable[tuple[str, str]],
    key: str,
    *,
    protocols: Sequence[str] = (),
) -> str | None:
    """Check the server's answer (§4.1, the client's checks 1 to 6); return the subprotocol.

    Header names are matched case-insensitively, so ``wire.http11`` headers or any others do.
    """
    if status != 101:
        raise WebSocketProtocolError(f"handshake answered with status {status}, not 101", None)
    found: dict[str, list[str]] = {}
    for name, value in headers:
        found.setdefault(name.lower(), []).append(value.strip())
    # 2: "If the response lacks an |Upgrade| header field or the |Upgrade| header field
    # contains a value that is not an ASCII case-insensitive match for the value "websocket"".
    upgrade = found.get("upgrade", [])
    if len(upgrade) != 1 or upgrade[0].lower() != "websocket":
        raise WebSocketProtocolError(f"bad Upgrade header in the handshake: {upgrade!r}", None)
    # 3: the Connection header must contain a token matching "Upgrade", case-insensitively.
    tokens = {t.strip().lower() for v in found.get("connection", []) for t in v.split(",")}
    if "upgrade" not in tokens:
        raise WebSocketProtocolError(
            f"bad Connection header in the handshake: {found.get('connection', [])!r}", None
        )
    # 4: Sec-WebSocket-Accept must be the base64 SHA-1 of the key and the GUID.
    accept = found.get("sec-websocket-accept", [])
    if accept != [accept_key(key)]:
        raise WebSocketProtocolError(f"bad Sec-WebSocket-Accept in the handshake: {accept!r}", None)
    # 5: no extension was offered, so any in use fails the connection.
    extensions = [v for v in found.get("sec-websocket-extensions", []) if v]
    if extensions:
        raise WebSocketProtocolError(f"server chose extensions not offered: {extensions!r}", None)
    # 6: a subprotocol must be one that was offered.
    chosen = found.get("sec-websocket-protocol", [])
    if not chosen:
        return None
    if len(chosen) != 1 or chosen[0] not in protocols:
        raise WebSocketProtocolError(f"server chose a subprotocol not offered: {chosen!r}", None)
    return chosen[0]


# --- frames out ---


def apply_mask(data: bytes, mask_key: bytes) -> bytes:
    """XOR ``data`` with the repeated 4-byte key (§5.3): masking and unmasking are the same.

    Small payloads are XORed as one big integer; large ones (where that is slower) as four
    strided ``translate`` calls. Either way the loop runs in C, not per byte in Python.
    """
    n = len(data)
    if not n:
        return b""
    if n >= 65536:
        out = bytearray(data)
        for i, k in enumerate(mask_key):
            out[i::4] = out[i::4].translate(bytes(b ^ k for b in range(256)))
        return bytes(out)
    mask = (mask_key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(mask, "big")).to_bytes(n, "big")


def encode_frame(
    opcode: int, payload: bytes, fin: bool = True, mask_key: bytes | None = None
) -> bytes:
    """One frame, masked (§5.1: "a client MUST mask all frames that it sends to the server").

    ``mask_key`` is 4 bytes, random by default (§5.3: "derived from a strong source of
    entropy"); tests inject it. Control frames must be final and at most 125 bytes.
    """
    if opcode not in _OPCODES:
        raise WebSocketProtocolError(f"unknown opcode {opcode:#x}")
    n = len(payload)
    if opcode >= 8 and (n > _MAX_CONTROL or not fin):
        raise WebSocketProtocolError(
            f"control frame {Opcode(opcode).name} must be final and at most 125 bytes ({n})"
        )
    if mask_key is None:
        mask_key = os.urandom(4)
    elif len(mask_key) != 4:
        raise WebSocketProtocolError(f"mask key must be 4 bytes, not {len(mask_key)}")
    first = (0x80 if fin else 0) | opcode
    # §5.2: 7 bits of length, or 126 and 16 bits, or 127 and 64 bits; 0x80 is the MASK bit.
    if n < 126:
        head = bytes((first, 0x80 | n))
    elif n < 65536:
        head = bytes((first, 0xFE)) + n.to_bytes(2, "big")
    else:
        head = bytes((first, 0xFF)) + n.to_bytes(8, "big")
    return head + mask_key + apply_mask(payload, mask_key)


def text(data: str, mask_key: bytes | None = None) -> bytes:
    """A text message in one frame."""
    return encode_frame(Opcode.TEXT, data.encode("utf-8"), True, mask_key)


def binary(data: bytes, mask_key: bytes | None = None) -> bytes:
    """A binary message in one frame."""
    return encode_frame(Opcode.BINARY, data, True, mask_key)


def ping(payload: bytes = b"", mask_key: bytes | None = None) -> bytes:
    """A ping frame."""
    return encode_frame(Opcode.PING, payload, True, mask_key)


def pong(payload: bytes = b"", mask_key: bytes | None = None) -> bytes:
    """A pong frame (the answer to a ping carries its payload)."""
    return encode_frame(Opcode.PONG, payload, True, mask_key)


def close(code: int | None = 1000, reason: str = "", mask_key: bytes | None = None) -> bytes:
    """A close frame; ``code=None`` sends none (and then no reason either, §5.5.1)."""
    if code is None:
        if reason:
            raise WebSocketProtocolError("a close reason needs a close code")
        return encode_frame(Opcode.CLOSE, b"", True, mask_key)
    if not _valid_close_code(code):
        raise WebSocketProtocolError(f"close code {code} may not be sent")
    raw = reason.encode("utf-8")
    if len(raw) > _MAX_CONTROL - 2:
        raise WebSocketProtocolError(f"close reason over 123 bytes ({len(raw)})")
    return encode_frame(Opcode.CLOSE, code.to_bytes(2, "big") + raw, True, mask_key)


def _valid_close_code(code: int) -> bool:
    # §7.4.1/§7.4.2: 1000-1003 and 1007-1011 defined, 1012-1014 registered with IANA since;
    # 1004 reserved; 1005, 1006 and 1015 "MUST NOT be set as a status code in a Close
    # control frame"; 1016-2999 reserved for this protocol; 3000-4999 for libraries,
    # frameworks and applications. Anything else is invalid.
    return 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999


# --- frames in ---


class FrameDecoder:
    """Incremental frame parser; reassembles fragmented messages.

    ``masked=False`` (the default) decodes what a server sends, which must not be masked
    (§5.1: "A client MUST close a connection if it detects a masked frame"); ``masked=True``
    decodes a client's frames, each of which must be, and unmasks them (for test servers).
    After a ``Close`` no frame may follow; after an error every call raises it again.
    """

    __slots__ = ("_buf", "_closed", "_error", "_frag_count", "_frag_opcode", "_frag_size", "_frags",
                 "masked", "max_fragments", "max_message_size")

    def __init__(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, masked: bool = False,
                 max_fragments: int = DEFAULT_MAX_FRAGMENTS) -> None:
        if max_message_size < 0:
            raise ValueError("max_message_size must not be negative")
        if max_fragments < 1:
            raise ValueError("max_fragments must be at least 1")
        self.max_message_size = max_message_size
        self.max_fragments = max_fragments
        self.masked = masked
        self._buf = bytearray()
        self._frag_opcode = 0  # the opcode of the fragmented message under way, 0 if none
        self._frags = bytearray()  # the fragments so far, in one buffer
        self._frag_size = 0  # their payload bytes
        self._frag_count = 0  # frames of the message so far
        self._closed = False
        self._error: WebSocketProtocolError | None = None

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Add ``data`` and return the events it completed."""
        if self._error is not None:
            raise WebSocketProtocolError(f"decoder already failed: {self._error}", self._error.close_code)
        self._buf += data
        events: list[FrameEvent] = []
        try:
            pos = self._run(events)
        except WebSocketProtocolError as exc:
            self._error = exc
            raise
        if pos:
            del self._buf[:pos]
        return events

    @property
    def buffered(self) -> int:
        """Bytes held waiting for the rest of a frame."""
        return len(self._buf)

    @property
    def fragments(self) -> tuple[int, int]:
        """The fragmented message under way: (frames so far, bytes held for it)."""
        return self._frag_count, len(self._frags)

    def _run(self, events: list[FrameEvent]) -> int:
        buf = self._buf
        pos = 0
        end = len(buf)
        while end - pos >= 2:
            if self._closed:
                raise WebSocketProtocolError("data after the close frame")
            b0 = buf[pos]
            b1 = buf[pos + 1]
            fin = b0 & 0x80
            opcode = b0 & 0x0F
            # §5.2: RSV1-3 "MUST be 0 unless an extension is negotiated"; none is.
            if b0 & 0x70:
                raise WebSocketProtocolError(f"reserved bits set in frame header {b0:#04x}")
            if opcode not in _OPCODES:
                raise WebSocketProtocolError(f"unknown opcode {opcode:#x}")
            if bool(b1 & 0x80) != self.masked:
                raise WebSocketProtocolError(
                    "masked frame from the server" if not self.masked else "unmasked frame from the client"
                )
            length = b1 & 0x7F
            if opcode >= 8:
                # §5.5: control frames have at most 125 bytes and "MUST NOT be fragmented".
                if length > _MAX_CONTROL:
                    raise WebSocketProtocolError(f"control frame {Opcode(opcode).name} over 125 bytes")
                if not fin:
                    raise WebSocketProtocolError(f"fragmented control frame {Opcode(opcode).name}")
            elif opcode == Opcode.CONTINUATION:
                if not self._frag_opcode:
                    raise WebSocketProtocolError("continuation frame without a message to continue")
            elif self._frag_opcode:
                raise WebSocketProtocolError(
                    f"new {Opcode(opcode).name} frame inside a fragmented message"
                )
            head = 2
            if length == 126:
                head = 4
                if end - pos < head:
                    break
                length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
            elif length == 127:
                head = 10
                if end - pos < head:
                    break
                length = int.from_bytes(buf[pos + 2 : pos + 10], "big")
                if length >> 63:
                    raise WebSocketProtocolError("64-bit frame length with the top bit set")
            if opcode < 8:
                # An empty frame costs no payload but still the work of a frame: frames are
                # counted too, so a message's frames cannot be free.
                if self._frag_size + length > self.max_message_size:
                    raise WebSocketProtocolError(
                        f"message over {self.max_message_size} bytes", 1009
                    )
                if self._frag_count >= self.max_fragments:
                    raise WebSocketProtocolError(
                        f"message in more than {self.max_fragments} frames", 1009
                    )
            key_at = pos + head
            if self.masked:
                head += 4
            if end - pos < head + length:
                break
            start = pos + head
            pos = start + length
            if fin and opcode == Opcode.TEXT and not self.masked and not self._frag_count:
                # A whole text message: decoded straight from the buffer, not copied first
                # (a big one costs one pass, not two).
                with memoryview(buf) as view, view[start:pos] as piece:
                    events.append(self._text(piece))
                continue
            with memoryview(buf) as view:
                payload = view[start:pos].tobytes()
            if self.masked:
                payload = apply_mask(payload, bytes(buf[key_at : key_at + 4]))
            event = self._frame(bool(fin), opcode, payload)
            if event is not None:
                events.append(event)
        return pos

    def _frame(self, fin: bool, opcode: int, payload: bytes) -> FrameEvent | None:
        if opcode == Opcode.PING:
            return Ping(payload)
        if opcode == Opcode.PONG:
            return Pong(payload)
        if opcode == Opcode.CLOSE:
            return self._close(payload)
        if opcode == Opcode.CONTINUATION:
            opcode = self._frag_opcode
        elif not fin:
            self._frag_opcode = opcode
        if not fin:
            # §5.4: "control frames MAY be injected in the middle of a fragmented message".
            self._frag_size += len(payload)
            self._frag_count += 1
            self._frags += payload
            return None
        if self._frag_count:
            self._frags += payload
            payload = bytes(self._frags)
            self._frags = bytearray()
            self._frag_size = 0
            self._frag_count = 0
            self._frag_opcode = 0
        if opcode == Opcode.TEXT:
            return self._text(payload)
        return Message(Opcode.BINARY, payload)

    @staticmethod
    def _text(payload: bytes | memoryview) -> Message:
        try:
            return Message(Opcode.TEXT, str(payload, "utf-8"))
        except UnicodeDecodeError:
            # §8.1: invalid UTF-8 in a text message fails the connection with 1007.
            raise WebSocketProtocolError("text message is not valid UTF-8", 1007) from None

    def _close(self, payload: bytes) -> Close:
        self._closed = True
        if not payload:
            return Close(None, "")
        # §5.5.1: "If there is a body, the first two bytes of the body MUST be a 2-byte
        # unsigned integer ... representing a status code".
        if len(payload) == 1:
            raise WebSocketProtocolError("close frame with a 1-byte payload")
        code = int.from_bytes(payload[:2], "big")
        if not _valid_close_code(code):
            raise WebSocketProtocolError(f"invalid close code {code}")
        try:
            reason = payload[2:].decode("utf-8")
        except UnicodeDecodeError:
            raise WebSocketProtocolError("close reason is not valid UTF-8", 1007) from None
        return Close(code, reason)
