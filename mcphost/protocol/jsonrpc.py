"""JSON-RPC 2.0 messages: encoding, decoding, classification, ids and correlation.

Sans-I/O (layer 1). This module owns the JSON-RPC envelope only; it knows nothing of MCP
methods. The hot path is ``loads`` → ``classify`` → ``Correlator.pop``, so each is kept to a
few dictionary operations, and nothing is allocated that the caller does not keep.

orjson is used when importable: both encoders produce compact UTF-8 JSON with no embedded
newline (MCP stdio framing: "Messages ... MUST NOT contain embedded newlines"), and both
decoders accept ``bytes`` directly.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from .._json import USING_ORJSON, dumps, json_kind, loads
from ..errors import ProtocolError, RpcError

__all__ = [
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "RESOURCE_NOT_FOUND",
    "REQUEST",
    "NOTIFICATION",
    "RESPONSE",
    "ERROR",
    "dumps",
    "loads",
    "classify",
    "refusable_id",
    "split_batch",
    "json_kind",
    "RpcError",
    "request",
    "notification",
    "response",
    "error_response",
    "Correlator",
    "USING_ORJSON",
]

# JSON-RPC 2.0 §5.1 reserved codes, plus MCP's resource-not-found (legacy versions).
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
RESOURCE_NOT_FOUND: Final = -32002

# Message kinds returned by classify().
REQUEST: Final = 1
NOTIFICATION: Final = 2
RESPONSE: Final = 3
ERROR: Final = 4

def classify(msg: Any) -> int:
    """Return the kind of one decoded message, or raise ``ProtocolError`` saying what is wrong.

    JSON-RPC 2.0 §4-§5: a request has ``method`` and an ``id`` (string or number, never
    null in MCP); a notification has ``method`` and no ``id``; a response has an ``id`` and
    exactly one of ``result`` and ``error``.
    """
    if type(msg) is not dict:
        raise ProtocolError(f"message is not a JSON object (got {json_kind(msg)})")
    if msg.get("jsonrpc") != "2.0":
        raise ProtocolError(f"message has jsonrpc={msg.get('jsonrpc')!r}, expected '2.0'")
    method = msg.get("method")
    if method is not None:
        if type(method) is not str:
            raise ProtocolError(f"message method is {json_kind(method)}, expected string")
        if "id" not in msg:
            return NOTIFICATION
        _check_id(msg["id"])
        params = msg.get("params")
        if params is not None and type(params) is not dict and type(params) is not list:
            raise ProtocolError(f"request {method!r} has params of type {json_kind(params)}")
        return REQUEST
    if "id" not in msg:
        raise ProtocolError("message has neither 'method' nor 'id'")
    rid = msg["id"]
    if rid is not None and type(rid) not in _RESPONSE_ID_TYPES:
        # null only for an error about a request whose id could not be read; a float is
        # accepted for encoders that write 7 as 7.0.
        raise ProtocolError(f"response id {rid!r} is not a string or integer")
    has_result = "result" in msg
    if "error" in msg:
        if has_result:
            raise ProtocolError(f"response to id {msg['id']!r} has both 'result' and 'error'")
        err = msg["error"]
        if type(err) is not dict or type(err.get("code")) is not int:
            raise ProtocolError(
                f"response to id {msg['id']!r} has a malformed error object (needs an "
                "integer 'code' and a 'message')"
            )
        return ERROR
    if not has_result:
        raise ProtocolError(f"response to id {msg['id']!r} has neither 'result' nor 'error'")
    return RESPONSE


_RESPONSE_ID_TYPES: Final = frozenset((int, str, float))


def refusable_id(msg: Any) -> int | str | None:
    """The id of a request that :func:`classify` refused for its ``params`` alone (a
    string, a number, a boolean), or ``None``. Such a request is answered -32602: its
    sender waits for an answer, unlike the sender of a message that is not a request."""
    if type(msg) is not dict or msg.get("jsonrpc") != "2.0" or type(msg.get("method")) is not str:
        return None
    rid = msg.get("id")
    if type(rid) is not int and type(rid) is not str:
        return None
    params = msg.get("params")
    if params is None or type(params) is dict or type(params) is list:
        return None
    return rid


def _check_id(request_id: Any) -> None:
    t = type(request_id)
    if t is not int and t is not str:
        # MCP: "Request id is a string or integer, never null".
        raise ProtocolError(f"request id {request_id!r} is not a string or integer")


def split_batch(decoded: Any) -> list[Any]:
    """Return the messages of one decoded line: a batch array's items, or the one message.

    Batches are allowed from servers speaking 2025-03-26 ("implementations MUST accept
    batches"); accepting them always is harmless and more forgiving. An empty array is a
    protocol error per JSON-RPC 2.0 §6.
    """
    if type(decoded) is list:
        if not decoded:
            raise ProtocolError("empty JSON-RPC batch")
        return decoded
    return [decoded]


def request(request_id: int | str, method: str, params: Any = None) -> dict[str, Any]:
    """Build a request envelope (``params`` omitted when ``None``)."""
    if params is None:
        return {"jsonrpc": "2.0", "id": request_id, "method": method}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: Any = None) -> dict[str, Any]:
    """Build a notification envelope (``params`` omitted when ``None``)."""
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def response(request_id: int | str, result: Any) -> dict[str, Any]:
    """Build a success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(
    request_id: int | str | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """Build an error response (``data`` omitted when ``None``)."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


W = TypeVar("W")


class Correlator(Generic[W]):
    """Allocates request ids and matches responses to whoever waits for them.

    Ids are consecutive integers and never reused within one correlator (one connection),
    as the legacy spec requires. A waiter can be anything (the connection layer stores its
    pending-call record). Ids given up on (timed out, cancelled) are remembered in a bounded
    set so that their late responses are recognised and ignored, as the spec says to, while
    a response to an id never issued is reported as the server's protocol error.
    """

    __slots__ = ("_abandoned", "_abandoned_max", "ids", "pending")

    def __init__(self, *, abandoned_memory: int = 4096) -> None:
        #: The id source. A hot path may take ``next(correlator.ids)`` and register its
        #: waiter in ``pending`` itself (the waiter can then hold its own id).
        self.ids = itertools.count(1)
        self.pending: dict[int | str, W] = {}
        self._abandoned: OrderedDict[int | str, None] = OrderedDict()
        self._abandoned_max = abandoned_memory

    def add(self, waiter: W) -> int:
        """Register ``waiter`` under a fresh id and return the id."""
        request_id = next(self.ids)
        self.pending[request_id] = waiter
        return request_id

    def pop(self, request_id: Any) -> W | None:
        """Remove and return the waiter for a response id.

        Returns ``None`` for a late response to an abandoned id. Raises ``ProtocolError``
        for an id that was never issued or was already answered.
        """
        waiter = self.pending.pop(request_id, None)
        if waiter is not None:
            return waiter
        if type(request_id) is float and request_id.is_integer():
            # Some JSON encoders write 7 as 7.0; accept it as the integer id.
            return self.pop(int(request_id))
        if request_id in self._abandoned:
            del self._abandoned[request_id]
            return None
        raise ProtocolError(f"response to unknown request id {request_id!r}")

    def abandon(self, request_id: int | str) -> W | None:
        """Give up on ``request_id``: its waiter is returned, a late response is ignored."""
        waiter = self.pending.pop(request_id, None)
        abandoned = self._abandoned
        abandoned[request_id] = None
        if len(abandoned) > self._abandoned_max:
            abandoned.popitem(last=False)
        return waiter

    def drain(self) -> list[W]:
        """Remove and return every pending waiter (the connection is gone)."""
        waiters = list(self.pending.values())
        self.pending.clear()
        return waiters

    def __len__(self) -> int:
        return len(self.pending)


def error_from_object(err: dict[str, Any]) -> tuple[int, str, Any]:
    """Return ``(code, message, data)`` of a JSON-RPC error object, tolerating odd messages."""
    message = err.get("message")
    if not isinstance(message, str):
        message = "" if message is None else str(message)
    return err["code"], message, err.get("data")


Handler = Callable[[str, Any], Any]
