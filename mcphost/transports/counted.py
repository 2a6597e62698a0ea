"""Received messages delivered in order, a big one counted before it is decoded (layer 2).

Decoding a JSON text cannot be cut into slices (both codecs build the whole value in one
call): a 47 MB ``tools/list`` of a million tools stalled the event loop 4 to 8 s. Counting
its tokens can (:class:`~mcphost._json.TokenCount`). Every transport hands what it reads
to one :class:`InOrder`: a message of up to 1 MiB is delivered at once; a bigger one has
its JSON tokens counted a slice per loop turn first, and past ``max_message_tokens`` it is
refused undecoded (the transport fails the call it answered, or only logs a request or
notification of the server). What arrives behind it waits its turn, messages and the
transport's other events alike (a stream's end, a close: :meth:`InOrder.then`), so nothing
is delivered out of order and a call is not failed for a response still being counted.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from .._json import MAX_TOKENS, TokenCount

__all__ = ["COUNTED", "InOrder", "Raw", "head_of"]

logger = logging.getLogger("mcphost.transports")

#: Messages longer than this (bytes) have their JSON tokens counted before they are
#: decoded (below it a message cannot hold enough tokens to stall the loop).
COUNTED: Final = 1 << 20

#: A received message: bytes, or text when the transport's framing decoded it already.
Raw = bytes | str
M = TypeVar("M", bound=Raw)


def head_of(message: Raw, size: int = 512) -> bytes:
    """The first bytes of ``message`` (to tell which call it answered)."""
    head = message[:size]
    return head.encode("utf-8", "replace") if isinstance(head, str) else head


class InOrder(Generic[M]):
    """One transport's received messages, delivered in order.

    Args:
        name: the server's name (the counting task's name).
        deliver: decodes and delivers messages (bytes or text), in the order given.
        refuse: ``refuse(message, reason)``: a message over the token bound, undecoded.
        max_tokens: JSON tokens a message over :data:`COUNTED` bytes may hold.
    """

    def __init__(self, name: str, deliver: Callable[[list[M]], None], refuse: Callable[[M, str], None],
                 max_tokens: int = MAX_TOKENS) -> None:
        self.name = name
        self.max_tokens = max_tokens
        #: Messages refused for their tokens so far.
        self.refused = 0
        self._deliver = deliver
        self._refuse = refuse
        self._held: collections.deque[M | Callable[[], None]] | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """A big message is being counted (what is pushed now waits behind it)."""
        return self._held is not None

    def push(self, messages: list[M]) -> None:
        """Deliver ``messages`` now, or in their turn when one of them (or one before them)
        is over :data:`COUNTED` bytes (characters, for text)."""
        if self._held is None:
            if all(len(message) <= COUNTED for message in messages):
                self._deliver(messages)
                return
            self._held = collections.deque()
        self._held.extend(messages)
        self._start()

    def then(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` after every message pushed so far is delivered (now, if none
        waits)."""
        if self._held is None:
            callback()
        else:
            self._held.append(callback)

    def _start(self) -> None:
        if self._task is None and self._held is not None:
            self._task = asyncio.get_running_loop().create_task(self._run(self._held),
                                                                name=f"mcphost-count-{self.name}")

    async def _run(self, held: collections.deque[M | Callable[[], None]]) -> None:
        limit = self.max_tokens
        try:
            while held:
                small: list[M] = []
                while held:
                    first = held[0]
                    if callable(first):
                        if small:
                            break
                        held.popleft()
                        try:
                            first()
                        except Exception:  # a bug of the transport: what waits behind it still goes
                            logger.exception("%s: failed after a counted message", self.name)
                    elif len(first) <= COUNTED:
                        small.append(held.popleft())  # type: ignore[arg-type]
                    else:
                        break
                if small:
                    self._deliver(small)
                    continue
                if not held:
                    break
                message = held.popleft()
                if callable(message):  # pragma: no cover - the loop above ran it
                    message()
                    continue
                counter = TokenCount(message)
                while counter.step() <= limit and not counter.done:
                    await asyncio.sleep(0)  # a slice per loop turn
                if counter.tokens > limit:
                    self.refused += 1
                    self._refuse(message, f"server sent a message of more than {limit:,} JSON tokens "
                                          f"({len(message)} bytes; the bound is max_message_tokens)")
                else:
                    self._deliver([message])
                await asyncio.sleep(0)
        finally:
            if self._held is held:
                self._held = None
            self._task = None

    async def settle(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until what was pushed is delivered."""
        task = self._task
        if task is not None:
            await asyncio.wait({task}, timeout=timeout)

    def close(self) -> None:
        """Stop: what waits is dropped."""
        task = self._task
        self._held = None
        if task is not None:
            task.cancel()
