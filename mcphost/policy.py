"""Retry and restart policies: how often to try again, how long to wait, and what is safe.

Layer 1 (no I/O, no clock, no randomness of its own): the supervisor and the host pass in
the random number the jitter uses, and do the waiting themselves.

- :class:`Backoff`: exponential backoff with jitter. Retry ``n`` (1-based) waits
  ``min(maximum, initial * multiplier ** (n - 1))``, less a random share of up to
  ``jitter`` of it, so that many clients retrying together spread out. The defaults are the
  host specification's (TR6.5): initial 1 s, maximum 30 s.
- :class:`RetryPolicy`: how many times a failed operation is tried again (3 by default),
  and the backoff between tries. ``backoff`` may be any function ``retry -> seconds``.
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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ServerUnavailableError, TimeoutError

__all__ = [
    "Backoff",
    "NO_RETRY",
    "RestartPolicy",
    "RetryPolicy",
    "is_transient",
    "retry_safe_tool",
]


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
                raise ValueError(f"backoff {name} must be a number of 0 or more, not {value!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"backoff jitter must be between 0 and 1, not {self.jitter!r}")

    def delay(self, retry: int, random: float = 1.0) -> float:
        """The wait before retry number ``retry`` (1-based); ``random`` in [0, 1)."""
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
    """

    retries: int = 3
    backoff: Backoff | Callable[[int, float], float] = field(default_factory=Backoff)

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be an integer of 0 or more, not {self.retries!r}")

    def delay(self, retry: int, random: float = 1.0) -> float:
        """The wait before retry number ``retry`` (1-based)."""
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
            raise ValueError(f"restart policy must be 'never' or 'on-failure', not {self.policy!r}")
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"maxAttempts must be an integer of 1 or more, not {self.max_attempts!r}")

    @property
    def enabled(self) -> bool:
        return self.policy == "on-failure"


def is_transient(error: BaseException) -> bool:
    """Whether another try may succeed where this one failed.

    A time-out, or a server that is unavailable (it may be back after a restart), is
    transient. An answer of the server (a JSON-RPC error, an invalid result), a refused
    argument or a routing error is not: the same request would get the same answer.
    """
    return isinstance(error, (TimeoutError, ServerUnavailableError))


def retry_safe_tool(tool: dict[str, Any]) -> bool:
    """Whether a tool may be called a second time: annotated read-only or idempotent."""
    annotations = tool.get("annotations")
    if type(annotations) is not dict:
        return False
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True
