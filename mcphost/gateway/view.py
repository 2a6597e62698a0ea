"""The aggregated host as one server's backend: names, calls, and what is relayed both ways.

Layer 5, over :class:`~mcphost.MCPHost`'s public API only (like ``compat/``): the host
lists, routes, permits (tools a server's filter or the host's permissions deny are neither
listed nor callable), validates, caches reads and prompts, and times every call; this module
renames (:mod:`~mcphost.gateway.naming`) and relays:

- progress of a downstream call goes to the client that made it, under its own token, and a
  client's ``notifications/cancelled`` cancels the host's call (which tells the server);
- a downstream server's ``sampling/createMessage``, ``elicitation/create`` or ``roots/list``
  goes to the client whose request caused it, on that request's stream: for a 2026-07-28
  server's input request the cause is known (the host answers it in the call's own context,
  :data:`_CAUSE`) and the question keeps the server's key; for a handshake-era server's
  request it is the latest request in flight to that server whose client declared the
  capability (for ``roots/list``, any connected client that declared ``roots``); with no
  such client the server gets a clear JSON-RPC error. An elicitation the causing
  2026-07-28 request did not declare is answered ``cancel`` for it (the user could not be
  asked);
- ``list_changed`` of any server (or a server that comes or goes) is told to every client,
  coalesced: one notification per kind per ``coalesce`` seconds;
- a server's log messages go to every handshake-era client at its level (to the client
  whose call caused them on that call's stream); a 2026-07-28 request gets them on its own
  stream only when its ``_meta`` has a ``logLevel``, at or above it (that level is passed to
  the server with a ``tools/call``); resource updates go to the clients that subscribed.

Downstream subscriptions are counted: the server is subscribed while one client is. Reads
and prompts go through the host's cache with the client's session as their scope: a result
the server marks ``cacheScope: "private"`` is served again to that client only; public
ones (and a handshake-era server's) to every client.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from ..errors import RoutingError, RpcError
from ..protocol import jsonrpc
from ..rpc.taskset import TaskSet
from ..server.context import Backend, RequestContext
from ..server.session import ServerSession
from ..server.tasks import TaskLimits, TaskStore
from ..version import __version__
from .naming import Naming
from .tasks import GatewayTasks

if TYPE_CHECKING:
    from .. import MCPHost

__all__ = ["HostBackend"]

logger = logging.getLogger("mcphost.gateway")

_KINDS: Final = {"tools": "tools", "prompts": "prompts", "resources": "resources", "resourceTemplates": "resources"}
_LISTS: Final = ("tools", "prompts", "resources", "resourceTemplates")
#: The client request a downstream call runs for, in that call's context (a 2026-07-28
#: server's input requests are answered in it; a handshake-era server's come from its reader).
_CAUSE: Final[contextvars.ContextVar[RequestContext | None]] = contextvars.ContextVar("mcphost_gateway_cause",
                                                                                      default=None)
#: Questions of one server the gateway relays at once, per kind (each waits for a client; the
#: sessions' own bounds limit how many a client can make wait).
RELAYED: Final = 1024


class HostBackend(Backend):
    """Serves a running (or starting) :class:`~mcphost.MCPHost` to any number of sessions.

    Build it before the host's ``initialize()``: it registers the handlers through which the
    host declares sampling, elicitation and roots to its servers.
    """

    def __init__(self, host: MCPHost, naming: Naming, *, coalesce: float = 0.05,
                 task_limits: TaskLimits | None = None) -> None:
        self.host = host
        self.naming = naming
        self.coalesce = coalesce
        #: Sessions past their handshake, oldest first.
        self.sessions: list[ServerSession] = []
        #: server -> the client requests in flight to it (latest last).
        self.calling: dict[str, list[RequestContext]] = {}
        self._changed: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None
        self._subscribers: dict[str, int] = {}
        #: Unsubscriptions on their way (cancelled by :meth:`aclose`).
        self.tasks = TaskSet("gateway", 256)
        #: The tasks made of clients' calls (gateway/tasks.py).
        self.served = GatewayTasks(host, TaskStore(task_limits), self._on)
        host.on_sampling(self._sampling, tools=True, with_key=True, concurrency=RELAYED)
        host.on_elicitation(self._elicitation, form=True, url=True, with_key=True, concurrency=RELAYED)
        host.on_roots(self._roots, with_key=True, concurrency=RELAYED)
        host.on_log(self._log)
        host.on_event(self._event)

    # -- the session's questions --------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True}, "completions": {}}

    def server_info(self) -> dict[str, Any]:
        return {"name": "mcphost", "title": "mcphost gateway", "version": __version__}

    def instructions(self) -> str | None:
        if self.naming.only is None:
            return None
        info = self.host.get_tools().get(self.naming.only)
        text = info.get("instructions") if info else None
        return text if isinstance(text, str) else None

    def task_store(self) -> TaskStore:
        return self.served.store

    def opened(self, session: ServerSession) -> None:
        self.sessions.append(session)

    def closed(self, session: ServerSession) -> None:
        if session in self.sessions:
            self.sessions.remove(session)
        self.served.closed(session)
        for uri in list(session.subscriptions):
            self._unsubscribe_later(uri)

    async def list(self, kind: str, ctx: RequestContext) -> list[dict[str, Any]]:
        if kind == "tools" and self.naming.mode == "search":
            return self.host.tools_for("mcp", mode="search")
        out: list[dict[str, Any]] = []
        named = kind in ("tools", "prompts")
        for server, info in self.host.get_tools().items():
            if not self.naming.serves(server):
                continue
            offered = kind == "tools" and self.served.offered(info, ctx)  # the gateway runs them as tasks
            for item in info.get(kind) or ():  # type: ignore[attr-defined]
                if named and isinstance(item, dict) and isinstance(item.get("name"), str):
                    item = {**item, "name": self.naming.outward(server, item["name"])}
                    if offered and "execution" not in item:
                        item["execution"] = {"taskSupport": "optional"}
                out.append(item)
        return out

    def tool_schema(self, name: str) -> Any:
        """The ``inputSchema`` of the tool served as ``name`` (``None``: no such tool)."""
        for server, info in self.host.get_tools().items():
            if not self.naming.serves(server):
                continue
            for item in info.get("tools") or ():
                if isinstance(item, dict) and self.naming.outward(server, str(item.get("name"))) == name:
                    return item.get("inputSchema")
        return None

    async def call_tool(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        if self.naming.mode == "search" and name in ("search_tools", "describe_tool", "call_tool"):
            return await self._meta_tool(name, arguments, ctx)
        server, tool = self.naming.inward(name)
        if self.served.applies(ctx):
            return await self.served.call_tool(server, tool, arguments, ctx)
        progress = None if ctx.progress_token is None else _relay_progress(ctx)
        return dict(await self._on(server, ctx, self.host.call_tool(f"{server}.{tool}", arguments,
                                                                   progress=progress, meta=ctx.log_meta())))

    async def get_prompt(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        server, prompt = self.naming.inward(name)
        return dict(await self._on(server, ctx, self.host.get_prompt(f"{server}.{prompt}", arguments,
                                                                    scope=ctx.session.name)))

    async def read_resource(self, uri: str, ctx: RequestContext) -> dict[str, Any]:
        server = self.naming.only or self.host.route_resource(uri).name
        return dict(await self._on(server, ctx, self.host.get_resource(uri, server=server, scope=ctx.session.name)))

    async def subscribe(self, uri: str, on: bool, ctx: RequestContext) -> None:
        server = self.naming.only or self.host.route_resource(uri).name
        had = uri in ctx.session.subscriptions
        if on and not had:
            if self._subscribers.get(uri, 0) == 0:
                await self.host.subscribe_resource(uri, server=server)
            self._subscribers[uri] = self._subscribers.get(uri, 0) + 1
        elif not on and had:
            self._unsubscribe_later(uri)

    async def complete(self, params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        ref = dict(params["ref"])
        server = self.naming.only
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            server, prompt = self.naming.inward(ref["name"])
            ref["name"] = f"{server}.{prompt}"
        elif server is None and isinstance(ref.get("uri"), str):
            server = self.host.route_resource(ref["uri"]).name
        context = params.get("context")
        result = await self.host.complete(ref, params["argument"], context if isinstance(context, dict) else None,
                                          server=server)
        return {"completion": result}

    async def set_level(self, level: str, ctx: RequestContext) -> None:
        # The servers are asked for the most detailed level any client wants.
        await self.host.set_log_level(self.naming.only, level)

    # -- requests in flight to a server -------------------------------------------------------

    async def _on(self, server: str, ctx: RequestContext, work: Awaitable[Any]) -> Any:
        """Run ``work`` (a request to ``server``) with ``ctx`` known as its cause."""
        calling = self.calling.setdefault(server, [])
        calling.append(ctx)
        cause = _CAUSE.set(ctx)
        try:
            return await work
        finally:
            _CAUSE.reset(cause)
            calling.remove(ctx)
            if not calling:
                del self.calling[server]

    async def _meta_tool(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        if name == "call_tool":
            target = self.host.resolve_tool_name(str(arguments.get("name", "")))
            inner = arguments.get("arguments") or {}
            if not isinstance(inner, dict):
                raise RpcError(jsonrpc.INVALID_PARAMS, "call_tool: 'arguments' must be an object")
            server = target.partition(".")[0]
            progress = None if ctx.progress_token is None else _relay_progress(ctx)
            return dict(await self._on(server, ctx, self.host.call_tool(target, inner, progress=progress,
                                                                        meta=ctx.log_meta())))
        if name == "search_tools":
            limit = arguments.get("limit", 5)
            found = await self.host.search_tools_async(str(arguments.get("query", "")),
                                                       limit=limit if type(limit) is int and 0 < limit <= 50 else 5)
            return {"content": [{"type": "text", "text": json.dumps(found, ensure_ascii=False)}]}
        target = self.host.resolve_tool_name(str(arguments.get("name", "")))
        server, _, tool_name = target.partition(".")
        info: Any = self.host.get_tools().get(server) or {}
        for tool in info.get("tools") or ():
            if tool.get("name") == tool_name:
                described = {"name": target, "description": tool.get("description", ""),
                             "inputSchema": tool.get("inputSchema", {})}
                return {"content": [{"type": "text", "text": json.dumps(described, ensure_ascii=False)}]}
        raise RoutingError(f"unknown tool {target!r}")

    # -- what servers ask: relayed to a client --------------------------------------------------

    def _asker(self, server: str, method: str, key: str | None, params: dict[str, Any] | None = None,
               ) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        task = self.served.asker(server, method, params, lambda: self._asker(server, method, key)) if params else None
        if task is not None:  # the question names a client's task (gateway/tasks.py)
            return task
        calling = self.calling.get(server, ())
        cause = _CAUSE.get() if key is not None else None
        if cause is not None and cause in calling:
            # The request that caused this question, and no other, is asked it.
            candidates: Any = (cause,)
        else:
            candidates = reversed(calling)
        for ctx in candidates:
            if method == "elicitation/create" and ctx.can_ask(method) and not ctx.declared(method):
                return _cancelled  # a 2026-07-28 request without elicitation: nobody can be asked
            if ctx.can_ask(method) and ctx.reachable:
                return lambda params: ctx.request(method, params, key=key)
        if method == "roots/list" and cause is None:
            for session in reversed(self.sessions):
                if session.can_ask(method) and not session.closed:
                    return lambda params: session.request(method, params)
        why = ("no client request is in flight to this server" if server not in self.calling
               else "the client whose request is in flight did not declare the capability")
        raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"{method}: no client of the mcphost gateway can answer ({why})")

    async def _sampling(self, server: str, params: dict[str, Any], key: str | None = None) -> Any:
        return await self._asker(server, "sampling/createMessage", key, params)(params)

    async def _elicitation(self, server: str, params: dict[str, Any], key: str | None = None) -> Any:
        return await self._asker(server, "elicitation/create", key, params)(params)

    async def _roots(self, server: str, key: str | None = None) -> Any:
        result = await self._asker(server, "roots/list", key)({})
        roots = result.get("roots") if isinstance(result, dict) else None
        if not isinstance(roots, list):
            raise RpcError(jsonrpc.INTERNAL_ERROR, "roots/list: the client answered without a 'roots' list")
        return [r for r in roots if isinstance(r, dict) and isinstance(r.get("uri"), str)]

    # -- what servers tell: relayed to the clients ----------------------------------------------

    def _log(self, server: str, params: dict[str, Any]) -> None:
        if not self.naming.serves(server):
            return
        level = str(params.get("level", "info"))
        name = params.get("logger")
        if self.naming.only is None:
            name = f"{server}.{name}" if isinstance(name, str) else server
        cause = self.calling.get(server)
        related = cause[-1] if cause else None
        sessions = list(self.sessions)
        if related is not None and related.session not in sessions:
            sessions.append(related.session)  # a 2026-07-28 request's session of its own
        params_out: dict[str, Any] = {"level": level, "data": params.get("data")}
        if isinstance(name, str):
            params_out["logger"] = name
        for session in sessions:
            if related is not None and related.session is session:
                if related.logs(level):
                    session.notify("notifications/message", dict(params_out), related=related.rid)
            elif session.initialized and (session.log_level is None or _at_least(level, session.log_level)):
                # (a 2026-07-28 client has no session level: it is told only on its requests)
                session.notify("notifications/message", dict(params_out))

    def _event(self, event: Any) -> None:
        kind = event.get("type")
        server = event.get("server")
        if server is not None and not self.naming.serves(server):
            return
        if kind == "capabilities_changed":
            for listed in event.get("data") or ():
                if listed in _KINDS:
                    self._changed.add(_KINDS[listed])
        elif kind in ("server_ready", "server_exited", "server_failed") or (
                kind == "state_changed" and "ready" in (str((event.get("data") or {}).get("from")),
                                                       str((event.get("data") or {}).get("to")))):
            self._changed.update(("tools", "prompts", "resources"))
        elif kind == "resource_updated":
            uri = (event.get("data") or {}).get("uri")
            for session in self.sessions:
                if uri in session.subscriptions:
                    session.notify("notifications/resources/updated", {"uri": uri})
            return
        else:
            return
        if self._changed and self._flush is None and self.sessions:
            self._flush = asyncio.get_running_loop().call_later(self.coalesce, self._tell_changed)

    async def aclose(self) -> None:
        """Stop what is still on its way (the coalescing timer, unsubscriptions)."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        await self.tasks.aclose()
        await self.served.store.aclose()

    def _tell_changed(self) -> None:
        self._flush = None
        changed, self._changed = sorted(self._changed), set()
        for session in self.sessions:
            for kind in changed:
                session.notify(f"notifications/{kind}/list_changed")

    def _unsubscribe_later(self, uri: str) -> None:
        count = self._subscribers.get(uri, 0) - 1
        if count > 0:
            self._subscribers[uri] = count
            return
        self._subscribers.pop(uri, None)
        self.tasks.start(self._unsubscribe(uri), "unsubscribing")

    async def _unsubscribe(self, uri: str) -> None:
        await self.host.unsubscribe_resource(uri, server=self.naming.only)


async def _cancelled(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "cancel"}


def _relay_progress(ctx: RequestContext) -> Callable[[dict[str, Any]], None]:
    def relay(params: dict[str, Any]) -> None:
        progress = params.get("progress")
        if isinstance(progress, (int, float)):
            total = params.get("total")
            message = params.get("message")
            ctx.progress(progress, total if isinstance(total, (int, float)) else None,
                         message if isinstance(message, str) else None)

    return relay


_ORDER: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _at_least(level: str, floor: str) -> bool:
    rank = _ORDER.index(level) if level in _ORDER else 1
    return rank >= (_ORDER.index(floor) if floor in _ORDER else 0)
