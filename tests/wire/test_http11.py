"""HTTP/1.1 client codec: request bytes, incremental response events, bounds, every error."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mcphost.wire.http11 import (
    LAST_CHUNK,
    Data,
    EndOfMessage,
    Event,
    HttpProtocolError,
    Response,
    ResponseParser,
    build_request,
    encode_chunk,
)


def merged(events: list[Event]) -> list[Event]:
    """Events with adjacent Data joined: how the body is cut depends on the reads."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, Data) and out and isinstance(out[-1], Data):
            out[-1] = Data(out[-1].chunk + event.chunk)
        else:
            out.append(event)
    return out


def parse(data: bytes, method: str = "GET", *, eof: bool = False, **limits: Any) -> list[Event]:
    parser = ResponseParser(method, **limits)
    events = parser.feed(data)
    if eof:
        events += parser.feed_eof()
    return merged(events)


def ok(body: bytes, headers: list[tuple[str, str]] | None = None) -> list[Event]:
    return [Response(200, "OK", headers or []), Data(body), EndOfMessage()]


# --- building requests ---


def test_request_with_body_gets_content_length() -> None:
    raw = build_request("POST", "/mcp", [("Host", "example.com"), ("Accept", "a, b")], b'{"x":1}')
    assert raw == (
        b"POST /mcp HTTP/1.1\r\nHost: example.com\r\nAccept: a, b\r\n"
        b'Content-Length: 7\r\n\r\n{"x":1}'
    )


def test_request_without_body_has_no_length() -> None:
    assert build_request("GET", "/sse?a=1", [("Host", "h")]) == b"GET /sse?a=1 HTTP/1.1\r\nHost: h\r\n\r\n"


def test_empty_body_says_zero() -> None:
    assert build_request("POST", "/", [("Host", "h")], b"").endswith(b"Content-Length: 0\r\n\r\n")


def test_chunked_request_with_body() -> None:
    raw = build_request("POST", "/", [("host", "h")], b"hello", chunked=True)
    assert raw == b"POST / HTTP/1.1\r\nhost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"


def test_chunked_request_streamed() -> None:
    head = build_request("POST", "/", [("Host", "h")], chunked=True)
    assert head.endswith(b"Transfer-Encoding: chunked\r\n\r\n")
    assert encode_chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"
    assert encode_chunk(b"") == b""
    assert LAST_CHUNK == b"0\r\n\r\n"


def test_given_content_length_is_kept_when_it_matches() -> None:
    raw = build_request("PUT", "/", [("Host", "h"), ("Content-Length", "2")], b"ab")
    assert raw.count(b"Content-Length") == 1
    # Without a body the caller streams it after the head.
    assert build_request("PUT", "/", [("Host", "h"), ("Content-Length", "9")]).endswith(b"9\r\n\r\n")


def test_header_values_are_trimmed_and_latin1() -> None:
    raw = build_request("GET", "/", [("Host", " h\t"), ("X-Name", "José")])
    assert b"Host: h\r\n" in raw
    assert b"X-Name: Jos\xe9\r\n" in raw


@pytest.mark.parametrize(
    ("method", "target", "headers", "body", "chunked", "message"),
    [
        ("GE T", "/", [("Host", "h")], None, False, "bad method: 'GE T'"),
        ("", "/", [("Host", "h")], None, False, "bad method: ''"),
        ("GÉT", "/", [("Host", "h")], None, False, "bad method"),
        ("GET", "/a b", [("Host", "h")], None, False, "bad request target: '/a b'"),
        ("GET", "", [("Host", "h")], None, False, "bad request target"),
        ("GET", "/é", [("Host", "h")], None, False, "bad request target"),
        ("GET", "/", [], None, False, "request has no Host header"),
        ("GET", "/", [("Host", "h"), ("Bad Name", "v")], None, False, "bad header name: 'Bad Name'"),
        ("GET", "/", [("Host", "h"), ("Nämé", "v")], None, False, "bad header name"),
        ("GET", "/", [("Host", "h"), ("X", "a\r\nY: b")], None, False, "bad header value for 'X'"),
        ("GET", "/", [("Host", "h"), ("X", "a\0")], None, False, "control character"),
        ("GET", "/", [("Host", "h"), ("X", "日本")], None, False, "header value for 'X' is not latin-1"),
        ("POST", "/", [("Host", "h"), ("Transfer-Encoding", "chunked")], b"", False,
         "Transfer-Encoding is set by chunked=True"),
        ("POST", "/", [("Host", "h"), ("Content-Length", "3")], b"ab", False,
         "Content-Length '3' but the body is 2 bytes"),
        ("POST", "/", [("Host", "h"), ("Content-Length", "2")], b"ab", True,
         "Content-Length given for a chunked request"),
    ],
)
def test_bad_requests(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes | None, chunked: bool,
    message: str,
) -> None:
    with pytest.raises(HttpProtocolError) as info:
        build_request(method, target, headers, body, chunked=chunked)
    assert message in str(info.value)


# --- parsing responses ---


def test_content_length_body() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    assert parse(raw) == ok(b"{}", [("content-type", "application/json"), ("content-length", "2")])


def test_header_names_lowercased_order_and_repeats_kept() -> None:
    raw = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-B:  two words \t\r\nset-cookie: b=2\r\nContent-Length: 0\r\n\r\n"
    response = parse(raw)[0]
    assert isinstance(response, Response)
    assert response.headers == [
        ("set-cookie", "a=1"), ("x-b", "two words"), ("set-cookie", "b=2"), ("content-length", "0"),
    ]


def test_header_values_are_latin1_and_empty_values_allowed() -> None:
    raw = b"HTTP/1.1 200 OK\r\nX: caf\xe9\r\nEmpty:\r\nContent-Length: 0\r\n\r\n"
    response = parse(raw)[0]
    assert isinstance(response, Response)
    assert response.headers[:2] == [("x", "café"), ("empty", "")]


def test_obs_fold_becomes_a_space() -> None:
    raw = b"HTTP/1.1 200 OK\r\nX: a\r\n  b\r\n\tc\r\nContent-Length: 0\r\n\r\n"
    response = parse(raw)[0]
    assert isinstance(response, Response)
    assert response.headers[0] == ("x", "a b c")


def test_chunked_body_with_extensions_and_trailers() -> None:
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1A \t;x\r\n" + b"z" * 26 + b"\r\n0\r\nExpires: never\r\nX: y\r\n\r\n"
    )
    events = parse(raw)
    assert events[1:] == [Data(b"hello" + b"z" * 26), EndOfMessage()]


def test_chunked_without_trailers_and_bare_lf() -> None:
    assert parse(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n")[1:] == [
        Data(b"abc"), EndOfMessage(),
    ]


def test_empty_chunked_body() -> None:
    assert parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")[1:] == [EndOfMessage()]


def test_read_until_close() -> None:
    parser = ResponseParser()
    events = parser.feed(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nabc")
    assert not parser.keep_alive
    events += parser.feed(b"def")
    assert EndOfMessage() not in events
    events += parser.feed_eof()
    assert merged(events)[1:] == [Data(b"abcdef"), EndOfMessage()]
    assert parser.feed_eof() == []
    with pytest.raises(HttpProtocolError, match="data after the end of the stream"):
        parser.feed(b"x")


def test_until_close_empty_body() -> None:
    assert parse(b"HTTP/1.1 200 OK\r\n\r\n", eof=True)[1:] == [EndOfMessage()]


def test_keep_alive_responses_in_sequence() -> None:
    one = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
    two = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    three = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
    parser = ResponseParser()
    events = merged(parser.feed(one + two + three))
    assert events == [
        Response(200, "OK", [("content-length", "3")]), Data(b"abc"), EndOfMessage(),
        Response(202, "Accepted", [("content-length", "0")]), EndOfMessage(),
        Response(200, "OK", [("transfer-encoding", "chunked")]), Data(b"x"), EndOfMessage(),
    ]
    assert parser.keep_alive
    assert parser.feed(one) == [Response(200, "OK", [("content-length", "3")]), Data(b"abc"), EndOfMessage()]
    assert parser.feed_eof() == []


def test_blank_lines_before_a_status_line_are_skipped() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
    assert parse(raw)[3:] == [Response(204, "No Content", []), EndOfMessage()]


def test_100_continue_and_other_interim_responses_are_skipped() -> None:
    raw = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
    )
    assert parse(raw) == ok(b"x", [("content-length", "1")])


def test_101_switches_protocols() -> None:
    parser = ResponseParser()
    events = parser.feed(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi")
    assert events == [Response(101, "Switching Protocols", [("upgrade", "websocket")]), EndOfMessage()]
    assert parser.trailing_data == b"\x81\x02hi"
    assert parser.feed(b"more") == []
    assert parser.trailing_data == b"\x81\x02himore"
    assert parser.feed_eof() == []
    assert parser.trailing_data == b"\x81\x02himore"


def test_connect_2xx_is_a_tunnel() -> None:
    parser = ResponseParser("CONNECT")
    assert parser.feed(b"HTTP/1.1 200 Connection established\r\n\r\nTLS") == [
        Response(200, "Connection established", []), EndOfMessage(),
    ]
    assert parser.trailing_data == b"TLS"


def test_trailing_data_empty_while_speaking_http() -> None:
    parser = ResponseParser()
    parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")
    assert parser.trailing_data == b""


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses(status: int) -> None:
    raw = b"HTTP/1.1 %d X\r\nContent-Length: 10\r\n\r\n" % status
    assert parse(raw + raw)[1::2] == [EndOfMessage(), EndOfMessage()]


def test_head_has_no_body_whatever_the_headers() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
    assert parse(raw, "head")[1:] == [EndOfMessage()]
    parser = ResponseParser(expect_body=False)
    assert parser.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")[1:] == [EndOfMessage()]


def test_set_request_changes_the_next_response() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
    parser = ResponseParser()
    parser.set_request("HEAD")
    assert parser.feed(raw)[1:] == [EndOfMessage()]
    parser.set_request("GET")
    assert parser.feed(raw + b"ok")[1:] == [Data(b"ok"), EndOfMessage()]
    parser.set_request("POST", expect_body=False)
    assert parser.feed(raw)[1:] == [EndOfMessage()]


def test_status_line_forms() -> None:
    assert parse(b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")[0] == Response(200, "", [("content-length", "0")])
    assert parse(b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n")[0] == Response(200, "", [("content-length", "0")])
    assert parse(b"HTTP/1.1 599 Odd \xe9 reason\tx\r\nContent-Length: 0\r\n\r\n")[0] == Response(
        599, "Odd é reason\tx", [("content-length", "0")]
    )


def test_keep_alive_rules() -> None:
    cases = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\nContent-Length: 0\r\n\r\n", False),
    ]
    for raw, expected in cases:
        parser = ResponseParser()
        response = parser.feed(raw)[0]
        assert isinstance(response, Response)
        assert parser.keep_alive is expected, raw
        assert response.http_version == raw[5:8].decode()


def test_repeated_identical_content_length_is_accepted() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nab"
    assert parse(raw)[1:] == [Data(b"ab"), EndOfMessage()]


def test_bounds_accept_up_to_the_limit() -> None:
    headers = b"".join(b"X-%d: v\r\n" % i for i in range(99))
    assert parse(b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: 0\r\n\r\n")[1:] == [EndOfMessage()]
    head = b"HTTP/1.1 200 OK\r\nX: " + b"a" * 100 + b"\r\nContent-Length: 0"
    assert parse(head + b"\r\n\r\n", max_header_size=len(head) + 4)[1:] == [EndOfMessage()]
    with pytest.raises(HttpProtocolError, match="header block over"):
        parse(head + b"\r\n\r\n", max_header_size=len(head) + 3)
    chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"e" * 8 + b"\r\nx\r\n0\r\n\r\n"
    assert parse(chunk, max_chunk_line=10)[1:] == [Data(b"x"), EndOfMessage()]
    with pytest.raises(HttpProtocolError, match="chunk-size line over 9 bytes"):
        parse(chunk, max_chunk_line=9)
    assert parse(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", max_body_size=4)[1:] == [
        Data(b"abcd"), EndOfMessage(),
    ]


def test_large_chunked_body_linear() -> None:
    body = bytes(range(256)) * 40_000  # 10 MB
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw += b"".join(encode_chunk(body[i : i + 100_000]) for i in range(0, len(body), 100_000)) + LAST_CHUNK
    parser = ResponseParser()
    events: list[Event] = []
    for i in range(0, len(raw), 65536):
        events += parser.feed(raw[i : i + 65536])
    assert merged(events)[1:] == [Data(body), EndOfMessage()]


def test_head_fed_a_byte_at_a_time_is_found_once() -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 500) for i in range(100))
    parser = ResponseParser()
    for i in range(len(head)):
        assert parser.feed(head[i : i + 1]) == []
    events = parser.feed(b"\r\n")
    assert len(events) == 1 and isinstance(events[0], Response)
    assert len(events[0].headers) == 100


# --- errors ---

BAD: list[tuple[bytes, dict[str, Any], str]] = [
    (b"HTTX/1.1 200 OK\r\n\r\n", {}, "bad status line: b'HTTX/1.1 200 OK'"),
    (b"HTTP/1.1 20 OK\r\n\r\n", {}, "bad status line: b'HTTP/1.1 20 OK'"),
    (b"HTTP/1.1  200 OK\r\n\r\n", {}, "bad status line"),
    (b"HTTP/1.1 200 O\x00K\r\n\r\n", {}, "bad status line"),
    (b"HTTP/1.1 200 OK\rX\r\n\r\n", {}, "bad status line"),
    (b"\x00\xff\xfe\r\n\r\n", {}, "bad status line: b'\\x00\\xff\\xfe'"),
    (b"HTTP/2.0 200 OK\r\n\r\n", {}, "unsupported HTTP version: b'HTTP/2.0 200 OK'"),
    (b"HTTP/1.1 099 Low\r\n\r\n", {}, "bad status code: b'HTTP/1.1 099 Low'"),
    (b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", {}, "bad header line: b'NoColon'"),
    (b"HTTP/1.1 200 OK\r\nName : v\r\n\r\n", {}, "bad header line: b'Name : v'"),
    (b"HTTP/1.1 200 OK\r\n: v\r\n\r\n", {}, "bad header line: b': v'"),
    (b"HTTP/1.1 200 OK\r\nN\xe4me: v\r\n\r\n", {}, "bad header line"),
    (b"HTTP/1.1 200 OK\r\n folded\r\n\r\n", {}, "continuation line before any header: b' folded'"),
    (b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n", {}, "bad header value for 'X': control character"),
    (b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", {}, "bad header value for 'X'"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: v\r\n" * 101 + b"\r\n", {}, "more than 100 headers"),
    (b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n", {"max_headers": 1}, "more than 1 headers"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", {}, "header block over 65536 bytes"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, {}, "header block over 65536 bytes"),
    (b"HTTP/1.1 200 OK\r\nX: abcdef\r\n\r\n", {"max_header_size": 20}, "header block over 20 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", {},
     "response has both Transfer-Encoding and Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", {},
     "unsupported Transfer-Encoding: 'gzip, chunked'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", {},
     "unsupported Transfer-Encoding"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n", {}, "unsupported Transfer-Encoding: ','"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", {}, "bad Content-Length: 'abc'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", {}, "bad Content-Length: '-1'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n", {}, "bad Content-Length: '\xb2'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", {}, "bad Content-Length: '1, 2'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", {}, "bad Content-Length: '1, 2'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", {}, "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", {"max_body_size": 10},
     "body over max_body_size (10 bytes)"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n3\r\n", {"max_body_size": 10},
     "body over max_body_size (10 bytes)"),
    (b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 11, {"max_body_size": 10}, "body over max_body_size (10 bytes)"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 2000, {},
     "chunk-size line over 1024 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"e" * 2000 + b"\r\n", {},
     "chunk-size line over 1024 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;abc\n", {"max_chunk_line": 4},
     "chunk-size line over 4 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", {}, "bad chunk-size line: b'zz'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", {}, "bad chunk-size line: b''"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", {}, "bad chunk-size line: b'-1'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 17 + b"\r\n", {},
     "bad chunk-size line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", {},
     "missing CRLF after chunk data: b'c\\r'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\rx", {},
     "missing CRLF after chunk data: b'\\rx'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + b"a" * 70_000, {},
     "trailer block over 65536 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + b"X: 1\r\n" * 101 + b"\r\n", {},
     "more than 100 trailer fields"),
]


@pytest.mark.parametrize(("raw", "limits", "message"), BAD)
def test_malformed_responses(raw: bytes, limits: dict[str, Any], message: str) -> None:
    parser = ResponseParser(**limits)
    with pytest.raises(HttpProtocolError) as info:
        parser.feed(raw)
    assert message in str(info.value)
    # The parser stays failed.
    with pytest.raises(HttpProtocolError, match="parser already failed: " + message[:10]):
        parser.feed(b"HTTP/1.1 200 OK\r\n\r\n")
    with pytest.raises(HttpProtocolError, match="parser already failed"):
        parser.feed_eof()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-", "connection closed inside a response head"),
        (b"H", "connection closed inside a response head"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
         "connection closed with 7 of 10 body bytes missing"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "connection closed inside a chunked body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
         "connection closed inside a chunked body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab",
         "connection closed inside a chunked body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n",
         "connection closed inside a chunked body"),
    ],
)
def test_truncated_at_eof(raw: bytes, message: str) -> None:
    parser = ResponseParser()
    parser.feed(raw)
    with pytest.raises(HttpProtocolError, match=message):
        parser.feed_eof()
    with pytest.raises(HttpProtocolError, match="parser already failed"):
        parser.feed(b"")


def test_eof_between_responses_is_clean() -> None:
    parser = ResponseParser()
    assert parser.feed_eof() == []
    parser = ResponseParser()
    parser.feed(b"HTTP/1.1 204 No Content\r\n\r\n\r\n")
    assert parser.feed_eof() == []


def test_bad_limits() -> None:
    bad: list[dict[str, Any]] = [
        {"max_header_size": 0}, {"max_headers": 0}, {"max_chunk_line": -1}, {"max_body_size": -1},
    ]
    for kwargs in bad:
        with pytest.raises(ValueError):
            ResponseParser(**kwargs)


# --- any split gives the same events ---

VALID: list[tuple[bytes, str, bool]] = [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: a\r\n b\r\n\r\nhello", "GET", False),
    (b"\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3;ext\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n", "POST", False),
    (b"HTTP/1.1 200 OK\nContent-Length: 2\n\nokHTTP/1.1 204 No Content\n\n", "GET", False),
    (b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n", "GET", True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD", False),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x00", "GET", True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"
     b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb", "GET", True),
]


def run(chunks: list[bytes], method: str, eof: bool) -> tuple[list[Event], bytes]:
    parser = ResponseParser(method)
    events: list[Event] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    if eof:
        events += parser.feed_eof()
    return merged(events), parser.trailing_data


@pytest.mark.parametrize(("raw", "method", "eof"), VALID)
def test_every_split_gives_the_same_events(raw: bytes, method: str, eof: bool) -> None:
    whole = run([raw], method, eof)
    assert isinstance(whole[0][-1], EndOfMessage)
    for i in range(len(raw) + 1):
        assert run([raw[:i], raw[i:]], method, eof) == whole, i
    assert run([raw[i : i + 1] for i in range(len(raw))], method, eof) == whole


# --- fuzz ---


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        kind = rng.randrange(5)
        at = rng.randrange(len(out) + 1)
        if kind == 0 and out:  # flip a byte
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif kind == 1:  # truncate
            del out[at:]
        elif kind == 2:  # insert random bytes
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif kind == 3:  # insert something meaningful
            out[at:at] = rng.choice([b"\r\n", b"\n", b":", b" ", b"0\r\n", b"ffffffff", b"\r\n\r\n", b";"])
        elif out:  # delete a span
            del out[at : at + rng.randrange(1, 6)]
    return bytes(out)


def test_fuzz_only_protocol_errors() -> None:
    rng = random.Random(20240611)
    outcomes = {"parsed": 0, "error": 0}
    for _ in range(2000):
        raw, method, _ = rng.choice(VALID)
        data = mutate(rng, raw)
        parser = ResponseParser(method, max_header_size=512, max_chunk_line=16, max_body_size=4096)
        try:
            pos = 0
            while pos < len(data):
                n = rng.randrange(1, 40)
                parser.feed(data[pos : pos + n])
                pos += n
            parser.feed_eof()
            outcomes["parsed"] += 1
        except HttpProtocolError:
            outcomes["error"] += 1
    assert outcomes["parsed"] > 100 and outcomes["error"] > 100


def test_the_fast_header_path_agrees_with_the_careful_one() -> None:
    """Heads with nothing unusual take ``_plain_fields``; it must read exactly what the line
    by line path reads, and step aside for everything else."""
    import random

    from mcphost.wire.http11 import _plain_fields

    rng = random.Random(20261125)
    names = [b"Content-Type", b"content-length", b"X-A", b"Mcp-Session-Id", b"a!#$%&'*+-.^_`|~9", b"Set-Cookie"]
    values = [b"", b" ", b"application/json", b"  padded\t ", b"a:b:c", b"\xe9t\xe9", b"x" * 300, b"1, 2", b"\t"]
    odd = [b"Bad Name: x", b" folded", b"\tfolded", b"NoColon", b": empty-name", b"X: a\x01b", b"X: a\x7fb",
           b"X: a\rb", b"X: a\nb"]
    parser = ResponseParser()
    for _ in range(3000):
        lines = [rng.choice(names) + b":" + rng.choice(values) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.3:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(odd))
        fields = b"\r\n".join(lines) + b"\r"
        fast = _plain_fields(fields, 100)
        try:
            careful = parser._headers([b"HTTP/1.1 200 OK\r", *fields.split(b"\n")])
        except HttpProtocolError:
            careful = None
        if fast is not None:
            assert fast == careful, fields
        else:
            assert careful is None or any(line in fields for line in odd[:3]) or b"\t" in fields, fields


# --- the head template: a head like the last one but for its Content-Length ---


def _outcome(parser: ResponseParser, data: bytes) -> tuple[str, Any]:
    try:
        return "events", (merged(parser.feed(data)), parser.keep_alive, parser.buffered)
    except HttpProtocolError as exc:
        return "error", str(exc)


_HEADS = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length:%s\r\nMcp-Session-Id: abc\r\n\r\n",
    b"HTTP/1.0 404 Not Found\r\nConnection: keep-alive\r\nContent-Length:  %s \t\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: %s\r\nConnection: close\r\n\r\n",
]
_LENGTHS = [b"0", b"3", b"12", b"007", b"5, 5", b"5,6", b"-1", b"1 2", b"x", b"+3", b"9" * 19, b"9" * 20, b"", b"\xd9\xa3"]


@pytest.mark.parametrize("head", _HEADS)
def test_a_head_from_the_template_means_what_the_full_parse_says(head: bytes) -> None:
    # One parser sees every response (it keeps the last plain head as its template); a
    # fresh parser sees each alone: the outcomes are the same, errors included.
    rng = random.Random(7)
    kept = ResponseParser("POST", max_body_size=10**6)
    for _ in range(300):
        length = rng.choice(_LENGTHS)
        size = 5 if length == b"5, 5" else int(length) if length.isdigit() and len(length) < 7 else 0
        data = head % length + b"b" * size
        fresh = ResponseParser("POST", max_body_size=10**6)
        expected = _outcome(fresh, data)
        got = _outcome(kept, data)
        assert got == expected, (data, got, expected)
        if got[0] == "error" or got[1][0][-1] != EndOfMessage():
            kept = ResponseParser("POST", max_body_size=10**6)  # failed, or inside a body: done


def test_the_template_follows_the_request_method() -> None:
    parser = ResponseParser("GET")
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
    assert merged(parser.feed(head % 3 + b"abc")) == ok(b"abc", [("content-length", "3")])
    parser.set_request("HEAD")  # a HEAD response has no body, whatever its length says
    assert parser.feed(head % 4) == [Response(200, "OK", [("content-length", "4")]), EndOfMessage()]
    parser.set_request("GET", expect_body=False)
    assert parser.feed(head % 5) == [Response(200, "OK", [("content-length", "5")]), EndOfMessage()]
    parser.set_request("GET")
    assert merged(parser.feed(head % 2 + b"xy")) == ok(b"xy", [("content-length", "2")])


def test_the_template_still_bounds_the_body() -> None:
    parser = ResponseParser(max_body_size=5)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
    assert merged(parser.feed(head % 5 + b"12345")) == ok(b"12345", [("content-length", "5")])
    with pytest.raises(HttpProtocolError, match="max_body_size"):
        parser.feed(head % 6)


def test_a_head_from_the_template_has_its_own_headers() -> None:
    parser = ResponseParser()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-A: 1\r\n\r\n"
    first = parser.feed(head % 1 + b"a")[0]
    second = parser.feed(head % 2 + b"bc")[0]
    assert isinstance(first, Response) and isinstance(second, Response)
    assert first.headers == [("content-length", "1"), ("x-a", "1")]
    assert second.headers == [("content-length", "2"), ("x-a", "1")]


def test_reads_that_are_not_one_whole_response_are_parsed_in_full() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
    for reads in ([head % 2 + b"ab" + head % 1 + b"c"], [head % 3 + b"ab", b"c"], [(head % 2)[:-1], b"\nab"],
                  [head % 2 + b"abX"], [head % 0 + head % 1 + b"d"]):
        kept = ResponseParser()
        assert merged(kept.feed(head % 1 + b"z")) == ok(b"z", [("content-length", "1")])  # the template
        fresh = ResponseParser()
        got, expected = [], []
        for data in reads:
            got += kept.feed(data)
            expected += fresh.feed(data)
        assert merged(got) == merged(expected) and kept.buffered == fresh.buffered


@pytest.mark.parametrize("head", _HEADS)
def test_a_response_taken_whole_is_what_feed_returns(head: bytes) -> None:
    # feed_same takes a read only when it is one whole response with the template's head;
    # its body and same_events are then what feed would have returned, the parser left
    # where feed leaves it. Otherwise nothing changes, and feed goes on as usual.
    rng = random.Random(11)
    kept = ResponseParser("POST", max_body_size=10**6)
    fresh = ResponseParser("POST", max_body_size=10**6)
    taken = 0
    for _ in range(300):
        length = rng.choice(_LENGTHS)
        size = 5 if length == b"5, 5" else int(length) if length.isdigit() and len(length) < 7 else 0
        data = head % length + b"b" * size
        expected = _outcome(fresh, data)
        token = kept.head_template
        body = kept.feed_same(data, token) if token is not None else None
        if body is not None:
            taken += 1
            got = ("events", (merged(kept.same_events(body)), kept.keep_alive, kept.buffered))
            assert body == b"b" * size
        else:
            got = _outcome(kept, data)
        assert got == expected, (data, got, expected)
        if got[0] == "error" or got[1][0][-1] != EndOfMessage():
            kept = ResponseParser("POST", max_body_size=10**6)
            fresh = ResponseParser("POST", max_body_size=10**6)
    assert taken > 20


def test_only_the_head_seen_is_taken_whole() -> None:
    parser = ResponseParser()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
    parser.feed(head % 1 + b"a")
    token = parser.head_template
    assert token is not None and token.status == 200
    assert parser.feed_same(b"HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nb", token) is None
    assert parser.feed_same(head % 2 + b"b", token) is None  # not whole: nothing taken
    assert parser.feed_same(head % 2 + b"bc", object()) is None  # type: ignore[arg-type]
    assert parser.feed_same(head % 2 + b"bc", token) == b"bc"
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
    assert merged(parser.feed(chunked))[1:] == [Data(b"x"), EndOfMessage()]
    assert parser.head_template is None  # the last head was not the template's
    parser.set_request("HEAD")
    assert parser.feed_same(head % 2 + b"bc", token) is None  # the template follows the method
