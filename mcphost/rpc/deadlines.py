"""When each pending request of one peer gives up: one clock, three kinds of deadline.

Layer 3 (no I/O of its own: the clock and the timers come from an injected
:class:`Scheduler`, which is the event loop in production and a fake clock in tests; the
loop's clock is read through ``time.monotonic``, which is what ``loop.time()`` returns).

A timer handle per request costs more than the rest of the request path, so:

- calls on the peer's **default** timeout expire in sending order: they carry their expiry
  (``call.expires``) and one watchdog timer walks the pending calls, oldest first, stopping
  at the first one not yet due (the peer writes ``expires`` itself on its hot path and
  calls :meth:`Deadlines.arm` when the watchdog must run earlier);
- calls with **another** timeout value share a queue per value, in sending order, served by
  the same watchdog;
- calls whose clock **restarts on progress** or that have a **hard maximum** get a timer of
  their own (spec: a client "MAY reset the clock on progress but SHOULD enforce a hard
  maximum").

Each expiry calls ``on_expired(request_id)`` once; the peer fails the call.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

__all__ = ["RESET_MAXIMUM", "Cancellable", "Deadlines", "Scheduler", "Timed"]

_INF = math.inf
#: With a clock restarted by progress and no hard maximum, a call still ends after this many
#: times its timeout (spec: a client MAY reset the clock on progress but SHOULD enforce a
#: hard maximum; a server sending progress forever must not hold a call forever).
RESET_MAXIMUM = 10


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """A clock and timers on it (``asyncio.AbstractEventLoop`` is one)."""

    def time(self) -> float: ...

    def call_at(self, when: float, callback: Callable[..., object], *args: Any) -> Cancellable: ...


class Timed(Protocol):
    """What a deadline needs of a pending call (the peer's call record)."""

    rid: int | str
    expires: float
    timeout: float
    timer: Cancellable | None
    reset: bool
    deadline: float


class Deadlines:
    """The deadlines of one peer's pending calls (``pending``: id -> call, sending order)."""

    def __init__(
        self,
        scheduler: Scheduler,
        pending: MutableMapping[Any, Any],
        default: float,
        on_expired: Callable[[Any], None],
    ) -> None:
        self.scheduler = scheduler
        #: The clock (bound once: read on every request). An asyncio loop's time() is
        #: time.monotonic(): called directly, without the method's frame.
        self.now: Callable[[], float] = (
            time.monotonic if type(scheduler).time is asyncio.BaseEventLoop.time else scheduler.time
        )
        self.default = default
        self._pending = pending
        self._on_expired = on_expired
        self._queues: dict[float, collections.deque[tuple[float, Any]]] = {}
        self._watchdog: Cancellable | None = None
        #: When the watchdog runs next (``inf``: it is not armed).
        self.watchdog_at = _INF
        self._closed = False

    # -- starting a deadline ----------------------------------------------------------------

    def watch_default(self, call: Timed) -> None:
        """``call`` waits the default timeout (the rule :meth:`Peer.start_request
        <mcphost.rpc.peer.Peer.start_request>` writes out on its hot path, where it sets the
        expiry as it makes the call)."""
        seconds = self.default
        if 0 < seconds < _INF:
            expires = call.expires = self.now() + seconds
            if expires < self.watchdog_at:
                self.arm(expires)

    def watch(self, call: Timed, timeout: float | None, reset: bool, max_timeout: float | None) -> None:
        """Any deadline but the plain default: its own timer (restarts on progress, or a hard
        maximum) or the queue of its value."""
        seconds = self.default if timeout is None else timeout
        if reset and not max_timeout and 0 < seconds < _INF:
            max_timeout = RESET_MAXIMUM * seconds
        rid = call.rid
        now = self.now()
        if 0 < seconds < _INF:
            call.timeout = seconds
            if max_timeout is not None and max_timeout > 0:
                call.deadline = now + max_timeout
                call.timer = self.scheduler.call_at(now + min(seconds, max_timeout), self._expire, rid)
            elif reset:
                call.timer = self.scheduler.call_at(now + seconds, self._expire, rid)
            else:
                self._enqueue(now, seconds, rid)
            call.reset = reset
        elif max_timeout is not None and max_timeout > 0:
            call.deadline = now + max_timeout
            call.timer = self.scheduler.call_at(call.deadline, self._expire, rid)

    def _enqueue(self, now: float, seconds: float, rid: Any) -> None:
        queue = self._queues.get(seconds)
        if queue is None:
            queue = self._queues[seconds] = collections.deque()
        else:
            pending = self._pending
            while queue and queue[0][1] not in pending:
                queue.popleft()  # answered already: dropped from the head, amortised O(1)
        deadline = now + seconds
        queue.append((deadline, rid))
        if deadline < self.watchdog_at:
            self.arm(deadline)

    # -- while waiting ----------------------------------------------------------------------

    def progressed(self, call: Timed) -> None:
        """Progress arrived on a call that restarts its clock: restart it, capped by the
        call's hard maximum."""
        if call.timer is not None and call.reset:
            call.timer.cancel()
            when = min(self.now() + call.timeout, call.deadline)
            call.timer = self.scheduler.call_at(when, self._expire, call.rid)

    def forget(self, call: Timed) -> None:
        """``call`` is no longer pending (its own timer, if any, is cancelled)."""
        timer = call.timer
        if timer is not None:
            timer.cancel()
            call.timer = None

    def hard_maximum_reached(self, call: Timed) -> bool:
        return call.deadline < _INF and self.now() >= call.deadline - 1e-3

    def close(self) -> None:
        """Nothing more will expire (the peer is closed)."""
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self.watchdog_at = _INF
        self._queues.clear()

    # -- the watchdog -----------------------------------------------------------------------

    def arm(self, when: float) -> None:
        """Run the watchdog at ``when`` (clock time)."""
        if self._closed:
            return
        if self._watchdog is not None:
            self._watchdog.cancel()
        self.watchdog_at = when
        self._watchdog = self.scheduler.call_at(when, self._on_watchdog)

    def _on_watchdog(self) -> None:
        self._watchdog = None
        self.watchdog_at = _INF
        now = self.now()
        pending = self._pending
        earliest = _INF
        # Calls on the default timeout, oldest first: their expiries only grow, so the
        # first one not yet due ends the walk. Calls watched otherwise (expires = inf) are
        # stepped over.
        due: list[tuple[float, Any]] = []
        for rid, call in pending.items():
            expires = call.expires
            if expires <= now:
                due.append((expires, rid))
            elif expires < _INF:
                earliest = expires
                break
        for seconds, queue in list(self._queues.items()):
            while queue:
                deadline, rid = queue[0]
                if rid not in pending:
                    queue.popleft()
                elif deadline <= now:
                    queue.popleft()
                    due.append((deadline, rid))
                else:
                    earliest = min(earliest, deadline)
                    break
            if not queue:
                self._queues.pop(seconds, None)
        # A late run (a busy loop) finds several overdue: they give up in deadline order,
        # whichever kind of deadline each has.
        if len(due) > 1:
            due.sort(key=lambda item: item[0])
        for _, rid in due:
            self._expire(rid)
        if earliest < _INF:
            self.arm(earliest)

    def _expire(self, rid: Any) -> None:
        if not self._closed:
            self._on_expired(rid)
