"""Received messages delivered in order, a big one counted and decoded in slices (layer 2).

Decoding a JSON text in one call cannot be cut into slices (both codecs build the whole
value in one call): a 47 MB ``tools/list`` of a million tools stalled the event loop 4 to
8 s. Counting its tokens can (:class:`~mcphost._json.TokenCount`), and so can decoding it a
few thousand members at a time (:class:`~mcphost._json.SlicedLoads`). Every transport hands
what it reads to one :class:`InOrder`: a message of up to 1 MiB is delivered at once; a
bigger one has its JSON tokens counted a slice per loop turn first, and past
``max_message_tokens`` it is refused undecoded (the transport fails the call it answered,
or only logs a request or notification of the server); under the bound it is decoded a
slice per loop turn, then delivered. What arrives behind it waits its turn, messages and
the transport's other events alike (a stream's end, a close: :meth:`InOrder.then`), so
nothing is delivered out of order and a call is not failed for a response still being
counted or decoded.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import gc
import logging
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from .._json import MAX_TOKENS, SlicedLoads, TokenCount, loads

__all__ = ["COUNTED", "InOrder", "Raw", "head_of"]

logger = logging.getLogger("mcphost.transports")

#: Messages longer than this (bytes) have their JSON tokens counted before they are
#: decoded (below it a message cannot hold enough tokens to stall the loop).
COUNTED: Final = 1 << 20

#: A received message: bytes, or text when the transport's framing decoded it already.
Raw = bytes | str
M = TypeVar("M", bound=Raw)
#: Decodes one received message (raises ``ValueError`` when it is not JSON).
Decode = Callable[[Any], Any]


def head_of(message: Raw, size: int = 512) -> bytes:
    """The first bytes of ``message`` (to tell which call it answered)."""
    head = message[:size]
    return head.encode("utf-8", "replace") if isinstance(head, str) else head


class InOrder(Generic[M]):
    """One transport's received messages, delivered in order.

    Args:
        name: the server's name (the counting task's name).
        deliver: ``deliver(messages, decode)`` decodes messages (bytes or text) with
            ``decode`` and delivers them, in the order given.
        refuse: ``refuse(message, reason)``: a message over the token bound, undecoded.
        max_tokens: JSON tokens a message over :data:`COUNTED` bytes may hold.
        decode: the transport's ``loads`` (a big message is decoded in slices with it).
    """

    def __init__(self, name: str, deliver: Callable[[list[M], Decode], None], refuse: Callable[[M, str], None],
                 max_tokens: int = MAX_TOKENS, decode: Decode = loads) -> None:
        self.name = name
        self.decode = decode
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
                self._deliver(messages, self.decode)
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
                    self._deliver(small, self.decode)
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
                    await asyncio.sleep(0)
                    self._deliver([message], await self._sliced(message))
                await asyncio.sleep(0)
        finally:
            if self._held is held:
                self._held = None
            self._task = None

    async def _sliced(self, message: M) -> Decode:
        """Decode ``message`` a slice per loop turn; what decodes to its value (or raises).

        Python's collector is held off meanwhile: the decoded objects pile up fast and
        every full collection on the way walks all of the process's objects (50 to 100 ms
        in a test process); it runs again once no big message is being decoded.
        """
        sliced = SlicedLoads(message, self.decode)
        _hold_collector(True)
        try:
            while not sliced.step():
                await asyncio.sleep(0)
        except ValueError as exc:
            return functools.partial(_raise, exc)
        except Exception as exc:  # a bug here: the message is lost, not what waits behind it
            logger.exception("%s: failed to decode a big message", self.name)
            return functools.partial(_raise, ValueError(f"not decoded: {exc!r}"))
        finally:
            _hold_collector(False)
        return functools.partial(_value, sliced.value)

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


_holding = [0, False]  # big messages being decoded; was the collector on before
#: Objects frozen before this module was imported: the interpreter's own (Python 3.12 starts
#: with a few hundred), not an application's choice made for its forked processes.
_FROZEN_AT_IMPORT: Final = gc.get_freeze_count()


def _hold_collector(hold: bool) -> None:
    """Hold the cyclic garbage collector off while any big message is decoded."""
    if hold:
        _holding[0] += 1
        if _holding[0] == 1:
            _holding[1] = gc.isenabled()
            gc.disable()
    else:
        _holding[0] -= 1
        if _holding[0] == 0 and _holding[1]:
            if gc.get_freeze_count() <= _FROZEN_AT_IMPORT:
                # Objects made meanwhile go to the oldest generation in one splice, not walked
                # at the next young collection (a 0.4 s stall after a million-token message).
                # Objects an application froze after importing mcphost (more than were
                # frozen then) are never thawed here; the interpreter's own (frozen at its
                # start, fewer as they die) may be, harmlessly.
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _raise(error: ValueError, message: Raw) -> Any:
    raise error


def _value(value: Any, message: Raw) -> Any:
    return value
