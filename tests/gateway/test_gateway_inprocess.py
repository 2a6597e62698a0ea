"""The gateway in process: mcphost's own client in front of a Gateway over an in-memory pair,
two fake servers behind it (aggregated names, calls, progress, sampling relayed, list changes
forwarded, errors without tracebacks)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost, ServerError
from mcphost.gateway.app import Gateway
from mcphost.server.session import ServerLimits
from mcphost.transports.memory import memory_pair

OBJ: dict[str, Any] = {"type": "object"}
SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
TOOLS_A = [
    ECHO_TOOL,
    {"name": "count", "inputSchema": OBJ, "behavior": {"progress": 3}},
    {"name": "ask", "inputSchema": OBJ, "behavior": {"request": SAMPLE}},
    {"name": "grow", "inputSchema": OBJ, "behavior": {"mutate": {"tools": [ECHO_TOOL, {"name": "new", "inputSchema": OBJ}]}}},
    {"name": "slow", "inputSchema": OBJ, "behavior": {"delay": 30}},
]
PROMPTS_B = [{"name": "greet", "description": "hello", "arguments": [{"name": "who", "required": True}],
              "messages": [{"role": "user", "content": {"type": "text", "text": "hi {who}"}}]}]
RESOURCES_B = [{"uri": "mem://b/readme", "name": "readme", "mimeType": "text/plain", "text": "B's readme"}]


def two_servers() -> dict[str, Any]:
    return fake_config(a=fake({"tools": TOOLS_A}),
                       b=fake({"tools": [ECHO_TOOL], "prompts": PROMPTS_B, "resources": RESOURCES_B}))


@contextlib.asynccontextmanager
async def client_of(gateway: Gateway, *, sampling: bool = True, **options: Any) -> AsyncIterator[MCPHost]:
    """mcphost's own client, connected to ``gateway`` over an in-memory pair."""
    ours, theirs = memory_pair("gateway")
    client = MCPHost({"mcpServers": {"gw": {"command": "unused"}}}, transport_factory=lambda _cfg: ours,
                     handle_signals=False, **options)
    if sampling:
        client.on_sampling(lambda server, params: {"role": "assistant", "model": "m",
                                                   "content": {"type": "text", "text": "sampled by the client"}})
    gateway.connect(theirs)
    async with client:
        yield client


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    async with Gateway(two_servers(), handle_signals=False, coalesce=0.01) as gw:
        yield gw


async def test_the_tools_of_both_servers_are_listed_and_called(gateway: Gateway) -> None:
    async with client_of(gateway) as client:
        names = [t["name"] for t in client.get_tools()["gw"]["tools"]]
        assert names == ["a.echo", "a.count", "a.ask", "a.grow", "a.slow", "b.echo"]
        result = await client.call_tool("gw.b.echo", {"text": "hi"})
        assert result["content"][0]["text"] == '{"text":"hi"}'
        prompt = await client.get_prompt("gw.b.greet", {"who": "Ann"})
        assert prompt["messages"][0]["content"]["text"] == "hi Ann"
        read = await client.get_resource("mem://b/readme")
        assert read["contents"][0]["text"] == "B's readme"


async def test_progress_is_relayed_under_the_clients_token(gateway: Gateway) -> None:
    async with client_of(gateway) as client:
        seen: list[dict[str, Any]] = []
        await client.call_tool("gw.a.count", {}, progress=seen.append)
        assert [(p["progress"], p["total"]) for p in seen] == [(1, 3), (2, 3), (3, 3)]


async def test_a_servers_sampling_request_goes_to_the_client_that_called(gateway: Gateway) -> None:
    async with client_of(gateway) as client:
        result = await client.call_tool("gw.a.ask", {})
        assert "sampled by the client" in result["content"][0]["text"]


async def test_sampling_without_a_client_that_can_answer_is_refused_clearly(gateway: Gateway) -> None:
    async with client_of(gateway, sampling=False) as client:
        result = await client.call_tool("gw.a.ask", {})
        text = result["content"][0]["text"]
        assert "no client of the mcphost gateway can answer" in text


async def test_list_changed_of_a_server_is_forwarded(gateway: Gateway) -> None:
    async with client_of(gateway) as client:
        changed = asyncio.Event()
        client.on_event(lambda e: changed.set() if e["type"] == "capabilities_changed" else None)
        await client.call_tool("gw.a.grow", {})
        await asyncio.wait_for(changed.wait(), 10)
        names = [t["name"] for t in client.get_tools()["gw"]["tools"]]
        assert "a.new" in names and "a.count" not in names


async def test_a_cancelled_call_is_cancelled_downstream(gateway: Gateway) -> None:
    async with client_of(gateway) as client:
        call = asyncio.ensure_future(client.call_tool("gw.a.slow", {}))
        await asyncio.sleep(0)
        while not gateway.backend.calling:
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        while gateway.backend.calling:  # the downstream call ended with the upstream one
            await asyncio.sleep(0.01)


async def test_errors_are_json_rpc_errors_with_clear_messages(gateway: Gateway) -> None:
    async with client_of(gateway, validate_arguments=False) as client:
        session = client.servers["gw"].session
        assert session is not None
        with pytest.raises(ServerError) as unknown:
            await session.call("tools/call", {"name": "a.nope", "arguments": {}})
        assert unknown.value.code == -32602 and "nope" in unknown.value.message
        with pytest.raises(ServerError) as bad_name:
            await session.call("tools/call", {"name": "no-dot", "arguments": {}})
        assert bad_name.value.code == -32602 and "server.name" in bad_name.value.message
        with pytest.raises(ServerError) as cursor:
            await session.call("tools/list", {"cursor": "junk"})
        assert cursor.value.code == -32602 and "cursor" in cursor.value.message
        with pytest.raises(ServerError) as method:
            await session.call("nothing/here", {})
        assert method.value.code == -32601
        assert "Traceback" not in str(unknown.value) + str(cursor.value) + str(method.value)


async def test_lists_are_paged() -> None:
    async with Gateway(two_servers(), handle_signals=False, limits=ServerLimits(page_size=2)) as gateway, \
            client_of(gateway) as client:
        assert len(client.get_tools()["gw"]["tools"]) == 6  # three pages, followed by the client


async def test_requests_in_flight_are_bounded_per_client() -> None:
    # (4: the client lists tools, prompts, resources and templates at once when it starts.)
    async with Gateway(two_servers(), handle_signals=False, limits=ServerLimits(max_in_flight=4)) as gateway, \
            client_of(gateway) as client:
        slow = [asyncio.ensure_future(client.call_tool("gw.a.slow", {})) for _ in range(4)]
        while len(gateway.backend.calling.get("a", ())) < 4:
            await asyncio.sleep(0.01)
        with pytest.raises(ServerError) as busy:
            await client.call_tool("gw.b.echo", {})
        assert busy.value.code == -32000 and "too many requests in flight" in busy.value.message
        for call in slow:
            call.cancel()
        await asyncio.wait(slow)


@pytest.mark.parametrize("mode, name", [("underscore", "a__echo"), ("search", "search_tools")])
async def test_naming_modes(mode: str, name: str) -> None:
    async with Gateway(two_servers(), handle_signals=False, naming=mode) as gateway, \
            client_of(gateway) as client:
        names = [t["name"] for t in client.get_tools()["gw"]["tools"]]
        assert name in names
        if mode == "underscore":
            result = await client.call_tool("gw.a__echo", {"text": "x"})
            assert result["content"][0]["text"] == '{"text":"x"}'
        else:
            assert names == ["search_tools", "describe_tool", "call_tool"]
            found = await client.call_tool("gw.search_tools", {"query": "echo"})
            assert "echo" in found["content"][0]["text"]
            result = await client.call_tool("gw.call_tool", {"name": "b.echo", "arguments": {"text": "y"}})
            assert result["content"][0]["text"] == '{"text":"y"}'


async def test_pass_through_keeps_the_names_of_its_one_server() -> None:
    async with Gateway(fake_config(a=fake({"tools": TOOLS_A})), handle_signals=False,
                       naming="pass-through") as gateway, client_of(gateway) as client:
        assert [t["name"] for t in client.get_tools()["gw"]["tools"]][:2] == ["echo", "count"]
        result = await client.call_tool("gw.echo", {"text": "z"})
        assert result["content"][0]["text"] == '{"text":"z"}'


async def test_pass_through_refuses_more_than_one_server() -> None:
    from mcphost import UsageError

    with pytest.raises(UsageError, match="exactly one server"):
        async with Gateway(two_servers(), handle_signals=False, naming="pass-through"):
            pass


async def test_sampling_goes_to_the_client_whose_call_caused_it(gateway: Gateway) -> None:
    async with client_of(gateway) as first:
        ours, theirs = memory_pair("second")
        second = MCPHost({"mcpServers": {"gw": {"command": "unused"}}}, transport_factory=lambda _cfg: ours,
                         handle_signals=False)
        second.on_sampling(lambda _s, _p: {"role": "assistant", "model": "m",
                                           "content": {"type": "text", "text": "the second client"}})
        gateway.connect(theirs)
        async with second:
            by_second = await second.call_tool("gw.a.ask", {})
            by_first = await first.call_tool("gw.a.ask", {})
        assert "the second client" in by_second["content"][0]["text"]
        assert "sampled by the client" in by_first["content"][0]["text"]
