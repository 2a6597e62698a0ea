"""The MCP server session over one role-neutral peer (the initialize-handshake era).

Layer 3. A :class:`ServerSession` is the server's side of one client connection: it answers
``initialize`` (the version the client asked for when it is one we speak, else our newest:
spec 2025-11-25, Lifecycle, "Version Negotiation"), ``ping`` at any time, and hands every
other request to its :class:`~mcphost.server.context.Backend` in a task of its own (the
peer's ``serve``, :meth:`~mcphost.rpc.serving.Responder.serve`). The lists are given page by page (an opaque
cursor; a cursor we did not make is -32602). It keeps the client's log level and its
resource subscriptions, relays ``notifications/cancelled`` to the task serving that request,
and asks the client things (sampling, elicitation, roots) only when the client declared it
can answer.

Everything the client controls is bounded before it costs anything: requests in flight
(``ServerLimits.max_in_flight``, past it -32000 at once), subscriptions, the size of a page.
An error is a JSON-RPC error with a clear message: an ``MCPHostError`` of the backend keeps its
message (a routing or validation mistake is -32602, a downstream JSON-RPC error keeps its
code), anything else is -32603 "internal error" (logged here with its traceback; the client
never sees one).

The era is chosen per request: ``server/discover``, and any request whose ``_meta`` names a
protocol version, is served by :class:`~mcphost.server.modern.ModernServer` (the 2026-07-28
era) over the same peer and backend.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

from ..errors import (
    MCPHostError,
    PermissionDeniedError,
    RoutingError,
    RpcError,
    ServerError,
    UsageError,
    ValidationError,
)
from ..protocol import jsonrpc
from ..protocol import versions as _versions
from ..protocol.modern import META_VERSION
from ..rpc.calls import Call
from ..rpc.peer import Peer
from ..transports.base import Transport
from .context import LOG_LEVELS, RELATED, Backend, RequestContext
from .modern import ModernServer, RoundStore
from .tasks import HANDLERS as TASK_HANDLERS
from .tasks import advertise, requested

__all__ = ["LOG_LEVELS", "ServerLimits", "ServerSession", "TOO_BUSY"]

logger = logging.getLogger("mcphost.server")

#: MCP log levels, least severe first (RFC 5424 names).
_RANK: Final = {name: i for i, name in enumerate(LOG_LEVELS)}
#: The code of a request refused because the client has too many in flight.
TOO_BUSY: Final = -32000
#: Which client capability a request to the client needs.
_NEEDS: Final = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
#: What a 2026-07-28 client hears of only on a ``subscriptions/listen`` stream.
_CHANGES: Final = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                             "notifications/resources/list_changed", "notifications/resources/updated"})


class ServerLimits:
    """What one client may hold of the server at once; each has a default.

    Args:
        max_in_flight: requests of the client served at once (past it: -32000 at once).
        page_size: items per page of a list.
        max_subscriptions: resources one client may subscribe to.
        request_timeout: seconds a request to the client (sampling...) may take (0: none).
    """

    __slots__ = ("max_in_flight", "max_subscriptions", "page_size", "request_timeout")

    def __init__(self, *, max_in_flight: int = 64, page_size: int = 500, max_subscriptions: int = 1000,
                 request_timeout: float = 300.0) -> None:
        for name, value in (("max_in_flight", max_in_flight), ("page_size", page_size),
                            ("max_subscriptions", max_subscriptions)):
            if type(value) is not int or value < 1:
                raise UsageError(f"{name} must be a whole number of 1 or more, not {value!r}")
        if type(request_timeout) not in (int, float) or not request_timeout >= 0:
            raise UsageError(f"request_timeout must be a number of seconds (0: none), not {request_timeout!r}")
        self.max_in_flight = max_in_flight
        self.page_size = page_size
        self.max_subscriptions = max_subscriptions
        self.request_timeout = float(request_timeout)


Handler = Callable[["ServerSession", RequestContext, dict[str, Any]], Awaitable[Any]]


class ServerSession:
    """One client connection, served (see the module docstring)."""

    def __init__(self, transport: Transport, backend: Backend, *, name: str = "client",
                 limits: ServerLimits | None = None, rounds: RoundStore | None = None) -> None:
        self.name = name
        self.backend = backend
        self.limits = limits or ServerLimits()
        self.peer = Peer(name, transport, request_timeout=self.limits.request_timeout,
                         on_request=self._on_request, on_notification=self._on_notification,
                         on_closed=self._on_closed, on_abandoned=self._on_abandoned)
        #: The negotiated version (``None`` before ``initialize``) and its row.
        self.protocol_version: str | None = None
        self.version = _versions.get(None)
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        #: The client sent ``notifications/initialized``.
        self.initialized = False
        #: The least severe level the client wants (``None``: every message).
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self.in_flight = 0
        #: Whose tasks this session's requests see (a stateless HTTP front names a principal).
        self.task_owner = "session:" + secrets.token_hex(12)
        self._ended = False
        #: The 2026-07-28 era's requests (see the module docstring).
        self.modern = ModernServer(self, rounds)

    def start(self) -> None:
        self.peer.start()

    @property
    def closed(self) -> bool:
        return self.peer.closed

    async def wait_closed(self) -> None:
        await self.peer.wait_closed()

    async def aclose(self, timeout: float = 5.0) -> None:
        await self.peer.aclose(timeout, "the server closed the session")
        self._end()

    def can_ask(self, method: str) -> bool:
        """Did the client declare what answering ``method`` needs?"""
        need = _NEEDS.get(method)
        if need is None:
            return True
        if need == "elicitation" and not self.version.elicitation:
            return False
        return need in self.client_capabilities

    # -- to the client ----------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any] | None = None, *, related: Any = None) -> None:
        """Send a notification (dropped once the session is closed); a change goes on the
        ``subscriptions/listen`` streams of a 2026-07-28 client instead."""
        if method in _CHANGES and not self.initialized and self.modern.listening:
            self.modern.tell(method, params)
            return
        self.peer_notify(method, params, related=related)

    def peer_notify(self, method: str, params: dict[str, Any] | None = None, *, related: Any = None) -> None:
        """Send a notification as it is (dropped once the session is closed)."""
        token = RELATED.set(related)
        try:
            self.peer.notify(method, params)
        finally:
            RELATED.reset(token)

    def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """``notifications/message`` when ``level`` is at or above the client's level."""
        if self.log_level is not None and _RANK.get(level, 1) < _RANK[self.log_level]:
            return
        params: dict[str, Any] = {"level": level if level in _RANK else "info", "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        self.notify("notifications/message", params)

    async def request(self, method: str, params: dict[str, Any] | None = None, *, related: Any = None,
                      timeout: float | None = None) -> Any:
        """Ask the client ``method``; its JSON-RPC error, a time-out or a lost connection is
        an :class:`~mcphost.errors.RpcError` to pass on."""
        if not self.can_ask(method):
            raise RpcError(jsonrpc.METHOD_NOT_FOUND,
                           f"the client did not declare the capability {method!r} needs")
        token = RELATED.set(related)
        try:
            call = self.peer.start_request(method, params)
        except MCPHostError as exc:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"the client cannot be asked: {exc.message}") from None
        finally:
            RELATED.reset(token)
        try:
            if timeout is None:
                return await self.peer.wait(call)
            return await asyncio.wait_for(self.peer.wait(call), timeout)
        except ServerError as exc:
            raise RpcError(exc.code if exc.code is not None else jsonrpc.INTERNAL_ERROR, exc.message,
                           exc.data) from None
        except asyncio.TimeoutError:
            self.peer.give_up(call.rid, "request timed out")
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"the client did not answer {method} in time") from None
        except MCPHostError as exc:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{method}: {exc.message}") from None

    # -- from the client ----------------------------------------------------------------------

    def _on_request(self, rid: Any, method: str, params: Any) -> None:
        peer = self.peer
        if params is None:
            params = {}
        elif type(params) is not dict:
            peer.respond_error(rid, jsonrpc.INVALID_PARAMS, f"{method}: params must be an object")
            return
        if method == "server/discover" or (method != "initialize" and self._modern(params)):
            self.modern.handle(rid, method, params)
            return
        if method == "ping":
            peer.respond(rid, {})
            return
        if method == "initialize":
            self._initialize(rid, params)
            return
        if self.protocol_version is None:
            peer.respond_error(rid, jsonrpc.INVALID_REQUEST,
                               f"{method}: the session is not initialized (send initialize first)")
            return
        handler = _HANDLERS.get(method)
        if handler is None:
            peer.respond_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method {method!r} is not supported")
            return
        if not self.admit(rid, method):
            return
        peer.serve(rid, self.run_handler(handler, RequestContext(self, rid, method, params), params))

    def admit(self, rid: Any, method: str) -> bool:
        """Count request ``rid`` in flight, or refuse it (answered) past the client's bound."""
        if self.in_flight >= self.limits.max_in_flight:
            self.peer.respond_error(rid, TOO_BUSY, f"{method}: too many requests in flight "
                                                   f"(at most {self.limits.max_in_flight} per client)")
            return False
        self.in_flight += 1
        return True

    def _modern(self, params: dict[str, Any]) -> bool:
        meta = params.get("_meta")
        return type(meta) is dict and META_VERSION in meta

    def handler_for(self, method: str) -> Handler | None:
        """What serves ``method`` (``None``: nothing here)."""
        return _HANDLERS.get(method)

    async def run_handler(self, handler: Handler, ctx: RequestContext, params: dict[str, Any]) -> Any:
        try:
            return await handler(self, ctx, params)
        except RpcError:
            raise
        except (RoutingError, ValidationError, UsageError) as exc:
            raise RpcError(jsonrpc.INVALID_PARAMS, exc.message) from None
        except PermissionDeniedError as exc:
            raise RpcError(jsonrpc.INVALID_PARAMS, exc.message) from None
        except ServerError as exc:
            code = exc.code if exc.code is not None else jsonrpc.INTERNAL_ERROR
            raise RpcError(code, exc.message, exc.data) from None
        except MCPHostError as exc:
            raise RpcError(jsonrpc.INTERNAL_ERROR, exc.message) from None
        except Exception:
            logger.exception("%s: %s failed", self.name, ctx.method)
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{ctx.method}: internal error") from None
        finally:
            self.in_flight -= 1

    def _initialize(self, rid: Any, params: dict[str, Any]) -> None:
        if self.protocol_version is not None:
            self.peer.respond_error(rid, jsonrpc.INVALID_REQUEST, "initialize: the session is already initialized")
            return
        asked = params.get("protocolVersion")
        caps = params.get("capabilities", {})
        info = params.get("clientInfo", {})
        if not isinstance(asked, str) or not isinstance(caps, dict) or not isinstance(info, dict):
            self.peer.respond_error(rid, jsonrpc.INVALID_PARAMS, "initialize: protocolVersion (a string), "
                                    "capabilities and clientInfo (objects) are required")
            return
        # Spec: "If the server supports the requested protocol version, it MUST respond with
        # the same version. Otherwise, the server MUST respond with another protocol version
        # it supports. This SHOULD be the latest version supported by the server."
        version = asked if _versions.is_supported(asked) else _versions.LATEST_VERSION
        self.protocol_version = version
        self.version = _versions.get(version)
        self.client_capabilities = caps
        self.client_info = info
        server_caps = advertise(dict(self.backend.capabilities()), self, False)
        server_caps["logging"] = {}
        if not self.version.completions_flag:
            server_caps.pop("completions", None)
        result: dict[str, Any] = {"protocolVersion": version, "capabilities": server_caps,
                                  "serverInfo": self.backend.server_info()}
        instructions = self.backend.instructions()
        if instructions:
            result["instructions"] = instructions
        self.peer.respond(rid, result)

    def _on_notification(self, method: str, params: Any) -> None:
        if type(params) is not dict:
            params = {}
        if method == "notifications/cancelled":
            self.peer.cancel_served(params.get("requestId"))
        elif method == "notifications/initialized":
            if not self.initialized and self.protocol_version is not None:
                self.initialized = True
                self.backend.opened(self)
        else:
            logger.debug("%s: notification %s ignored", self.name, method)

    def _on_abandoned(self, call: Call, reason: str) -> None:
        # A request of ours was given up: the client may stop working on it.
        self.peer.notify("notifications/cancelled", {"requestId": call.rid, "reason": reason})

    def _on_closed(self, _exc: MCPHostError) -> None:
        self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self.modern.close()
            if self.initialized or self.modern.opened:
                self.backend.closed(self)


# -- the requests, one function each ---------------------------------------------------------

def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"mcphost:{offset}".encode()).decode("ascii")


def _offset(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode("ascii")
        prefix, _, number = text.partition(":")
        offset = int(number)
        if prefix != "mcphost" or offset < 0:
            raise ValueError(text)
    except (ValueError, UnicodeError):
        raise RpcError(jsonrpc.INVALID_PARAMS, "invalid cursor (not one this server gave)") from None
    return offset


def _lister(kind: str) -> Handler:
    async def listing(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
        offset = _offset(params.get("cursor"))
        items = await session.backend.list(kind, ctx)
        end = offset + session.limits.page_size
        result: dict[str, Any] = {kind: items[offset:end]}
        if end < len(items):
            result["nextCursor"] = _cursor(end)
        return result

    return listing


def _string(params: dict[str, Any], key: str, method: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(jsonrpc.INVALID_PARAMS, f"{method}: {key!r} must be a non-empty string")
    return value


def _object(params: dict[str, Any], key: str, method: str) -> dict[str, Any]:
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RpcError(jsonrpc.INVALID_PARAMS, f"{method}: {key!r} must be an object")
    return value


async def _call_tool(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    name = _string(params, "name", ctx.method)
    ctx.task = requested(session, ctx, params)
    return await session.backend.call_tool(name, _object(params, "arguments", ctx.method), ctx)


async def _get_prompt(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    name = _string(params, "name", ctx.method)
    return await session.backend.get_prompt(name, _object(params, "arguments", ctx.method), ctx)


async def _read(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    return await session.backend.read_resource(_string(params, "uri", ctx.method), ctx)


async def _subscribe(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    uri = _string(params, "uri", ctx.method)
    on = ctx.method == "resources/subscribe"
    if on and uri not in session.subscriptions and len(session.subscriptions) >= session.limits.max_subscriptions:
        raise RpcError(jsonrpc.INVALID_PARAMS, f"too many subscriptions (at most "
                                               f"{session.limits.max_subscriptions} per client)")
    await session.backend.subscribe(uri, on, ctx)
    if on:
        session.subscriptions.add(uri)
    else:
        session.subscriptions.discard(uri)
    return {}


async def _set_level(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    level = params.get("level")
    if level not in _RANK:
        raise RpcError(jsonrpc.INVALID_PARAMS, f"logging/setLevel: level must be one of {', '.join(LOG_LEVELS)}")
    session.log_level = str(level)
    await session.backend.set_level(str(level), ctx)
    return {}


async def _complete(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    if not isinstance(params.get("ref"), dict) or not isinstance(params.get("argument"), dict):
        raise RpcError(jsonrpc.INVALID_PARAMS, "completion/complete: 'ref' and 'argument' must be objects")
    return await session.backend.complete(params, ctx)


_HANDLERS: Final[dict[str, Handler]] = {
    "tools/list": _lister("tools"),
    "prompts/list": _lister("prompts"),
    "resources/list": _lister("resources"),
    "resources/templates/list": _lister("resourceTemplates"),
    "tools/call": _call_tool,
    "prompts/get": _get_prompt,
    "resources/read": _read,
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _subscribe,
    "logging/setLevel": _set_level,
    "completion/complete": _complete,
    **TASK_HANDLERS,
}
