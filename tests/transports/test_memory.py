"""The in-memory transport pair: order, decoding, a later loop turn, the ends."""

from __future__ import annotations

import asyncio

import pytest
from helpers import wait_for
from sink import Sink

from mcphost.transports.base import Gone
from mcphost.transports.memory import MemoryTransport, memory_pair


async def test_messages_arrive_decoded_in_order_in_a_later_turn() -> None:
    a, b = memory_pair()
    sink = Sink(strict=True)
    b.set_receiver(sink)
    for i in range(3):
        a.send(b'{"n":%d}' % i)
    assert sink.messages == []  # never inside the sender's call
    assert await wait_for(lambda: len(sink.messages) == 3)
    assert sink.messages == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert a.statistics() == {"bytes_in": 0, "bytes_out": 21, "messages_in": 0, "messages_out": 3}
    assert b.statistics()["messages_in"] == 3


async def test_messages_before_the_receiver_are_kept() -> None:
    a, b = memory_pair()
    a.send(b"[1]")
    await asyncio.sleep(0)
    sink = Sink(strict=True)
    b.set_receiver(sink)
    assert sink.messages == [[1]]


async def test_closing_one_end_tells_the_other_once() -> None:
    a, b = memory_pair()
    sink = Sink(strict=True)
    b.set_receiver(sink)
    gone = await a.aclose(1)
    assert isinstance(gone, Gone)
    assert await wait_for(lambda: len(sink.gone) == 1)
    assert sink.gone[0].reason == "peer closed the connection"
    a.send(b"{}")  # dropped, no error
    await a.aclose(1)
    assert len(sink.gone) == 1


async def test_peer_gone_carries_the_reason() -> None:
    a, b = memory_pair()
    sink = Sink(strict=True)
    a.set_receiver(sink)
    b.peer_gone("crashed")
    assert await wait_for(lambda: len(sink.gone) == 1)
    assert sink.gone[0].reason == "crashed"


async def test_an_end_without_a_peer_cannot_start() -> None:
    with pytest.raises(RuntimeError, match="no peer"):
        await MemoryTransport().start()
