"""The client side of MCP over the fake server: handlers, notifications, refresh, progress.

Every test runs over memory, stdio, Streamable HTTP and legacy HTTP+SSE (the ``new_host``
fixture, ``tests/transport_matrix.py``)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for
from transport_matrix import HostMaker

from mcphost.errors import TimeoutError
from mcphost.transports.http import StreamableHttpTransport
from mcphost.transports.memory import MemoryTransport
from mcphost.transports.sse import SseTransport
from mcphost.transports.stdio import StdioTransport

pytestmark = pytest.mark.usefixtures("no_leftovers")


OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


SAMPLE = {"method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}}
ELICIT = {"method": "elicitation/create",
          "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}}


async def test_sampling_and_elicitation_handlers_and_capabilities(new_host: HostMaker, tmp_path: Path) -> None:
    cfg = fake_config(a=fake({"tools": [tool("sample", request=SAMPLE), tool("elicit", request=ELICIT)]}))
    host = new_host(cfg)
    seen: list[Any] = []

    async def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        seen.append(("sampling", server, params["maxTokens"]))
        return {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}

    def elicitation(server: str, params: dict[str, Any]) -> dict[str, Any]:
        seen.append(("elicitation", server, params["message"]))
        return {"action": "accept", "content": {"n": "Ada"}}

    host.on_sampling(sampling)
    host.on_elicitation(elicitation, url=True)
    async with host:
        out = await host.call_tool("a.sample", {})
        assert out["structuredContent"]["response"]["model"] == "m"
        out = await host.call_tool("a.elicit", {})
        assert out["structuredContent"]["response"] == {"action": "accept", "content": {"n": "Ada"}}
        caps = host.servers["a"].session.client_caps
        assert caps["sampling"] == {}
        assert caps["elicitation"] == {"form": {}, "url": {}}
    assert seen == [("sampling", "a", 10), ("elicitation", "a", "name?")]


async def test_no_elicitation_before_2025_06_18(new_host: HostMaker) -> None:
    cfg = fake_config(a=fake({"protocolVersion": "2025-03-26", "tools": [tool("elicit", request=ELICIT)]}))
    host = new_host(cfg)
    host.on_elicitation(lambda s, p: {"action": "decline"})
    async with host:
        out = await host.call_tool("a.elicit", {})
        assert out["structuredContent"]["error"]["code"] == -32601
        assert "elicitation" not in host.servers["a"].session.client_caps


async def test_handler_that_raises_sends_its_message(new_host: HostMaker) -> None:
    cfg = fake_config(a=fake({"tools": [tool("sample", request=SAMPLE)]}))
    host = new_host(cfg)

    def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("user rejected the request")

    host.on_sampling(sampling)
    async with host:
        out = await host.call_tool("a.sample", {})
        error = out["structuredContent"]["error"]
        assert error["code"] == -32603
        assert error["message"] == "user rejected the request"
        assert "Traceback" not in str(error)


async def test_server_requests_are_answered_concurrently(new_host: HostMaker) -> None:
    # Two sampling requests: the first blocks until the second has been answered.
    cfg = fake_config(a=fake({"tools": [tool("two", request=[SAMPLE, SAMPLE])]}))
    host = new_host(cfg)
    second_done = asyncio.Event()
    calls = 0

    async def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.wait_for(second_done.wait(), 10)
        else:
            second_done.set()
        return {"role": "assistant", "content": {"type": "text", "text": str(calls)}, "model": "m"}

    host.on_sampling(sampling)
    async with host:
        out = await host.call_tool("a.two", {}, timeout=20)
        assert not out.get("isError")
        assert calls == 2


async def test_logging_set_level_and_on_log(new_host: HostMaker, caplog: pytest.LogCaptureFixture) -> None:
    logs = [{"level": "debug", "data": "d"}, {"level": "error", "data": "boom"}]
    cfg = fake_config(a=fake({"tools": [tool("talk", log=logs)]}))
    received: list[Any] = []
    async with new_host(cfg) as host:
        host.on_log(lambda server, params: received.append((server, params["level"], params["data"])))
        await host.set_log_level("a", "error")
        with caplog.at_level(logging.DEBUG, logger="mcphost.server.a"):
            await host.call_tool("a.talk", {})
            assert await wait_for(lambda: len(received) >= 1)
        assert received == [("a", "error", "boom")]
        assert any(r.levelno == logging.ERROR and r.getMessage() == "boom" for r in caplog.records)
        with pytest.raises(ValueError, match="unknown log level"):
            await host.set_log_level(None, "loud")


async def test_progress_per_call_and_global(new_host: HostMaker) -> None:
    cfg = fake_config(a=fake({"tools": [tool("work", progress=3)]}))
    per_call: list[float] = []
    everywhere: list[str] = []
    async with new_host(cfg) as host:
        host.on_progress(lambda server, params: everywhere.append(server))
        out = await host.call_tool("a.work", {}, progress=lambda p: per_call.append(p["progress"]))
        assert not out.get("isError")
        assert per_call == [1, 2, 3]
        assert await wait_for(lambda: len(everywhere) == 3)


async def test_progress_resets_timeout_and_hard_maximum_fires(new_host: HostMaker) -> None:
    spec = {"tools": [tool("steady", progress=6, progressInterval=0.1)]}
    cfg = fake_config(a=fake(spec))
    async with new_host(cfg) as host:
        # 6 x 0.1 s of work with a 0.3 s timeout: succeeds only because progress resets it.
        out = await host.call_tool("a.steady", {}, timeout=0.3, reset_timeout_on_progress=True,
                                   progress=lambda p: None)
        assert not out.get("isError")
        with pytest.raises(TimeoutError, match="hard maximum"):
            await host.call_tool("a.steady", {}, timeout=0.3, reset_timeout_on_progress=True,
                                 max_timeout=0.35, progress=lambda p: None)


async def test_list_changed_burst_coalesces_into_one_refresh(new_host: HostMaker) -> None:
    burst = [{"method": "notifications/tools/list_changed"}] * 5
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "notifyOnInitialized": burst}))
    events: list[Any] = []
    host = new_host(cfg)
    host.on_event(lambda e: events.append(e) if e["type"] == "capabilities_changed" else None)
    async with host:
        assert await wait_for(lambda: len(events) >= 1)
        # Any (wrong) extra refresh shows up once every notification of the burst has been
        # read and every refresh task they started has finished.
        assert await wait_for(lambda: host.get_metrics()["a"]["connection"]["notifications"] >= 5)
        handle = host.servers["a"]

        def refreshing() -> bool:
            if handle.refresher is not None and not handle.refresher.done():
                return True
            return any(task.get_name() == "mcphost-refresh-a" and not task.done()
                       for task in asyncio.all_tasks())

        assert await wait_for(lambda: not refreshing())
        assert len(events) == 1
        assert events[0]["data"] == ["tools"]


async def test_mutation_refreshes_registry(new_host: HostMaker) -> None:
    new_tools = [{"name": "fresh", "inputSchema": OBJ}]
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL, tool("change", mutate={"tools": new_tools})]}))
    async with new_host(cfg) as host:
        changed = asyncio.Event()
        host.on_event(lambda e: changed.set() if e["type"] == "capabilities_changed" else None)
        await host.call_tool("a.change", {})
        await asyncio.wait_for(changed.wait(), 10)
        assert [t["name"] for t in host.get_tools()["a"]["tools"]] == ["fresh"]
        assert (await host.call_tool("a.fresh", {}))["content"]


async def test_subscribe_and_resource_updated_event(new_host: HostMaker) -> None:
    spec = {"resources": [{"uri": "mem://x", "name": "x", "text": "t"}], "updateOnSubscribe": True}
    cfg = fake_config(a=fake(spec))
    async with new_host(cfg) as host:
        updated = asyncio.Event()
        host.on_event(lambda e: updated.set() if e["type"] == "resource_updated" else None)
        await host.subscribe_resource("mem://x")
        await asyncio.wait_for(updated.wait(), 10)
        await host.unsubscribe_resource("mem://x")


async def test_completion(new_host: HostMaker) -> None:
    spec = {"prompts": [{"name": "p", "arguments": [{"name": "city"}], "messages": []}],
            "completions": {"p": {"city": ["Paris", "Prague", "Rome"]}}}
    async with new_host(fake_config(a=fake(spec))) as host:
        out = await host.complete({"type": "ref/prompt", "name": "a.p"}, {"name": "city", "value": "P"})
        assert out["values"] == ["Paris", "Prague"]


async def test_set_roots_notifies_servers(new_host: HostMaker, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("roots", request={"method": "roots/list"})], "record": str(record)}))
    async with new_host(cfg, roots=[]) as host:  # roots are declared at start, even empty
        await host.set_roots([str(tmp_path)])
        assert await wait_for(lambda: "notifications/roots/list_changed" in record.read_text())
        out = await host.call_tool("a.roots", {})
        assert out["structuredContent"]["response"]["roots"][0]["uri"] == tmp_path.as_uri()


async def test_roots_are_declared_only_when_given(new_host: HostMaker) -> None:
    from mcphost.errors import UsageError

    cfg = fake_config(a=fake({"tools": [tool("roots", request={"method": "roots/list"})]}))
    async with new_host(cfg) as host:
        assert "roots" not in host.servers["a"].session.client_caps  # type: ignore[union-attr]
        out = await host.call_tool("a.roots", {})
        assert out["structuredContent"]["error"]["code"] == -32601  # roots/list refused
        with pytest.raises(UsageError, match="roots were not declared"):
            await host.set_roots(["/tmp"])
    async with new_host(cfg, roots=[]) as host:
        assert "roots" in host.servers["a"].session.client_caps  # type: ignore[union-attr]


async def test_server_cancels_its_own_request(new_host: HostMaker, tmp_path: Path) -> None:
    # The server asks for sampling, then cancels it: the handler task is cancelled.
    started = asyncio.Event()
    cancelled = asyncio.Event()
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("ask", request=SAMPLE)], "record": str(record)}))
    host = new_host(cfg)

    async def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    host.on_sampling(sampling)
    async with host:
        task = asyncio.ensure_future(host.call_tool("a.ask", {}, timeout=30))
        # Cancel only once the handler runs: a cancel that lands before it has started
        # ends the request without ever running it, and then there is nothing to see.
        await asyncio.wait_for(started.wait(), 10)
        # The fake server records each request it sends before sending it.
        sent = [json.loads(line) for line in record.read_text().splitlines()]
        rid = next(e["id"] for e in sent if e.get("event") == "request")
        handle = host.servers["a"]
        assert handle.session is not None
        # Deliver the server's cancellation as the transport would.
        handle.session.peer.on_messages([{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                          "params": {"requestId": rid}}])
        await asyncio.wait_for(cancelled.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


TASK_SPEC = {
    "tasks": True,
    "taskPollInterval": 20,
    "taskStatusNotifications": True,
    "tools": [
        {"name": "slow", "inputSchema": OBJ, "execution": {"taskSupport": "optional"},
         "behavior": {"delay": 0.2, "echo": True}},
        {"name": "must", "inputSchema": OBJ, "execution": {"taskSupport": "required"},
         "behavior": {"echo": True}},
        {"name": "fails", "inputSchema": OBJ, "execution": {"taskSupport": "optional"},
         "behavior": {"error": {"code": -32000, "message": "task broke"}}},
        {"name": "forever", "inputSchema": OBJ, "execution": {"taskSupport": "optional"},
         "behavior": {"hang": True}},
    ],
}


async def test_a_finished_task_keeps_its_result_through_shutdown(new_host: HostMaker) -> None:
    # The server says "completed" and then takes its time over tasks/result: a host shut
    # down in that gap waits for the result instead of losing it.
    spec = {**TASK_SPEC, "taskStatusNotifications": False, "taskResultDelay": 0.5}
    host = new_host(fake_config(a=fake(spec)))
    async with host:
        handle = await host.call_tool("a.must", {"x": 1}, task=True)
        assert await wait_for(lambda: handle.done)
        assert handle.fetching  # over, and its result on the way
    result = await handle
    assert result["content"] and not handle.fetching
    assert host.get_tools()["a"]["state"] == "stopped"


async def test_tasks_complete_fail_and_cancel(new_host: HostMaker) -> None:
    from mcphost.client.tasks import TaskHandle
    from mcphost.errors import ServerError

    async with new_host(fake_config(a=fake(TASK_SPEC))) as host:
        handle = await host.call_tool("a.slow", {"x": 1}, task=True)
        assert isinstance(handle, TaskHandle)
        assert handle.status == "working"
        result = await handle
        assert "\"x\"" in result["content"][0]["text"]
        assert handle.status == "completed"

        # A task-only tool called plainly runs as a task followed to its end: a result.
        plain = await host.call_tool("a.must", {})
        assert not isinstance(plain, TaskHandle) and plain["content"]
        required = await host.call_tool("a.must", {}, task=True)
        assert isinstance(required, TaskHandle)
        assert (await required)["content"]

        failing = await host.call_tool("a.fails", {}, task=True)
        with pytest.raises(ServerError, match="task broke"):
            await failing
        assert failing.status == "failed"

        forever = await host.call_tool("a.forever", {}, task=True)
        task = await forever.cancel()
        assert task["status"] == "cancelled"
        listed = await host.list_tasks("a")
        assert {t["taskId"] for t in listed} >= {handle.task_id, forever.task_id}


async def test_task_is_followed_without_await_and_ends_with_the_host(
    new_host: HostMaker, caplog: pytest.LogCaptureFixture,
) -> None:
    from mcphost.errors import ServerUnavailableError

    async with new_host(fake_config(a=fake(TASK_SPEC))) as host:
        done = await host.call_tool("a.slow", {"x": 2}, task=True)
        forever = await host.call_tool("a.forever", {}, task=True)
        # Nobody awaits yet: the handle follows the task by itself, to its result (a
        # "completed" status arrives before the handle has fetched tasks/result).
        assert await wait_for(lambda: done.follow().done(), timeout=5)
        assert done.status == "completed"
        assert forever.status == "working"
    # The host is gone: the unfinished task reports why, and nothing was logged as an
    # unretrieved exception.
    with pytest.raises(ServerUnavailableError, match="gone|shut down"):
        await asyncio.wait_for(forever.result(), 5)
    assert "never retrieved" not in caplog.text
    assert "\"x\"" in (await done)["content"][0]["text"]


async def test_tasks_need_2025_11_25(new_host: HostMaker) -> None:
    from mcphost.errors import RoutingError

    spec = {**TASK_SPEC, "protocolVersion": "2025-06-18"}
    async with new_host(fake_config(a=fake(spec))) as host:
        with pytest.raises(RoutingError, match="2025-11-25"):
            await host.call_tool("a.slow", {}, task=True)


async def test_each_run_uses_the_transport_it_names(new_host: HostMaker) -> None:
    async with new_host(fake_config(a=fake({"tools": [ECHO_TOOL]}))) as host:
        stats = host.get_metrics()["a"]["transport"]
        assert (host.servers["a"].pid() is None) == (new_host.transport != "stdio")
        kinds = {"memory": MemoryTransport, "stdio": StdioTransport, "http": StreamableHttpTransport,
                 "sse": SseTransport}
        assert isinstance(host.servers["a"].transport, kinds[new_host.transport])
        assert stats["messages_out"] >= 3 and (await host.call_tool("a.echo", {}))["content"]
