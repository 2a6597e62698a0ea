"""Tasks the host runs for a server (protocol 2025-11-25, receiver side).

Layer 4. A server may ask for ``sampling/createMessage`` or ``elicitation/create`` "as a
task" (``params.task``) when the client declared ``tasks.requests.sampling.createMessage``
or ``tasks.requests.elicitation.create``. The host then answers at once with a
``CreateTaskResult`` and runs the application's handler in the background; the server
follows the task with ``tasks/get``, fetches the outcome with ``tasks/result`` ("exactly
the original result or error"), and may ``tasks/list`` or ``tasks/cancel`` it. Each status
change is also announced with ``notifications/tasks/status``.

One :class:`ClientTasks` per server connection; everything it holds ends with
:meth:`ClientTasks.close` (handlers still running are cancelled).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final

from ..protocol import jsonrpc
from ..protocol.jsonrpc import RpcError

__all__ = ["ClientTasks", "TASK_METHODS"]

logger = logging.getLogger("mcphost.client.served_tasks")

#: Requests a server sends about the tasks the host runs for it.
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_DEFAULT_TTL_MS: Final = 300_000  # kept this long after creation when the server asks for none
_MAX_TTL_MS: Final = 3_600_000
_POLL_INTERVAL_MS: Final = 200
_PAGE: Final = 100


def _now() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


class _ClientTask:
    __slots__ = ("error", "expiry", "result", "runner", "task")

    def __init__(self, task: dict[str, Any]) -> None:
        self.task = task
        self.runner: asyncio.Task[Any] | None = None
        self.result: Any = None
        self.error: RpcError | None = None
        self.expiry: asyncio.TimerHandle | None = None


class ClientTasks:
    """The tasks one server asked the host to run.

    Args:
        server: the server's name (for logs).
        notify: sends a notification to that server: ``notify(method, params)``.
    """

    def __init__(self, server: str, notify: Callable[[str, dict[str, Any]], None]) -> None:
        self.server = server
        self._notify = notify
        self._tasks: dict[str, _ClientTask] = {}
        self._closed = False

    def create(self, method: str, params: dict[str, Any], run: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
        """Start ``run()`` (the handler of a task-augmented ``method``) as a task; return
        the ``CreateTaskResult`` to answer the request with."""
        if self._closed:
            raise RpcError(jsonrpc.INTERNAL_ERROR, "the client is shutting down")
        requested = params.get("task")
        ttl = requested.get("ttl") if isinstance(requested, dict) else None
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            ttl = _DEFAULT_TTL_MS
        ttl = min(ttl, _MAX_TTL_MS)
        stamp = _now()
        task_id = uuid.uuid4().hex
        entry = _ClientTask({
            "taskId": task_id,
            "status": "working",
            "createdAt": stamp,
            "lastUpdatedAt": stamp,
            "ttl": ttl,
            "pollInterval": _POLL_INTERVAL_MS,
        })
        self._tasks[task_id] = entry
        loop = asyncio.get_running_loop()
        entry.runner = loop.create_task(self._run(entry, method, run), name=f"mcphost-client-task-{task_id}")
        # The spec lets a receiver forget a task (and its result) once its ttl has passed.
        entry.expiry = loop.call_later(ttl / 1000, self._expire, task_id)
        return {"task": dict(entry.task)}

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Answer ``tasks/get``, ``tasks/result``, ``tasks/list`` or ``tasks/cancel``."""
        if method == "tasks/list":
            return self._list(params)
        entry = self._find(params)
        if method == "tasks/get":
            return dict(entry.task)
        if method == "tasks/cancel":
            if entry.task["status"] in TERMINAL:
                raise RpcError(
                    jsonrpc.INVALID_PARAMS,
                    f"task {entry.task['taskId']} is already {entry.task['status']}",
                )
            if entry.runner is not None:
                entry.runner.cancel()
            self._set_status(entry, "cancelled", "cancelled by the server")
            return dict(entry.task)
        if method == "tasks/result":
            if entry.runner is not None and not entry.runner.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(entry.runner)
            return self._outcome(entry)
        raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"{method} is not a tasks method")

    def close(self) -> None:
        """Cancel what still runs and forget every task."""
        self._closed = True
        for entry in self._tasks.values():
            if entry.runner is not None and not entry.runner.done():
                entry.runner.cancel()
            if entry.expiry is not None:
                entry.expiry.cancel()
        self._tasks.clear()

    # -- internals ------------------------------------------------------------------------

    async def _run(self, entry: _ClientTask, method: str, run: Callable[[], Awaitable[Any]]) -> None:
        try:
            entry.result = await run()
        except asyncio.CancelledError:
            if entry.task["status"] not in TERMINAL:
                self._set_status(entry, "cancelled", "cancelled")
            raise
        except Exception as exc:  # the handler failed: the task fails with its error
            code = getattr(exc, "code", None)
            if not isinstance(code, int) or isinstance(code, bool):
                code = jsonrpc.INTERNAL_ERROR
            message = str(getattr(exc, "message", None) or exc or type(exc).__name__)
            entry.error = RpcError(code, message, getattr(exc, "data", None))
            self._set_status(entry, "failed", message)
            return
        if entry.task["status"] not in TERMINAL:
            self._set_status(entry, "completed", None)

    def _set_status(self, entry: _ClientTask, status: str, message: str | None) -> None:
        task = entry.task
        task["status"] = status
        task["lastUpdatedAt"] = _now()
        if message is not None:
            task["statusMessage"] = message
        if not self._closed:
            try:
                self._notify("notifications/tasks/status", dict(task))
            except Exception:  # pragma: no cover - a closed connection drops it silently
                logger.debug("%s: task status not sent", self.server, exc_info=True)

    def _outcome(self, entry: _ClientTask) -> Any:
        status = entry.task["status"]
        if status == "cancelled":
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"task {entry.task['taskId']} was cancelled")
        if entry.error is not None:
            raise entry.error
        result = entry.result
        if isinstance(result, dict):
            meta = dict(result.get("_meta") or {})
            meta[RELATED_TASK] = {"taskId": entry.task["taskId"]}
            result = {**result, "_meta": meta}
        return result

    def _find(self, params: dict[str, Any]) -> _ClientTask:
        task_id = params.get("taskId")
        entry = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if entry is None:
            raise RpcError(jsonrpc.INVALID_PARAMS, f"unknown task {task_id!r}")
        return entry

    def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        ids = list(self._tasks)
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.isdigit() or int(cursor) > len(ids):
                raise RpcError(jsonrpc.INVALID_PARAMS, f"invalid cursor {cursor!r}")
            start = int(cursor)
        page = ids[start : start + _PAGE]
        out: dict[str, Any] = {"tasks": [dict(self._tasks[i].task) for i in page]}
        if start + _PAGE < len(ids):
            out["nextCursor"] = str(start + _PAGE)
        return out

    def _expire(self, task_id: str) -> None:
        entry = self._tasks.pop(task_id, None)
        if entry is not None and entry.runner is not None and not entry.runner.done():
            entry.runner.cancel()
