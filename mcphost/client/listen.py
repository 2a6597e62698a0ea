"""``subscriptions/listen``: how a 2026-07-28 server tells of changes (layer 3).

In the stateless era there is no session to send ``list_changed`` or ``resources/updated``
on: the client opens a long-lived ``subscriptions/listen`` request naming what it wants
(``toolsListChanged``, ``promptsListChanged``, ``resourcesListChanged``,
``resourceSubscriptions``), and the server sends those notifications on that request's
stream (first ``notifications/subscriptions/acknowledged``). They reach the host by the same
path as a legacy server's, so the registry re-lists and the read cache forgets alike.

:class:`Listener`, one per modern session:

- asks for the list changes the server declared (``listChanged``) and for the resources the
  application subscribed to (when the server declared ``resources.subscribe``); nothing
  wanted, no stream;
- a new set of resources replaces the stream: the old request is given up (over HTTP its
  stream is closed, over stdio ``notifications/cancelled`` is sent), a new one is opened;
- a stream that ends (the server answered it, or the transport lost it) is opened again:
  at once after a stream that lasted (``STABLE`` seconds), else after ``backoff``; after
  ``max_failures`` short streams in a row, it is given up with a warning (a server that
  ends every stream at once costs a few requests, not a loop);
- a new session (a restart) opens its own stream at once; the session's end cancels it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from ..errors import MCPHostError
from ..policy import Backoff
from ..rpc.calls import CallOptions
from ..rpc.peer import Call

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = ["LISTEN", "Listener"]

logger = logging.getLogger("mcphost.client")

LISTEN: Final = "subscriptions/listen"
_FOREVER: Final = CallOptions(timeout=0)
#: Short streams in a row before the listener gives up.
MAX_FAILURES: Final = 5
#: Seconds a stream must last for its end not to count as a failure.
STABLE: Final = 5.0


class Listener:
    """The ``subscriptions/listen`` stream of one modern session."""

    def __init__(self, session: ClientSession, backoff: Backoff | None = None,
                 max_failures: int = MAX_FAILURES) -> None:
        self.session = session
        self.backoff = backoff or Backoff(initial=0.5, maximum=30.0)
        self.max_failures = max_failures
        #: The resources the application subscribed to.
        self.resources: tuple[str, ...] = ()
        #: Streams opened so far.
        self.opened = 0
        self._call: Call | None = None
        self._task: asyncio.Task[Any] | None = None

    def wanted(self) -> dict[str, Any]:
        """The ``notifications`` params: what the server declared it can tell."""
        has = self.session.has_capability
        wanted: dict[str, Any] = {}
        for kind, flag in (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"),
                           ("resources", "resourcesListChanged")):
            if has(kind, "listChanged"):
                wanted[flag] = True
        if self.resources and has("resources", "subscribe"):
            wanted["resourceSubscriptions"] = list(self.resources)
        return wanted

    def listen(self, resources: Iterable[str] | None = None) -> bool:
        """(Re)open the stream, for ``resources`` when given; False: nothing to listen to."""
        if resources is not None:
            self.resources = tuple(sorted(set(resources)))
        self.stop()
        wanted = self.wanted()
        if not wanted:
            return False
        self._task = self.session.tasks.start(self._run(wanted), LISTEN)
        return self._task is not None

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()

    async def _run(self, wanted: dict[str, Any]) -> None:
        session = self.session
        clock = asyncio.get_running_loop().time
        failures = 0
        while not session.closed:
            self.opened += 1
            began = clock()
            call = self._call = session.start(LISTEN, {"notifications": wanted}, None, _FOREVER)
            try:
                await session.wait(call)
                why = "the server ended it"
            except MCPHostError as exc:
                why = exc.message
            finally:
                self._call = None
            if session.closed:
                return
            failures = 0 if clock() - began >= STABLE else failures + 1
            if failures > self.max_failures:
                logger.warning("%s: %s given up after %d streams in a row ended at once (%s)",
                               session.name, LISTEN, failures, why)
                return
            delay = self.backoff.delay(failures) if failures else 0.0
            logger.info("%s: %s stream ended (%s); opening it again in %.1f s", session.name, LISTEN, why, delay)
            if delay:
                await asyncio.sleep(delay)
