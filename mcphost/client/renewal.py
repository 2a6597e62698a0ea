"""A new MCP session after the transport lost its own (Streamable HTTP's 404), bounded.

Layer 3, beside :mod:`.session`. A Streamable HTTP server may forget a session (it
restarted, or expired it); the spec then says "the client MUST start a new session by
sending a new InitializeRequest without a session ID attached". The transport does not
speak MCP: it holds what it is sent and reports :class:`~mcphost.transports.base.SessionLost`.
:class:`SessionRenewal`, listening for that, owns the rest:

1. it waits as :class:`RenewalPolicy` says (the first renewal after a session that served
   goes at once; renewals in a row back off, and are never closer than ``min_interval``);
2. it sends the session's own ``initialize`` again (the same params) inside the transport's
   ``session_opening`` block, so it goes ahead of what is held, and judges the answer: the
   same protocol version, or the new session is refused;
3. it sends ``notifications/initialized`` the same way, then lets the transport send what
   it held (the calls in flight succeed on the new session);
4. it tells the session's owner (``on_renewed``): what the old session had been told
   (subscriptions, log level) is not known to the new one, and the lists may have changed.

It gives up, and the transport ends with the reason (the pending calls fail with
``ServerUnavailableError``, the host marks the server unavailable and its restart policy
takes over), when the new session cannot be started or speaks another version, or after
``max_in_row`` renewals in a row whose sessions were lost again before they answered a
request: a server that drops every session is not renewed in a loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import MCPHostError, UsageError
from ..policy import Backoff
from ..rpc.calls import CallOptions
from ..transports.base import SessionLost, Transport

if TYPE_CHECKING:
    from ..rpc.peer import Peer

__all__ = ["RenewalPolicy", "SessionRenewal"]

logger = logging.getLogger("mcphost.client.renewal")


def _clip(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class RenewalPolicy:
    """How a lost session is renewed.

    Attributes:
        max_in_row: renewals in a row at most; a renewal is "in a row" when the session
            before it was lost before it answered a request and within ``stable_after``.
        backoff: the wait before the 2nd, 3rd... renewal in a row (the 1st goes at once).
        min_interval: seconds between the starts of two renewals at least.
        stable_after: a session that lived this long (seconds, more than 0) ends the row
            even if it answered no request.
        timeout: seconds the new session's ``initialize`` may take (0: no limit).
    """

    max_in_row: int = 5
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=0.5, maximum=10.0, jitter=0.0))
    min_interval: float = 0.25
    stable_after: float = 60.0
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.max_in_row, bool) or not isinstance(self.max_in_row, int) or self.max_in_row < 0:
            raise UsageError(f"renewal max_in_row must be an integer of 0 or more, not {self.max_in_row!r}")
        for name in ("min_interval", "stable_after", "timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise UsageError(f"renewal {name} must be a number of seconds of 0 or more, not {value!r}")
        if not self.stable_after > 0:
            raise UsageError("renewal stable_after must be more than 0 seconds (0 would never end a row)")
        if not isinstance(self.backoff, Backoff):
            raise UsageError(f"renewal backoff must be a Backoff, not {type(self.backoff).__name__}")

    def delay(self, in_row: int, since_last_start: float | None) -> float:
        """Seconds to wait before renewal number ``in_row`` of a row (1-based)."""
        wait = 0.0 if in_row <= 1 else self.backoff.delay(in_row - 1, 0.0)
        if since_last_start is not None:
            wait = max(wait, self.min_interval - since_last_start)
        return max(0.0, wait)


class SessionRenewal:
    """Renews the MCP session over ``transport`` whenever the transport loses its own.

    Args:
        name: the server's name (for messages).
        peer: the session's JSON-RPC peer (its requests go through it).
        transport: the peer's transport (told who listens for a lost session).
        params: the params of the session's ``initialize``, sent again as they were.
        version: the negotiated protocol version a new session must speak too.
        policy: delays and bounds.
        on_renewed: told, with a summary, after each renewal.
        clock: seconds, monotonic (the event loop's by default).
    """

    def __init__(
        self,
        name: str,
        peer: Peer,
        transport: Transport,
        params: dict[str, Any],
        version: str,
        *,
        policy: RenewalPolicy | None = None,
        on_renewed: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        self.peer = peer
        self.transport = transport
        self.params = params
        self.version = version
        self.policy = policy if policy is not None else RenewalPolicy()
        self.on_renewed = on_renewed
        self._clock = clock if clock is not None else asyncio.get_running_loop().time
        #: Sessions renewed so far.
        self.renewals = 0
        #: Renewals in the current row (see :class:`RenewalPolicy`).
        self.in_row = 0
        #: Why renewing was given up (``None``: it was not).
        self.given_up: str | None = None
        self._opened_at: float | None = None  # when the current session was (re)opened
        self._started_at: float | None = None  # when the last renewal began
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        transport.watch_session(self.lost)

    @property
    def renewing(self) -> bool:
        return self._task is not None and not self._task.done()

    def lost(self, event: SessionLost) -> None:
        """The transport's listener: its session is gone, what it is sent is held."""
        if self._closed or self.renewing or self.given_up is not None:
            return
        now = self._clock()
        if event.used or (self._opened_at is not None and now - self._opened_at >= self.policy.stable_after):
            self.in_row = 0
        if self.in_row >= self.policy.max_in_row:
            self._give_up(f"{event.reason}; renewed {self.in_row} time(s) in a row and lost again each time "
                          "before it answered a request: not renewed again")
            return
        self.in_row += 1
        since = None if self._started_at is None else now - self._started_at
        delay = self.policy.delay(self.in_row, since)
        logger.info("%s: %s; renewing the session (%d in a row) in %.3f s", self.name, event.reason, self.in_row, delay)
        self._task = asyncio.get_running_loop().create_task(
            self._renew(event, delay), name=f"mcphost-renew-{self.name}"
        )

    async def _renew(self, event: SessionLost, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        self._started_at = self._clock()
        failed = f"{event.reason} and a new one could not be started"
        try:
            result = await self._initialize()
        except MCPHostError as exc:
            self._give_up(f"{failed}: {exc.message}")
            return
        except Exception as exc:  # a bug here must not leave the held calls waiting
            logger.exception("%s: renewing the session failed", self.name)
            self._give_up(f"{failed}: {exc!r}")
            return
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version != self.version:
            self._give_up(f"{failed}: it speaks protocol version {_clip(version)}, not {self.version}")
            return
        transport = self.transport
        with transport.session_opening():
            self.peer.notify("notifications/initialized")
        transport.release_held()
        self.renewals += 1
        self._opened_at = self._clock()
        logger.info("%s: the session was renewed (%d so far)", self.name, self.renewals)
        if self.on_renewed is not None:
            try:
                self.on_renewed({"renewals": self.renewals, "in_row": self.in_row, "held": event.held})
            except Exception:
                logger.exception("%s: the handler of a renewed session failed", self.name)

    async def _initialize(self) -> Any:
        # Sent inside the opening block: it goes ahead of what the transport holds. The
        # peer writes it before start_request returns, so nothing else slips in.
        with self.transport.session_opening():
            call = self.peer.start_request("initialize", self.params, None, CallOptions(timeout=self.policy.timeout))
        return await self.peer.wait(call)

    def _give_up(self, reason: str) -> None:
        self.given_up = reason
        logger.warning("%s: %s", self.name, reason)
        self.transport.give_up(reason)

    async def aclose(self) -> None:
        """Stop listening; a renewal under way is cancelled (and waited for)."""
        self._closed = True
        self.transport.watch_session(None)
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            # Waited, not awaited: its cancellation is not ours, and ours is not swallowed.
            await asyncio.wait({task})
