"""The records of one peer: a call's options, a pending call, and the peer's counters.

Layer 3, no I/O. :class:`CallOptions` is the one spelling of what a request may ask beyond
the default (a timeout of its own, a clock restarted by progress, a hard maximum, a result of
the method's alternate shape): the host, the session and the peer pass the same object, so
the options are declared once. A :class:`Call` is made for every request sent, so it holds
only what the commonest call needs; a :class:`TimedCall` holds what a call made with options
needs as well.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any, Final

from ..errors import UsageError
from .deadlines import Cancellable

__all__ = ["Call", "CallOptions", "PeerStats", "Prepare", "TimedCall"]

#: What the protocol on top adds to every request (``Peer.prepare``): ``(method, params,
#: owned) -> (params, transport headers)``; it may write into ``params`` only when ``owned``.
Prepare = Callable[[str, dict[str, Any] | None, bool], tuple[dict[str, Any] | None, Sequence[tuple[str, str]]]]

_INF: Final = math.inf


class CallOptions:
    """What one request asks beyond the peer's defaults (``None`` in place of an instance:
    nothing; the commonest call, which takes no allocation for its options).

    Args:
        timeout: seconds before giving up (``None``: the peer's default; ``0`` or
            ``math.inf``: no timeout).
        reset_on_progress: each progress notification restarts the timeout.
        max_timeout: a hard maximum in seconds, even with progress resets; with resets and no
            maximum given, :data:`~mcphost.rpc.deadlines.RESET_MAXIMUM` times the timeout.
        augmented: the result has the method's alternate shape (a task-augmented request's
            ``CreateTaskResult``), checked as such.
    """

    __slots__ = ("augmented", "max_timeout", "reset_on_progress", "timeout")

    def __init__(
        self,
        timeout: float | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        augmented: bool = False,
    ) -> None:
        self.timeout = timeout
        self.reset_on_progress = reset_on_progress
        self.max_timeout = max_timeout
        self.augmented = augmented

    @classmethod
    def of(
        cls,
        timeout: float | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        augmented: bool = False,
    ) -> CallOptions | None:
        """The options, or ``None`` when every one is the default."""
        if timeout is None and not reset_on_progress and not max_timeout and not augmented:
            return None
        return cls(timeout, reset_on_progress, max_timeout, augmented)

    def __repr__(self) -> str:
        return (f"CallOptions(timeout={self.timeout!r}, reset_on_progress={self.reset_on_progress!r}, "
                f"max_timeout={self.max_timeout!r}, augmented={self.augmented!r})")


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


def _ignore(_params: Any) -> None:
    return None


def check_seconds(method: str, name: str, value: Any) -> None:
    """``UsageError`` unless ``value`` is ``None`` or a number of seconds (not NaN)."""
    if value is not None and (type(value) not in (int, float) or math.isnan(value)):
        raise UsageError(f"{method}: {name} must be a number of seconds or None, not {value!r}")


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

    @classmethod
    def made_with(
        cls, options: CallOptions, future: asyncio.Future[Any], method: str, rid: int | str,
        progress: Callable[[Any], Any] | None,
    ) -> TimedCall:
        """The record of a call made with ``options``, checked (before anything is sent)."""
        check_seconds(method, "timeout", options.timeout)
        check_seconds(method, "max_timeout", options.max_timeout)
        reset = options.reset_on_progress
        if reset and progress is None:
            progress = _ignore  # the progress notifications are what restart the clock
        call = cls(future, method, rid, progress, options.augmented)
        call.reset = reset
        return call
