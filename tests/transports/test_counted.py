"""transports/counted.py: what a transport received is delivered in order, a message over
1 MiB counted before it is decoded, the transport's other events in their turn."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import wait_for

from mcphost.transports import counted
from mcphost.transports.counted import COUNTED, InOrder, head_of


def big(rid: int, items: int) -> bytes:
    body = b'{"jsonrpc":"2.0","id":%d,"result":{"n":[' % rid + b",".join([b"1"] * items) + b"]}}"
    return body + b" " * max(0, COUNTED + 1 - len(body))  # over 1 MiB whatever the items


class Log:
    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.decoded: list[Any] = []

    def deliver(self, messages: list[bytes | str], decode: Callable[[Any], Any]) -> None:
        self.seen.extend(("message", m[:12]) for m in messages)
        self.decoded.extend(map(decode, messages))

    def refuse(self, message: bytes | str, reason: str) -> None:
        self.seen.append(("refused", head_of(message, 12), reason))


async def test_small_messages_go_at_once_and_what_follows_a_big_one_waits_its_turn() -> None:
    log = Log()
    order = InOrder("s", log.deliver, log.refuse, max_tokens=1_000)
    order.push([b'{"id":1}'])
    order.then(lambda: log.seen.append("end 1"))  # nothing waits: at once
    assert log.seen == [("message", b'{"id":1}'), "end 1"]
    order.push([b'{"id":2}', big(3, 10), b'{"id":4}'])
    order.then(lambda: log.seen.append("end 2"))
    order.push([big(5, 5_000), '{"id":6}'])
    assert order.busy and len(log.seen) == 2  # a batch with a big message goes through the count
    await order.settle(10)
    assert not order.busy
    assert log.seen[2:] == [("message", b'{"id":2}'), ("message", big(3, 10)[:12]), ("message", b'{"id":4}'),
                            "end 2", ("refused", big(5, 1)[:12], log.seen[6][2]), ("message", '{"id":6}')]
    assert "more than 1,000 JSON tokens" in log.seen[6][2] and order.refused == 1


async def test_closing_drops_what_waits_and_a_failing_callback_drops_nothing() -> None:
    log = Log()
    order = InOrder("s", log.deliver, log.refuse)

    def broken() -> None:
        raise RuntimeError("a bug")

    order.push([big(1, 10)])
    order.then(broken)
    order.push([b'{"id":2}'])
    assert await wait_for(lambda: len(log.seen) == 2)
    assert log.seen[1] == ("message", b'{"id":2}')
    order.push([big(3, 10), b'{"id":4}'])
    order.close()
    await asyncio.sleep(0)
    assert len(log.seen) == 2 and not order.busy


async def test_a_big_message_is_decoded_in_slices_and_one_that_is_not_json_raises_when_decoded() -> None:
    log = Log()
    order = InOrder("s", log.deliver, log.refuse)
    good = big(1, 300_000)
    order.push([good, b'{"id":2}'])
    await order.settle(30)
    assert log.decoded == [json.loads(good), {"id": 2}]
    bad = big(3, 300_000).replace(b"1,1,1]", b"1,1,,1]")
    seen: list[Any] = []

    def deliver(messages: list[bytes | str], decode: Callable[[Any], Any]) -> None:
        for message in messages:
            with pytest.raises(ValueError):
                decode(message)
            seen.append(message)

    order = InOrder("s", deliver, log.refuse)
    order.push([bad])
    await order.settle(30)
    assert seen == [bad]


async def test_the_collector_is_held_off_while_big_messages_are_decoded_and_left_as_it_was() -> None:
    log = Log()
    # Python 3.12 starts with some objects frozen: those may be thawed once (0 after).
    frozen = gc.get_freeze_count()
    order = InOrder("s", log.deliver, log.refuse)
    seen: list[bool] = []
    order.push([big(1, 200_000)])
    other = InOrder("t", log.deliver, log.refuse)
    other.push([big(2, 300_000)])  # two at once: the collector comes back after the last
    order.then(lambda: seen.append(gc.isenabled()))
    await order.settle(30)
    await other.settle(30)
    assert seen == [False] and gc.isenabled() and gc.get_freeze_count() in (0, frozen)
    assert [m["id"] for m in log.decoded] == [1, 2]
    gc.disable()  # the application's own choice is kept
    try:
        order.push([big(3, 10)])
        await order.settle(30)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("frozen_by", ["the interpreter", "the application"])
async def test_what_a_big_message_made_is_spliced_old_unless_the_application_froze_objects(
    frozen_by: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The decoded message's objects go to the oldest generation at once (not walked by the
    # next young collection: the stall Python 3.12 showed, which starts with objects frozen);
    # objects an application froze after importing mcphost stay frozen.
    keep = [[i] for i in range(100)]
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        at_import = frozen if frozen_by == "the interpreter" else 0
        monkeypatch.setattr(counted, "_FROZEN_AT_IMPORT", at_import)
        log = Log()
        order = InOrder("s", log.deliver, log.refuse)
        order.push([big(1, 200_000)])
        await order.settle(30)
        assert [m["id"] for m in log.decoded] == [1]
        if frozen_by == "the interpreter":
            assert gc.get_freeze_count() == 0 and gc.get_count()[0] < 1_000
        else:
            assert gc.get_freeze_count() > 0  # nothing thawed: counts only fall as objects die
    finally:
        gc.unfreeze()
        del keep
