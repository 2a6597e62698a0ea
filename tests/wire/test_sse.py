"""Server-Sent Events decoder: the WHATWG parsing rules, line endings, UTF-8, bounds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mcphost.wire.sse import Event, Oversized, SSEDecoder


def decode(data: bytes, **kwargs: Any) -> list[Event]:
    return SSEDecoder(**kwargs).feed(data)


def test_one_event() -> None:
    assert decode(b'data: {"jsonrpc":"2.0"}\n\n') == [Event("message", '{"jsonrpc":"2.0"}')]


def test_event_type_id_and_retry() -> None:
    d = SSEDecoder()
    assert d.feed(b"event: ping\nid: 42\nretry: 1500\ndata: x\n\n") == [Event("ping", "x", "42", 1500)]
    assert d.last_event_id == "42"
    assert d.retry == 1500
    # The type and retry are per event; the id persists.
    assert d.feed(b"data: y\n\n") == [Event("message", "y", "42", None)]
    assert d.retry == 1500


def test_multiple_data_lines_join_with_lf() -> None:
    assert decode(b"data: a\ndata:b\ndata\ndata:  c\n\n") == [Event(data="a\nb\n\n c")]


def test_one_leading_space_stripped_only_after_colon() -> None:
    assert decode(b"data:  two\n\n") == [Event(data=" two")]
    assert decode(b"data:\tx\n\n") == [Event(data="\tx")]
    assert decode(b"event:  spaced\ndata: x\n\n") == [Event(" spaced", "x")]


def test_field_without_colon_has_empty_value() -> None:
    # "data" alone appends an empty line: the data buffer is "\n", so an event with "" is sent.
    assert decode(b"data\n\n") == [Event(data="")]
    assert decode(b"data:\n\n") == [Event(data="")]
    assert decode(b"data\ndata\n\n") == [Event(data="\n")]
    # "event" alone resets the type to the default.
    assert decode(b"event\ndata: x\n\n") == [Event("message", "x")]


def test_value_keeps_later_colons() -> None:
    assert decode(b"data: a: b:c\n\n") == [Event(data="a: b:c")]


def test_comments_ignored() -> None:
    assert decode(b": keep-alive\n:\ndata: x\n: mid\n\n:\n\n") == [Event(data="x")]


def test_unknown_fields_ignored_and_names_case_sensitive() -> None:
    assert decode(b"foo: bar\nData: no\nDATA: no\ndata: yes\n\n") == [Event(data="yes")]


def test_events_without_data_are_not_dispatched() -> None:
    d = SSEDecoder()
    assert d.feed(b"event: x\nid: 1\nretry: 5\n\n\n\n") == []
    # ... but the id and the reconnection time still take effect.
    assert d.last_event_id == "1"
    assert d.retry == 5
    # The type was dropped with the undispatched event.
    assert d.feed(b"data: z\n\n") == [Event("message", "z", "1")]


@pytest.mark.parametrize("ending", [b"\n", b"\r", b"\r\n"])
def test_line_endings(ending: bytes) -> None:
    raw = b"event: e" + ending + b"data: 1" + ending + b"data: 2" + ending + ending
    assert decode(raw) == [Event("e", "1\n2")]


def test_mixed_line_endings() -> None:
    raw = b"data: a\rdata: b\r\ndata: c\n\r\n\rdata: d\r\r"
    assert decode(raw) == [Event(data="a\nb\nc"), Event(data="d")]


def test_cr_at_end_of_chunk_then_lf() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: a\r") == []
    assert d.feed(b"\n\r") == [Event(data="a")]  # the LF pairs with the CR; the next CR is blank
    assert d.feed(b"\ndata: b\r") == []
    assert d.feed(b"\r") == [Event(data="b")]


def test_cr_at_end_of_chunk_then_something_else() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: a\r") == []
    assert d.feed(b"\r") == [Event(data="a")]
    assert d.feed(b"data: b\r") == []
    assert d.feed(b"") == []
    assert d.feed(b"\n") == []  # still the pair of the CR, even after an empty chunk
    assert d.feed(b"\n") == [Event(data="b")]


def test_bom_at_stream_start_is_skipped_once() -> None:
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == [Event(data="x")]
    # A second BOM is part of the field name, which then is unknown.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n") == [Event(data="y")]
    # A BOM not at the start is data.
    assert decode(b"data: \xef\xbb\xbfx\n\n") == [Event(data="\ufeffx")]


def test_bom_split_across_chunks() -> None:
    d = SSEDecoder()
    assert d.feed(b"\xef") == []
    assert d.feed(b"\xbb") == []
    assert d.feed(b"\xbfdata: x\n\n") == [Event(data="x")]
    # A prefix of the BOM that is not one is kept as data.
    d = SSEDecoder()
    assert d.feed(b"\xef") == []
    assert d.feed(b"x\n\ndata: y\n\n") == [Event(data="y")]


def test_utf8_split_across_chunks() -> None:
    raw = "data: é€😀\n\n".encode()
    d = SSEDecoder()
    events: list[Event] = []
    for i in range(len(raw)):
        events += d.feed(raw[i : i + 1])
    assert events == [Event(data="é€😀")]


def test_invalid_utf8_replaced() -> None:
    assert decode(b"data: a\xffb\xe2\x82\n\n") == [Event(data="a\ufffdb\ufffd")]
    # Truncated sequence right before the line end, and in the field name.
    assert decode(b"dat\xe1: x\ndata: \xf0\x9f\x98\r\n\n") == [Event(data="\ufffd")]
    assert decode(b"id: \xc3\ndata: x\n\n") == [Event(data="x", id="\ufffd")]


def test_id_with_nul_ignored_and_empty_id_resets() -> None:
    d = SSEDecoder()
    assert d.feed(b"id: 7\ndata: a\n\n") == [Event(data="a", id="7")]
    assert d.feed(b"id: 8\x009\ndata: b\n\n") == [Event(data="b", id="7")]
    assert d.feed(b"id\ndata: c\n\n") == [Event(data="c", id=None)]
    assert d.last_event_id == ""
    assert d.feed(b"id:\ndata: d\n\n") == [Event(data="d")]


def test_id_applies_to_the_event_it_is_in_even_after_data() -> None:
    assert decode(b"data: a\nid: 3\n\n") == [Event(data="a", id="3")]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(b"0", 0), (b"10000", 10000), (b"007", 7), (b"", None), (b" 5", None), (b"5 ", None),
     (b"-1", None), (b"1.5", None), (b"1e3", None), ("\u0663".encode(), None), ("²".encode(), None),
     (b"9" * 30, 10**18)],
)
def test_retry_only_ascii_digits(value: bytes, expected: int | None) -> None:
    d = SSEDecoder()
    # "retry: 5 " has two spaces after the colon for b" 5": only one is stripped.
    events = d.feed(b"retry: " + value + b"\ndata: x\n\n")
    assert d.retry == expected
    assert events == [Event(data="x", retry=expected)]


def test_last_event_id_seeds_a_resumed_stream() -> None:
    d = SSEDecoder("41")
    assert d.last_event_id == "41"
    assert d.feed(b"data: x\n\n") == [Event(data="x", id="41")]
    assert d.feed(b"id: 42\ndata: y\n\n") == [Event(data="y", id="42")]


def test_eof_discards_the_incomplete_event_and_allows_a_new_stream() -> None:
    d = SSEDecoder()
    assert d.feed(b"retry: 100\nid: 1\ndata: done\n\nid: 2\nevent: e\ndata: lost\ndata: partial") == [
        Event(data="done", id="1", retry=100)
    ]
    assert d.feed_eof() == []
    assert d.last_event_id == "1"
    assert d.retry == 100
    # The next stream (a reconnection) starts clean: BOM allowed, no leftover type or data.
    assert d.feed(b"\xef\xbb\xbfdata: new\n\n") == [Event(data="new", id="1")]


def test_eof_after_a_trailing_cr() -> None:
    d = SSEDecoder()
    d.feed(b"data: a\r")
    d.feed_eof()
    assert d.feed(b"\ndata: b\n\n") == [Event(data="b")]


def test_line_limit() -> None:
    # A data line over the limit discards its event, which comes out as Oversized; the
    # stream goes on.
    d = SSEDecoder(max_line_size=10)
    assert d.feed(b"data: 1234\n\n") == [Event(data="1234")]
    out = d.feed(b"data: 12345\n\ndata: after\n\n")
    assert isinstance(out[0], Oversized)
    assert (out[0].head, out[0].size) == (b"12345", 11)
    assert len(out) == 2 and isinstance(out[1], Oversized) and out[1].head == b"after"  # 11 bytes too
    assert d.feed(b"data: ok\n\n") == [Event(data="ok")]


def test_line_limit_while_buffering() -> None:
    # An unterminated line is dropped as soon as it is too long, not kept until it ends.
    d = SSEDecoder(max_line_size=10)
    assert d.feed(b"data: 12") == []
    assert d.feed(b"345") == []
    assert d._line == bytearray()  # nothing of it is kept
    assert d.feed(b"6" * 1000) == []
    out = d.feed(b"\r\n\r\ndata: x\n\n")
    assert isinstance(out[0], Oversized) and out[0].size == 1011 and out[0].head == b"12345"
    assert out[1:] == [Event(data="x")]
    # A line of another field that is too long is ignored, the event kept.
    d = SSEDecoder(max_line_size=10)
    assert d.feed(b"event: " + b"e" * 20 + b"\ndata: y\n\n") == [Event(data="y")]
    assert d.feed(b":" + b" comment" * 5 + b"\ndata: z\n\n") == [Event(data="z")]


def test_line_limit_joined_line() -> None:
    d = SSEDecoder(max_line_size=10)
    d.feed(b"data: 123")
    out = d.feed(b"45\n\n")
    assert len(out) == 1 and isinstance(out[0], Oversized) and out[0].head == b"12345"


def test_event_size_limit() -> None:
    d = SSEDecoder(max_event_size=10)
    assert d.feed(b"data: 1234\ndata: 1234\n\n") == [Event(data="1234\n1234")]
    out = d.feed(b"id: 7\ndata: 1234\ndata: 1234\ndata: 1234\n\ndata: next\n\n")
    assert isinstance(out[0], Oversized)
    assert (out[0].head, out[0].size) == (b"1234\n1234\n1234", 15)
    assert out[1] == Event(data="next", id="7")
    # The size is per event.
    d = SSEDecoder(max_event_size=10)
    for _ in range(5):
        assert d.feed(b"data: 12345678\n\n") == [Event(data="12345678")]
    # What is kept of a discarded event is bounded.
    d = SSEDecoder(max_event_size=1000)
    out = d.feed(b"".join(b"data: " + b"x" * 100 + b"\n" for _ in range(1000)) + b"\n")
    assert isinstance(out[0], Oversized) and len(out[0].head) == 512 and out[0].size == 101_000


def test_bad_limits() -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_line_size=0)
    with pytest.raises(ValueError):
        SSEDecoder(max_event_size=0)


def test_large_events_linear() -> None:
    payload = "x" * 5_000_000
    raw = ("data: " + payload + "\n\n").encode() * 3
    d = SSEDecoder()
    events: list[Event] = []
    for i in range(0, len(raw), 65536):
        events += d.feed(raw[i : i + 65536])
    assert events == [Event(data=payload)] * 3


def test_many_small_events() -> None:
    raw = b"".join(b"id: %d\ndata: {\"n\":%d}\n\n" % (i, i) for i in range(10_000))
    events = decode(raw)
    assert len(events) == 10_000
    assert events[-1] == Event(data='{"n":9999}', id="9999")


# --- any split gives the same events ---

VALID = [
    b"\xef\xbb\xbfevent: a\r\nid: 1\r\ndata: x\r\ndata:y\r\n\r\n: c\rdata\r\rretry: 99\ndata: \xe2\x82\xac\n\n",
    b"data: first\r\rdata: second\r\n\r\ndata: third\n\n",
    "id: é\ndata: 😀 ok\nevent: ü\n\nid\ndata: \xff\n\n".encode("utf-8", "surrogateescape"),
    b"data:\n\ndata\n\n:\n\nfield-only\ndata: z\r\n\r\n",
    b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\r\n\r\n",
]


def run(chunks: list[bytes]) -> tuple[list[Event], str, int | None]:
    d = SSEDecoder()
    events: list[Event] = []
    for chunk in chunks:
        events += d.feed(chunk)
    d.feed_eof()
    return events, d.last_event_id, d.retry


@pytest.mark.parametrize("raw", VALID)
def test_every_split_gives_the_same_events(raw: bytes) -> None:
    whole = run([raw])
    assert whole[0]
    for i in range(len(raw) + 1):
        assert run([raw[:i], raw[i:]]) == whole, i
        for j in range(i, len(raw) + 1, 7):
            assert run([raw[:i], raw[i:j], raw[j:]]) == whole, (i, j)
    assert run([raw[i : i + 1] for i in range(len(raw))]) == whole


# --- fuzz ---


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(out) + 1)
        kind = rng.randrange(4)
        if kind == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif kind == 1:
            del out[at:]
        elif kind == 2:
            out[at:at] = rng.choice([b"\r", b"\n", b"\r\n", b":", b" ", b"\0", b"\xef\xbb", b"\xe2", b"data:"])
        else:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 10)))
    return bytes(out)


def test_fuzz_only_events_and_oversized() -> None:
    rng = random.Random(1337)
    outcomes = {"event": 0, "oversized": 0}
    for _ in range(2000):
        data = mutate(rng, rng.choice(VALID))
        d = SSEDecoder(max_line_size=20, max_event_size=10)
        pos = 0
        while pos < len(data):
            n = rng.randrange(1, 20)
            for item in d.feed(data[pos : pos + n]):
                if isinstance(item, Oversized):
                    outcomes["oversized"] += 1
                    assert item.size > 10 and len(item.head) <= 512 * 4
                    continue
                outcomes["event"] += 1
                assert isinstance(item.data, str) and isinstance(item.event, str)
                assert len(item.data) <= 10
                assert item.id is None or "\0" not in item.id
            pos += n
        d.feed_eof()
        assert len(d._line) <= 20
    assert outcomes["event"] > 100 and outcomes["oversized"] > 50


def _held_while_feeding(d: SSEDecoder, line: bytes, lines: int) -> tuple[int, int]:
    """Feed ``lines`` copies of ``line`` in 4 KiB reads; return (most bytes held, memory
    peak traced above the start)."""
    import tracemalloc

    chunk = line * (4096 // len(line))
    most = 0
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(lines * len(line) // len(chunk)):
            d.feed(chunk)
            most = max(most, d.buffered)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return most, peak


@pytest.mark.parametrize("line", [b"data:\n", b"data:ab\n", b"data: abcdefghijklmnop\n"])
def test_many_short_data_lines_hold_at_most_the_limit(line: bytes) -> None:
    # A hostile server's event of millions of short data lines: every line's bytes and its
    # LF are what it costs and what it holds, so memory stays near max_event_size however
    # the data is cut (before: a str object and a list slot per line, 8x to 20x the limit).
    limit = 64 * 1024
    d = SSEDecoder(max_line_size=limit + 64, max_event_size=limit)
    most, peak = _held_while_feeding(d, line, 8 * limit // len(line))
    assert most <= limit  # the event's data (a read ends on a line end here)
    # Traced memory: measured about 1.1x; the bound leaves room for one read in flight.
    assert peak <= 3 * limit
    out = d.feed(b"\n")
    assert len(out) == 1 and isinstance(out[0], Oversized) and out[0].size > limit
    assert d.buffered == 0
    # and the stream goes on
    assert d.feed(b"data: next\n\n") == [Event(data="next")]


def test_data_kept_as_bytes_decodes_like_lines() -> None:
    # Invalid UTF-8 and a sequence cut at the end of a line give U+FFFD, as line by line.
    d = SSEDecoder()
    assert d.feed(b"data: \xe2\x82\ndata: \xff\xe2\x82\xac\n\n") == [Event(data="\ufffd\n\ufffd\u20ac")]
    assert d.feed(b"data\n\n") == [Event(data="")]
