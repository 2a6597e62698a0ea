"""The POST of one message to a remote server, and what any answer means in general.

Layer 2, over :mod:`.httpconn`, for the HTTP transports (:mod:`.remote`): a
:class:`PostExchange` is one message POSTed; its head, body and end are handed to the
transport's general rules (an HTTP error status, a lost connection, a 401 for the
authorizer) and to what its subclass says a success means (:mod:`.http_post` for
Streamable HTTP, :mod:`.sse` for the legacy transport). :func:`request_id` reads a
request's id from its encoding (the peer's own shape first, without a regular expression);
:func:`answers` tells whether an error body is the server's JSON-RPC answer to a request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from .._json import loads
from ..wire.http11 import Response
from .base import REQUEST
from .httpconn import Exchange, header

if TYPE_CHECKING:
    from .remote import RemoteTransport

__all__ = ["PostExchange", "answers", "request_id", "status_text"]

#: How much of an error body is kept to quote it.
_ERROR_BODY: Final = 4096
# The id of a request as the peer encodes it ({"jsonrpc":"2.0","id":7,...}).
_REQUEST_ID: Final = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*[,}]')
_OUR_HEAD: Final = b'{"jsonrpc":"2.0","id":'
_ID_AT: Final = len(_OUR_HEAD)


def request_id(data: bytes) -> Any:
    """The id of the request encoded in ``data`` (``None``: not found)."""
    end = data.find(b",", _ID_AT) if data.startswith(_OUR_HEAD) else -1
    if end > 0:  # as the peer encodes its own request: a plain integer id, then a comma
        digits = data[_ID_AT:end]
        if digits.isdigit() and digits[:1] != b"0" and len(digits) < 19:  # (within int64, as loads)
            return int(digits)
    match = _REQUEST_ID.match(data)
    try:
        if match:
            return loads(match.group(1))
        msg = loads(data)
    except ValueError:
        return None
    return msg.get("id") if isinstance(msg, dict) else None


def answers(body: bytes, rid: Any) -> bool:
    """Is ``body`` (of an HTTP error) a JSON-RPC error response to the request ``rid``?"""
    if rid is None or not body.strip():
        return False
    try:
        decoded = loads(body)
    except ValueError:
        return False
    return isinstance(decoded, dict) and isinstance(decoded.get("error"), dict) and decoded.get("id") == rid


def status_text(response_status: int, reason: str) -> str:
    """``HTTP 503 Service Unavailable`` (without the reason when there is none)."""
    return f"HTTP {response_status} {reason}".rstrip()


class PostExchange(Exchange):
    """One message POSTed; what a success means is the subclass's (``on_success``...)."""

    method = "POST"

    #: Refused (400, 404, 405) as the first message: whether the legacy fallback is tried
    #: is decided once the body says if it is the server's JSON-RPC answer.
    probing = False
    # What an exchange has until its answer says otherwise: class defaults, not set per
    # message.
    status = 0
    reason = ""
    location: str | None = None
    error_body: bytearray | None = None
    #: The ``WWW-Authenticate`` values of a 401/403.
    challenges: list[str] = []  # noqa: RUF012 (never appended to: replaced by a 401/403's)
    #: How many authorizations its sending has caused so far.
    authorizations = 0
    #: The request's response (or its failure) was delivered.
    done = False
    #: Given up by the caller: never sent again.
    cancelled = False

    def __init__(self, transport: RemoteTransport, data: bytes, kind: int, rpc_method: str | None,
                 headers: Sequence[tuple[str, str]] = ()) -> None:
        self.transport = transport
        self.data = data
        self.kind = kind
        self.rpc_method = rpc_method
        #: The headers the protocol above asked for, beside the transport's own.
        self.headers = headers
        # A response or a notification never waits for a connection: the server may be
        # holding a stream open until it has the answer.
        self.urgent = kind != REQUEST
        self.rid = request_id(data) if kind == REQUEST else None
        #: The authorizer's token generation when the message was made.
        authorizer = transport.authorizer
        self.auth_generation = authorizer.generation if authorizer is not None else 0

    def target(self) -> str:
        return self.transport.target

    def request(self) -> bytes:
        return self.transport.post_request(self.target(), self.data)

    def on_response(self, response: Response) -> None:
        self.status = response.status
        self.reason = response.reason
        authorizer = self.transport.authorizer
        nonce = header(response, "dpop-nonce") if authorizer is not None else None
        if nonce is not None and authorizer is not None:
            authorizer.nonce(nonce)  # RFC 9449 §9: before a 401 asking for it is answered
        if 200 <= response.status < 300:
            self.on_success(response)
        else:
            self.location = header(response, "location")
            if response.status in (401, 403):
                self.challenges = [v for k, v in response.headers if k == "www-authenticate"][:8]
            self.error_body = bytearray()
            self.on_failure(response)

    def on_data(self, chunk: bytes) -> None:
        body = self.error_body
        if body is None:
            self.on_body(chunk)
        elif len(body) < _ERROR_BODY:
            body += chunk[: _ERROR_BODY - len(body)]

    def on_end(self) -> None:
        if self.error_body is not None:
            self.finish()
            self.transport.http_failed(self, bytes(self.error_body))
        else:
            self.on_complete()

    def on_error(self, why: str) -> None:
        self.transport.lost(self, why)

    def on_connect_failed(self, why: str) -> None:
        self.transport.gone(why)

    # -- for subclasses ---------------------------------------------------------------------

    def finish(self) -> None:
        """The request's outcome is told (or needs no telling any more)."""
        self.done = True

    def on_success(self, response: Response) -> None:
        """A 2xx head came."""

    def on_failure(self, response: Response) -> None:
        """A head of another status came (its body is collected, then ``http_failed``)."""

    def on_body(self, chunk: bytes) -> None:
        """Bytes of a 2xx body (ignored here)."""

    def on_complete(self) -> None:
        """A 2xx response ended (after the messages it carried are delivered)."""
        if self.kind == REQUEST:
            self.transport.in_order.then(self.unanswered)

    def unanswered(self) -> None:
        if not self.done:
            self.finish()
            self.transport.broke_binding(
                self.rid, f"{status_text(self.status, self.reason)} and no response to the request"
            )
