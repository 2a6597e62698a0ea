"""2,000 mutated server messages: each handled or reported as that server's error; no call
hangs, nothing escapes the tree, and the host keeps serving the other server."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from scripted import Script, scripted_host

from mcphost import MCPHostError

TOOL = {"name": "t", "inputSchema": {"type": "object"}}
ODD = [None, 0, -1, 2**70, 1.5, "", "x" * 300, [], {}, True, [1, {}], {"a": [None]}, "\x1b[2J", "2.0"]


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    if isinstance(value, dict) and value and depth < 5:
        out = dict(value)
        key = rng.choice(list(out))
        roll = rng.randrange(5)
        if roll == 0:
            del out[key]
        elif roll == 1:
            out[key] = rng.choice(ODD)
        elif roll == 2:
            out[rng.choice(["id", "method", "result", "error", "params", "jsonrpc", "extra"])] = rng.choice(ODD)
        else:
            out[key] = mutate(rng, out[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 5:
        out = list(value)
        i = rng.randrange(len(out))
        out[i] = mutate(rng, out[i], depth + 1)
        return out
    return rng.choice(ODD)


def samples(rid: int) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}},
        {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "no"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": rid, "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "id": "s1", "method": "ping"},
        {"jsonrpc": "2.0", "id": 9, "method": "roots/list", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
    ]


async def test_mutated_messages_are_handled_or_reported() -> None:
    rng = random.Random(424242)
    fuzzed = Script({"tools/list": lambda p: {"tools": [TOOL]}})
    steady = Script({"tools/list": lambda p: {"tools": [TOOL]},
                     "tools/call": lambda p: {"content": [{"type": "text", "text": "steady"}]}})
    sent = 0

    def answer(params: dict[str, Any]) -> Any:
        return {"content": [{"type": "text", "text": "ok"}]}

    fuzzed.methods["tools/call"] = answer
    fuzzed.manual_calls = True
    async with scripted_host({"fuzzed": fuzzed, "steady": steady}, validate_messages="strict",
                             unavailable_after_timeouts=0) as host:
        outcomes = {"ok": 0, "error": 0}
        for round_ in range(200):
            call = asyncio.ensure_future(host.call_tool("fuzzed.t", {}, timeout=5))
            # Wait until the call is out, then answer it ourselves, wrongly most of the time.
            request = await fuzzed.unseen_request("tools/call")
            for _ in range(9):
                fuzzed.send(mutate(rng, rng.choice(samples(request["id"]))))
                sent += 1
            fuzzed.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})  # unblock
            sent += 1
            try:
                await asyncio.wait_for(call, 10)  # never hangs
                outcomes["ok"] += 1
            except MCPHostError:
                outcomes["error"] += 1
            if round_ % 50 == 0:
                assert (await host.call_tool("steady.t", {}))["content"][0]["text"] == "steady"
        assert sent == 2000
        assert outcomes["ok"] > 0 and outcomes["error"] > 0
        assert (await host.call_tool("steady.t", {}))["content"][0]["text"] == "steady"
        assert host.get_tools()["fuzzed"]["state"] == "ready"
        assert host.get_metrics()["fuzzed"]["connection"]["protocol_errors"] > 0
