"""transports/counted.py: what a transport received is delivered in order, a message over
1 MiB counted before it is decoded, the transport's other events in their turn."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers import wait_for

from mcphost.transports.counted import COUNTED, InOrder, head_of


def big(rid: int, items: int) -> bytes:
    body = b'{"jsonrpc":"2.0","id":%d,"result":{"n":[' % rid + b",".join([b"1"] * items) + b"]}}"
    return body + b" " * max(0, COUNTED + 1 - len(body))  # over 1 MiB whatever the items


class Log:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def deliver(self, messages: list[bytes | str]) -> None:
        self.seen.extend(("message", m[:12]) for m in messages)

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
