"""Tasks served by the gateway (``mcphost/gateway/tasks.py``): mcphost's own client
(``TaskHandle``) in both eras, with the task made by the server behind the gateway (both
eras of it) or run by the gateway itself; tasks of one client hidden from another; the
bounds. The official SDK client has no tasks support to test with (``mcp`` 2.3)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake
from test_gateway_http import post, raw

from mcphost import MCPHost, ServerError
from mcphost.client.tasks import TaskHandle
from mcphost.gateway.app import Gateway
from mcphost.gateway.http import HttpGateway, HttpOptions
from mcphost.gateway.tasks import GatewayTasks
from mcphost.protocol.modern import META_CAPABILITIES, META_VERSION, TASKS_EXTENSION
from mcphost.server.tasks import RELATED_TASK, TaskLimits, TaskStore
from mcphost.testing import package_root
from mcphost.transports.memory import memory_pair

OBJ: dict[str, Any] = {"type": "object"}
CONFIRM = {"confirm": {"method": "elicitation/create", "params": {
    "message": "Sure?", "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}}}}}


def task_tool(name: str, support: str, behavior: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "execution": {"taskSupport": support}, "behavior": behavior}


def tasky(era: str) -> list[dict[str, Any]]:
    """Tools of a server that makes tasks itself (both eras of the fake server)."""
    # A question in a task: an input round in the 2026-07-28 era, a request in 2025-11-25.
    asking = {"inputRounds": [CONFIRM]} if era == "modern" else {"request": CONFIRM["confirm"]}
    return [
        ECHO_TOOL,
        task_tool("compute", "optional", {"delayArg": "seconds", "template": "Computed after {seconds} seconds"}),
        task_tool("fail", "required", {"isError": "The job failed"}),
        task_tool("crash", "required", {"error": {"code": -32603, "message": "Internal error in the job"}}),
        task_tool("confirm", "optional", asking),
        task_tool("huge", "optional", {"huge": 1000}),
    ]


#: Tools of a server that knows no tasks: the gateway runs them.
PLAIN = [ECHO_TOOL, {"name": "wait", "inputSchema": OBJ,
                     "behavior": {"delayArg": "seconds", "template": "Waited {seconds} seconds"}}]


def server(era: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    entry = fake({"tools": tools})
    if era == "modern":
        entry = {**entry, "args": [*entry["args"], "--era", "modern"], "protocol": "modern"}
    return entry


def confirmed(_server: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"confirm": True}}


@contextlib.asynccontextmanager
async def client_of(gateway: Gateway, protocol: str) -> AsyncIterator[MCPHost]:
    ours, theirs = memory_pair("gateway")
    entry: dict[str, Any] = {"command": "unused"} if protocol == "legacy" else {"command": "unused", "protocol": protocol}
    client = MCPHost({"mcpServers": {"gw": entry}}, transport_factory=lambda _cfg: ours, handle_signals=False)
    client.on_elicitation(confirmed)
    gateway.connect(theirs)
    async with client:
        yield client


@pytest.mark.parametrize("downstream", ["modern", "legacy"])
@pytest.mark.parametrize("protocol", ["modern", "legacy"])
async def test_the_servers_own_task_is_followed_through_the_gateway(protocol: str, downstream: str) -> None:
    async with Gateway({"mcpServers": {"t": server(downstream, tasky(downstream))}}, handle_signals=False) as gateway, \
            client_of(gateway, protocol) as client:
        statuses: list[str] = []
        client.on_event(lambda event: statuses.append(event["data"]["status"])
                        if event.get("type") == "task_status" else None)
        computing = await client.call_tool("gw.t.compute", {"seconds": 0.1}, task=True)
        assert isinstance(computing, TaskHandle) and len(computing.task_id) >= 32  # the gateway's own id
        computed = await computing
        assert computed["content"][0]["text"] == "Computed after 0.1 seconds"
        assert computing.status == "completed"
        # The result is marked with the gateway's task (2025-11-25), never the server's.
        marked = (computed.get("_meta") or {}).get(RELATED_TASK)
        assert marked == (None if protocol == "modern" else {"taskId": computing.task_id})
        failing = await client.call_tool("gw.t.fail", {}, task=True)
        assert (await failing)["isError"] is True
        # A tool's error: completed in the 2026-07-28 extension, failed in 2025-11-25.
        assert failing.status == ("completed" if protocol == "modern" else "failed")
        crashing = await client.call_tool("gw.t.crash", {}, task=True)
        with pytest.raises(ServerError) as crashed:
            await crashing
        assert crashed.value.code == -32603 and "Internal error in the job" in crashed.value.message
        # The server's question during its task reaches the client that made the task.
        asking = await client.call_tool("gw.t.confirm", {}, task=True)
        assert not (await asking).get("isError")
        assert asking.status == "completed"
        endless = await client.call_tool("gw.t.compute", {"seconds": 60}, task=True)
        assert (await endless.cancel())["status"] == "cancelled"
        if protocol == "legacy":
            listed = {t["taskId"]: t["status"] for t in await client.list_tasks("gw")}
            assert listed[computing.task_id] == "completed" and listed[endless.task_id] == "cancelled"
            # notifications/tasks/status (input_required too when the question came after the
            # task was made: a 2025-11-25 server may ask at once, while the call is answered).
            assert {"completed", "failed", "cancelled"} <= set(statuses)
            with pytest.raises(ServerError) as ended:
                await endless.cancel()  # 2025-11-25: a terminal task cannot be cancelled
            assert ended.value.code == -32602


@pytest.mark.parametrize("protocol", ["modern", "legacy"])
async def test_the_gateway_runs_the_task_when_the_server_knows_none(protocol: str) -> None:
    limits = TaskLimits(immediate=0.05)
    async with Gateway({"mcpServers": {"p": server("legacy", PLAIN)}}, handle_signals=False,
                       task_limits=limits) as gateway, client_of(gateway, protocol) as client:
        tools = {t["name"]: t for t in client.get_tools("gw")["gw"]["tools"]}
        if protocol == "legacy":
            # Offered as tasks to a 2025-11-25 client: the gateway runs them.
            assert tools["p.wait"]["execution"] == {"taskSupport": "optional"}
        waited = await client.call_tool("gw.p.wait", {"seconds": 0.2}, task=True)
        assert waited.task_id  # longer than `immediate`: a task either way
        assert (await waited)["content"][0]["text"] == "Waited 0.2 seconds"
        echoed = await client.call_tool("gw.p.echo", {"text": "hi"}, task=True)
        assert (await echoed)["content"][0]["text"] == '{"text":"hi"}'
        if protocol == "modern":
            assert echoed.task_id == ""  # answered at once, which the extension allows
        endless = await client.call_tool("gw.p.wait", {"seconds": 60}, task=True)
        assert (await endless.cancel())["status"] == "cancelled"
        # A plain call is a plain call.
        assert (await client.call_tool("gw.p.echo", {"text": "x"}))["content"][0]["text"] == '{"text":"x"}'


# -- over HTTP, raw: owners, gates, bounds ---------------------------------------------------------

MODERN = "2026-07-28"


async def ask(port: int, method: str, params: dict[str, Any], *, tasks: bool = True, token: str | None = None,
              rid: int = 1) -> dict[str, Any]:
    caps: dict[str, Any] = {"elicitation": {}}
    if tasks:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                       "params": {**params, "_meta": {META_VERSION: MODERN, META_CAPABILITIES: caps}}}).encode()
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    name = params.get("name", params.get("taskId"))
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    _status, _headers, data = await raw(port, post(body, extra="".join(f"{k}: {v}\r\n" for k, v in headers.items())))
    answer: dict[str, Any] = json.loads(data)
    return answer


@contextlib.asynccontextmanager
async def front(limits: TaskLimits | None = None) -> AsyncIterator[tuple[Gateway, int]]:
    gateway = Gateway({"mcpServers": {"t": server("modern", tasky("modern"))}}, naming="pass-through", handle_signals=False,
                      task_limits=limits)
    try:
        await gateway.start()
        http = HttpGateway(gateway, HttpOptions())
        await http.start("127.0.0.1", 0)
        try:
            yield gateway, http.address[1]
        finally:
            await http.aclose()
    finally:
        await gateway.aclose()


async def test_one_clients_tasks_are_hidden_from_another() -> None:
    async with front() as (_gateway, port):
        made = (await ask(port, "tools/call", {"name": "compute", "arguments": {"seconds": 60}}, token="alice"))["result"]
        assert made["resultType"] == "task"
        tid = made["taskId"]
        for other in ("bob", None):
            for method in ("tasks/get", "tasks/cancel", "tasks/update"):
                extra = {"inputResponses": {}} if method == "tasks/update" else {}
                refused = await ask(port, method, {"taskId": tid, **extra}, token=other)
                assert refused["error"]["code"] == -32602, (other, method, refused)
        seen = (await ask(port, "tasks/get", {"taskId": tid}, token="alice"))["result"]
        assert (seen["taskId"], seen["status"], seen["resultType"]) == (tid, "working", "complete")
        assert (await ask(port, "tasks/cancel", {"taskId": tid}, token="alice"))["result"]["resultType"] == "complete"
        assert (await ask(port, "tasks/get", {"taskId": tid}, token="alice"))["result"]["status"] == "cancelled"


async def test_without_the_extension_there_are_no_tasks() -> None:
    async with front() as (_gateway, port):
        for method in ("tasks/get", "tasks/cancel"):
            gated = await ask(port, method, {"taskId": "x"}, tasks=False)
            assert gated["error"]["code"] == -32021
            assert gated["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        required = await ask(port, "tools/call", {"name": "fail", "arguments": {}}, tasks=False)
        assert required["error"]["code"] == -32021
        plain = (await ask(port, "tools/call", {"name": "compute", "arguments": {"seconds": 0}}, tasks=False))["result"]
        assert plain["resultType"] == "complete" and "taskId" not in plain
        for removed in ("tasks/result", "tasks/list"):  # 2025-11-25 only
            assert (await ask(port, removed, {"taskId": "x"}))["error"]["code"] == -32601


async def test_tasks_are_bounded_per_client_and_in_size() -> None:
    async with front(TaskLimits(max_per_client=2, max_result=200)) as (_gateway, port):
        long = {"name": "compute", "arguments": {"seconds": 60}}
        first = (await ask(port, "tools/call", long, token="a"))["result"]
        assert first["ttlMs"] == 300_000 and first["pollIntervalMs"] == 100
        await ask(port, "tools/call", long, token="a")
        refused = await ask(port, "tools/call", long, token="a")
        assert refused["error"]["code"] == -32000 and "at most 2 per client" in refused["error"]["message"]
        # Another client is not held back by the first one's tasks; a result too large fails its task.
        big = (await ask(port, "tools/call", {"name": "huge", "arguments": {}}, token="b"))["result"]
        got = await until_ended(port, big["taskId"], "b")
        assert got["status"] == "failed" and "result" not in got
        assert "larger than 200 bytes" in got["error"]["message"]


async def test_a_task_is_forgotten_when_its_ttl_ends() -> None:
    async with front(TaskLimits(ttl=0.2)) as (gateway, port):
        made = (await ask(port, "tools/call", {"name": "compute", "arguments": {"seconds": 60}}))["result"]
        assert made["ttlMs"] == 200
        for task in gateway.backend.task_store().owned("front:anonymous"):
            await asyncio.wait_for(task.done.wait(), 30)  # the expiry cancels it (it may have come already)
        assert (await ask(port, "tasks/get", {"taskId": made["taskId"]}))["error"]["code"] == -32602


async def until_ended(port: int, task_id: str, token: str) -> dict[str, Any]:
    """``tasks/get`` until the task is terminal (each poll waits for the gateway's answer)."""
    for _ in range(10_000):
        got: dict[str, Any] = (await ask(port, "tasks/get", {"taskId": task_id}, token=token))["result"]
        if got["status"] in ("completed", "failed", "cancelled"):
            return got
    raise AssertionError(f"task {task_id} did not end")


async def test_two_sessions_see_only_their_own_tasks_which_end_with_them() -> None:
    async with Gateway({"mcpServers": {"t": server("modern", tasky("modern"))}}, handle_signals=False) as gateway:
        store = gateway.backend.task_store()
        async with client_of(gateway, "legacy") as alice, client_of(gateway, "legacy") as bob:
            held = await alice.call_tool("gw.t.compute", {"seconds": 60}, task=True)
            assert [t["taskId"] for t in await alice.list_tasks("gw")] == [held.task_id]
            assert await bob.list_tasks("gw") == []
            assert len(store) == 1
        # Their sessions ended: Alice's task was cancelled (the server's with it) and forgotten.
        assert len(store) == 0


async def test_mcphosts_own_client_over_stateless_http() -> None:
    async with front() as (_gateway, port):
        client = MCPHost({"mcpServers": {"gw": {"url": f"http://127.0.0.1:{port}/mcp", "protocol": "modern"}}},
                         handle_signals=False)
        client.on_elicitation(confirmed)
        async with client:
            computing = await client.call_tool("gw.compute", {"seconds": 0.1}, task=True)
            assert (await computing)["content"][0]["text"] == "Computed after 0.1 seconds"
            asking = await client.call_tool("gw.confirm", {}, task=True)  # answered with tasks/update
            assert not (await asking).get("isError") and asking.status == "completed"
            endless = await client.call_tool("gw.compute", {"seconds": 60}, task=True)
            assert (await endless.cancel())["status"] == "cancelled"


@pytest.mark.parametrize("downstream", ["modern", "legacy"])
async def test_each_tasks_question_reaches_the_client_that_made_it(downstream: str) -> None:
    """Two clients' tasks ask the same server at once: each question names the server's task
    (a 2025-11-25 server marks it, often before the gateway has its task id; the host marks a
    2026-07-28 task's input requests), and the gateway sends each to its own client, not to
    whichever request came last."""
    config = {"mcpServers": {"t": server(downstream, tasky(downstream))}}
    async with Gateway(config, handle_signals=False) as gateway:
        asked: dict[str, list[dict[str, Any]]] = {"alice": [], "bob": []}

        @contextlib.asynccontextmanager
        async def client(who: str) -> AsyncIterator[MCPHost]:
            ours, theirs = memory_pair("gateway")
            host = MCPHost({"mcpServers": {"gw": {"command": "unused", "protocol": "modern"}}},
                           transport_factory=lambda _cfg: ours, handle_signals=False)

            def answer(_server: str, params: dict[str, Any]) -> dict[str, Any]:
                asked[who].append(params)
                return {"action": "accept", "content": {"confirm": True}}

            host.on_elicitation(answer)
            gateway.connect(theirs)
            async with host:
                yield host

        async with client("alice") as alice, client("bob") as bob:
            first, second = await asyncio.gather(alice.call_tool("gw.t.confirm", {}, task=True),
                                                 bob.call_tool("gw.t.confirm", {}, task=True))
            done = await asyncio.wait_for(asyncio.gather(first.result(), second.result()), 30)
            assert all(not result.get("isError") for result in done)
        assert [len(asked["alice"]), len(asked["bob"])] == [1, 1]
        # Neither saw the server's task id: the question carries the client's own task only.
        for who, handle in (("alice", first), ("bob", second)):
            meta = asked[who][0].get("_meta") or {}
            assert meta.get(RELATED_TASK) in (None, {"taskId": handle.task_id})


@pytest.mark.parametrize("protocol", ["modern", "legacy"])
async def test_tasks_through_mcphost_serve_stdio(tmp_path: Path, protocol: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"t": server("modern", tasky("modern"))}}), encoding="utf-8")
    entry: dict[str, Any] = {"command": sys.executable, "args": ["-m", "mcphost", "serve", "--stdio", str(config)],
                             "env": {"PYTHONPATH": package_root()}}
    if protocol == "modern":
        entry["protocol"] = "modern"
    client = MCPHost({"mcpServers": {"gw": entry}}, handle_signals=False)
    client.on_elicitation(confirmed)
    async with client:
        computing = await client.call_tool("gw.t.compute", {"seconds": 0.1}, task=True)
        assert (await computing)["content"][0]["text"] == "Computed after 0.1 seconds"
        asking = await client.call_tool("gw.t.confirm", {}, task=True)
        assert not (await asking).get("isError") and asking.status == "completed"
        endless = await client.call_tool("gw.t.compute", {"seconds": 60}, task=True)
        assert (await endless.cancel())["status"] == "cancelled"


async def test_a_question_for_a_client_that_cannot_answer_is_refused() -> None:
    """The task names its client: when that client declared no elicitation the question is
    refused (and the task fails), never asked of another client instead."""
    async with Gateway({"mcpServers": {"t": server("modern", tasky("modern"))}}, handle_signals=False) as gateway, \
            client_of(gateway, "modern") as other:
        ours, theirs = memory_pair("gateway")
        mute = MCPHost({"mcpServers": {"gw": {"command": "unused", "protocol": "modern"}}},
                       transport_factory=lambda _cfg: ours, handle_signals=False)
        gateway.connect(theirs)
        async with mute:
            waiting = await other.call_tool("gw.t.compute", {"seconds": 60}, task=True)  # in flight meanwhile
            asking = await mute.call_tool("gw.t.confirm", {}, task=True)
            with pytest.raises(ServerError) as failed:
                await asking
            assert asking.status == "failed" and failed.value.code == -32603
            assert waiting.status == "working"
            await waiting.cancel()


async def test_a_question_that_comes_before_its_task_is_known_waits_for_it() -> None:
    """A 2025-11-25 server may ask as soon as its task runs, before the gateway has the id
    of the task it made: the question waits for the tasks being made on that server, then
    goes to its own (or, naming none of them, to the latest request, as any question)."""
    tasks = GatewayTasks(MCPHost(), TaskStore(), lambda _s, _c, work: work)
    answered: list[tuple[str, str, dict[str, Any]]] = []

    class Link:
        def __init__(self, who: str) -> None:
            self.who = who

        async def request(self, method: str, params: dict[str, Any]) -> Any:
            answered.append((self.who, method, params))
            return {"action": "accept"}

    def latest() -> Any:
        return lambda asked: Link("latest").request("elicitation/create", asked)

    marked = {"_meta": {RELATED_TASK: {"taskId": "srv-1"}}}
    assert tasks.asker("s", "elicitation/create", {"message": "m"}, latest) is None  # names no task
    assert tasks.asker("s", "elicitation/create", marked, latest) is None  # nothing being made on "s"
    tasks.creating["s"] = 2
    waiting = tasks.asker("s", "elicitation/create", marked, latest)
    assert waiting is not None
    asked = asyncio.ensure_future(waiting({"message": "m"}))
    await asyncio.sleep(0)
    tasks.creating["s"] = 1
    tasks.made()  # another task was made: not this one
    await asyncio.sleep(0)
    assert not asked.done()
    tasks.links[("s", "srv-1")] = Link("alice")  # type: ignore[assignment]
    tasks.creating.pop("s")
    tasks.made()
    assert await asyncio.wait_for(asked, 10) == {"action": "accept"}
    assert answered == [("alice", "elicitation/create", {"message": "m"})]
    # Once made and known, it is answered at once.
    direct = tasks.asker("s", "sampling/createMessage", marked, latest)
    assert direct is not None and await direct({}) == {"action": "accept"}
    # A question naming a task none of those being made turned out to be: as any question.
    tasks.creating["s"] = 1
    other = tasks.asker("s", "elicitation/create", {"_meta": {RELATED_TASK: {"taskId": "srv-2"}}}, latest)
    assert other is not None
    elsewhere = asyncio.ensure_future(other({"message": "n"}))
    await asyncio.sleep(0)
    tasks.creating.pop("s")
    tasks.made()
    await asyncio.wait_for(elsewhere, 10)
    assert answered[-1] == ("latest", "elicitation/create", {"message": "n"})
