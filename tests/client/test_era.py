"""The era of a session (protocol auto/legacy/modern) and the modern era's requests.

Over the in-memory transport with servers scripted here (``tests/scripted.py``): each outcome
of the ``server/discover`` probe, the ``_meta`` of every modern request, multi-round-trip
requests (nested rounds, two calls in parallel, the bound on rounds), ``resultType`` and the
tools dropped for their ``x-mcp-header`` annotations. Stdio and Streamable HTTP against the
official SDK's modern server: ``tests/interop/test_modern_peer.py``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from mcphost import MCPHost
from mcphost.client.session import ClientSession
from mcphost.errors import ProtocolError
from mcphost.policy import NO_RETRY
from mcphost.protocol.legacy import client_capabilities
from tests.scripted import MethodError, Script

V = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
INFO = {"name": "era-test", "version": "1"}


def discovered(params: dict[str, Any]) -> dict[str, Any]:
    return {"supportedVersions": [V], "capabilities": {"tools": {"listChanged": True}},
            "instructions": "modern", "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "9"}}}


def tools(*listed: dict[str, Any]) -> Any:
    return lambda params: {"tools": list(listed), "resultType": "complete"}


def tool(name: str, **props: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": props}}


async def session_for(script: Script, protocol: str, probe_timeout: float = 10.0) -> ClientSession:
    session = ClientSession("s", script.connect(), client_info=INFO, protocol=protocol, probe_timeout=probe_timeout,
                            capabilities_for=lambda v: client_capabilities(v, sampling=True))
    await session.open()
    return session


# -- the probe --------------------------------------------------------------------------------


async def test_discover_answered_means_modern_and_every_request_carries_meta() -> None:
    script = Script({"server/discover": discovered, "tools/list": tools(tool("t"))})
    session = await session_for(script, "auto")
    try:
        assert (session.era, session.protocol_version) == ("modern", V)
        assert session.server_info == {"name": "modern", "version": "9"} and session.instructions == "modern"
        assert session.has_capability("tools", "listChanged")
        assert (await session.call("tools/list"))["tools"] == [tool("t")]
        listed = script.requests("tools/list")[0]
        meta = listed["params"]["_meta"]
        assert meta[META_VERSION] == V
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {"roots": {}, "sampling": {}}
        assert meta["io.modelcontextprotocol/clientInfo"] == INFO
        assert not script.requests("initialize") and not script.requests("notifications/initialized")
    finally:
        await session.aclose(1.0)


async def test_unsupported_version_then_one_retry_and_never_initialize() -> None:
    asked: list[str] = []

    def discover(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["_meta"][META_VERSION])
        if len(asked) == 1:
            raise MethodError(-32022, "Unsupported protocol version", {"supported": [V, "2099-01-01"],
                                                                      "requested": V})
        return discovered(params)

    script = Script({"server/discover": discover})
    session = await session_for(script, "auto")
    try:
        assert session.era == "modern" and asked == [V, V]
        first, second = script.requests("server/discover")
        assert first["id"] != second["id"]
        assert not script.requests("initialize")
    finally:
        await session.aclose(1.0)


async def test_unsupported_version_with_no_mutual_version_is_a_clear_error() -> None:
    def discover(params: dict[str, Any]) -> Any:
        raise MethodError(-32022, "Unsupported protocol version", {"supported": ["2099-01-01"]})

    script = Script({"server/discover": discover})
    with pytest.raises(ProtocolError, match="the server supports protocol 2099-01-01; mcphost speaks 2026-07-28"):
        await session_for(script, "auto")
    assert not script.requests("initialize")


async def test_a_second_refusal_after_the_retry_does_not_fall_back() -> None:
    def discover(params: dict[str, Any]) -> Any:
        raise MethodError(-32022, "no", {"supported": [V]})

    script = Script({"server/discover": discover})
    with pytest.raises(Exception, match="no"):
        await session_for(script, "auto")
    assert len(script.requests("server/discover")) == 2 and not script.requests("initialize")


async def test_method_not_found_means_the_handshake_era() -> None:
    script = Script({"tools/list": tools(tool("t"))})  # no server/discover: -32601
    session = await session_for(script, "auto")
    try:
        assert (session.era, session.protocol_version) == ("legacy", "2025-11-25")
        assert [m["method"] for m in script.received][:2] == ["server/discover", "initialize"]
        await session.call("tools/list")
        assert script.requests("notifications/initialized")
        assert "_meta" not in (script.requests("tools/list")[0].get("params") or {})
    finally:
        await session.aclose(1.0)


async def test_no_answer_to_the_probe_means_the_handshake_era() -> None:
    release = asyncio.Event()

    async def never(params: dict[str, Any]) -> Any:
        await release.wait()
        raise MethodError(-32601, "late")

    script = Script({"server/discover": never})
    session = await session_for(script, "auto", probe_timeout=0.2)
    try:
        assert session.era == "legacy"
        # The probe is not cancelled: a legacy server has no session to hear it in yet.
        assert not script.requests("notifications/cancelled")
    finally:
        release.set()
        await session.aclose(1.0)


async def test_legacy_forced_sends_no_probe() -> None:
    script = Script({"server/discover": discovered})
    session = await session_for(script, "legacy")
    try:
        assert session.era == "legacy" and not script.requests("server/discover")
    finally:
        await session.aclose(1.0)


@pytest.mark.parametrize("protocol", ["modern", "2026-07-28"])
async def test_modern_forced_against_a_legacy_server_is_a_clear_error(protocol: str) -> None:
    script = Script()
    with pytest.raises(ProtocolError, match="does not speak the 2026-07-28 era: it answered server/discover "
                                            "with -32601"):
        await session_for(script, protocol)
    assert not script.requests("initialize")


async def test_an_exact_legacy_version_is_offered_alone() -> None:
    script = Script(version="2025-06-18")
    session = await session_for(script, "2025-06-18")
    try:
        assert session.protocol_version == "2025-06-18"
        assert script.requests("initialize")[0]["params"]["protocolVersion"] == "2025-06-18"
    finally:
        await session.aclose(1.0)


# -- multi-round-trip requests, through the host and the application's handlers -------------------


def modern_host(script: Script, **kwargs: Any) -> MCPHost:
    cfg = {"mcpServers": {"m": {"command": "never-run", "protocol": "modern"}}}
    host = MCPHost(cfg, transport_factory=lambda config: script.connect(), retry=NO_RETRY, **kwargs)
    host.on_elicitation(lambda server, params: {"action": "accept", "content": {"name": params["message"]}})
    host.on_sampling(lambda server, params: {"role": "assistant", "model": "m",
                                             "content": {"type": "text", "text": "sampled"}})
    host.on_roots(lambda server: [{"uri": "file:///r", "name": "r"}])
    return host


def interview(params: dict[str, Any]) -> dict[str, Any]:
    """Round 1 asks the user; round 2 the roots and the model; round 3 answers."""
    topic = params["arguments"]["topic"]
    state = params.get("requestState")
    answers = params.get("inputResponses")
    if state is None:
        assert answers is None
        return {"resultType": "input_required", "requestState": f"1:{topic}\u00e9 ", "inputRequests": {
            "who": {"method": "elicitation/create", "params": {"message": topic, "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string"}}}}}}}
    if state == f"1:{topic}\u00e9 ":
        assert answers == {"who": {"action": "accept", "content": {"name": topic}}}
        return {"resultType": "input_required", "requestState": f"2:{topic}", "inputRequests": {
            "roots": {"method": "roots/list"},
            "llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}}
    assert state == f"2:{topic}", state
    assert set(answers) == {"roots", "llm"} and answers["roots"] == {"roots": [{"uri": "file:///r", "name": "r"}]}
    return {"content": [{"type": "text", "text": f"{topic}: {answers['llm']['content']['text']}"}]}


async def test_nested_rounds_and_two_calls_in_parallel_are_isolated() -> None:
    script = Script({"server/discover": discovered, "tools/list": tools(tool("interview")),
                     "tools/call": interview})
    async with modern_host(script) as host:
        assert host.get_tools("m")["m"]["era"] == "modern"
        one, two = await asyncio.gather(host.call_tool("m.interview", {"topic": "one"}),
                                        host.call_tool("m.interview", {"topic": "two"}))
        assert one["content"][0]["text"] == "one: sampled" and two["content"][0]["text"] == "two: sampled"
    calls = script.requests("tools/call")
    assert len(calls) == 6 and len({c["id"] for c in calls}) == 6  # a new id every round
    for topic in ("one", "two"):
        mine = [c["params"] for c in calls if c["params"]["arguments"]["topic"] == topic]
        assert [p.get("requestState") for p in mine] == [None, f"1:{topic}\u00e9 ", f"2:{topic}"]
        assert all(p["_meta"][META_VERSION] == V for p in mine)


async def test_rounds_are_bounded() -> None:
    def forever(params: dict[str, Any]) -> dict[str, Any]:
        return {"resultType": "input_required", "requestState": "again"}

    script = Script({"server/discover": discovered, "tools/list": tools(tool("loop")), "tools/call": forever})
    async with modern_host(script) as host:
        with pytest.raises(ProtocolError, match="still asks for input after 8 rounds"):
            await host.call_tool("m.loop", {})
    assert len(script.requests("tools/call")) == 8


@pytest.mark.parametrize(("result", "problem"), [
    ({"resultType": "pending"}, "resultType 'pending'"),
    ({"resultType": "input_required", "inputRequests": {"x": {"method": "tools/call"}}}, "not an input request"),
])
async def test_a_result_the_client_cannot_use_is_a_protocol_error(result: dict[str, Any], problem: str) -> None:
    script = Script({"server/discover": discovered, "tools/list": tools(tool("odd")),
                     "tools/call": lambda params: result})
    async with modern_host(script) as host:
        with pytest.raises(ProtocolError, match=problem):
            await host.call_tool("m.odd", {})


async def test_tools_with_invalid_header_annotations_are_dropped_with_one_warning_each(
        caplog: pytest.LogCaptureFixture) -> None:
    listed = [tool("good", region={"type": "string", "x-mcp-header": "Region"}),
              tool("number", ratio={"type": "number", "x-mcp-header": "Ratio"}),
              tool("twice", a={"type": "string", "x-mcp-header": "Same"}, b={"type": "string", "x-mcp-header": "same"})]
    script = Script({"server/discover": discovered, "tools/list": tools(*listed)})
    with caplog.at_level(logging.WARNING, logger="mcphost.client"):
        async with modern_host(script) as host:
            assert [t["name"] for t in host.get_tools("m")["m"]["tools"]] == ["good"]
    warned = [r.getMessage() for r in caplog.records if "x-mcp-header" in r.getMessage()]
    assert len(warned) == 2 and "'number'" in warned[0] and "'twice'" in warned[1]


async def test_the_log_level_goes_in_the_meta_of_every_later_request() -> None:
    def discover(params: dict[str, Any]) -> dict[str, Any]:
        return {**discovered(params), "capabilities": {"tools": {}, "logging": {}}}

    script = Script({"server/discover": discover, "tools/list": tools(tool("t")),
                     "tools/call": lambda params: {"content": []}})
    async with modern_host(script) as host:
        await host.set_log_level("m", "debug")
        await host.call_tool("m.t", {})
    assert not script.requests("logging/setLevel")
    assert script.requests("tools/call")[0]["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "debug"
    assert "io.modelcontextprotocol/logLevel" not in script.requests("tools/list")[0]["params"]["_meta"]


@pytest.mark.parametrize(("ttl_ms", "reads"), [(60_000, 1), (0, 2), (None, 2), (-5, 2)])
async def test_caching_hints_reach_the_read_cache(ttl_ms: int | None, reads: int) -> None:
    def discover(params: dict[str, Any]) -> dict[str, Any]:
        return {**discovered(params), "capabilities": {"resources": {}}}

    def read(params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {"contents": [{"uri": params["uri"], "text": "x"}], "cacheScope": "public"}
        if ttl_ms is not None:
            result["ttlMs"] = ttl_ms
        return result

    resources = {"resources": [{"uri": "file:///a", "name": "a"}], "ttlMs": 0, "cacheScope": "public"}
    script = Script({"server/discover": discover, "resources/list": lambda params: resources,
                     "resources/templates/list": lambda params: {"resourceTemplates": []},
                     "resources/read": read})
    async with modern_host(script) as host:
        for _ in range(2):
            assert (await host.get_resource("file:///a", server="m"))["contents"][0]["text"] == "x"
    assert len(script.requests("resources/read")) == reads


async def test_a_result_that_took_input_rounds_is_not_cached() -> None:
    def discover(params: dict[str, Any]) -> dict[str, Any]:
        return {**discovered(params), "capabilities": {"resources": {}}}

    def read(params: dict[str, Any]) -> dict[str, Any]:
        if params.get("requestState") is None:
            return {"resultType": "input_required", "requestState": "s", "inputRequests": {
                "roots": {"method": "roots/list"}}}
        return {"contents": [{"uri": params["uri"], "text": "x"}], "ttlMs": 60_000, "cacheScope": "public"}

    script = Script({"server/discover": discover, "resources/list": lambda params: {
        "resources": [{"uri": "file:///a", "name": "a"}]}, "resources/read": read})
    async with modern_host(script) as host:
        for _ in range(2):
            result = await host.get_resource("file:///a", server="m")
            assert result["_meta"]["mcphost/rounds"] == 2
    assert len(script.requests("resources/read")) == 4


# -- subscriptions/listen -----------------------------------------------------------------------


class Listening:
    """A modern server whose listen streams stay open until the test ends them."""

    def __init__(self) -> None:
        self.tools = [tool("a")]
        self.ended: dict[Any, asyncio.Event] = {}
        self.script = Script({"server/discover": self.discover, "tools/list": lambda params: {"tools": self.tools},
                              "resources/list": lambda params: {"resources": [{"uri": "file:///r", "name": "r"}]},
                              "resources/templates/list": lambda params: {"resourceTemplates": []},
                              "subscriptions/listen": self.listen})

    def discover(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**discovered(params), "capabilities": {"tools": {"listChanged": True},
                                                       "resources": {"subscribe": True}}}

    async def listen(self, params: dict[str, Any]) -> dict[str, Any]:
        rid = len(self.ended)
        end = self.ended[rid] = asyncio.Event()
        self.notify("notifications/subscriptions/acknowledged", {"notifications": params["notifications"]})
        await end.wait()
        return {"resultType": "complete"}

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.script.send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        for end in self.ended.values():
            end.set()


async def test_list_changes_and_resource_updates_come_on_the_listen_stream() -> None:
    server = Listening()
    script = server.script
    events: list[dict[str, Any]] = []
    host = modern_host(script)
    host.on_event(events.append)
    try:
        async with host:
            first = await script.unseen_request("subscriptions/listen")
            assert first["params"]["notifications"] == {"toolsListChanged": True}
            server.tools = [tool("a"), tool("b")]
            server.notify("notifications/tools/list_changed", {})
            assert await wait_until(lambda: len(host.get_tools("m")["m"]["tools"]) == 2)
            # A subscription replaces the stream: the old request is given up.
            await host.subscribe_resource("file:///r", server="m")
            second = await script.unseen_request("subscriptions/listen")
            assert second["params"]["notifications"] == {"toolsListChanged": True,
                                                         "resourceSubscriptions": ["file:///r"]}
            assert await wait_until(lambda: any(m["params"]["requestId"] == first["id"]
                                                for m in script.requests("notifications/cancelled")))
            server.notify("notifications/resources/updated", {"uri": "file:///r"})
            assert await wait_until(lambda: any(e["type"] == "resource_updated" for e in events))
            # A restart opens a stream of its own, naming the subscriptions again.
            before = len(script.requests("subscriptions/listen"))
            await host.restart_server("m")
            assert await wait_until(lambda: len(script.requests("subscriptions/listen")) == before + 1)
            assert script.requests("subscriptions/listen")[-1]["params"]["notifications"] == {
                "toolsListChanged": True, "resourceSubscriptions": ["file:///r"]}
    finally:
        server.close()


async def test_a_stream_the_server_ends_is_opened_again() -> None:
    server = Listening()
    script = server.script
    try:
        async with modern_host(script):
            await script.unseen_request("subscriptions/listen")
            server.ended[0].set()  # the server answers the listen request: the stream ends
            await script.unseen_request("subscriptions/listen")
    finally:
        server.close()


async def wait_until(predicate: Any, timeout: float = 10.0) -> bool:
    from tests.helpers import wait_for

    return await wait_for(predicate, timeout)


async def test_modern_messages_are_checked_against_the_2026_07_28_schemas() -> None:
    # The same strictness as the handshake era: a malformed result is the server's
    # ProtocolError naming the field, in every round of a multi-round request too.
    rounds = iter([{"resultType": "input_required", "inputRequests": {"x": {"method": "tools/call"}}},
                   {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}])
    script = Script({"server/discover": discovered, "tools/list": lambda p: {"tools": "none"},
                     "tools/call": lambda p: next(rounds)})
    session = ClientSession("s", script.connect(), client_info=INFO, protocol="modern", validate_messages="strict",
                            capabilities_for=lambda v: client_capabilities(v, sampling=True))
    await session.open()
    try:
        assert session.checker is not None and session.checker.version == V
        with pytest.raises(ProtocolError, match=r"tools/list result: \$\.tools: expected array"):
            await session.call("tools/list")
        with pytest.raises(ProtocolError, match=r'tools/call result: \$\.inputRequests\.x\.method: "tools/call" '
                                                r"is not one of"):
            await session.call("tools/call", {"name": "t", "arguments": {}})
    finally:
        await session.aclose(1.0)
