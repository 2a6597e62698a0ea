"""The records of one peer: a pending call, and the peer's counters.

Layer 3, no I/O. A :class:`Call` is made for every request sent, so it holds only what
the commonest call needs; a :class:`TimedCall` holds what a call with its own deadline
or a result of another shape needs as well.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any, Final

from .deadlines import Cancellable

__all__ = ["Call", "PeerStats", "TimedCall"]

_INF: Final = math.inf


class PeerStats:
    """Counters of one peer (plain ints, read by the metrics)."""

    __slots__ = (
        "cancelled",
        "dropped_requests",
        "errors",
        "notifications",
        "protocol_errors",
        "requests",
        "server_requests",
        "timeouts",
        "unserved_lists",
    )

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.timeouts = 0
        self.cancelled = 0
        self.notifications = 0
        self.server_requests = 0
        self.protocol_errors = 0
        #: Lists the server declared but answered with "method not found" (set by the
        #: session's owner: the peer itself never looks at methods).
        self.unserved_lists = 0
        #: Requests of the other side left unanswered while it did not read (flow control).
        self.dropped_requests = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class Call:
    """A request waiting for its response.

    The commonest call (the default timeout, a result of the usual shape) needs only these
    slots, each set in ``__init__``; what other calls have is a :class:`TimedCall`'s, and
    reads here as the class defaults below (one store less per request for each).
    """

    __slots__ = ("expires", "future", "method", "progress", "rid")

    #: The result has the method's alternate shape (e.g. a task-augmented request).
    augmented: bool = False
    #: Own timer, for calls whose clock restarts on progress or that have a maximum.
    timer: Cancellable | None = None
    #: The clock restarts on each progress notification.
    reset: bool = False
    #: Seconds of a timeout other than the default (0: the default).
    timeout: float = 0.0
    #: Clock time of the hard maximum.
    deadline: float = _INF

    def __init__(
        self, future: asyncio.Future[Any], method: str, rid: int | str, progress: Callable[[Any], Any] | None,
        expires: float = _INF,
    ) -> None:
        self.future = future
        self.method = method
        self.rid = rid
        #: Called with the params of each progress notification naming this call.
        self.progress = progress
        #: Clock time at which a call on the default timeout expires (in sending order).
        self.expires = expires


class TimedCall(Call):
    """A call with its own deadline (a timeout other than the default, a clock restarted
    by progress, a hard maximum) or a result of the method's alternate shape."""

    __slots__ = ("augmented", "deadline", "reset", "timeout", "timer")

    def __init__(
        self, future: asyncio.Future[Any], method: str, rid: int | str, progress: Callable[[Any], Any] | None,
        augmented: bool = False,
    ) -> None:
        super().__init__(future, method, rid, progress)
        self.augmented = augmented
        self.timer = None
        self.reset = False
        self.timeout = 0.0
        self.deadline = _INF
