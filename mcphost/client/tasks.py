"""Tasks (protocol 2025-11-25, experimental): a tool call that runs on as a server task.

Layer 4. ``call_tool(..., task=True)`` — or a tool whose ``execution.taskSupport`` is
``"required"`` — sends ``tools/call`` with ``params.task`` and gets a ``CreateTaskResult``
back at once. The :class:`TaskHandle` follows the task from then on, whether or not the
application awaits it yet: it polls ``tasks/get`` at the server's ``pollInterval`` until
the status is terminal, then fetches ``tasks/result``, which "returns exactly the original
result or error". On ``input_required`` it calls ``tasks/result`` at once, as the spec
says a requestor should: that is the request on which the server delivers the task's
own requests (an ``elicitation/create``, a ``sampling/createMessage``), which the host
answers through the application's handlers. Status notifications
(``notifications/tasks/status``), which the spec says must not be relied on, only update
the handle sooner.

Against a 2026-07-28 server the same handle follows a task of the tasks extension
(``io.modelcontextprotocol/tasks``): the server makes the task, ``tasks/get`` carries its
result, error or input requests, which are answered with ``tasks/update``; ``tasks/cancel``
cancels it. The session's era rules do the following (``runner``); the handle shows each
state, refreshes and cancels with the same methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Final

from ..errors import MCPHostError, ProtocolError, ServerUnavailableError
from ..types import CallToolResult, Task

if TYPE_CHECKING:
    from ..client.session import ClientSession

__all__ = ["TaskHandle", "TERMINAL"]

logger = logging.getLogger("mcphost.client.tasks")

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

    def __init__(self, server: str, connection: ClientSession, task: Task, *, timeout: float | None,
                 runner: Callable[[TaskHandle], Coroutine[Any, Any, CallToolResult]] | None = None) -> None:
        self.server = server
        #: How the task is followed to its result, when not the 2025-11-25 way (``tasks/get``
        #: polls, then ``tasks/result``): the 2026-07-28 tasks extension's session follows it.
        self._runner = runner
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
        """The server says the task is over (its result may still be on its way)."""
        return self.status in TERMINAL

    @property
    def fetching(self) -> bool:
        """The task is over and its result is being fetched (``tasks/result`` in flight)."""
        return self.done and self._result is not None and not self._result.done()

    def fetched(self) -> asyncio.Task[CallToolResult] | None:
        """The following of the task (done once its result or error is in hand)."""
        return self._result

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
        # The tasks extension of 2026-07-28 acknowledges with an empty result: ask.
        return await self.refresh()

    async def result(self) -> CallToolResult:
        """Wait until the task is terminal, then return its result (or raise its error)."""
        return await asyncio.shield(self.follow())

    def __await__(self) -> Generator[Any, None, CallToolResult]:
        return self.result().__await__()

    def follow(self) -> asyncio.Task[CallToolResult]:
        """Start following the task (idempotent); the host does this when it creates one."""
        if self._result is None:
            self._result = asyncio.get_running_loop().create_task(
                self._follow() if self._runner is None else self._runner(self), name=f"mcphost-task-{self.server}-{self.task_id}"
            )
            # A task nobody awaits must not log "exception was never retrieved".
            self._result.add_done_callback(_observe)
        return self._result

    def wake(self) -> None:
        """Re-check now (the host calls this when the server's connection ends)."""
        self._changed.set()

    async def _follow(self) -> CallToolResult:
        while not self.done and self.status != "input_required":
            if self._conn.closed:
                raise ServerUnavailableError(
                    f"task {self.task_id!r} was left {self.status!r}: the server is gone",
                    server=self.server,
                )
            interval = self.task.get("pollInterval")
            delay = interval / 1000 if isinstance(interval, (int, float)) and interval > 0 else _DEFAULT_POLL
            self._changed.clear()
            try:
                # Wake early on a status notification; poll when the interval is up.
                await asyncio.wait_for(self._changed.wait(), max(delay, _MIN_POLL))
            except asyncio.TimeoutError:
                await self.refresh()
        # Terminal, or input_required: tasks/result blocks until the task ends, and on it
        # the server sends the requests that need the application's input. It may wait on
        # a person, so only the caller's own timeout applies (0: none).
        result = await self._conn.request(
            "tasks/result", {"taskId": self.task_id}, timeout=self._timeout or 0
        )
        if not isinstance(result, dict):
            raise ProtocolError("tasks/result returned a malformed result", server=self.server)
        if not self.done:
            with contextlib.suppress(MCPHostError):
                await self.refresh()  # the final status (completed, or failed for isError)
        return result  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"TaskHandle(server={self.server!r}, task_id={self.task_id!r}, status={self.status!r})"


def _observe(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _strip(task: dict[str, Any]) -> Task:
    # tasks/get returns the Task fields at the top level of the result (plus _meta).
    return {k: v for k, v in task.items() if k != "_meta"}  # type: ignore[return-value]
