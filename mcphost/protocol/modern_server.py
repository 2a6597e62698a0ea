"""The server's side of the modern (2026-07-28) era: the rules :mod:`.modern` gives the client,
seen from the server.

Sans-I/O (layer 1). :func:`meta_problem` judges a request's ``_meta`` (-32602 when the
version or the capabilities are missing, -32022 with ``data.supported`` for a version not
served); :func:`complete_result` and :func:`discover_result` shape results (``resultType``,
``serverInfo`` in ``_meta``, the cache hints of a ``CacheableResult``); :func:`seal_state` and
:func:`open_state` make a ``requestState`` a client cannot forge (HMAC-SHA256);
:func:`header_mismatch` checks the Streamable HTTP headers against the body and
:func:`http_status` gives a modern error its HTTP status.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Final

from .modern import (
    COMPLETE,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_VERSION,
    MODERN_ERRORS,
    NAME_PARAM,
    SENTINEL,
    UNSUPPORTED_VERSION,
    header_map,
    header_problem,
    request_headers,
)

__all__ = [
    "CACHEABLE_METHODS",
    "MAX_STATE",
    "complete_result",
    "decode_header_value",
    "discover_result",
    "header_mismatch",
    "http_status",
    "meta_problem",
    "open_state",
    "param_header_mismatch",
    "seal_state",
]

#: Characters of a ``requestState`` the server accepts back at most (it made it: anything
#: longer was not).
MAX_STATE: Final = 4096


def meta_problem(params: Mapping[str, Any], supported: tuple[str, ...]) -> tuple[int, str, Any] | None:
    """Why the ``_meta`` of a modern request is refused, as (code, message, data); ``None``:
    it is fine. Spec 2026-07-28 "Base Protocol": version and capabilities are required
    (-32602); a version the server does not serve is -32022 with ``data.supported``."""
    meta = params.get("_meta")
    if type(meta) is not dict:
        return -32602, "params._meta is required (2026-07-28)", None
    version = meta.get(META_VERSION)
    if not isinstance(version, str):
        return -32602, f"params._meta[{META_VERSION!r}] is required (a string)", None
    if type(meta.get(META_CAPABILITIES)) is not dict:
        return -32602, f"params._meta[{META_CAPABILITIES!r}] is required (an object)", None
    info = meta.get(META_CLIENT_INFO)
    if info is not None and type(info) is not dict:
        return -32602, f"params._meta[{META_CLIENT_INFO!r}] must be an object", None
    level = meta.get(META_LOG_LEVEL)
    if level is not None and not isinstance(level, str):
        return -32602, f"params._meta[{META_LOG_LEVEL!r}] must be a string", None
    if version not in supported:
        return (UNSUPPORTED_VERSION, f"unsupported protocol version {version[:40]!r}",
                {"supported": list(supported), "requested": version[:40]})
    return None


#: Results that carry the caching hints ``ttlMs`` and ``cacheScope`` (``CacheableResult``).
CACHEABLE_METHODS: Final = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                                      "resources/templates/list", "resources/read"})


def complete_result(result: Mapping[str, Any], server_info: Mapping[str, Any], method: str = "") -> dict[str, Any]:
    """``result`` as a modern server sends it: ``resultType`` (``complete`` unless it says
    otherwise), ``serverInfo`` in its ``_meta``, and for a cacheable result of ``method``
    the hints (nothing cached: ``ttlMs`` 0, ``cacheScope`` private, unless it says)."""
    out = dict(result)
    out.setdefault("resultType", COMPLETE)
    if method in CACHEABLE_METHODS and out["resultType"] == COMPLETE:
        out.setdefault("ttlMs", 0)
        out.setdefault("cacheScope", "private")
    old = out.get("_meta")
    out["_meta"] = {**(old if type(old) is dict else {}), META_SERVER_INFO: dict(server_info)}
    return out


def discover_result(supported: tuple[str, ...], capabilities: Mapping[str, Any], server_info: Mapping[str, Any],
                    instructions: str | None = None) -> dict[str, Any]:
    """The ``DiscoverResult`` (nothing cached: ``ttlMs`` 0, ``cacheScope`` private)."""
    result: dict[str, Any] = {"supportedVersions": list(supported), "capabilities": dict(capabilities)}
    if instructions:
        result["instructions"] = instructions
    return complete_result(result, server_info, "server/discover")


def seal_state(key: bytes, payload: Mapping[str, Any]) -> str:
    """``payload`` as a ``requestState`` the client cannot forge (HMAC-SHA256 with ``key``)."""
    body = base64.urlsafe_b64encode(json.dumps(dict(payload), separators=(",", ":")).encode("utf-8")).decode("ascii")
    mac = hmac.new(key, body.encode("ascii"), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def open_state(key: bytes, raw: Any) -> dict[str, Any] | None:
    """The payload :func:`seal_state` sealed; ``None`` when ``raw`` is not one (altered,
    forged, too long, or sealed with another key)."""
    if not isinstance(raw, str) or len(raw) > MAX_STATE or "." not in raw:
        return None
    body, _, mac = raw.rpartition(".")
    good = hmac.new(key, body.encode("ascii", "replace"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac.encode("ascii", "replace"), good.encode("ascii")):
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(body.encode("ascii")))
    except (ValueError, UnicodeError):
        return None
    return payload if type(payload) is dict else None


def decode_header_value(value: str) -> str | None:
    """A header value as the client meant it (the base64 sentinel form undone; ``None``:
    a sentinel that does not decode)."""
    if not SENTINEL.fullmatch(value):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (ValueError, UnicodeError):
        return None


def header_mismatch(method: str, params: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """Why the HTTP headers of a modern request disagree with its body (``None``: they
    agree). ``headers`` has lower-case names. Spec 2026-07-28 "Streamable HTTP": the server
    checks ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` against the body."""
    meta = params.get("_meta")
    expect = {"mcp-method": method}
    if type(meta) is dict and isinstance(meta.get(META_VERSION), str):
        expect["mcp-protocol-version"] = meta[META_VERSION]
    field = NAME_PARAM.get(method)
    if field is not None:
        expect["mcp-name"] = str(params.get(field))
    for name, value in expect.items():
        given = headers.get(name)
        if given is None:
            return f"the {name} header is required"
        if decode_header_value(given) != value:
            return f"the {name} header {given[:60]!r} does not match the body"
    return None


def param_header_mismatch(version: str, params: Mapping[str, Any], input_schema: Any,
                          headers: Mapping[str, str]) -> str | None:
    """Why the ``Mcp-Param-*`` headers of a ``tools/call`` disagree with its arguments
    (``None``: they agree), for the tool's ``inputSchema`` (SEP-2243: each property annotated
    ``x-mcp-header`` whose value is present travels in its header; a value that differs,
    or a header missing, is -32020)."""
    if header_problem(input_schema) is not None:
        return None  # a tool with invalid annotations has no header rules
    mapping = header_map(input_schema)
    if not mapping:
        return None
    for name, value in request_headers(version, "tools/call", params, mapping):
        if not name.startswith("Mcp-Param-"):
            continue
        given = headers.get(name.lower())
        if given is None:
            return f"the {name} header is required"
        if decode_header_value(given) != decode_header_value(value):
            return f"the {name} header does not match the argument"
    return None


def http_status(code: int) -> int:
    """The HTTP status of a modern JSON-RPC error (200 for the others)."""
    if code in MODERN_ERRORS or code == -32602:
        return 400
    return 404 if code == -32601 else 200
