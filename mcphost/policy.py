"""Retry and restart policies: how often to try again, how long to wait, and what is safe.

Layer 1 (no I/O, no clock, no randomness of its own): the supervisor and the host pass in
the random number the jitter uses, and do the waiting themselves.

- :class:`Backoff`: exponential backoff with jitter. Retry ``n`` (1-based) waits
  ``min(maximum, initial * multiplier ** (n - 1))``, less a random share of up to
  ``jitter`` of it, so that many clients retrying together spread out. The defaults are the
  host specification's (TR6.5): initial 1 s, maximum 30 s.
- :class:`RetryPolicy`: how many times a failed operation is tried again (3 by default),
  the backoff between tries (``backoff`` may be any function ``retry -> seconds``), and the
  overall budget of a server's start, retries included (``start_budget``, 60 s: the host
  specification's TR9.3, so that retries never multiply a hung server's start timeout).
- :class:`RestartPolicy`: what happens when a ready server fails (its process exits, its
  requests time out): ``"never"`` (the default, FR6.5: no automatic restart) or
  ``"on-failure"``, up to ``max_attempts`` restarts in a row.
- :func:`is_transient`: which failures are worth another try.

What is retried (the host decides, with these policies): the start of a server (spawn or
connect, then the handshake and discovery), list and read requests, ``prompts/get``, and
the calls of tools annotated ``readOnlyHint`` or ``idempotentHint``. Any other tool call is
never sent twice once it may have reached the server: it may have acted already (sent the
e-mail, written the row), and a second try would act again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ServerUnavailableError, TimeoutError, TransportError, UsageError

__all__ = [
    "Backoff",
    "NO_RETRY",
    "RestartPolicy",
    "RetryPolicy",
    "is_transient",
    "retry_safe_tool",
]


def _number(value: object) -> bool:
    """A real number (``bool`` is not one here), finite."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _check_delay(retry: object, random: object) -> None:
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 1:
        raise UsageError(f"retry is a number from 1, not {retry!r}")
    if isinstance(random, bool) or not isinstance(random, (int, float)) or not 0 <= random <= 1:
        raise UsageError(f"random is a number from 0 to 1, not {random!r}")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter (seconds).

    Attributes:
        initial: the wait before the first retry, without jitter.
        maximum: no wait is longer.
        multiplier: each wait is this many times the one before.
        jitter: the largest share of a wait taken off at random (0: none, 1: "full
            jitter", anything from nothing to the whole wait).
    """

    initial: float = 1.0
    maximum: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        for name in ("initial", "maximum", "multiplier"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise UsageError(f"backoff {name} must be a number of 0 or more, not {value!r}")
        if not _number(self.jitter) or not 0 <= self.jitter <= 1:
            raise UsageError(f"backoff jitter must be between 0 and 1, not {self.jitter!r}")

    def delay(self, retry: int, random: float = 1.0) -> float:
        """The wait before retry number ``retry`` (1-based); ``random`` in [0, 1)."""
        _check_delay(retry, random)
        base = self.initial * self.multiplier ** max(0, retry - 1) if self.initial else 0.0
        base = min(self.maximum, base)
        return base * (1.0 - self.jitter * random)


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed operation is tried again.

    Attributes:
        retries: how many times it is tried again after the first failure (0: never).
        backoff: the wait before each retry: a :class:`Backoff`, or any function
            ``(retry, random) -> seconds``.
        start_budget: seconds a start may take, retries and waits included (``None``: no
            budget). The first try always has its whole start-up ``timeout`` (a first
            download by ``npx`` may need minutes); a retry gets what is left of the budget at
            most, and none is begun once it is spent. For ``initialize()`` the budget is the
            whole host's: every server is ready (or failed) within it.
    """

    retries: int = 3
    backoff: Backoff | Callable[[int, float], float] = field(default_factory=Backoff)
    start_budget: float | None = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise UsageError(f"retries must be an integer of 0 or more, not {self.retries!r}")
        if not (isinstance(self.backoff, Backoff) or callable(self.backoff)):
            raise UsageError(f"backoff must be a Backoff or a function (retry, random) -> seconds, "
                             f"not {type(self.backoff).__name__}")
        budget = self.start_budget
        if budget is not None and (not _number(budget) or not budget > 0):
            raise UsageError(f"start_budget must be a number of seconds above 0 (or None), not {budget!r}")

    def delay(self, retry: int, random: float = 1.0) -> float:
        """The wait before retry number ``retry`` (1-based)."""
        _check_delay(retry, random)
        backoff = self.backoff
        if isinstance(backoff, Backoff):
            return backoff.delay(retry, random)
        return float(backoff(retry, random))


#: Try once, never again.
NO_RETRY = RetryPolicy(retries=0)


@dataclass(frozen=True)
class RestartPolicy:
    """What happens when a ready server fails by itself.

    Attributes:
        policy: ``"never"`` (the default: the server stays unavailable until
            ``restart_server``) or ``"on-failure"``.
        max_attempts: restarts in a row before the server is left ``failed``. The count
            starts again once a restarted server has stayed ready for ``stable`` seconds.
        backoff: the wait before each restart.
        stable: seconds of being ready after which a server's failures count from zero.
    """

    policy: str = "never"
    max_attempts: int = 3
    backoff: Backoff = field(default_factory=Backoff)
    stable: float = 60.0

    def __post_init__(self) -> None:
        if self.policy not in ("never", "on-failure"):
            raise UsageError(f"restart policy must be 'never' or 'on-failure', not {self.policy!r}")
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise UsageError(f"maxAttempts must be an integer of 1 or more, not {self.max_attempts!r}")

    @property
    def enabled(self) -> bool:
        return self.policy == "on-failure"


def is_transient(error: BaseException) -> bool:
    """Whether another try may succeed where this one failed.

    A time-out, a server that is unavailable (it may be back after a restart), or an
    exchange that failed on its way for a passing reason (a dropped connection, HTTP 429 or
    5xx) is transient. An answer of the server (a JSON-RPC error, an invalid result), a
    refused argument or a routing error is not: the same request would get the same answer.
    """
    if isinstance(error, TransportError):
        return error.transient
    return isinstance(error, (TimeoutError, ServerUnavailableError))


def retry_safe_tool(tool: dict[str, Any]) -> bool:
    """Whether a tool may be called a second time: annotated read-only or idempotent."""
    annotations = tool.get("annotations")
    if type(annotations) is not dict:
        return False
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True
