"""WebSocket client codec: handshake, masked frames out, server frames in, every rejection."""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from mcphost.wire.http11 import Response, ResponseParser
from mcphost.wire.websocket import (
    Close,
    FrameDecoder,
    Message,
    Opcode,
    Ping,
    Pong,
    WebSocketProtocolError,
    accept_key,
    apply_mask,
    binary,
    check_handshake_response,
    close,
    encode_frame,
    handshake_request,
    ping,
    pong,
    text,
)

RFC_KEY = "dGhlIHNhbXBsZSBub25jZQ=="
RFC_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455 §1.3


def frame(opcode: int, payload: bytes = b"", *, fin: bool = True, rsv: int = 0, mask: bytes | None = None,
          wide: int = 0) -> bytes:
    """A frame as a server (or, with ``mask``, a client) would send it; ``wide`` forces 16/64-bit lengths."""
    n = len(payload)
    first = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    bit = 0x80 if mask is not None else 0
    if wide == 64 or n >= 65536:
        head = first + bytes([bit | 127]) + n.to_bytes(8, "big")
    elif wide == 16 or n >= 126:
        head = first + bytes([bit | 126]) + n.to_bytes(2, "big")
    else:
        head = first + bytes([bit | n])
    if mask is None:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def naive_mask(data: bytes, key: bytes) -> bytes:
    return bytes(b ^ key[i % 4] for i, b in enumerate(data))


def decode(data: bytes, **kwargs: Any) -> list[object]:
    return list(FrameDecoder(**kwargs).feed(data))


def fails(data: bytes, message: str, code: int | None = 1002, **kwargs: Any) -> WebSocketProtocolError:
    decoder = FrameDecoder(**kwargs)
    with pytest.raises(WebSocketProtocolError) as info:
        decoder.feed(data)
    assert message in str(info.value)
    assert info.value.close_code == code
    # The decoder stays failed, with the same close code.
    with pytest.raises(WebSocketProtocolError, match="decoder already failed") as again:
        decoder.feed(b"")
    assert again.value.close_code == code
    return info.value


# --- handshake ---


def test_rfc_example_accept_key() -> None:
    assert accept_key(RFC_KEY) == RFC_ACCEPT


def test_handshake_request_with_given_key() -> None:
    raw, key = handshake_request("server.example.com", "/chat", [("Origin", "http://example.com")], RFC_KEY)
    assert key == RFC_KEY
    assert raw == (
        b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\nOrigin: http://example.com\r\n\r\n"
    )


def test_handshake_request_random_key_and_protocols() -> None:
    raw, key = handshake_request("h:8080", "/mcp", protocols=["mcp", "chat"])
    assert len(base64.b64decode(key)) == 16
    assert f"Sec-WebSocket-Key: {key}\r\n".encode() in raw
    assert b"Sec-WebSocket-Protocol: mcp, chat\r\n" in raw
    assert handshake_request("h", "/")[1] != key


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key": "short"}, "bad Sec-WebSocket-Key: 'short'"),
        ({"key": "not base64 at all!!!!!!!"}, "bad Sec-WebSocket-Key"),
        ({"key": "é" * 24}, "bad Sec-WebSocket-Key"),
        ({"key": base64.b64encode(b"x" * 15).decode()}, "bad Sec-WebSocket-Key"),
        ({"headers": [("connection", "close")]}, "header 'connection' is set by the handshake itself"),
        ({"headers": [("Sec-WebSocket-Key", RFC_KEY)]}, "is set by the handshake itself"),
        ({"headers": [("X", "a\nb")]}, "bad header value for 'X'"),
        ({"target": "/a b"}, "bad request target: '/a b'"),
    ],
)
def test_bad_handshake_requests(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"host": "h", "target": "/", **kwargs}
    with pytest.raises(WebSocketProtocolError) as info:
        handshake_request(**args)  # type: ignore[arg-type]
    assert message in str(info.value)
    assert info.value.close_code is None


GOOD_HEADERS = [
    ("upgrade", "WebSocket"),
    ("CONNECTION", "keep-alive, Upgrade"),
    ("Sec-WebSocket-Accept", RFC_ACCEPT),
]


def test_good_handshake_response() -> None:
    assert check_handshake_response(101, GOOD_HEADERS, RFC_KEY) is None
    with_protocol = [*GOOD_HEADERS, ("sec-websocket-protocol", "mcp"), ("Sec-WebSocket-Extensions", "")]
    assert check_handshake_response(101, with_protocol, RFC_KEY, protocols=["chat", "mcp"]) == "mcp"


@pytest.mark.parametrize(
    ("status", "headers", "protocols", "message"),
    [
        (200, GOOD_HEADERS, (), "handshake answered with status 200, not 101"),
        (101, GOOD_HEADERS[1:], (), "bad Upgrade header in the handshake: []"),
        (101, [("Upgrade", "h2c"), *GOOD_HEADERS[1:]], (), "bad Upgrade header in the handshake: ['h2c']"),
        (101, [GOOD_HEADERS[0], *GOOD_HEADERS], (), "bad Upgrade header"),
        (101, [GOOD_HEADERS[0], GOOD_HEADERS[2]], (), "bad Connection header in the handshake: []"),
        (101, [GOOD_HEADERS[0], ("Connection", "keep-alive"), GOOD_HEADERS[2]], (),
         "bad Connection header in the handshake: ['keep-alive']"),
        (101, GOOD_HEADERS[:2], (), "bad Sec-WebSocket-Accept in the handshake: []"),
        (101, [*GOOD_HEADERS[:2], ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZxOo=")], (),
         "bad Sec-WebSocket-Accept in the handshake: ['s3pPLMBiTxaQ9kYGzzhZxOo=']"),
        (101, [*GOOD_HEADERS, ("Sec-WebSocket-Accept", RFC_ACCEPT)], (), "bad Sec-WebSocket-Accept"),
        (101, [*GOOD_HEADERS, ("Sec-WebSocket-Extensions", "permessage-deflate")], (),
         "server chose extensions not offered: ['permessage-deflate']"),
        (101, [*GOOD_HEADERS, ("Sec-WebSocket-Protocol", "chat")], (),
         "server chose a subprotocol not offered: ['chat']"),
        (101, [*GOOD_HEADERS, ("Sec-WebSocket-Protocol", "chat")], ("mcp",), "subprotocol not offered"),
        (101, [*GOOD_HEADERS, ("Sec-WebSocket-Protocol", "mcp"), ("Sec-WebSocket-Protocol", "mcp")], ("mcp",),
         "subprotocol not offered"),
    ],
)
def test_bad_handshake_responses(
    status: int, headers: list[tuple[str, str]], protocols: tuple[str, ...], message: str
) -> None:
    with pytest.raises(WebSocketProtocolError) as info:
        check_handshake_response(status, headers, RFC_KEY, protocols=protocols)
    assert message in str(info.value)
    assert info.value.close_code is None


def test_handshake_through_the_http_parser() -> None:
    request, key = handshake_request("h", "/ws")
    assert request.startswith(b"GET /ws HTTP/1.1\r\n")
    parser = ResponseParser()
    answer = (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept_key(key).encode() + b"\r\n\r\n" + frame(Opcode.TEXT, b"hi")
    )
    response, _ = parser.feed(answer)
    assert isinstance(response, Response)
    assert check_handshake_response(response.status, response.headers, key) is None
    assert FrameDecoder().feed(parser.trailing_data) == [Message(Opcode.TEXT, "hi")]


# --- frames out ---


def test_rfc_masked_hello() -> None:
    # RFC 6455 §5.7: "A single-frame masked text message".
    assert text("Hello", b"\x37\xfa\x21\x3d") == bytes.fromhex("818537fa213d7f9f4d5158")


@pytest.mark.parametrize(("n", "header"), [
    (0, b"\x82\x80"), (125, b"\x82\xfd"), (126, b"\x82\xfe\x00\x7e"), (65535, b"\x82\xfe\xff\xff"),
    (65536, b"\x82\xff\x00\x00\x00\x00\x00\x01\x00\x00"),
])
def test_length_forms(n: int, header: bytes) -> None:
    payload = bytes(range(256)) * (n // 256) + bytes(range(n % 256))
    raw = binary(payload, b"\x01\x02\x03\x04")
    assert raw[: len(header)] == header
    assert raw[len(header) : len(header) + 4] == b"\x01\x02\x03\x04"
    assert naive_mask(raw[len(header) + 4 :], b"\x01\x02\x03\x04") == payload
    assert FrameDecoder(masked=True).feed(raw) == [Message(Opcode.BINARY, payload)]


def test_default_mask_is_random_and_set() -> None:
    one, two = text("same"), text("same")
    assert one[1] & 0x80 and two[1] & 0x80
    assert one[2:6] != two[2:6]  # 2**-32 odds of a false failure
    assert naive_mask(one[6:], one[2:6]) == b"same"


def test_helpers() -> None:
    key = b"\x00\x00\x00\x00"  # a zero mask leaves the payload readable
    assert text("é", key) == b"\x81\x82" + key + "é".encode()
    assert binary(b"\x00\xff", key) == b"\x82\x82" + key + b"\x00\xff"
    assert ping(b"p", key) == b"\x89\x81" + key + b"p"
    assert pong(mask_key=key) == b"\x8a\x80" + key
    assert close(mask_key=key) == b"\x88\x82" + key + b"\x03\xe8"
    assert close(4000, "bye", key) == b"\x88\x85" + key + b"\x0f\xa0bye"
    assert close(None, mask_key=key) == b"\x88\x80" + key
    assert close(1000, "é" * 61, key)[1] == 0x80 | 124
    assert encode_frame(Opcode.TEXT, b"ab", fin=False, mask_key=key) == b"\x01\x82" + key + b"ab"
    assert encode_frame(Opcode.CONTINUATION, b"", mask_key=key) == b"\x80\x80" + key


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: encode_frame(3, b""), "unknown opcode 0x3"),
        (lambda: encode_frame(Opcode.PING, b"x" * 126), "control frame PING must be final and at most 125 bytes (126)"),
        (lambda: encode_frame(Opcode.CLOSE, b"", fin=False), "control frame CLOSE must be final"),
        (lambda: encode_frame(Opcode.TEXT, b"", mask_key=b"abc"), "mask key must be 4 bytes, not 3"),
        (lambda: close(None, "why"), "a close reason needs a close code"),
        (lambda: close(1005), "close code 1005 may not be sent"),
        (lambda: close(1006), "close code 1006 may not be sent"),
        (lambda: close(999), "close code 999 may not be sent"),
        (lambda: close(5000), "close code 5000 may not be sent"),
        (lambda: close(1000, "x" * 124), "close reason over 123 bytes (124)"),
    ],
)
def test_bad_frames_to_send(call: object, message: str) -> None:
    with pytest.raises(WebSocketProtocolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()  # type: ignore[operator]


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1000, 65535, 65536, 65537, 200_003])
def test_mask_round_trip(n: int) -> None:
    rng = random.Random(n)
    data = rng.randbytes(n)
    key = rng.randbytes(4)
    masked = apply_mask(data, key)
    assert masked == naive_mask(data, key)
    assert apply_mask(masked, key) == data


def test_client_frames_round_trip_through_a_masked_decoder() -> None:
    rng = random.Random(6455)
    decoder = FrameDecoder(masked=True)
    for _ in range(200):
        is_text = rng.random() < 0.5
        value: bytes | str = "".join(rng.choice("aé€😀 ") for _ in range(rng.randrange(0, 300))) if is_text \
            else rng.randbytes(rng.randrange(0, 300))
        raw = value.encode() if isinstance(value, str) else value
        # Split into fragments (a multi-byte character may straddle two), with pings between.
        cuts = sorted(rng.sample(range(len(raw) + 1), min(len(raw) + 1, rng.randrange(0, 4))))
        parts = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]
        wire = b""
        for i, part in enumerate(parts):
            opcode = (Opcode.TEXT if is_text else Opcode.BINARY) if i == 0 else Opcode.CONTINUATION
            wire += encode_frame(opcode, part, fin=i == len(parts) - 1)
            if i < len(parts) - 1:
                wire += ping(b"%d" % i)
        events = decoder.feed(wire)
        assert events[-1] == Message(Opcode.TEXT if is_text else Opcode.BINARY, value)
        assert events[:-1] == [Ping(b"%d" % i) for i in range(len(parts) - 1)]
    assert decoder.feed(close(1001, "going")) == [Close(1001, "going")]


# --- frames in ---


def test_rfc_examples_from_the_server() -> None:
    # RFC 6455 §5.7, the unmasked examples.
    assert decode(bytes.fromhex("810548656c6c6f")) == [Message(Opcode.TEXT, "Hello")]
    assert decode(bytes.fromhex("010348656c") + bytes.fromhex("80026c6f")) == [Message(Opcode.TEXT, "Hello")]
    assert decode(bytes.fromhex("890548656c6c6f")) == [Ping(b"Hello")]
    assert decode(b"\x82\x7e\x01\x00" + b"x" * 256) == [Message(Opcode.BINARY, b"x" * 256)]
    assert decode(b"\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00" + b"y" * 65536) == [
        Message(Opcode.BINARY, b"y" * 65536)
    ]


def test_non_minimal_lengths_are_accepted() -> None:
    assert decode(frame(Opcode.TEXT, b"ab", wide=16) + frame(Opcode.TEXT, b"cd", wide=64)) == [
        Message(Opcode.TEXT, "ab"), Message(Opcode.TEXT, "cd"),
    ]


def test_control_frames() -> None:
    assert decode(frame(Opcode.PING) + frame(Opcode.PONG, b"x" * 125)) == [Ping(b""), Pong(b"x" * 125)]
    assert decode(frame(Opcode.CLOSE)) == [Close(None, "")]
    assert decode(frame(Opcode.CLOSE, b"\x03\xe8")) == [Close(1000, "")]
    assert decode(frame(Opcode.CLOSE, b"\x0f\xa0\xc3\xa9t\xc3\xa9")) == [Close(4000, "été")]


def test_fragmented_message_with_interleaved_control_frames() -> None:
    raw = (
        frame(Opcode.BINARY, b"ab", fin=False) + frame(Opcode.PING, b"1") + frame(Opcode.CONTINUATION, b"", fin=False)
        + frame(Opcode.PONG, b"2") + frame(Opcode.CONTINUATION, b"cd", fin=False) + frame(Opcode.CONTINUATION, b"e")
        + frame(Opcode.TEXT, b"next")
    )
    assert decode(raw) == [Ping(b"1"), Pong(b"2"), Message(Opcode.BINARY, b"abcde"), Message(Opcode.TEXT, "next")]


def test_text_split_inside_a_character_across_fragments() -> None:
    raw = "€".encode()
    assert decode(frame(Opcode.TEXT, raw[:1], fin=False) + frame(Opcode.CONTINUATION, raw[1:])) == [
        Message(Opcode.TEXT, "€")
    ]


def test_empty_messages() -> None:
    assert decode(frame(Opcode.TEXT) + frame(Opcode.BINARY)) == [Message(Opcode.TEXT, ""), Message(Opcode.BINARY, b"")]
    assert decode(frame(Opcode.TEXT, fin=False) + frame(Opcode.CONTINUATION)) == [Message(Opcode.TEXT, "")]


@pytest.mark.parametrize("code", [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014,
                                  3000, 3999, 4000, 4999])
def test_valid_close_codes(code: int) -> None:
    assert decode(frame(Opcode.CLOSE, code.to_bytes(2, "big") + b"r")) == [Close(code, "r")]


@pytest.mark.parametrize("code", [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535])
def test_invalid_close_codes(code: int) -> None:
    fails(frame(Opcode.CLOSE, code.to_bytes(2, "big")), f"invalid close code {code}")


def test_max_message_size_default_and_exact() -> None:
    assert FrameDecoder().max_message_size == 16 * 1024 * 1024
    assert decode(frame(Opcode.BINARY, b"x" * 10), max_message_size=10) == [Message(Opcode.BINARY, b"x" * 10)]
    fragments = frame(Opcode.BINARY, b"x" * 5, fin=False) + frame(Opcode.CONTINUATION, b"y" * 5)
    assert decode(fragments * 2, max_message_size=10) == [Message(Opcode.BINARY, b"xxxxxyyyyy")] * 2


def test_too_big_is_refused_from_the_header_alone() -> None:
    decoder = FrameDecoder(max_message_size=1000)
    with pytest.raises(WebSocketProtocolError, match="message over 1000 bytes") as info:
        decoder.feed(b"\x82\x7e\x03\xe9")  # 1001 bytes announced, none sent
    assert info.value.close_code == 1009


BAD: list[tuple[bytes, dict[str, Any], str, int]] = [
    (frame(Opcode.TEXT, b"x", mask=b"abcd"), {}, "masked frame from the server", 1002),
    (frame(Opcode.TEXT, b"x"), {"masked": True}, "unmasked frame from the client", 1002),
    (frame(Opcode.TEXT, b"x", rsv=4), {}, "reserved bits set in frame header 0xc1", 1002),
    (frame(Opcode.TEXT, b"x", rsv=2), {}, "reserved bits set in frame header 0xa1", 1002),
    (frame(Opcode.TEXT, b"x", rsv=1), {}, "reserved bits set in frame header 0x91", 1002),
    *[(frame(op, b"x"), {}, f"unknown opcode {op:#x}", 1002) for op in (3, 4, 5, 6, 7, 11, 12, 13, 14, 15)],
    (b"\x89\x7e\x00\x7e" + b"p" * 126, {}, "control frame PING over 125 bytes", 1002),
    (b"\x88\x7e\x00\x01\x00", {}, "control frame CLOSE over 125 bytes", 1002),
    (frame(Opcode.PING, b"x", fin=False), {}, "fragmented control frame PING", 1002),
    (frame(Opcode.CONTINUATION, b"x"), {}, "continuation frame without a message to continue", 1002),
    (frame(Opcode.TEXT, b"a") + frame(Opcode.CONTINUATION, b"b"), {}, "continuation frame without", 1002),
    (frame(Opcode.TEXT, b"a", fin=False) + frame(Opcode.BINARY, b"b"), {},
     "new BINARY frame inside a fragmented message", 1002),
    (frame(Opcode.TEXT, b"a", fin=False) + frame(Opcode.TEXT, b"b", fin=False), {},
     "new TEXT frame inside a fragmented message", 1002),
    (frame(Opcode.CLOSE, b"\x03"), {}, "close frame with a 1-byte payload", 1002),
    (frame(Opcode.CLOSE, b"\x03\xe8\xff"), {}, "close reason is not valid UTF-8", 1007),
    (frame(Opcode.TEXT, b"\xff"), {}, "text message is not valid UTF-8", 1007),
    (frame(Opcode.TEXT, b"\xed\xa0\x80"), {}, "text message is not valid UTF-8", 1007),  # a surrogate
    (frame(Opcode.TEXT, b"\xe2\x82", fin=False) + frame(Opcode.CONTINUATION, b""), {},
     "text message is not valid UTF-8", 1007),
    (b"\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x01", {}, "64-bit frame length with the top bit set", 1002),
    (b"\x82\x7f\x00\x00\x00\x01\x00\x00\x00\x00", {}, "message over 16777216 bytes", 1009),
    (frame(Opcode.BINARY, b"x" * 11), {"max_message_size": 10}, "message over 10 bytes", 1009),
    (frame(Opcode.BINARY, b"x" * 6, fin=False) + frame(Opcode.CONTINUATION, b"x" * 5), {"max_message_size": 10},
     "message over 10 bytes", 1009),
    (frame(Opcode.CLOSE) + frame(Opcode.TEXT, b"late"), {}, "data after the close frame", 1002),
    (frame(Opcode.CLOSE, b"\x03\xe8") + b"\x00", {}, "", 1002),
]


@pytest.mark.parametrize(("raw", "kwargs", "message", "code"), BAD)
def test_rejected_frames(raw: bytes, kwargs: dict[str, Any], message: str, code: int) -> None:
    if message:
        fails(raw, message, code, **kwargs)
    else:
        # A lone byte after the close frame waits for a second; then it is refused.
        decoder = FrameDecoder(**kwargs)
        assert decoder.feed(raw) == [Close(1000, "")]
        with pytest.raises(WebSocketProtocolError, match="data after the close frame"):
            decoder.feed(b"\x00")


def test_bad_limit() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_message_size=-1)


def test_buffered_bytes() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x81\x05He") == []
    assert decoder.buffered == 4
    assert decoder.feed(b"llo\x81") == [Message(Opcode.TEXT, "Hello")]
    assert decoder.buffered == 1


def test_large_message_in_many_reads() -> None:
    payload = bytes(range(256)) * 40_000
    raw = frame(Opcode.BINARY, payload[:5_000_000], fin=False) + frame(Opcode.CONTINUATION, payload[5_000_000:])
    decoder = FrameDecoder()
    events: list[object] = []
    for i in range(0, len(raw), 65536):
        events += decoder.feed(raw[i : i + 65536])
    assert events == [Message(Opcode.BINARY, payload)]


# --- any split gives the same events ---

VALID = [
    bytes.fromhex("010348656c") + frame(Opcode.PING, b"p") + bytes.fromhex("80026c6f") + frame(Opcode.CLOSE, b"\x03\xe8ok"),
    frame(Opcode.BINARY, b"z" * 300) + frame(Opcode.TEXT, "😀".encode(), wide=64) + frame(Opcode.PONG),
    frame(Opcode.TEXT, b"\xf0\x9f", fin=False) + frame(Opcode.CONTINUATION, b"\x98\x80", fin=False)
    + frame(Opcode.PONG, b"x" * 125) + frame(Opcode.CONTINUATION, b"!") + frame(Opcode.CLOSE),
]


def run(chunks: list[bytes], **kwargs: bool) -> list[object]:
    decoder = FrameDecoder(**kwargs)
    events: list[object] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events


@pytest.mark.parametrize("raw", VALID)
def test_every_split_gives_the_same_events(raw: bytes) -> None:
    whole = run([raw])
    assert isinstance(whole[-1], (Close, Pong))
    for i in range(len(raw) + 1):
        assert run([raw[:i], raw[i:]]) == whole, i
    assert run([raw[i : i + 1] for i in range(len(raw))]) == whole


def test_every_split_of_masked_frames() -> None:
    raw = text("héllo", b"abcd") + ping(b"x", b"\x00\x01\x02\x03") + close(1000, "", b"wxyz")
    whole = run([raw], masked=True)
    assert whole == [Message(Opcode.TEXT, "héllo"), Ping(b"x"), Close(1000, "")]
    for i in range(len(raw) + 1):
        assert run([raw[:i], raw[i:]], masked=True) == whole
    assert run([raw[i : i + 1] for i in range(len(raw))], masked=True) == whole


# --- fuzz ---


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(out) + 1)
        kind = rng.randrange(4)
        if kind == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del out[at:]
        elif kind == 2:
            out[at:at] = rng.randbytes(rng.randrange(1, 6))
        elif out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
    return bytes(out)


def test_fuzz_only_protocol_errors() -> None:
    rng = random.Random(6455)
    outcomes = {"parsed": 0, "error": 0}
    for _ in range(2000):
        data = mutate(rng, rng.choice(VALID))
        decoder = FrameDecoder(max_message_size=400)
        try:
            pos = 0
            while pos < len(data):
                n = rng.randrange(1, 30)
                for event in decoder.feed(data[pos : pos + n]):
                    assert isinstance(event, (Message, Ping, Pong, Close))
                pos += n
            outcomes["parsed"] += 1
        except WebSocketProtocolError as exc:
            assert exc.close_code in (1002, 1007, 1009)
            outcomes["error"] += 1
    assert outcomes["parsed"] > 100 and outcomes["error"] > 100


def test_empty_continuation_flood_is_counted_and_refused() -> None:
    # 6,000,000 empty continuation frames (12 MB on the wire) used to be kept as 6,000,000
    # list slots (+48 MB with a 1 MiB limit). Now a frame costs a counter: the message is
    # refused (1009) at max_fragments frames, and what is held stays under the limit.
    limit = 1 << 20
    decoder = FrameDecoder(max_message_size=limit)
    assert decoder.max_fragments == 65536
    decoder.feed(frame(Opcode.TEXT, b"x", fin=False))
    flood = frame(Opcode.CONTINUATION, b"", fin=False) * 4096
    fed = 1
    with pytest.raises(WebSocketProtocolError, match="more than 65536 frames") as info:
        for _ in range(6_000_000 // 4096):
            decoder.feed(flood)
            fed += 4096
            count, held = decoder.fragments
            assert count <= decoder.max_fragments and held <= limit
    assert info.value.close_code == 1009
    assert fed <= decoder.max_fragments + 4096  # refused in the read that went over


def test_fragments_held_in_one_buffer_up_to_the_limit() -> None:
    decoder = FrameDecoder(max_message_size=100, max_fragments=10)
    events = decoder.feed(frame(Opcode.BINARY, b"a" * 10, fin=False)
                          + frame(Opcode.CONTINUATION, b"b" * 10, fin=False))
    assert events == [] and decoder.fragments == (2, 20)
    # Ten frames in all are allowed; the message is whole and the count starts again.
    more = frame(Opcode.CONTINUATION, b"", fin=False) * 7 + frame(Opcode.CONTINUATION, b"c")
    assert decoder.feed(more) == [Message(Opcode.BINARY, b"a" * 10 + b"b" * 10 + b"c")]
    assert decoder.fragments == (0, 0)
    decoder.feed(frame(Opcode.BINARY, b"", fin=False) + frame(Opcode.CONTINUATION, b"", fin=False) * 9)
    with pytest.raises(WebSocketProtocolError, match="more than 10 frames"):
        decoder.feed(frame(Opcode.CONTINUATION, b""))
    with pytest.raises(ValueError, match="max_fragments"):
        FrameDecoder(max_fragments=0)
