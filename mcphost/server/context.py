"""What a served request can do while it runs, and what serves it: :class:`RequestContext`,
:class:`Backend`, and the related-request marker of outgoing messages.

Layer 3. The session (:mod:`~mcphost.server.session`) hands each request of the client to
its :class:`Backend` with a :class:`RequestContext`: the request's id and progress token,
``progress()`` to report on it, and ``request()`` to ask the client something (sampling,
elicitation, roots) on its behalf. A backend answers with a result or raises
:class:`~mcphost.errors.RpcError` (or an ``MCPHostError``, mapped by the session to a
JSON-RPC error: no traceback ever reaches the client).

:data:`RELATED` names, while a message is being sent, the client request it belongs to:
a Streamable HTTP binding sends such a message on that request's response stream (spec
2025-11-25, Transports: "the server MAY send JSON-RPC requests and notifications before
sending the JSON-RPC response. These messages SHOULD relate to the originating client
request"); a transport that has one stream ignores it.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Final

from ..errors import RpcError
from ..protocol import jsonrpc
from ..protocol.modern import META_LOG_LEVEL

if TYPE_CHECKING:
    from .session import ServerSession
    from .tasks import TaskStore

__all__ = ["LOG_LEVELS", "RELATED", "Backend", "RequestContext", "level_rank"]

#: MCP log levels (RFC 5424 names), least severe first.
LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_RANK: Final = {name: i for i, name in enumerate(LOG_LEVELS)}


def level_rank(level: str) -> int:
    """The severity of an MCP log level (an unknown one counts as ``info``)."""
    return _RANK.get(level, 1)

#: The id of the client request a message being sent relates to (``None``: none).
RELATED: Final[contextvars.ContextVar[Any]] = contextvars.ContextVar("mcphost_related_request", default=None)


class RequestContext:
    """One request of the client while it is served.

    Attributes:
        session: the session it came on.
        rid: its JSON-RPC id.
        method: its method.
        progress_token: ``params._meta.progressToken`` (``None``: the client asked for none).
        log_level: the request's own log level (2026-07-28 ``_meta``; ``None``: none).
    """

    __slots__ = ("log_level", "method", "progress_token", "rid", "session", "task")

    #: A request of the 2026-07-28 era (:class:`~mcphost.server.modern.ModernContext`).
    modern = False

    def __init__(self, session: ServerSession, rid: Any, method: str, params: dict[str, Any]) -> None:
        self.session = session
        self.rid = rid
        self.method = method
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        self.progress_token = token if type(token) in (str, int) else None
        #: What a ``tools/call`` asks of a task (``None``: none; :func:`~mcphost.server.tasks.requested`).
        self.task: dict[str, Any] | None = None
        #: The request's own log level (2026-07-28 ``_meta``; ``None``: none given).
        self.log_level: str | None = None

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` for this request (nothing without a token)."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self.session.version.annotations:
            params["message"] = message  # 2025-03-26 and later
        self.session.notify("notifications/progress", params, related=self.rid)

    @property
    def reachable(self) -> bool:
        """Can the client still be asked something for this request?"""
        return not self.session.closed

    def can_ask(self, method: str) -> bool:
        """May this request ask the client ``method`` (the capability it needs was declared)?"""
        return self.session.can_ask(method)

    def declared(self, method: str) -> bool:
        """Did the client declare the capability answering ``method`` needs?"""
        return self.session.can_ask(method)

    def log_meta(self) -> dict[str, Any] | None:
        """The ``_meta`` passing the request's own log level on to a server (``None``: none)."""
        return None if self.log_level is None else {META_LOG_LEVEL: self.log_level}

    def logs(self, level: str) -> bool:
        """Is a log message of ``level`` sent on this request's stream (the session's level)?"""
        floor = self.session.log_level
        return floor is None or level_rank(level) >= level_rank(floor)

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None, key: str | None = None) -> Any:
        """Ask the client ``method`` on behalf of this request (refused with a clear
        :class:`~mcphost.errors.RpcError` when the client did not declare what it needs).
        ``key``: what the question is called where it came from (a downstream server's
        ``inputRequests`` key), which a 2026-07-28 request keeps when it can."""
        return await self.session.request(method, params, related=self.rid, timeout=timeout)


class Backend:
    """What a server session serves. Every method but :meth:`capabilities` and
    :meth:`server_info` has a default that refuses with "method not found"; the session
    gives the lists page by page, so :meth:`list` returns them whole."""

    def capabilities(self) -> dict[str, Any]:
        """The ``ServerCapabilities`` to declare (``logging`` is the session's own)."""
        return {}

    def server_info(self) -> dict[str, Any]:
        return {"name": "mcphost", "version": "0"}

    def instructions(self) -> str | None:
        return None

    def task_store(self) -> TaskStore | None:
        """Where the tasks made of ``tools/call`` are kept (``None``: tasks are not served)."""
        return None

    def opened(self, session: ServerSession) -> None:
        """``session`` finished its handshake."""

    def closed(self, session: ServerSession) -> None:
        """``session`` ended."""

    async def list(self, kind: str, ctx: RequestContext) -> list[dict[str, Any]]:
        """Every item of ``kind`` (``tools``, ``prompts``, ``resources``, ``resourceTemplates``)."""
        raise _unsupported(ctx.method)

    async def call_tool(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        raise _unsupported(ctx.method)

    async def get_prompt(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        raise _unsupported(ctx.method)

    async def read_resource(self, uri: str, ctx: RequestContext) -> dict[str, Any]:
        raise _unsupported(ctx.method)

    async def subscribe(self, uri: str, on: bool, ctx: RequestContext) -> None:
        raise _unsupported(ctx.method)

    async def complete(self, params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        raise _unsupported(ctx.method)

    async def set_level(self, level: str, ctx: RequestContext) -> None:
        """The client chose its log level (the session filters what it sends already)."""


def _unsupported(method: str) -> RpcError:
    return RpcError(jsonrpc.METHOD_NOT_FOUND, f"method {method!r} is not served here")
