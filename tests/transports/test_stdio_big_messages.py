"""One allowed-size message must not freeze the host (issue 21, item 4).

A 47 MB ``tools/list`` of 1,000,000 tools, under the 64 MiB message limit, was decoded and
schema-checked on the event loop in one go: a stall of 4 to 8 s (orjson / the standard
library) for every server, +700 MB, before the 10,000-item bound was looked at. Now a line
over 1 MiB has its JSON tokens counted a slice per loop turn and is refused, undecoded,
past ``max_message_tokens``; a listing's items are counted before any is checked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, LoopLag, fake, wait_for
from sink import Sink

from mcphost import MCPHost
from mcphost._json import MAX_TOKENS, TokenCount, codec
from mcphost.bounds import Bounds
from mcphost.protocol.messages import MessageChecker
from mcphost.transports.stdio import StdioTransport
from mcphost.transports.stdio import transport as stdio_module

pytestmark = pytest.mark.usefixtures("no_leftovers")

SERVER = str(Path(__file__).resolve().parent.parent / "data" / "big_list_server.py")


#: The codecs this Python has (orjson is an optional extra: the main CI run has it).
CODECS = ["orjson", "stdlib"] if importlib.util.find_spec("orjson") is not None else ["stdlib"]


@pytest.fixture(params=CODECS)
def json_codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stdio transport decodes with each codec this Python has."""
    monkeypatch.setattr(stdio_module, "loads", codec(request.param == "orjson")[1])
    yield request.param


async def test_a_million_tool_listing_is_refused_while_counted_and_the_loop_never_stalls() -> None:
    # 50 MB, 7,000,000 tokens: refused after its first million tokens were counted, a slice
    # per loop turn. Measured on a loaded 2-core machine: a worst gap of 30-50 ms (was
    # 4.3 s with orjson, 7.7 s with the standard library), 85 MB peak (was 730 MB). The
    # bound asserted is generous for a loaded CI machine and still 8x under the old stall;
    # it is on the loop's CPU time (helpers.LoopLag), which the machine's scheduling does not
    # inflate (by the clock, a run beside other heavy tests once saw a 0.97 s gap).
    cfg = {"mcpServers": {
        "big": {"command": sys.executable, "args": [SERVER, "1000000"]},
        "fine": fake({"tools": [ECHO_TOOL]}),
    }}
    async with LoopLag() as lag, MCPHost(cfg, require_all=False) as host:
        listing = host.get_tools(include_unavailable=True)
        assert listing["fine"]["state"] == "ready"
        assert listing["big"]["state"] == "failed"
        assert "more than 1,000,000 JSON tokens" in listing["big"]["error"]
        assert "max_message_tokens" in listing["big"]["error"]
        assert (await host.call_tool("fine.echo", {"text": "hi"}))["content"]
    assert lag.worst < 0.5, f"the event loop stalled {lag.worst:.3f} s ({lag.worst_wall:.3f} s by the clock)"


async def test_a_listing_over_the_item_bound_is_refused_before_any_item_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[str] = []
    original = MessageChecker.result

    def result(self: MessageChecker, method: str, value: Any, *, task: bool = False) -> None:
        checked.append(method)
        original(self, method, value, task=task)

    monkeypatch.setattr(MessageChecker, "result", result)
    cfg = {"mcpServers": {"big": {"command": sys.executable, "args": [SERVER, "2000"]}}}
    async with MCPHost(cfg, require_all=False, bounds=Bounds(max_list_items=100)) as host:
        error = host.get_tools(include_unavailable=True)["big"]["error"]
        assert "tools/list lists more than 100 items (the bound is max_list_items)" in error
    assert "initialize" in checked and "tools/list" not in checked


# Writes three messages at once, a 3 MB one (a long string and 40,000 small items) between
# two small ones, then a fourth over the token bound given to the transport, then a fifth.
_WRITER = r"""
import json, sys
big = {"jsonrpc": "2.0", "id": 2, "result": {"text": "x\\\"," * 500_000,
       "items": [{"n": i, "s": "a\"b"} for i in range(40_000)]}}
out = sys.stdout.buffer
out.write(b'{"jsonrpc":"2.0","id":1,"result":{}}\n' + json.dumps(big).encode() + b'\n'
          + b'{"jsonrpc":"2.0","id":3,"result":{}}\n')
out.write(b'{"jsonrpc":"2.0","id":4,"result":{"n":[' + b",".join([b"1"] * 600_000) + b']}}\n')
out.write(b'{"jsonrpc":"2.0","id":5,"result":{}}\n')
out.flush()
sys.stdin.read()
"""


async def test_big_messages_under_the_bound_arrive_decoded_and_in_order(json_codec: str) -> None:
    t = StdioTransport("t", sys.executable, ["-c", _WRITER], env=dict(os.environ), max_message_tokens=500_000)
    sink = Sink()
    t.set_receiver(sink)
    await t.start()
    try:
        assert await wait_for(lambda: len(sink.messages) == 4, timeout=30)
    finally:
        await t.aclose(5)
    assert [m["id"] for m in sink.messages] == [1, 2, 3, 5]
    big = sink.messages[1]["result"]
    assert big["text"] == 'x\\",' * 500_000
    assert big["items"][-1] == {"n": 39_999, "s": 'a"b'}
    assert len(sink.lost) == 1 and sink.lost[0][0] == 4
    assert "more than 500,000 JSON tokens" in sink.lost[0][1]
    assert t.statistics()["too_many_tokens"] == 1


# A listing of 66,600 tools: 999,008 JSON tokens (8.5 MB), just under the default bound.
_JUST_UNDER = r"""
import sys
item = '{"name":"t%d","inputSchema":{"type":"object","properties":{"s":{"type":"string","description":"a \\"b\\" [c], {d}: \\u00e9"}}}}'
tools = ",".join(item % i for i in range(NUMBER)).encode()
sys.stdout.buffer.write(b'{"jsonrpc":"2.0","id":1,"result":{"tools":[' + tools + b']}}\n')
sys.stdout.buffer.flush()
sys.stdin.read()
"""


async def test_a_message_just_under_the_token_bound_is_decoded_in_slices_with_either_codec(json_codec: str) -> None:
    # Decoded in one call, 1,000,000 tokens stalled the loop about 0.2 s (orjson) / 0.7 s
    # (the standard library); now a few thousand members per loop turn (_json.SlicedLoads).
    # Measured on a loaded 2-core machine: a worst gap of 20-25 ms of the loop's CPU time.
    number = 66_600
    writer = _JUST_UNDER.replace("NUMBER", str(number))
    t = StdioTransport("t", sys.executable, ["-c", writer], env=dict(os.environ))
    sink = Sink()
    t.set_receiver(sink)
    async with LoopLag() as lag:
        await t.start()
        try:
            assert await wait_for(lambda: len(sink.messages) == 1, timeout=60)
        finally:
            await t.aclose(5)
    assert lag.worst < 0.1, f"the event loop stalled {lag.worst:.3f} s ({lag.worst_wall:.3f} s by the clock)"
    tools = sink.messages[0]["result"]["tools"]
    assert len(tools) == number and tools[-1]["name"] == f"t{number - 1}"
    assert tools[7]["inputSchema"]["properties"]["s"]["description"] == 'a "b" [c], {d}: \u00e9'
    assert not sink.lost


def _tokens(value: Any) -> int:
    """Tokens as TokenCount defines them, from the decoded value."""
    if isinstance(value, dict):
        return 1 + 2 * len(value) - (1 if value else 0) + sum(_tokens(v) for v in value.values())
    if isinstance(value, list):
        return 1 + max(len(value) - 1, 0) + sum(_tokens(v) for v in value)
    return 0


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 4 else 3)
    if kind == 0:
        return rng.choice([0, -1.5, True, None, 12345678901234567890])
    if kind in (1, 2):
        return "".join(rng.choice('ab"\\,:[]{} \u00e9\n') for _ in range(rng.randrange(8)))
    if kind == 3:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_random_value(rng, 9) if rng.random() < 0.5 else "k" + str(i): _random_value(rng, depth + 1)
            for i in range(rng.randrange(4))}


def test_the_token_count_is_the_same_whatever_the_slices() -> None:
    rng = random.Random(21)
    for _ in range(300):
        value = _random_value(rng)
        if isinstance(value, dict):
            value = {str(k): v for k, v in value.items()}
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8")
        expected = _tokens(json.loads(text))
        for size in (1, 2, 3, 7, len(text) + 1):
            for data in (text, text.decode("utf-8")):  # bytes, or text a framing decoded already
                counter = TokenCount(data)
                while not counter.done:
                    counter.step(size)
                assert counter.tokens == expected, (data, size)


def test_the_default_bound_admits_a_full_listing_of_ordinary_tools() -> None:
    # 10,000 tools (the listing bound) shaped like ECHO_TOOL fit well under the token bound.
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [ECHO_TOOL] * 10_000}}).encode()
    counter = TokenCount(line)
    while not counter.done:
        counter.step()
    assert counter.tokens < MAX_TOKENS / 5
