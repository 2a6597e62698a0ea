"""A scheduler whose time moves only when the test says so (for deadlines and policies)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any


class _Timer:
    def __init__(self, clock: FakeClock, when: float, seq: int, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.when = when
        self.seq = seq
        self.callback = callback
        self.args = args
        self.cancelled = False
        self.clock = clock

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: _Timer) -> bool:
        return (self.when, self.seq) < (other.when, other.seq)


class FakeClock:
    """A scheduler whose time moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0
        self._timers: list[_Timer] = []
        self._seq = itertools.count()

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[..., object], *args: Any) -> _Timer:
        timer = _Timer(self, when, next(self._seq), callback, args)
        heapq.heappush(self._timers, timer)
        return timer

    def advance(self, seconds: float) -> None:
        target = self.now + seconds
        while self._timers and self._timers[0].when <= target:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self.now = max(self.now, timer.when)
            timer.callback(*timer.args)
        self.now = target

    @property
    def armed(self) -> int:
        return sum(1 for t in self._timers if not t.cancelled)
