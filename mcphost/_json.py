"""The one JSON codec of the package, and the one JSON type namer (layer 0).

orjson is used when importable: both encoders produce compact UTF-8 JSON with no embedded
newline (MCP stdio framing: "Messages ... MUST NOT contain embedded newlines"), and both
decoders accept ``bytes`` directly. Every module encodes and decodes through here, so what
goes on the wire does not depend on who encoded it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["USING_ORJSON", "dumps", "loads", "json_kind"]

_json_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_json_loads = json.loads

#: Encode one message (or batch) as compact UTF-8 JSON bytes, no newline.
dumps: Callable[[Any], bytes]
#: Decode JSON text (``bytes`` or ``str``); raises ``ValueError`` when it is not JSON.
loads: Callable[[bytes | str], Any]

try:  # pragma: no branch - which branch runs depends on the environment
    import orjson as _orjson

    USING_ORJSON = True
    # Bound directly, not wrapped: both run several times per call on the hot path.
    dumps = _orjson.dumps
    loads = _orjson.loads

except ImportError:  # pragma: no cover - exercised in CI's no-orjson run
    USING_ORJSON = False

    def _stdlib_dumps(obj: Any) -> bytes:
        return _json_dumps(obj).encode("utf-8", "surrogatepass")

    dumps = _stdlib_dumps
    loads = _json_loads


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
