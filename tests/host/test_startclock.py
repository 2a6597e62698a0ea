"""The start-up clock that stops while a person logs in (``mcphost.host.startclock``)."""

from __future__ import annotations

import asyncio

import pytest

from mcphost.host.startclock import StartClocks


async def test_the_clock_stops_during_the_user_step_and_runs_after() -> None:
    clocks = StartClocks()
    stepped = asyncio.Event()
    release = asyncio.Event()

    async def start() -> str:
        clocks.user_step("s", True)
        stepped.set()
        await release.wait()
        clocks.user_step("s", False)
        return "ready"

    run = asyncio.ensure_future(clocks.run("s", start(), 0.05))
    await stepped.wait()
    await asyncio.sleep(0.2)  # four times the timeout, with the clock stopped
    assert not run.done()
    release.set()
    assert await run == "ready"
    assert clocks.paused("s") >= 0.2


async def test_the_time_outside_the_user_step_is_still_bounded() -> None:
    clocks = StartClocks()
    cancelled = asyncio.Event()

    async def hang() -> None:
        clocks.user_step("s", True)
        clocks.user_step("s", False)
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    with pytest.raises(asyncio.TimeoutError):
        await clocks.run("s", hang(), 0.05)
    assert cancelled.is_set()  # the work is cancelled, as asyncio.wait_for does
    clocks.user_step("s", True)  # no start running: nothing to stop
    assert clocks.paused("s") < 0.05


async def test_errors_and_cancellation_pass_through() -> None:
    clocks = StartClocks()

    async def fail() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await clocks.run("s", fail(), 1.0)
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hang() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    outer = asyncio.ensure_future(clocks.run("s", hang(), 30.0))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert cancelled.is_set()
