"""Tasks (protocol 2025-11-25, experimental): a tool call that runs on as a server task.

Layer 4. ``call_tool(..., task=True)`` — or a tool whose ``execution.taskSupport`` is
``"required"`` — sends ``tools/call`` with ``params.task`` and gets a ``CreateTaskResult``
back at once. The :class:`TaskHandle` then follows the task: awaiting it polls
``tasks/get`` at the server's ``pollInterval`` until the status is terminal, then fetches
``tasks/result``, which "returns exactly the original result or error". Status
notifications (``notifications/tasks/status``), which the spec says must not be relied
on, only update the handle sooner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final

from .errors import ProtocolError, ServerError
from .types import CallToolResult, Task

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["TaskHandle", "TERMINAL"]

logger = logging.getLogger("mcphost.tasks")

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_DEFAULT_POLL: Final = 1.0  # seconds, when the server gives no pollInterval
_MIN_POLL: Final = 0.01


class TaskHandle:
    """A server-side task created by a tool call; ``await handle`` gives the tool's result.

    Attributes:
        server: the server's configured name.
        task_id: the server's task id.
        task: the latest ``Task`` object seen (status, statusMessage, pollInterval, ...).
    """

    def __init__(self, server: str, connection: Connection, task: Task, *, timeout: float | None) -> None:
        self.server = server
        self.task_id: str = task["taskId"]
        self.task: Task = task
        self._conn = connection
        self._timeout = timeout
        self._changed = asyncio.Event()
        self._result: asyncio.Task[CallToolResult] | None = None

    @property
    def status(self) -> str:
        return str(self.task.get("status"))

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def update(self, task: Task) -> None:
        """Record a newer ``Task`` (from a poll or a status notification)."""
        self.task = task
        self._changed.set()

    async def refresh(self) -> Task:
        """``tasks/get``: fetch the current state of the task."""
        task = await self._conn.request("tasks/get", {"taskId": self.task_id}, timeout=self._timeout)
        if not isinstance(task, dict) or "status" not in task:
            raise ProtocolError("tasks/get returned no Task", server=self.server)
        self.update(_strip(task))
        return self.task

    async def cancel(self) -> Task:
        """``tasks/cancel``; returns the task as the server reports it after cancelling."""
        task = await self._conn.request("tasks/cancel", {"taskId": self.task_id}, timeout=self._timeout)
        if isinstance(task, dict) and "status" in task:
            self.update(_strip(task))
        return self.task

    async def result(self) -> CallToolResult:
        """Wait until the task is terminal, then return its result (or raise its error)."""
        if self._result is None:
            self._result = asyncio.get_running_loop().create_task(self._follow())
        return await asyncio.shield(self._result)

    def __await__(self) -> Generator[Any, None, CallToolResult]:
        return self.result().__await__()

    async def _follow(self) -> CallToolResult:
        while not self.done:
            interval = self.task.get("pollInterval")
            delay = interval / 1000 if isinstance(interval, (int, float)) and interval > 0 else _DEFAULT_POLL
            self._changed.clear()
            try:
                # Wake early on a status notification; poll when the interval is up.
                await asyncio.wait_for(self._changed.wait(), max(delay, _MIN_POLL))
            except asyncio.TimeoutError:
                await self.refresh()
        try:
            result = await self._conn.request("tasks/result", {"taskId": self.task_id}, timeout=self._timeout)
        except ServerError:
            raise
        if not isinstance(result, dict):
            raise ProtocolError("tasks/result returned a malformed result", server=self.server)
        return result  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"TaskHandle(server={self.server!r}, task_id={self.task_id!r}, status={self.status!r})"


def _strip(task: dict[str, Any]) -> Task:
    # tasks/get returns the Task fields at the top level of the result (plus _meta).
    return {k: v for k, v in task.items() if k != "_meta"}  # type: ignore[return-value]
