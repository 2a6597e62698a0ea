"""Task-augmented requests from servers (protocol 2025-11-25): the host runs them as tasks.

A fake server asks for ``sampling/createMessage`` or ``elicitation/create`` with
``params.task``, then follows the task the way the spec says a requestor does
(``tasks/get`` until terminal, ``tasks/result``), optionally cancelling or listing it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fake, fake_config, wait_for

from mcphost import MCPHost
from mcphost.errors import ServerUnavailableError
from mcphost.protocol.legacy import client_capabilities

OBJ = {"type": "object"}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
ELICIT = {"message": "Name?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
REPLY = {"role": "assistant", "content": {"type": "text", "text": "done"}, "model": "m"}
RELATED = "io.modelcontextprotocol/related-task"


def tool(name: str, request_task: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": {"requestTask": request_task}}


def host_with(*tools: dict[str, Any], version: str | None = None, record: Path | None = None) -> MCPHost:
    spec: dict[str, Any] = {"tools": list(tools)}
    if version:
        spec["protocolVersion"] = version
    if record is not None:
        spec["record"] = str(record)
    return MCPHost(fake_config(a=fake(spec)), validate_messages="strict")


def received(record: Path) -> list[Any]:
    """What the fake server has received so far (its record file)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


async def run(host: MCPHost, name: str) -> dict[str, Any]:
    result = await host.call_tool(f"a.{name}", {}, timeout=20)
    structured: dict[str, Any] = result["structuredContent"]
    return structured


def test_capability_declared_per_handler_and_version() -> None:
    caps = client_capabilities("2025-11-25", sampling=True, elicitation_form=True, task_requests=True)
    assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {
        "sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}
    only_sampling = client_capabilities("2025-11-25", sampling=True, task_requests=True)
    assert only_sampling["tasks"]["requests"] == {"sampling": {"createMessage": {}}}
    assert "tasks" not in client_capabilities("2025-11-25", task_requests=True)  # nothing to run
    assert "tasks" not in client_capabilities("2025-06-18", sampling=True, task_requests=True)


async def test_sampling_runs_as_a_task_the_server_follows(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    started = asyncio.Event()
    release = asyncio.Event()

    async def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await release.wait()
        return REPLY

    host = host_with(tool("ask", {"method": "sampling/createMessage", "params": SAMPLE,
                                  "ttl": 60000, "list": True}), record=record)
    host.on_sampling(sampling)
    async with host:
        pending = asyncio.ensure_future(run(host, "ask"))
        await asyncio.wait_for(started.wait(), 5)
        # The server polls meanwhile: the handler is released once the server has been
        # told (a tasks/get answer) that the task is "working".
        assert await wait_for(lambda: any(
            isinstance(m.get("result"), dict) and m["result"].get("status") == "working"
            for m in received(record)))
        release.set()
        out = await pending
    created = out["created"]["response"]["task"]
    assert created["status"] == "working" and created["ttl"] == 60000
    assert isinstance(created["pollInterval"], int)
    assert out["statuses"][0] == "working" and out["statuses"][-1] == "completed"
    listed = out["list"]["response"]["tasks"]
    assert [t["taskId"] for t in listed] == [created["taskId"]]
    outcome = out["outcome"]["response"]
    assert outcome["content"] == REPLY["content"]
    assert outcome["_meta"][RELATED] == {"taskId": created["taskId"]}


async def test_a_failing_handler_fails_the_task_with_its_error() -> None:
    def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model unavailable")

    host = host_with(tool("ask", {"method": "sampling/createMessage", "params": SAMPLE}))
    host.on_sampling(sampling)
    async with host:
        out = await run(host, "ask")
    assert out["statuses"][-1] == "failed"
    assert out["outcome"]["error"]["message"] == "model unavailable"


def never_done(cancelled: asyncio.Event, started: asyncio.Event | None = None) -> Any:
    """A handler that waits until it is cancelled, and says so (and says it started)."""

    async def handler(server: str, params: dict[str, Any]) -> dict[str, Any]:
        if started is not None:
            started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("not cancelled")

    return handler


async def test_the_server_can_cancel_a_task() -> None:
    cancelled = asyncio.Event()
    host = host_with(tool("ask", {"method": "elicitation/create", "params": ELICIT,
                                  "cancel": True}))
    host.on_elicitation(never_done(cancelled))
    async with host:
        out = await run(host, "ask")
        await asyncio.wait_for(cancelled.wait(), 5)  # the handler itself was stopped
    assert out["cancel"]["response"]["status"] == "cancelled"
    assert out["statuses"] == ["cancelled"]
    assert "cancelled" in out["outcome"]["error"]["message"]


async def test_unknown_task_and_no_capability() -> None:
    host = host_with(tool("ask", {"method": "sampling/createMessage", "params": SAMPLE}),
                     {"name": "probe", "inputSchema": OBJ, "behavior": {
                         "request": {"method": "tasks/get", "params": {"taskId": "nope"}}}})
    host.on_sampling(lambda server, params: REPLY)
    async with host:
        probe = (await host.call_tool("a.probe", {}))["structuredContent"]
    assert probe["error"]["code"] == -32602 and "nope" in probe["error"]["message"]

    # Before 2025-11-25 there are no tasks: the request is answered directly.
    old = host_with(tool("ask", {"method": "sampling/createMessage", "params": SAMPLE}),
                    version="2025-06-18")
    old.on_sampling(lambda server, params: REPLY)
    async with old:
        out = await run(old, "ask")
    assert out["created"]["response"] == REPLY


@pytest.mark.parametrize("mode", ["strict", "lenient"])
async def test_a_task_left_running_ends_with_the_host(mode: str) -> None:
    stopped = asyncio.Event()
    running = asyncio.Event()
    spec = {"tools": [tool("ask", {"method": "sampling/createMessage", "params": SAMPLE})]}
    host = MCPHost(fake_config(a=fake(spec)), validate_messages=mode, shutdown_timeout=2)
    host.on_sampling(never_done(stopped, running))
    async with host:
        call = asyncio.ensure_future(host.call_tool("a.ask", {}))
        await asyncio.wait_for(running.wait(), 10)  # the task runs when the host ends
    await asyncio.wait_for(stopped.wait(), 5)
    with pytest.raises(ServerUnavailableError, match="shut down"):
        await call


async def test_store_pages_expires_and_closes() -> None:
    from mcphost.client.served_tasks import ClientTasks
    from mcphost.protocol.jsonrpc import RpcError

    sent: list[tuple[str, dict[str, Any]]] = []
    store = ClientTasks("s", lambda method, params: sent.append((method, params)))
    gate = asyncio.Event()

    async def wait() -> dict[str, Any]:
        await gate.wait()
        return REPLY

    ids = [store.create("sampling/createMessage", {"task": {}}, wait)["task"]["taskId"]
           for _ in range(150)]
    first = await store.handle("tasks/list", {})
    assert len(first["tasks"]) == 100 and first["nextCursor"] == "100"
    rest = await store.handle("tasks/list", {"cursor": first["nextCursor"]})
    assert [t["taskId"] for t in first["tasks"] + rest["tasks"]] == ids
    assert "nextCursor" not in rest
    with pytest.raises(RpcError, match="cursor"):
        await store.handle("tasks/list", {"cursor": "x"})
    gate.set()
    done = await store.handle("tasks/result", {"taskId": ids[0]})
    assert done["_meta"][RELATED] == {"taskId": ids[0]}
    final = await store.handle("tasks/get", {"taskId": ids[0]})
    assert final["status"] == "completed"
    assert ("notifications/tasks/status", final) in sent

    short = store.create("sampling/createMessage", {"task": {"ttl": 30}}, wait)["task"]
    assert short["ttl"] == 30
    # A task still running when its (longer) ttl passes is cancelled: by then the short
    # one, completed, has expired too.
    expired = asyncio.Event()
    longer = store.create("sampling/createMessage", {"task": {"ttl": 60}},
                          lambda: never_done(expired)("s", {}))["task"]
    await asyncio.wait_for(expired.wait(), 5)
    for gone in (short, longer):
        with pytest.raises(RpcError, match="unknown task"):
            await store.handle("tasks/get", {"taskId": gone["taskId"]})

    stuck = asyncio.Event()
    running = asyncio.Event()
    store.create("sampling/createMessage", {"task": {}}, lambda: never_done(stuck, running)("s", {}))
    await asyncio.wait_for(running.wait(), 2)
    store.close()
    await asyncio.wait_for(stuck.wait(), 2)
    with pytest.raises(RpcError, match="shutting down"):
        store.create("sampling/createMessage", {"task": {}}, wait)
