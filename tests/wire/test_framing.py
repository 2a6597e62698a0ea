"""Line framing: incremental, bytes, no line limit but a configurable maximum."""

from __future__ import annotations

import random

import pytest

from mcphost.wire.framing import LineFramer


def test_splits_lines_across_chunks() -> None:
    f = LineFramer()
    assert f.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert f.feed(b":2}\r\n\n\r\n") == [b'{"b":2}']
    assert f.buffered == 0


def test_empty_lines_dropped_whitespace_lines_passed_on() -> None:
    # Both paths (a plain chunk, and one that needs cleaning) agree.
    for chunk in (b"\n\n{}\n  \n\t\n\n", b"\r\n\n{}\r\n  \r\n\t\n\n"):
        assert LineFramer().feed(chunk) == [b"{}", b"  ", b"\t"]


def test_large_line_linear() -> None:
    f = LineFramer()
    line = b"x" * 10_000_000
    out: list[bytes] = []
    for i in range(0, len(line), 65536):
        out += f.feed(line[i : i + 65536])
    out += f.feed(b"\nnext\n")
    assert out == [line, b"next"]


def test_oversized_line_is_dropped_and_reported() -> None:
    f = LineFramer(max_size=100)
    assert f.feed(b'{"id":7,' + b"y" * 200) == []
    assert f.buffered == 0  # never buffered whole
    assert f.feed(b"z" * 50 + b"\nok\n") == [b"ok"]
    assert len(f.oversized) == 1
    assert f.oversized[0].size == 258
    assert f.oversized[0].head.startswith(b'{"id":7,')


def test_oversized_in_one_chunk() -> None:
    f = LineFramer(max_size=10)
    assert f.feed(b"a" * 20 + b"\nshort\n") == [b"short"]
    assert f.oversized[0].size == 20


def test_eof_returns_last_line() -> None:
    f = LineFramer()
    assert f.feed(b"abc") == []
    assert f.feed_eof() == [b"abc"]
    assert f.feed_eof() == []


def test_invalid_max() -> None:
    with pytest.raises(ValueError):
        LineFramer(0)


def test_random_chunking_matches_split() -> None:
    rng = random.Random(7)
    lines = [bytes(rng.randrange(97, 123) for _ in range(rng.randrange(1, 300))) for _ in range(200)]
    stream = b"\n".join(lines) + b"\n"
    f = LineFramer(max_size=1000)
    out: list[bytes] = []
    pos = 0
    while pos < len(stream):
        n = rng.randrange(1, 700)
        out += f.feed(stream[pos : pos + n])
        pos += n
    assert out == lines
    assert not f.oversized
