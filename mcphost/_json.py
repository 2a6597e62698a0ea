"""The one JSON codec of the package, and the one JSON type namer (layer 0).

orjson is used when importable, the standard library otherwise, and what goes on the wire
does not depend on which: both encoders produce compact UTF-8 JSON with no embedded
newline (MCP stdio framing: "Messages ... MUST NOT contain embedded newlines"), and both
refuse the same things, each with a ``ValueError`` (``TypeError`` for a value of a type
JSON does not have):

- NaN and ±Infinity, which JSON does not have (orjson would write ``null``; the standard
  library would write ``NaN``) — in either direction;
- strings with a lone surrogate, which UTF-8 cannot carry (the standard library would
  write invalid UTF-8) — in either direction;
- nesting deeper than :data:`MAX_DEPTH` on decoding (orjson's own limit; the standard
  library would otherwise raise ``RecursionError``).

Numbers decode the same way too: an integer outside the 64-bit range becomes a float (as
orjson reads it), a number too large for a float is refused. Integers outside the 64-bit
range are written exactly by both.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["USING_ORJSON", "MAX_DEPTH", "MAX_TOKENS", "TokenCount", "dumps", "encode_unchecked", "loads", "json_kind",
           "codec", "nonfinite"]

#: Deepest nesting a decoded message may have (orjson's fixed limit, kept by both).
MAX_DEPTH: Final = 1024

#: JSON tokens one message may hold (see :class:`TokenCount`): what its decoding costs is
#: bounded by this rather than by its size in bytes.
MAX_TOKENS: Final = 1_000_000
#: Bytes counted per :meth:`TokenCount.step` (a few milliseconds of work).
TOKEN_SLICE: Final = 256 * 1024

_NULL: Final = b"null"
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_BIG_NUMBER: Final = re.compile(rb"\d{19}|[eE][+]?\d{3}")


def nonfinite(value: Any) -> bool:
    """Does ``value`` hold a NaN or an infinity anywhere?"""
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is float:
            if not math.isfinite(item):
                return True
        elif kind is dict:
            todo.extend(item.values())
        elif kind is list or kind is tuple:
            todo.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return True
        elif isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
    return False


class TokenCount:
    """Counts the tokens of one JSON text a slice at a time, before it is decoded.

    A token is an opening ``[`` or ``{``, a ``,`` or a ``:`` outside strings: every array
    element, object member and container costs at least one, so the count bounds what
    decoding the text (and every per-item step after it) will cost, while a long string
    counts nothing. Decoding cannot be cut into slices (both codecs build the whole value
    in one call); counting can, at the speed of ``bytes`` methods (about a millisecond per
    100 KB): a caller counts a large message a slice per event-loop turn and refuses it
    when :attr:`tokens` passes its bound, before any of it is decoded. Text that is not
    JSON is counted all the same (decoding refuses it later).
    """

    __slots__ = ("_inside", "_marks", "data", "position", "tokens")

    def __init__(self, data: bytes | str) -> None:
        self.data = data
        self.position = 0
        self.tokens = 0
        self._inside = False  # the last slice ended inside a string
        # Text (a decoded WebSocket or SSE message) is counted as it is, not encoded first.
        self._marks: tuple[Any, ...] = _TEXT_MARKS if isinstance(data, str) else _BYTE_MARKS

    @property
    def done(self) -> bool:
        return self.position >= len(self.data)

    def step(self, size: int = TOKEN_SLICE) -> int:
        """Count the next ``size`` bytes (or a few more); return the tokens so far."""
        data: Any = self.data
        backslash, two, escaped, quote, empty, comma, colon, bracket, brace = self._marks
        end = min(len(data), self.position + size)
        while end < len(data) and data[end - 1 : end] == backslash:
            end += 1  # a slice never ends on a backslash: its escape is counted whole
        chunk = data[self.position : end]
        self.position = end
        if backslash in chunk:
            # Escaped backslashes, then escaped quotes: every quote left delimits a string.
            chunk = chunk.replace(two, empty).replace(escaped, empty)
        parts = chunk.split(quote)
        outside = empty.join(parts[1::2] if self._inside else parts[::2])
        if not len(parts) & 1:  # an odd number of quotes: the string state flips
            self._inside = not self._inside
        self.tokens += outside.count(comma) + outside.count(colon) + outside.count(bracket) + outside.count(brace)
        return self.tokens


_BYTE_MARKS: Final = (b"\\", b"\\\\", b'\\"', b'"', b"", b",", b":", b"[", b"{")
_TEXT_MARKS: Final = ("\\", "\\\\", '\\"', '"', "", ",", ":", "[", "{")


def _lone_surrogate(value: Any) -> bool:
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (NaN and Infinity are not numbers JSON has)")


def _parse_int(text: str) -> int | float:
    value = int(text)
    if -(2**63) <= value < 2**64:
        return value
    return _parse_float(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]}... is too large for a float")
    return value


_encode_std = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _stdlib_codec() -> tuple[Callable[[Any], bytes], Callable[[bytes | str], Any]]:
    encode = _encode_std
    plain = json.JSONDecoder(parse_constant=_reject_constant).decode
    # Only text with a long run of digits or a 3-digit exponent pays for the number checks.
    careful = json.JSONDecoder(
        parse_constant=_reject_constant, parse_int=_parse_int, parse_float=_parse_float
    ).decode

    def dumps(obj: Any) -> bytes:
        # Strict UTF-8: a lone surrogate raises UnicodeEncodeError (a ValueError).
        return encode(obj).encode("utf-8")

    def loads(data: bytes | str) -> Any:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data
        raw = data if isinstance(data, (bytes, bytearray)) else text.encode("utf-8", "surrogatepass")
        decode = careful if _BIG_NUMBER.search(raw) else plain
        try:
            value = decode(text)
        except RecursionError:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
        if _SURROGATE_ESCAPE.search(raw) and _lone_surrogate(value):
            raise ValueError("JSON string holds a lone surrogate")
        if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        return value

    return dumps, loads


def _depth(value: Any) -> int:
    deepest = 0
    todo = [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            todo.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            todo.extend((v, level + 1) for v in item)
    return deepest


def _orjson_codec() -> tuple[Callable[[Any], bytes], Callable[[bytes | str], Any]]:
    import orjson

    encode = orjson.dumps

    def dumps(obj: Any) -> bytes:
        try:
            data = encode(obj)
        except orjson.JSONEncodeError as exc:
            if "surrogates" in str(exc):
                raise ValueError(f"JSON string holds a lone surrogate: {exc}") from None
            if "64-bit" in str(exc):  # an integer orjson cannot write: written exactly
                return _encode_std(obj).encode("utf-8")
            raise
        # orjson writes NaN and infinities as null: only output with a null can hold one.
        if _NULL in data and nonfinite(obj):
            raise ValueError("NaN and Infinity are not JSON: cannot send them")
        return data

    # orjson refuses NaN literals, lone surrogate escapes and nesting past 1024 itself.
    loads: Callable[[bytes | str], Any] = orjson.loads
    return dumps, loads


def codec(use_orjson: bool) -> tuple[Callable[[Any], bytes], Callable[[bytes | str], Any]]:
    """``(dumps, loads)`` of one implementation (tests compare the two)."""
    return _orjson_codec() if use_orjson else _stdlib_codec()


#: Encode one message (or batch) as compact UTF-8 JSON bytes, no newline.
dumps: Callable[[Any], bytes]
#: Decode JSON text (``bytes`` or ``str``); raises ``ValueError`` when it is not JSON.
loads: Callable[[bytes | str], Any]

try:  # pragma: no branch - which branch runs depends on the environment
    import orjson as _orjson  # noqa: F401 - probing only

    USING_ORJSON = True
except ImportError:  # pragma: no cover - exercised in CI's no-orjson run
    USING_ORJSON = False

dumps, loads = codec(USING_ORJSON)
#: The encoder without the NaN check, for a hot path that does the check itself (one
#: substring test: ``b"null" in data and nonfinite(value)``): orjson's own function when
#: orjson is used (no Python frame per message), else :data:`dumps`.
encode_unchecked: Callable[[Any], bytes] = dumps
if USING_ORJSON:  # pragma: no branch
    import orjson as _orjson_module

    encode_unchecked = _orjson_module.dumps


def json_kind(value: Any) -> str:
    """The JSON type name of a decoded value, for messages (``null``, ``number``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
