"""_json.SlicedLoads: a big JSON text decoded a slice per step gives exactly what one
``loads`` of the whole text gives, or refuses it as that ``loads`` does."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from mcphost import _json
from mcphost._json import SlicedLoads

try:
    import orjson  # noqa: F401

    CODECS = [False, True]
except ImportError:  # pragma: no cover - the no-orjson CI run
    CODECS = [False]


@pytest.fixture(params=CODECS, ids=lambda o: "orjson" if o else "stdlib")
def loads(request: pytest.FixtureRequest) -> Any:
    return _json.codec(request.param)[1]


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of a few bytes, so that every boundary falls everywhere."""
    monkeypatch.setattr(_json, "TOKEN_SLICE", 5)
    monkeypatch.setattr(_json, "DECODE_SLICE", 7)
    monkeypatch.setattr(_json, "DECODE_MARKS", 3)


def sliced(text: bytes | str, loads: Any) -> tuple[Any, int]:
    decoder = SlicedLoads(text, loads)
    steps = 1
    while not decoder.step():
        steps += 1
    return decoder.value, steps


def outcome(call: Any) -> tuple[str, str]:
    """What a decoding gave: the value with its key order, or that it was refused."""
    try:
        return "value", json.dumps(call(), ensure_ascii=False)
    except ValueError:
        return "refused", ""


def assert_same(text: bytes | str, loads: Any) -> str:
    whole = outcome(lambda: loads(text))
    assert outcome(lambda: sliced(text, loads)[0]) == whole, text[:300]
    return whole[0]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 5 else 3)
    if kind == 0:
        return rng.choice([0, -1.5, True, False, None, 12345678901234567890, 1e300, -0.0, 2**63])
    if kind in (1, 2):
        return "".join(rng.choice('ab"\\,:[]{} \u00e9\n\t\U0001f600') for _ in range(rng.randrange(8)))
    if kind == 3:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(7))]
    return {rng.choice(["a", "b,", '"]', "{c}"]) + str(i): random_value(rng, depth + 1) for i in range(rng.randrange(6))}


MUTATIONS = [b"[", b"]", b"{", b"}", b",", b":", b'"', b" ", b"\\", b"x", b"1", b"\\ud800", b"\\udc00", b"\xff",
             b"1e999", b"\x00", b"\x0c", b"[]", b",]"]


def test_random_texts_and_their_mutations_decode_as_in_one_call(loads: Any, tiny: None) -> None:
    rng = random.Random(4)
    seen = {"value": 0, "refused": 0}
    for _ in range(1500):
        text = json.dumps(random_value(rng), ensure_ascii=rng.random() < 0.5,
                          indent=rng.choice([None, None, 1])).encode("utf-8")
        if rng.random() < 0.4:
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice(MUTATIONS) + text[at + rng.randrange(2):]
        seen[assert_same(text, loads)] += 1
        assert_same(text.decode("utf-8", "replace"), loads)  # text a framing decoded already
    assert seen["value"] > 1000 and seen["refused"] > 200


@pytest.mark.parametrize("text", [
    b'{"a":1,"b":[1,2,3,4,5,6],"a":{"x":[7,8,9,10]},"c":0,"b":2}',  # a repeated name: first place, last value
    b'[{"a":1,"a":2},{"k":[1,2,3],"k":[4,5,6,7,8,9]}]',
    b'["\\ud83d\\ude00","\\u00e9\\u0000","a\\\\","\\\\\\"","\\/"]',  # escapes; a pair of surrogates
    b'["x","\\ud800","y"]', b'["x",{"\\udc00":1},"y"]', b'[1,2,"\\ud83d"]',  # a lone surrogate
    b"[12345678901234567890123,-9223372036854775809,18446744073709551615,1.5e308,1e-400]",
    b"[1,2,3,1e400]", b"[1,2,3,-1e309]", b"[1,2,NaN]", b"[1,2,Infinity]",
    b" \t\n\r[ 1 , [ 2 , 3 ] , { \"a\" : [ 4 ] } ] \r\n", b"[1,2] x", b"[1,2]]", b"[1,2", b"[1,,2]", b"[1,2,]",
    b"[,1]", b"[]", b"[[],{},[[]],{\"a\":{}}]", b'{"a":1,}', b'{"a" 1}', b'{"a":}', b'{1:2}', b"[1}", b"{\"a\":1]",
    b"\xef\xbb\xbf[1,2]", b'"just a string, [with] {marks}"', b"12345", b"", b"  ", b"[1,\x0b2]", b"[1,2]\x00",
    b'[{"a":[1,2,[3,4,[5,6,[7,8]]]]},"\\"],[{"]', b'{"k\\"":{"m":[1,2,3,4,5,6,7,8]},"n":[1,2,3]}',
])
def test_particular_texts_decode_as_in_one_call(text: bytes, loads: Any, tiny: None) -> None:
    assert_same(text, loads)
    assert_same(text.decode("utf-8", "replace"), loads)


def refused(decode: Any, text: bytes, depth: int) -> bool:
    """Is ``[1,[1,...[1,2]]]`` (``depth`` deep) refused? If not, is the value right?"""
    try:
        value = decode(text)
    except ValueError:
        return True
    for level in range(depth - 1):  # walked without recursion
        assert value[0] == 1 and len(value) == 2, level
        value = value[1]
    assert value == [1, 2]
    return False


def test_nesting_is_bounded_as_in_one_call(loads: Any, tiny: None) -> None:
    def in_slices(text: bytes) -> Any:
        return sliced(text, loads)[0]

    for depth in (1000, 1024, 1025):
        text = b"[1," * depth + b"2" + b"]" * depth
        assert refused(in_slices, text, depth) is refused(loads, text, depth)
        if depth > _json.MAX_DEPTH:
            assert refused(loads, text, depth)
    with pytest.raises(ValueError):
        sliced(b"[" * 1025 + b"]" * 1025, loads)


def test_a_big_text_takes_many_short_steps(loads: Any) -> None:
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"s": {"description": 'a "b" [c],'}}}}
    text = json.dumps({"id": 1, "result": {"tools": [dict(tool, name=f"t{i}") for i in range(20_000)],
                                           "nested": [[list(range(50))] * 50] * 10}}).encode()
    value, steps = sliced(text, loads)
    assert value == loads(text)
    assert steps > len(text) // _json.DECODE_SLICE
    value, _ = sliced(text.decode(), loads)
    assert value == loads(text)
