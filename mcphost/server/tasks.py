"""Tasks served to clients, both eras: the store, the ``tasks/*`` requests, the shapes.

Layer 3. A :class:`TaskStore` holds the tasks a backend made of its clients' ``tools/call``
(what runs in a task is the backend's business: :meth:`TaskStore.run` is given an awaitable).
Each task belongs to one *owner* (``ServerSession.task_owner``: the session, or the
principal a stateless HTTP front names) and is found only by it: a task id of another
owner is "unknown" (-32602), as is one that never existed, so one client can neither see
nor cancel another's. Ids are 192 random bits (unguessable).

Two eras, one store (spec 2025-11-25, Tasks; 2026-07-28's extension ``io.modelcontextprotocol/tasks``):

- **2025-11-25** (a session that negotiated it): ``tools/call`` with ``params.task`` is
  answered ``{"task": Task}``; ``tasks/get`` gives the ``Task``, ``tasks/result`` waits
  until it ends and gives exactly the call's result (or its error), ``tasks/list`` pages the
  owner's tasks, ``tasks/cancel`` cancels (a terminal task is -32602);
  ``notifications/tasks/status`` tells each change to the session that made the task. A
  question the work asks (sampling, elicitation) goes to that session at once, marked with
  ``io.modelcontextprotocol/related-task``, the task ``input_required`` meanwhile.
- **2026-07-28** (a request whose capabilities name the extension): the answer is a flat
  ``CreateTaskResult`` (``resultType: "task"``, ``ttlMs``, ``pollIntervalMs``); ``tasks/get``
  inlines ``result``, ``error`` or the open ``inputRequests``; ``tasks/update`` answers them
  (a subset too; unknown keys are ignored); ``tasks/cancel`` is an empty acknowledgement,
  terminal task or not. Without the extension in the request's capabilities every
  ``tasks/*`` request is -32021.

Bounded (:class:`TaskLimits`): tasks per owner and in all, the size of a stored result,
the TTL (a task is forgotten ``ttl`` after its creation; one still running then is
cancelled), the questions one task may have open.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as _dt
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from .._json import dumps
from ..errors import MCPHostError, RpcError, ServerError, UsageError
from ..protocol import jsonrpc
from ..protocol.modern import MAX_INPUT_REQUESTS, MISSING_CAPABILITY, TASKS_EXTENSION
from ..rpc.taskset import TaskSet

if TYPE_CHECKING:
    from .context import RequestContext
    from .session import ServerSession

__all__ = ["HANDLERS", "RELATED_TASK", "TERMINAL", "ServedTask", "TaskLimits", "TaskStore", "advertise",
           "opted_in", "requested", "unrelated"]

logger = logging.getLogger("mcphost.server.tasks")

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
#: What a question of a task needs the client to have declared.
_NEEDS: Final = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
_LEGACY_CAPS: Final[dict[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


class TaskLimits:
    """What the tasks of clients may hold; each has a default.

    Args:
        max_per_client: tasks one owner holds at once (ended ones count until forgotten).
        max_tasks: tasks of every owner at once.
        max_result: bytes of a task's result (or error) as JSON; a larger one fails the task.
        ttl: seconds a task is kept after its creation by default (a client may ask less).
        max_ttl: the most a client may ask for.
        poll_interval: seconds between polls suggested to the client.
        immediate: seconds a call the backend runs itself may take before it becomes a
            task (2026-07-28 era: a faster one is answered at once, which the extension allows).
    """

    __slots__ = ("immediate", "max_per_client", "max_result", "max_tasks", "max_ttl", "poll_interval", "ttl")

    def __init__(self, *, max_per_client: int = 64, max_tasks: int = 4096, max_result: int = 4 * 1024 * 1024,
                 ttl: float = 300.0, max_ttl: float = 3600.0, poll_interval: float = 0.1,
                 immediate: float = 1.0) -> None:
        for name, value in (("max_per_client", max_per_client), ("max_tasks", max_tasks),
                            ("max_result", max_result)):
            if type(value) is not int or value < 1:
                raise UsageError(f"{name} must be a whole number of 1 or more, not {value!r}")
        for name, number in (("ttl", ttl), ("max_ttl", max_ttl), ("poll_interval", poll_interval)):
            if type(number) not in (int, float) or not number > 0:
                raise UsageError(f"{name} must be a number of seconds above 0, not {number!r}")
        if type(immediate) not in (int, float) or not immediate >= 0:
            raise UsageError(f"immediate must be a number of seconds (0: always a task), not {immediate!r}")
        self.max_per_client = max_per_client
        self.max_tasks = max_tasks
        self.max_result = max_result
        self.ttl = float(min(ttl, max_ttl))
        self.max_ttl = float(max_ttl)
        self.poll_interval = float(poll_interval)
        self.immediate = float(immediate)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


class ServedTask:
    """One task: its state, its outcome, its open questions."""

    __slots__ = (
        "asks",
        "created",
        "done",
        "error",
        "expiry",
        "ident",
        "message",
        "modern",
        "notify",
        "number",
        "on_cancel",
        "owner",
        "phase",
        "poll_ms",
        "result",
        "told",
        "ttl_ms",
        "updated",
        "work",
    )

    def __init__(self, ident: str, owner: str, modern: bool, ttl_ms: int, poll_ms: int) -> None:
        self.ident = ident
        self.owner = owner
        self.modern = modern
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self.created = self.updated = _now()
        self.phase = "working"
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        #: Open questions: key → (method, params, the future its answer resolves).
        self.asks: dict[str, tuple[str, dict[str, Any], asyncio.Future[Any]]] = {}
        self.number = 0
        self.done = asyncio.Event()
        self.expiry: asyncio.TimerHandle | None = None
        self.work: asyncio.Task[Any] | None = None
        #: Called (awaited in the store's own task) when the client cancels the task.
        self.on_cancel: Callable[[], Awaitable[Any]] | None = None
        #: Sends ``notifications/tasks/status`` to the session that made the task (2025-11-25).
        self.notify: Callable[[dict[str, Any]], None] | None = None
        self.told: str | None = None

    @property
    def status(self) -> str:
        if self.phase in TERMINAL:
            return self.phase
        return "input_required" if self.asks else "working"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL

    def envelope(self) -> dict[str, Any]:
        """The ``Task`` fields of the task's era."""
        out: dict[str, Any] = {"taskId": self.ident, "status": self.status, "createdAt": self.created,
                               "lastUpdatedAt": self.updated}
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.modern:
            out["ttlMs"] = self.ttl_ms
            out["pollIntervalMs"] = self.poll_ms
        else:
            out["ttl"] = self.ttl_ms
            out["pollInterval"] = self.poll_ms
        return out

    def detailed(self) -> dict[str, Any]:
        """``tasks/get`` of the 2026-07-28 extension: the outcome or the questions inlined."""
        out = self.envelope()
        if self.phase == "completed" and self.result is not None:
            out["result"] = self.result
        elif self.phase == "failed" and self.error is not None:
            out["error"] = self.error
        elif self.asks:
            out["inputRequests"] = {key: {"method": m, "params": p} for key, (m, p, _f) in self.asks.items()}
        return out

    def created_result(self) -> dict[str, Any]:
        """What the ``tools/call`` that made the task is answered."""
        if self.modern:
            return {"resultType": "task", **self.envelope()}
        return {"task": self.envelope()}


class TaskStore:
    """The tasks of every client of one backend (see the module docstring)."""

    def __init__(self, limits: TaskLimits | None = None) -> None:
        self.limits = limits or TaskLimits()
        self._tasks: dict[str, ServedTask] = {}
        self._owners: dict[str, dict[str, ServedTask]] = {}
        #: The work of every task and the cancellations on their way.
        self._jobs = TaskSet("served tasks", 2 * self.limits.max_tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def create(self, owner: str, *, modern: bool, ttl_ms: Any = None) -> ServedTask:
        """A new task of ``owner`` (``ttl_ms``: what the client asked, clamped to the limits)."""
        limits = self.limits
        mine = self._owners.get(owner, {})
        if len(mine) >= limits.max_per_client:
            raise RpcError(-32000, f"too many tasks (at most {limits.max_per_client} per client, "
                                   "each kept until its ttl ends)")
        if len(self._tasks) >= limits.max_tasks:
            raise RpcError(-32000, f"too many tasks (at most {limits.max_tasks} in all)")
        ttl = limits.ttl
        if type(ttl_ms) is int and ttl_ms > 0:
            ttl = min(ttl_ms / 1000, limits.max_ttl)
        task = ServedTask(secrets.token_urlsafe(24), owner, modern, round(ttl * 1000),
                          max(1, round(limits.poll_interval * 1000)))
        self._tasks[task.ident] = task
        self._owners.setdefault(owner, {})[task.ident] = task
        task.expiry = asyncio.get_running_loop().call_later(ttl, self._expire, task)
        return task

    def find(self, owner: str, task_id: Any) -> ServedTask:
        """``owner``'s task ``task_id``; anything else is -32602 "unknown task"."""
        task = self._tasks.get(task_id) if type(task_id) is str else None
        if task is None or task.owner != owner:
            raise RpcError(jsonrpc.INVALID_PARAMS, f"unknown task {str(task_id)[:80]!r}")
        return task

    def later(self, work: Awaitable[Any], what: str) -> None:
        """Run ``work`` in the store's own task (cancelled by :meth:`aclose`)."""
        self._jobs.start(work, what)

    def owned(self, owner: str) -> list[ServedTask]:
        """``owner``'s tasks, oldest first."""
        return list(self._owners.get(owner, {}).values())

    def run(self, task: ServedTask, work: Awaitable[dict[str, Any]]) -> None:
        """Run ``work`` as the task: its result completes it, its error fails it."""
        task.work = self._jobs.start(self._run(task, work), f"task {task.ident[:8]}")
        if task.work is None:
            if isinstance(work, asyncio.Future):
                work.cancel()  # (a coroutine was closed unstarted by the task set)
            self._finish(task, "failed", error={"code": jsonrpc.INTERNAL_ERROR, "message": "the server is closing"})

    async def _run(self, task: ServedTask, work: Awaitable[dict[str, Any]]) -> None:
        try:
            result = await work
        except asyncio.CancelledError:
            self._finish(task, "cancelled")
            raise
        except RpcError as exc:
            self._fail(task, exc.code, exc.message, exc.data)
        except ServerError as exc:
            self._fail(task, exc.code if exc.code is not None else jsonrpc.INTERNAL_ERROR, exc.message, exc.data)
        except MCPHostError as exc:
            self._fail(task, jsonrpc.INTERNAL_ERROR, exc.message)
        except Exception:
            logger.exception("task %s failed", task.ident[:8])
            self._fail(task, jsonrpc.INTERNAL_ERROR, "internal error")
        else:
            if type(result) is not dict:
                self._fail(task, jsonrpc.INTERNAL_ERROR, "the task's work gave no result")
            elif len(dumps(result)) > self.limits.max_result:
                self._fail(task, jsonrpc.INTERNAL_ERROR, f"the result is larger than {self.limits.max_result} bytes")
            else:
                # 2025-11-25: a tool that reported an error ends its task "failed" (its
                # result, isError and all, is still what tasks/result returns).
                failed = not task.modern and result.get("isError") is True
                self._finish(task, "failed" if failed else "completed", result=unrelated(result))

    def _fail(self, task: ServedTask, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        if len(dumps(error)) > self.limits.max_result:
            error = {"code": code, "message": message[:1000]}
        self._finish(task, "failed", error=error)

    def _finish(self, task: ServedTask, status: str, *, result: dict[str, Any] | None = None,
                error: dict[str, Any] | None = None) -> None:
        if task.terminal:
            return
        task.phase = status
        task.result, task.error = result, error
        for _method, _params, future in task.asks.values():
            if not future.done():
                future.set_exception(RpcError(jsonrpc.INTERNAL_ERROR, f"the task ended ({status})"))
        task.asks.clear()
        task.done.set()
        self.changed(task)

    def changed(self, task: ServedTask) -> None:
        """The task moved: ``lastUpdatedAt``, and the status told to its session."""
        task.updated = _now()
        status = task.status
        if task.notify is not None and task.told != status:
            task.told = status
            task.notify(task.envelope())

    # -- questions ------------------------------------------------------------------------------

    async def ask(self, task: ServedTask, method: str, params: dict[str, Any],
                  send: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None) -> Any:
        """A question of the task's work to the client: open (``input_required``) until
        ``tasks/update`` answers it (2026-07-28), or sent at once with ``send`` (2025-11-25)."""
        if task.terminal:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{method}: the task has ended")
        if len(task.asks) >= MAX_INPUT_REQUESTS:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{method}: too many questions waiting for the client")
        task.number += 1
        key = f"{_NEEDS.get(method, 'input')}-{task.number}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        task.asks[key] = (method, dict(params), future)
        self.changed(task)
        try:
            if send is None:
                return await future
            meta = params.get("_meta")
            marked = {**params, "_meta": {**(meta if type(meta) is dict else {}), RELATED_TASK: {"taskId": task.ident}}}
            return await send(method, marked)
        finally:
            if task.asks.pop(key, None) is not None:
                self.changed(task)

    def update(self, task: ServedTask, responses: dict[str, Any]) -> None:
        """``tasks/update``: the answers given resolve their questions (others are ignored)."""
        answered = False
        for key, answer in responses.items():
            asked = task.asks.get(key)
            if asked is not None and type(answer) is dict and not asked[2].done():
                del task.asks[key]
                asked[2].set_result(answer)
                answered = True
        if answered:
            self.changed(task)

    # -- ends -------------------------------------------------------------------------------------

    def cancel(self, task: ServedTask) -> bool:
        """Cancel ``task`` (``False``: it had ended already)."""
        if task.terminal:
            return False
        hook, task.on_cancel = task.on_cancel, None
        self._finish(task, "cancelled")
        if hook is not None:
            self._jobs.start(hook(), f"cancelling task {task.ident[:8]}")
        if task.work is not None and not task.work.done():
            task.work.cancel()
        return True

    def _expire(self, task: ServedTask) -> None:
        self.cancel(task)
        self._drop(task)

    def _drop(self, task: ServedTask) -> None:
        self._tasks.pop(task.ident, None)
        mine = self._owners.get(task.owner)
        if mine is not None:
            mine.pop(task.ident, None)
            if not mine:
                del self._owners[task.owner]
        if task.expiry is not None:
            task.expiry.cancel()
            task.expiry = None
        task.notify = None

    def forget(self, owner: str) -> None:
        """``owner`` is gone (its session ended): its tasks are cancelled and forgotten."""
        for task in self.owned(owner):
            self.cancel(task)
            self._drop(task)

    async def aclose(self) -> None:
        """Cancel every task and wait until their work has ended."""
        for task in list(self._tasks.values()):
            self.cancel(task)
            self._drop(task)
        await self._jobs.aclose()


def unrelated(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (or a request's params) without a ``related-task`` mark: another task's,
    e.g. the server's behind a gateway (this task's id is told where the era says; SEP-2663:
    never inlined)."""
    meta = result.get("_meta")
    if type(meta) is not dict or RELATED_TASK not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != RELATED_TASK}
    out = {k: v for k, v in result.items() if k != "_meta"}
    if rest:
        out["_meta"] = rest
    return out


# -- what the session asks of this module ---------------------------------------------------------

def requested(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any] | None:
    """What ``tools/call`` asks of a task (``None``: no task): 2026-07-28, the extension in
    the request's capabilities (the server decides; a ``task`` param is ignored); 2025-11-25,
    ``params.task``."""
    if session.backend.task_store() is None:
        return None
    if ctx.modern:
        return {} if opted_in(ctx) else None
    task = params.get("task")
    return dict(task) if type(task) is dict and session.version.tasks else None


def opted_in(ctx: RequestContext) -> bool:
    """A 2026-07-28 request whose capabilities name the tasks extension."""
    capabilities: Any = getattr(ctx, "capabilities", None)
    extensions = capabilities.get("extensions") if type(capabilities) is dict else None
    return type(extensions) is dict and TASKS_EXTENSION in extensions


def advertise(capabilities: dict[str, Any], session: ServerSession, modern: bool) -> dict[str, Any]:
    """``capabilities`` with the tasks of the era added when the backend serves tasks."""
    if session.backend.task_store() is None:
        return capabilities
    if modern:
        extensions = capabilities.get("extensions")
        capabilities["extensions"] = {**(extensions if type(extensions) is dict else {}), TASKS_EXTENSION: {}}
    elif session.version.tasks:
        capabilities["tasks"] = _LEGACY_CAPS
    return capabilities


def _store(session: ServerSession, ctx: RequestContext) -> TaskStore:
    store = session.backend.task_store()
    if ctx.modern:
        if not opted_in(ctx):
            raise RpcError(MISSING_CAPABILITY, f"{ctx.method} needs the tasks extension in the request's capabilities",
                           {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})
    elif not session.version.tasks or ctx.method == "tasks/update":
        raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"method {ctx.method!r} is not supported")
    if store is None:
        raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"method {ctx.method!r} is not supported")
    return store


def _find(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> tuple[TaskStore, ServedTask]:
    store = _store(session, ctx)
    return store, store.find(session.task_owner, params.get("taskId"))


async def _get(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    task = _find(session, ctx, params)[1]
    return task.detailed() if task.modern else task.envelope()


async def _update(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    store, task = _find(session, ctx, params)
    responses = params.get("inputResponses")
    if type(responses) is not dict:
        raise RpcError(jsonrpc.INVALID_PARAMS, "tasks/update: inputResponses must be an object")
    store.update(task, responses)
    return {}


async def _cancel(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    store, task = _find(session, ctx, params)
    if not store.cancel(task) and not task.modern:
        # 2025-11-25: "Receivers MUST reject cancellation of a task in a terminal status" (-32602).
        raise RpcError(jsonrpc.INVALID_PARAMS, f"task {task.ident[:80]!r} has already ended ({task.status})")
    return {} if task.modern else task.envelope()


async def _result(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    task = _find(session, ctx, params)[1]
    await task.done.wait()
    if task.error is not None:
        raise RpcError(int(task.error.get("code", jsonrpc.INTERNAL_ERROR)), str(task.error.get("message", "")),
                       task.error.get("data"))
    if task.result is None:
        raise RpcError(jsonrpc.INTERNAL_ERROR, f"task {task.ident[:80]!r} was {task.status}")
    meta = task.result.get("_meta")
    return {**task.result, "_meta": {**(meta if type(meta) is dict else {}), RELATED_TASK: {"taskId": task.ident}}}


async def _list(session: ServerSession, ctx: RequestContext, params: dict[str, Any]) -> Any:
    store = _store(session, ctx)
    cursor = params.get("cursor")
    offset = 0
    if cursor is not None:
        try:
            prefix, _, number = base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode("ascii").partition(":")
            offset = int(number)
            if prefix != "tasks" or offset < 0:
                raise ValueError(prefix)
        except (ValueError, UnicodeError):
            raise RpcError(jsonrpc.INVALID_PARAMS, "invalid cursor (not one this server gave)") from None
    tasks = store.owned(session.task_owner)
    end = offset + session.limits.page_size
    out: dict[str, Any] = {"tasks": [t.envelope() for t in tasks[offset:end]]}
    if end < len(tasks):
        out["nextCursor"] = base64.urlsafe_b64encode(f"tasks:{end}".encode()).decode("ascii")
    return out


#: The ``tasks/*`` requests (the session's table takes them).
HANDLERS: Final[dict[str, Callable[[ServerSession, RequestContext, dict[str, Any]], Awaitable[Any]]]] = {
    "tasks/get": _get, "tasks/update": _update, "tasks/cancel": _cancel, "tasks/result": _result, "tasks/list": _list,
}
