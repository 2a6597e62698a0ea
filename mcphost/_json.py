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

A big text is counted (:class:`TokenCount`) and decoded (:class:`SlicedLoads`) a slice at
a time, so that a caller can do either a slice per event-loop turn.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["USING_ORJSON", "MAX_DEPTH", "MAX_TOKENS", "TokenCount", "SlicedLoads", "dumps", "encode_unchecked", "loads", "json_kind",
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
# A run of 19 digits or a 3-digit exponent (what the careful decoder is for), found with
# bytes methods: every digit made "0", "e"/"E" "e", "+" kept, the rest blank (a regular
# expression takes over a second on 60 MB).
_NUMBER_MARKS: Final = bytes(48 if chr(b).isdigit() and b < 128 else 101 if b in b"eE" else 43 if b == 43 else 32
                             for b in range(256))
_BIG_DIGITS: Final = b"0" * 19


def _big_number(raw: bytes | bytearray) -> bool:
    marks = raw.translate(_NUMBER_MARKS)
    return _BIG_DIGITS in marks or b"e000" in marks or b"e+000" in marks


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


#: Most bytes, and most ``[]{},`` marks, one :meth:`SlicedLoads.step` decodes (about 10 ms).
DECODE_SLICE: Final = 32 * 1024
DECODE_MARKS: Final = 4 * 1024

_MARK: Final = re.compile(rb"[\[\]{},]")
_SPACE: Final = re.compile(rb"[ \t\n\r]*")
_CLOSER: Final = {0x5B: 0x5D, 0x7B: 0x7D}  # [ ] and { }


def _skip(data: bytes, pos: int) -> int:
    """The position of the first byte from ``pos`` on that is not JSON white space."""
    match = _SPACE.match(data, pos)
    return match.end() if match else pos


class _Frame:
    """A container too big to decode in one step, open while its members are decoded."""

    __slots__ = ("depth", "fresh", "key", "opener", "value")

    def __init__(self, opener: int, depth: int, key: Any) -> None:
        self.opener = opener
        self.depth = depth  # its nesting level (1: the whole text)
        self.key = key  # the member name it goes under, in an object
        self.fresh = True  # no member decoded yet
        self.value: Any = [] if opener == 0x5B else {}


class SlicedLoads:
    """Decodes one big JSON text a slice per :meth:`step`, to the value one ``loads`` of
    the whole text gives (or the ``ValueError`` it raises).

    Neither C decoder can decode a container in slices, but its members can be decoded a
    few thousand at a time. First a copy of the text is made with every string's content
    blanked (same length), a slice per step, so that the ``[]{},`` left in it are the
    text's structure. Then each step takes the next members of the innermost open
    container that fit in :data:`DECODE_SLICE` bytes and :data:`DECODE_MARKS` marks and
    decodes them with one ``loads``, wrapped in as many brackets as the container is deep
    (the decoder applies its own depth limit); a member bigger than that is opened in
    turn. Every byte is either decoded by ``loads`` or checked here (brackets, commas,
    colons, white space), so text that is not JSON is refused as ``loads`` refuses it. A
    long string or number is still decoded in one call.
    """

    __slots__ = ("_after", "_blank", "_data", "_frames", "_inside", "_loads", "_need", "_parts", "_pos",
                 "_source", "_stage", "value")

    def __init__(self, data: bytes | str, decode: Callable[[bytes | str], Any] | None = None) -> None:
        self._source = data
        self._loads = loads if decode is None else decode
        self._stage = 0 if isinstance(data, str) else 1  # 0: encode; 1: blank; 2: decode; 3: done
        self._parts: list[bytes] = []  # the text encoded, then blanked, a slice per step
        # The text encoded (a slice per step) or as bytes (a bytearray line copied once).
        self._data = b"" if isinstance(data, str) else data if isinstance(data, bytes) else bytes(data)
        self._blank = b""
        self._inside = False  # the blanking is inside a string
        self._pos = 0
        self._frames: list[_Frame] = []
        self._need = False  # a member must follow (after a comma)
        self._after = False  # a member (or a container) has just ended
        self.value: Any = None

    @property
    def done(self) -> bool:
        return self._stage == 3

    def step(self) -> bool:
        """Do the next slice of the work; ``True`` once :attr:`value` is the decoded value.
        Raises ``ValueError`` when the text is not JSON (or breaks the codec's rules)."""
        stage = self._stage
        if stage == 2:
            if self._after:
                self._close()
            else:
                self._members()
        elif stage == 1:
            self._blank_step()
        elif stage == 0:
            self._encode_step()
        return self._stage == 3

    def _whole(self) -> None:
        self.value = self._loads(self._source)
        self._stage = 3

    def _encode_step(self) -> None:
        source = self._source
        piece = source[self._pos : self._pos + TOKEN_SLICE]
        try:
            self._parts.append(piece.encode("utf-8"))  # type: ignore[union-attr]
        except UnicodeEncodeError:  # a lone surrogate: the codec's own rules decide
            self._whole()
            return
        self._pos += len(piece)
        if self._pos >= len(source):
            self._data, self._parts, self._pos, self._stage = b"".join(self._parts), [], 0, 1

    def _blank_step(self) -> None:
        data = self._data
        end = min(len(data), self._pos + TOKEN_SLICE)
        while end < len(data) and data[end - 1] == 0x5C:
            end += 1  # a slice never ends on a backslash: its escape is blanked whole
        chunk = data[self._pos : end]
        self._pos = end
        if b"\\" in chunk:  # escapes made harmless, same length: every quote left delimits a string
            chunk = chunk.replace(b"\\\\", b"__").replace(b'\\"', b"__")
        parts = chunk.split(b'"')
        first = 0 if self._inside else 1
        parts[first::2] = map(bytes, map(len, parts[first::2]))  # a string's content: zero bytes
        self._parts.append(b'"'.join(parts))
        if not len(parts) & 1:
            self._inside = not self._inside
        if end < len(data):
            return
        self._blank, self._parts = b"".join(self._parts), []
        start = _skip(data, 0)
        if start == len(data) or data[start] not in _CLOSER:  # a lone string or number
            self._whole()
            return
        self._frames.append(_Frame(data[start], 1, None))
        self._pos = start + 1
        self._stage = 2

    def _members(self) -> None:
        """Decode the next members of the innermost open container, a slice's worth."""
        frame = self._frames[-1]
        pos = self._pos
        depth = cut = 0
        blank = self._blank
        for seen, match in enumerate(_MARK.finditer(blank, pos), 1):
            at = match.start()
            mark = blank[at]
            if mark == 0x2C:  # a comma
                if not depth:
                    cut = at
            elif mark in _CLOSER:  # an opening bracket
                depth += 1
            elif depth:
                depth -= 1
            else:  # the container's end
                self._group(frame, pos, at, True)
                self._pos = at
                self._after = True
                return
            if at - pos >= DECODE_SLICE or seen >= DECODE_MARKS:
                if cut:
                    break
                if depth:  # its first member alone is too big: open it
                    self._open(frame, pos)
                    return
        if not cut:
            raise ValueError("JSON text ends inside an array or object")
        self._group(frame, pos, cut, False)
        self._pos = cut + 1
        self._need = True

    def _group(self, frame: _Frame, start: int, end: int, last: bool) -> None:
        text = self._data[start:end]
        if not text.strip(b" \t\n\r"):
            if self._need or not last or not frame.fresh:
                raise ValueError(f"JSON value expected at byte {end}")
            return
        wrap = frame.depth - 1
        if frame.opener == 0x5B:
            value = self._loads(b"[" * (wrap + 1) + text + b"]" * (wrap + 1))
        else:
            value = self._loads(b"[" * wrap + b"{" + text + b"}" + b"]" * wrap)
        for _ in range(wrap):
            value = value[0]
        if frame.opener == 0x5B:
            frame.value.extend(value)
        else:
            frame.value.update(value)  # a repeated name keeps its first place and last value, as in one decode
        frame.fresh = self._need = False

    def _open(self, frame: _Frame, pos: int) -> None:
        data = self._data
        start = _skip(data, pos)
        key = None
        if frame.opener == 0x7B:
            if data[start : start + 1] != b'"':
                raise ValueError(f"JSON object member name expected at byte {start}")
            end = self._blank.index(b'"', start + 1) + 1  # the string's end (its content is blanked)
            key = self._loads(data[start:end])
            start = _skip(data, end)
            if data[start : start + 1] != b":":
                raise ValueError(f"':' expected at byte {start} of the JSON text")
            start = _skip(data, start + 1)
        opener = data[start] if start < len(data) else 0
        if opener not in _CLOSER:
            raise ValueError(f"JSON value expected at byte {start}")
        if frame.depth >= MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        self._frames.append(_Frame(opener, frame.depth + 1, key))
        self._pos = start + 1
        self._need = False

    def _close(self) -> None:
        """After a member: a comma, or the container's end (and maybe its parents')."""
        data = self._data
        frames = self._frames
        while True:
            pos = _skip(data, self._pos)
            mark = data[pos] if pos < len(data) else 0
            frame = frames[-1]
            if mark == 0x2C:
                self._pos = pos + 1
                self._need = True
                self._after = frame.fresh = False
                return
            if mark != _CLOSER[frame.opener]:
                raise ValueError(f"',' or the end of a JSON {'array' if frame.opener == 0x5B else 'object'} "
                                 f"expected at byte {pos}")
            frames.pop()
            self._pos = pos + 1
            if not frames:
                if _skip(data, self._pos) != len(data):
                    raise ValueError(f"extra data after the JSON value at byte {self._pos}")
                self.value = frame.value
                self._stage = 3
                return
            parent = frames[-1]
            if parent.opener == 0x5B:
                parent.value.append(frame.value)
            else:
                parent.value[frame.key] = frame.value
            parent.fresh = False


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
        decode = careful if _big_number(raw) else plain
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
