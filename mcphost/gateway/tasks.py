"""The tasks the gateway serves: a client's ``tools/call`` made a task, run downstream or here.

Layer 5, over :class:`~mcphost.MCPHost`'s public API. The session decides what a call asks
(:func:`mcphost.server.tasks.requested`: the 2026-07-28 extension in the request's
capabilities, or 2025-11-25's ``params.task``); :class:`GatewayTasks` decides how it runs,
and keeps the task in the backend's :class:`~mcphost.server.tasks.TaskStore`:

- **Downstream**, when the server behind the tool serves tasks (the 2026-07-28 extension,
  or 2025-11-25 with ``tasks.requests.tools.call``) and the tool supports them
  (``execution.taskSupport`` ``optional`` or ``required``): the host's own task
  (``call_tool(..., task=True)``, a :class:`~mcphost.client.tasks.TaskHandle`) is followed,
  and the client's task mirrors it. ``tasks/cancel`` cancels the server's task. A server
  that answered at once gives the client its result at once.
- **Here**, when the server does not serve tasks: the call runs in the gateway and the
  client polls the gateway. A 2025-11-25 client that asked for a task gets one at once; a
  2026-07-28 client gets the result at once when the call ends within
  ``TaskLimits.immediate`` seconds, otherwise a task (the extension lets the server decide).
- A tool the server made task-only (``taskSupport: "required"``), called by a 2026-07-28
  request that did not opt in to the extension, is -32021 naming it.

What the server asks while a task runs (sampling, elicitation) is relayed as the gateway
relays any question (:mod:`~mcphost.gateway.view`), to the task: before the task exists, to
the request that is making it (a multi-round request may gather input, then become a
task); after, as the task's ``inputRequests`` (2026-07-28, answered by ``tasks/update``) or
sent to the session that made it (2025-11-25). Tasks of a session end with it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from ..errors import RpcError
from ..protocol import jsonrpc
from ..protocol.modern import MISSING_CAPABILITY, TASKS_EXTENSION
from ..server.context import RequestContext
from ..server.tasks import RELATED_TASK, ServedTask, TaskStore, unrelated

if TYPE_CHECKING:
    from .. import MCPHost
    from ..server.session import ServerSession

__all__ = ["GatewayTasks", "TaskLink", "principal"]

logger = logging.getLogger("mcphost.gateway.tasks")

_SUPPORTED: Final = ("optional", "required")
_NEEDS: Final = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

Runner = Callable[[str, RequestContext, Awaitable[Any]], Awaitable[Any]]
Asker = Callable[[dict[str, Any]], Awaitable[Any]]


class TaskLink(RequestContext):
    """Where the questions of a call that is (or becomes) a task go: to the request that
    makes it until the task exists, then to the task."""

    __slots__ = ("asking", "modern", "origin", "served", "store")

    def __init__(self, ctx: RequestContext, store: TaskStore) -> None:
        super().__init__(ctx.session, ctx.rid, ctx.method, {})
        self.progress_token = ctx.progress_token
        self.task = ctx.task
        self.log_level = ctx.log_level
        self.modern = ctx.modern
        self.origin = ctx
        self.asking = 0
        self.store = store
        self.served: ServedTask | None = None

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.served is None:
            self.origin.progress(progress, total, message)

    @property
    def reachable(self) -> bool:
        served = self.served
        if served is None:
            return self.origin.reachable
        return not served.terminal and (served.modern or not self.session.closed)

    def can_ask(self, method: str) -> bool:
        if self.served is None or not self.served.modern:
            return self.origin.can_ask(method)
        capabilities: Any = getattr(self.origin, "capabilities", None)
        return method in _NEEDS and type(capabilities) is dict and _NEEDS[method] in capabilities

    def declared(self, method: str) -> bool:
        return self.origin.declared(method) if self.served is None else self.can_ask(method)

    def logs(self, level: str) -> bool:
        return self.origin.logs(level)

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None, key: str | None = None) -> Any:
        params = unrelated(params or {})  # the server's own task id is not the client's to see
        served = self.served
        if not self.reachable or not self.can_ask(method):
            why = "has ended" if served is not None and served.terminal else "did not declare what it needs"
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"{method}: the client whose task asks {why}")
        if served is None:
            self.asking += 1
            try:
                return await self.origin.request(method, params, timeout=timeout, key=key)
            finally:
                self.asking -= 1
        if served.modern:
            return await self.store.ask(served, method, dict(params or {}))
        session = self.session

        async def send(name: str, marked: dict[str, Any]) -> Any:
            return await session.request(name, marked, timeout=timeout or session.limits.request_timeout or None)

        return await self.store.ask(served, method, dict(params or {}), send)


class GatewayTasks:
    """Makes tasks of the calls that ask for one (see the module docstring).

    Args:
        host: the running host.
        store: where the tasks are kept.
        run_for: runs a request to a server with a context known as its cause (the
            backend's, so that the server's questions reach the right client).
    """

    def __init__(self, host: MCPHost, store: TaskStore, run_for: Runner) -> None:
        self.host = host
        self.store = store
        self.run_for = run_for
        #: (server, the server's task id) → the link of the client's task that mirrors it.
        self.links: dict[tuple[str, str], TaskLink] = {}
        #: server → tasks being made on it (their ids not known yet).
        self.creating: dict[str, int] = {}
        self._change: asyncio.Future[None] | None = None

    def asker(self, server: str, method: str, params: dict[str, Any],
              otherwise: Callable[[], Asker]) -> Asker | None:
        """Who answers a server's question that names its task (``related-task`` in its
        ``_meta``: a 2025-11-25 server's mark, or the host's on a 2026-07-28 task's input
        requests): that task's client, which takes it or refuses it, never another client's
        request instead. ``None``: the question names no task of a client."""
        meta = params.get("_meta")
        related = meta.get(RELATED_TASK) if type(meta) is dict else None
        task_id = related.get("taskId") if type(related) is dict else None
        if type(task_id) is not str:
            return None
        key = (server, task_id)
        link = self.links.get(key)
        if link is not None:
            return lambda asked: link.request(method, asked)
        if not self.creating.get(server):
            return None

        async def later(asked: dict[str, Any]) -> Any:
            # A 2025-11-25 server may ask as soon as its task runs, before the task it just
            # made is known here: wait until the tasks being made on it are.
            while key not in self.links and self.creating.get(server):
                if self._change is None:
                    self._change = asyncio.get_running_loop().create_future()
                await asyncio.shield(self._change)
            found = self.links.get(key)
            return await (found.request(method, asked) if found is not None else otherwise()(asked))

        return later

    def made(self) -> None:
        """A task being made on a server is known (or failed): the questions waiting for it look again."""
        change, self._change = self._change, None
        if change is not None and not change.done():
            change.set_result(None)

    def closed(self, session: ServerSession) -> None:
        """``session`` ended: the tasks it owned alone end with it."""
        if session.task_owner.startswith("session:"):
            self.store.forget(session.task_owner)

    def offered(self, info: Any, ctx: RequestContext) -> bool:
        """Does a 2025-11-25 client see the tools of this server as ones it may make tasks
        of (``execution.taskSupport: "optional"``)? Yes when the server does not serve
        tasks itself: the gateway runs them (a server that does says so per tool)."""
        return not ctx.modern and ctx.session.version.tasks and not _serves_tasks(info)

    def applies(self, ctx: RequestContext) -> bool:
        """Does this call go through here (it asks for a task, or is of the 2026-07-28 era)?"""
        return ctx.task is not None or ctx.modern

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        info: Any = self.host.get_tools(server).get(server) or {}
        support = _task_support(info, tool)
        name = f"{server}.{tool}"
        if ctx.task is None:
            if ctx.modern and support == "required":
                raise RpcError(MISSING_CAPABILITY, f"tool {tool!r} runs only as a task: the request must name the "
                                                   f"extension {TASKS_EXTENSION!r} in its capabilities",
                               {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})
            return await self._now(server, name, arguments, ctx)
        downstream = _serves_tasks(info)
        if downstream and support in _SUPPORTED:
            return await self._downstream(server, name, arguments, TaskLink(ctx, self.store))
        if downstream and ctx.modern:
            # The server says this tool is not a task: neither is it here.
            return await self._now(server, name, arguments, ctx)
        return await self._here(server, name, arguments, TaskLink(ctx, self.store))

    async def _now(self, server: str, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        progress = None if ctx.progress_token is None else _relay(ctx)
        return dict(await self.run_for(server, ctx, self.host.call_tool(name, arguments, progress=progress,
                                                                        meta=ctx.log_meta())))

    def _create(self, link: TaskLink) -> ServedTask:
        ctx = link.origin
        task = ctx.task or {}
        served = self.store.create(ctx.session.task_owner, modern=ctx.modern, ttl_ms=task.get("ttl"))
        link.served = served
        session = ctx.session
        if not ctx.modern and session.version.tasks:
            def notify(params: dict[str, Any]) -> None:
                if not session.closed:
                    session.notify("notifications/tasks/status", params)

            served.notify = notify
        return served

    async def _downstream(self, server: str, name: str, arguments: dict[str, Any], link: TaskLink) -> dict[str, Any]:
        self.creating[server] = self.creating.get(server, 0) + 1
        try:
            return await self._mirror(server, name, arguments, link)
        finally:
            left = self.creating.pop(server) - 1
            if left:
                self.creating[server] = left
            self.made()

    async def _mirror(self, server: str, name: str, arguments: dict[str, Any], link: TaskLink) -> dict[str, Any]:
        # A TaskHandle (what ``MCPHost.call_tool(..., task=True)`` returns).
        progress = None if link.progress_token is None else _relay(link)
        asked = link.task or {}  # the client's ttl, when it gave one (2025-11-25)
        handle: Any = await self.run_for(server, link, self.host.call_tool(
            name, arguments, progress=progress, task={"ttl": asked["ttl"]} if type(asked.get("ttl")) is int else True))
        if not handle.task_id:  # the server answered at once
            return dict(await handle)
        try:
            served = self._create(link)
        except BaseException:
            self.store.later(handle.cancel(), "cancelling a task no one will see")
            raise

        async def cancel() -> None:
            await handle.cancel()

        key = (server, str(handle.task_id))
        self.links[key] = link

        async def follow() -> dict[str, Any]:
            try:
                return dict(await handle)
            except Exception:
                error = handle.task.get("error")
                if handle.status == "failed" and type(error) is dict and type(error.get("code")) is int:
                    raise RpcError(error["code"], str(error.get("message", "")), error.get("data")) from None
                raise
            finally:
                if self.links.get(key) is link:
                    del self.links[key]

        served.on_cancel = cancel
        self.store.run(served, self.run_for(server, link, follow()))
        return served.created_result()

    async def _here(self, server: str, name: str, arguments: dict[str, Any], link: TaskLink) -> dict[str, Any]:
        progress = None if link.progress_token is None else _relay(link)
        work = asyncio.ensure_future(self.run_for(server, link, self.host.call_tool(name, arguments, progress=progress,
                                                                                      meta=link.log_meta())))
        if link.modern:
            try:
                # A question out to the client (a multi-round request) stops the clock.
                while True:
                    await asyncio.wait({work}, timeout=self.store.limits.immediate)
                    if work.done() or not link.asking:
                        break
            except BaseException:
                work.cancel()
                raise
            if work.done():
                return dict(work.result())
        try:
            served = self._create(link)
        except BaseException:
            work.cancel()
            raise
        self.store.run(served, work)
        return served.created_result()


def principal(authorization: str | None) -> str:
    """Whose tasks a stateless (2026-07-28) HTTP request sees: the holder of its
    ``Authorization`` credential (by its SHA-256, never kept itself), or, with none, every
    unauthenticated client alike (the task ids, 192 random bits, are what keeps them apart)."""
    if not authorization:
        return "front:anonymous"
    return "front:" + hashlib.sha256(authorization.encode("utf-8", "replace")).hexdigest()


def _task_support(info: Any, tool: str) -> str | None:
    for item in info.get("tools") or ():
        if isinstance(item, dict) and item.get("name") == tool:
            execution = item.get("execution")
            support = execution.get("taskSupport") if isinstance(execution, dict) else None
            return support if isinstance(support, str) else None
    return None


def _serves_tasks(info: Any) -> bool:
    """Does this server make tasks of ``tools/call`` (either era)?"""
    capabilities = info.get("capabilities")
    if not isinstance(capabilities, dict):
        return False
    if info.get("era") == "modern":
        extensions = capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and "call" in tools and info.get("protocolVersion", "") >= "2025-11-25"


def _relay(link: RequestContext) -> Callable[[dict[str, Any]], None]:
    """Progress of the downstream call, to the request (while it is not yet a task)."""
    def relay(params: dict[str, Any]) -> None:
        progress = params.get("progress")
        if isinstance(progress, (int, float)):
            total = params.get("total")
            message = params.get("message")
            link.progress(progress, total if isinstance(total, (int, float)) else None,
                          message if isinstance(message, str) else None)

    return relay

