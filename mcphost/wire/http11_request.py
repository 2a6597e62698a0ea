"""HTTP/1.1, client side: the bytes of a request (RFC 9112), and the codec's one error.

Sans-I/O (layer 1), beside :mod:`.http11` (the response parser, which names these too).
``build_request`` checks every name, value and target it is given (a header the
configuration holds that HTTP cannot carry is refused with ``HttpProtocolError`` naming it,
never sent); ``encode_chunk`` and ``LAST_CHUNK`` frame a chunked body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["LAST_CHUNK", "HttpProtocolError", "build_request", "encode_chunk"]

# The terminating chunk with no trailers (RFC 9112 §7.1: last-chunk trailer-section CRLF).
LAST_CHUNK: Final = b"0\r\n\r\n"

# RFC 9110 §5.6.2: token = 1*tchar.
_TOKEN: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CTL_STR: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_TARGET: Final = re.compile(r"[\x21-\x7e]+")


class HttpProtocolError(ValueError):
    """The peer sent bytes that are not HTTP/1.1, or a request to build is malformed."""




def _header_lines(headers: Iterable[tuple[str, str]]) -> tuple[list[bytes], dict[str, str]]:
    lines = []
    seen: dict[str, str] = {}
    for name, value in headers:
        if not _TOKEN.fullmatch(name.encode("ascii", "replace")):
            raise HttpProtocolError(f"bad header name: {name!r}")
        # Leading and trailing whitespace is not part of a field value (RFC 9110 §5.5);
        # it is dropped rather than refused, since it is usually a copy-paste accident.
        value = value.strip(" \t")
        if _CTL_STR.search(value):
            raise HttpProtocolError(f"bad header value for {name!r}: control character")
        try:
            raw = value.encode("latin-1")
        except UnicodeEncodeError:
            raise HttpProtocolError(f"header value for {name!r} is not latin-1") from None
        lines.append(name.encode("ascii") + b": " + raw + b"\r\n")
        seen.setdefault(name.lower(), value)
    return lines, seen


def build_request(
    method: str,
    target: str,
    headers: Iterable[tuple[str, str]],
    body: bytes | None = None,
    *,
    chunked: bool = False,
) -> bytes:
    """The bytes of a request.

    ``headers`` must hold ``Host`` (RFC 9112 §3.2: "A client MUST send a Host header field
    in all HTTP/1.1 request messages"). With a ``body`` a ``Content-Length`` is added unless
    given. With ``chunked=True`` the head says ``Transfer-Encoding: chunked`` and the body,
    if any, follows as one chunk and the last chunk; with ``body=None`` only the head is
    returned and the caller streams ``encode_chunk(...)`` and then ``LAST_CHUNK``.
    """
    if not _TOKEN.fullmatch(method.encode("ascii", "replace")):
        raise HttpProtocolError(f"bad method: {method!r}")
    if not _TARGET.fullmatch(target):
        raise HttpProtocolError(f"bad request target: {target!r}")
    lines, seen = _header_lines(headers)
    if "host" not in seen:
        raise HttpProtocolError("request has no Host header")
    if "transfer-encoding" in seen:
        raise HttpProtocolError("Transfer-Encoding is set by chunked=True, not as a header")
    length = seen.get("content-length")
    if length is not None:
        if chunked:
            raise HttpProtocolError("Content-Length given for a chunked request")
        if body is not None and length != str(len(body)):
            raise HttpProtocolError(f"Content-Length {length!r} but the body is {len(body)} bytes")
    elif chunked:
        lines.append(b"Transfer-Encoding: chunked\r\n")
    elif body is not None:
        lines.append(b"Content-Length: %d\r\n" % len(body))
    head = b"%s %s HTTP/1.1\r\n%s\r\n" % (method.encode("ascii"), target.encode("ascii"), b"".join(lines))
    if body is None:
        return head
    if chunked:
        return head + encode_chunk(body) + LAST_CHUNK
    return head + body


def encode_chunk(data: bytes) -> bytes:
    """One chunk of a chunked body; empty ``data`` gives nothing (an empty chunk would end it)."""
    if not data:
        return b""
    return b"%x\r\n%s\r\n" % (len(data), data)
