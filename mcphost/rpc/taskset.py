"""Tasks with an owner: every background task is held, and cancelled with its owner.

Layer 3. A task nobody holds can be collected mid-run and is never cancelled at shutdown;
an exception it raises is reported as "never retrieved" long after the fact. A
:class:`TaskSet` holds each task it starts until it ends, logs what it raised (tasks
started here are fire-and-forget by nature: nobody awaits them), and cancels whatever is
left when its owner closes (:meth:`TaskSet.close` or :meth:`TaskSet.aclose`).

Owners: the client session (async progress callbacks), the host's handlers (async event
handlers), the supervisor (the shutdown a signal asks for).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any

__all__ = ["TaskSet"]

logger = logging.getLogger("mcphost.rpc.taskset")


class TaskSet:
    """The tasks of one owner, ``name`` (used in log lines); at most ``limit`` at once."""

    def __init__(self, name: str, limit: int = 1024) -> None:
        self.name = name
        self.limit = limit
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        #: Tasks refused because ``limit`` were running (counted, logged once per 1000).
        self.refused = 0

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self, awaitable: Awaitable[Any], what: str) -> asyncio.Task[Any] | None:
        """Run ``awaitable`` (a coroutine, or any awaitable) as a task held here; ``None``
        (and a coroutine closed) when the owner is closed or ``limit`` tasks are running."""
        coroutine = awaitable if isinstance(awaitable, Coroutine) else _awaited(awaitable)
        if self._closed or len(self._tasks) >= self.limit:
            coroutine.close()
            if not self._closed:
                self.refused += 1
                if self.refused % 1000 == 1:
                    logger.warning("%s: %d tasks already running; %s not run (%d refused)",
                                   self.name, self.limit, what, self.refused)
            return None
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._done(t, what))
        return task

    def _done(self, task: asyncio.Task[Any], what: str) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            logger.error("%s: %s failed: %r", self.name, what, exc, exc_info=exc)

    def close(self) -> None:
        """Cancel every task still running (but the caller's own, when it is one of them:
        a handler may close its owner); nothing more is started."""
        self._closed = True
        try:
            current = asyncio.current_task()
        except RuntimeError:  # no loop running (closed from synchronous code)
            current = None
        for task in list(self._tasks):
            if task is not current:
                task.cancel()

    async def aclose(self) -> None:
        """:meth:`close`, then wait until every other task has ended (a caller's
        cancellation still reaches the caller)."""
        self.close()
        others = [t for t in self._tasks if t is not asyncio.current_task()]
        if others:
            await asyncio.wait(others)


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
