"""A server's start-up timeout, stopped while a person logs in.

Layer 4, beside :mod:`.supervisor`. A start (connect, handshake, discovery) must end within
the server's start-up ``timeout``. An OAuth login can happen inside it: the application's
``on_authorize`` hook, which is a person at a browser, not the server being slow. So the
authorizer tells :meth:`StartClocks.user_step` when that step begins and ends, and the clock
of that server's start does not run meanwhile (:meth:`StartClocks.run`); the supervisor
moves the host's start budget on by the same time (:meth:`StartClocks.paused`). A login of
a server that is not starting (it was running, and its refresh failed) has nothing to stop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..transports.base import AuthHooks

__all__ = ["StartClocks"]

T = TypeVar("T")


class _Clock:
    def __init__(self) -> None:
        self.holds = 0
        self.since = 0.0
        self.changed = asyncio.Event()


class StartClocks:
    """The start-up clocks of the servers starting now, by name."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self._clocks: dict[str, _Clock] = {}
        self._paused: dict[str, float] = {}

    def told_by(self, auth: AuthHooks | None) -> AuthHooks | None:
        """``auth`` with its ``on_user_step`` telling these clocks."""
        return None if auth is None else dataclasses.replace(auth, on_user_step=self.user_step)

    def user_step(self, server: str, active: bool) -> None:
        """The user's step of ``server``'s login begins (``active``) or ends."""
        clock = self._clocks.get(server)
        if clock is None:
            return
        if active:
            if clock.holds == 0:
                clock.since = self.now()
            clock.holds += 1
        elif clock.holds:
            clock.holds -= 1
            if clock.holds == 0:
                self._paused[server] = self._paused.get(server, 0.0) + self.now() - clock.since
        clock.changed.set()

    def paused(self, server: str) -> float:
        """Seconds the starts of ``server`` have spent stopped so far (it only grows)."""
        clock = self._clocks.get(server)
        now = self._paused.get(server, 0.0)
        return now + (self.now() - clock.since if clock is not None and clock.holds else 0.0)

    def since(self, server: str, before: float) -> float:
        """Seconds stopped since :meth:`paused` said ``before``."""
        return self.paused(server) - before

    async def run(self, server: str, work: Awaitable[T], timeout: float) -> T:
        """``work``'s result, within ``timeout`` seconds not counting the user's steps; else
        ``asyncio.TimeoutError`` with ``work`` cancelled (as ``asyncio.wait_for``)."""
        clock = self._clocks[server] = _Clock()
        task = asyncio.ensure_future(work)
        began, before = self.now(), self.paused(server)
        try:
            while not task.done():
                clock.changed.clear()
                wait: float | None = None
                if not clock.holds:
                    wait = began + timeout + (self.paused(server) - before) - self.now()
                    if wait <= 0:
                        break
                changed = asyncio.ensure_future(clock.changed.wait())
                try:
                    await asyncio.wait({task, changed}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    changed.cancel()
            if task.done():
                return task.result()
            raise asyncio.TimeoutError
        finally:
            if self._clocks.get(server) is clock:
                del self._clocks[server]
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
                if not task.cancelled():
                    task.exception()  # retrieved: what it raised while cancelled is not the caller's
