"""Both JSON codecs put the same bytes on the wire and refuse the same things."""

from __future__ import annotations

from typing import Any

import pytest

from mcphost import _json

try:
    import orjson  # noqa: F401

    CODECS = [False, True]
except ImportError:  # pragma: no cover - the no-orjson CI run
    CODECS = [False]


@pytest.fixture(params=CODECS, ids=lambda o: "orjson" if o else "stdlib")
def codec(request: pytest.FixtureRequest) -> Any:
    return _json.codec(request.param)


@pytest.mark.parametrize(
    "value",
    [{"a": [1, 2.5, None, True, "é\n\u2028", {"b": {}}]}, [], "", -0.0, 10**20, {"😀": "x"}],
)
def test_same_bytes_and_round_trip(codec: Any, value: Any) -> None:
    dumps, loads = codec
    data = dumps(value)
    assert b"\n" not in data
    assert data == _json.codec(False)[0](value)
    assert loads(data) == value


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"x": [1, float("-inf")]}, {"n": None, "f": float("nan")}])
def test_nan_and_infinity_are_refused_when_encoding(codec: Any, value: Any) -> None:
    with pytest.raises(ValueError):
        codec[0](value)


def test_null_alone_is_fine(codec: Any) -> None:
    assert codec[0]({"n": None, "f": 1.5}) == b'{"n":null,"f":1.5}'


@pytest.mark.parametrize("value", ["\ud800", {"k": ["ok", "a\udfffb"]}, {"\udc00": 1}])
def test_lone_surrogates_are_refused_when_encoding(codec: Any, value: Any) -> None:
    with pytest.raises(ValueError):
        codec[0](value)


@pytest.mark.parametrize(
    "text",
    [b"NaN", b"[Infinity]", b'{"a": -Infinity}', b'"\\ud800"', b'["x", "\\uDFFF"]', b'{"\\ud834": 1}',
     b"[" * 5000 + b"]" * 5000, b"{\"a\":" * 3000 + b"1" + b"}" * 3000, b"\xff\xfe", b"not json"],
)
def test_the_same_inputs_are_refused_when_decoding(codec: Any, text: bytes) -> None:
    with pytest.raises(ValueError):
        codec[1](text)


def test_surrogate_pairs_and_nesting_within_the_limit_decode(codec: Any) -> None:
    loads = codec[1]
    assert loads(b'"\\ud834\\udd1e"') == "\U0001d11e"
    deep = b"[" * 500 + b"]" * 500
    assert loads(deep) is not None


def test_numbers_decode_the_same(codec: Any) -> None:
    loads = codec[1]
    assert loads(b"[18446744073709551615, -9223372036854775808, 100000000000000000000]") == [
        2**64 - 1, -(2**63), 1e20]
    assert type(loads(b"100000000000000000000")) is float
    for text in (b"1e400", b"[-1E+999]", b"1" + b"0" * 400):
        with pytest.raises(ValueError):
            loads(text)


def test_json_kind_names() -> None:
    kinds = [_json.json_kind(v) for v in (None, True, 1, 1.5, "s", [], {}, object())]
    assert kinds == ["null", "boolean", "number", "number", "string", "array", "object", "object"]
