"""Deadlines on a fake clock: which call expires when, in what order, and what cancels."""

from __future__ import annotations

import math
from typing import Any

from fakeclock import FakeClock

from mcphost.rpc.deadlines import Deadlines


class Call:
    def __init__(self, rid: int) -> None:
        self.rid = rid
        self.expires = math.inf
        self.timeout = 0.0
        self.timer: Any = None
        self.reset = False
        self.deadline = math.inf


def setup(default: float = 10.0) -> tuple[FakeClock, dict[int, Call], Deadlines, list[int]]:
    clock = FakeClock()
    pending: dict[int, Call] = {}
    expired: list[int] = []

    def on_expired(rid: int) -> None:
        expired.append(rid)
        pending.pop(rid, None)

    return clock, pending, Deadlines(clock, pending, default, on_expired), expired


def start(pending: dict[int, Call], rid: int) -> Call:
    call = pending[rid] = Call(rid)
    return call


def test_default_timeouts_expire_in_sending_order_with_one_timer() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    for rid in range(1, 4):
        deadlines.watch_default(start(pending, rid))
        clock.advance(1.0)
    assert clock.armed == 1  # one watchdog for every default-timeout call
    clock.advance(6.9)  # t = 9.9 after the first
    assert expired == []
    clock.advance(0.2)
    assert expired == [1]
    clock.advance(2.0)
    assert expired == [1, 2, 3]
    assert clock.armed == 0


def test_answered_calls_never_expire() -> None:
    clock, pending, deadlines, expired = setup(5.0)
    deadlines.watch_default(start(pending, 1))
    deadlines.watch_default(start(pending, 2))
    del pending[1]  # answered
    clock.advance(6)
    assert expired == [2]


def test_a_shorter_timeout_sent_later_fires_first() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    deadlines.watch_default(start(pending, 1))
    deadlines.watch(start(pending, 2), 1.0, False, None)
    deadlines.watch(start(pending, 3), 1.0, False, None)
    clock.advance(1.5)
    assert expired == [2, 3]
    clock.advance(9)
    assert expired == [2, 3, 1]


def test_no_timeout_means_none() -> None:
    clock, pending, deadlines, expired = setup(0)
    deadlines.watch_default(start(pending, 1))
    deadlines.watch(start(pending, 2), math.inf, False, None)
    clock.advance(1e9)
    assert expired == [] and clock.armed == 0


def test_progress_restarts_the_clock_up_to_the_hard_maximum() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    call = start(pending, 1)
    deadlines.watch(call, 2.0, True, 5.0)
    for _ in range(3):
        clock.advance(1.5)
        deadlines.progressed(call)
    assert expired == []  # t = 4.5: each progress pushed the timeout back
    clock.advance(0.6)  # t = 5.1: the hard maximum
    assert expired == [1]
    assert deadlines.hard_maximum_reached(call)


def test_reset_without_maximum_keeps_going_while_progress_comes() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    call = start(pending, 1)
    deadlines.watch(call, 2.0, True, None)
    for _ in range(5):
        clock.advance(1.9)
        deadlines.progressed(call)
    assert expired == []
    clock.advance(2.1)
    assert expired == [1]
    assert not deadlines.hard_maximum_reached(call)


def test_reset_without_maximum_still_ends_after_ten_timeouts() -> None:
    # Spec: a client MAY reset the clock on progress but SHOULD enforce a hard maximum.
    clock, pending, deadlines, expired = setup(10.0)
    call = start(pending, 1)
    deadlines.watch(call, 2.0, True, None)
    for _ in range(10):
        clock.advance(1.9)
        deadlines.progressed(call)
    assert expired == []
    clock.advance(1.1)  # 20 s: RESET_MAXIMUM x 2 s, progress or not
    assert expired == [1]
    assert deadlines.hard_maximum_reached(call)


def test_hard_maximum_alone() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    deadlines.watch(start(pending, 1), 0, False, 3.0)
    clock.advance(2.9)
    assert expired == []
    clock.advance(0.2)
    assert expired == [1]


def test_forget_cancels_own_timer_and_close_stops_everything() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    own = start(pending, 1)
    deadlines.watch(own, 2.0, True, None)
    deadlines.forget(own)
    assert own.timer is None
    deadlines.watch_default(start(pending, 2))
    deadlines.close()
    clock.advance(100)
    assert expired == []
    deadlines.watch_default(start(pending, 3))  # closed: never armed again
    clock.advance(100)
    assert expired == []


def test_watchdog_rearms_for_the_next_due_call() -> None:
    clock, pending, deadlines, expired = setup(3.0)
    deadlines.watch_default(start(pending, 1))
    clock.advance(2)
    deadlines.watch_default(start(pending, 2))
    deadlines.watch(start(pending, 3), 4.0, False, None)
    clock.advance(1.5)  # t=3.5: 1 expired
    assert expired == [1]
    clock.advance(1.6)  # t=5.1: 2 expired (2+3)
    assert expired == [1, 2]
    clock.advance(1.0)  # t=6.1: 3 expired (2+4)
    assert expired == [1, 2, 3]


def test_a_late_watchdog_expires_overdue_calls_in_deadline_order() -> None:
    clock, pending, deadlines, expired = setup(10.0)
    deadlines.watch_default(start(pending, 1))  # due at 10
    clock.now += 1
    deadlines.watch(start(pending, 2), 3.0, False, None)  # due at 4
    clock.now += 1
    deadlines.watch_default(start(pending, 3))  # due at 12
    deadlines.watch(start(pending, 4), 5.0, False, None)  # due at 7
    clock.now += 20  # the loop was busy: its one late watchdog run finds all four overdue
    clock.advance(0)
    assert expired == [2, 4, 1, 3]
