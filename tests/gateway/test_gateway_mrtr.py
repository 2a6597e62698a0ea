"""The gateway in front of a 2026-07-28 server: its input requests relayed under its own keys
to the request that caused them (never to another client's), abandoned rounds that hold
nothing up, a retry that leaves a question unanswered asked again, the per-request
``logLevel``, and the read cache keeping ``cacheScope: "private"`` results per client. The
host's handler API (``with_key=True``) is tested here too, against the same server."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_gateway_http import Front, post, raw
from test_gateway_inprocess import client_of

from mcphost import MCPHost
from mcphost.errors import UsageError
from mcphost.gateway import asgi_app
from mcphost.gateway.app import Gateway
from mcphost.gateway.http import HttpGateway, HttpOptions
from mcphost.protocol.modern import META_CAPABILITIES, META_LOG_LEVEL, META_VERSION
from mcphost.testing import package_root
from mcphost.testing.conformance import conformance_spec
from tests.helpers import fake, fake_config, wait_for

MODERN = "2026-07-28"
CAPS = {"sampling": {}, "elicitation": {}, "roots": {}}
NAME = "test_input_required_result_elicitation"


def modern_reference(**spec: Any) -> dict[str, Any]:
    """The fake server's conformance contract in the 2026-07-28 era, served pass-through."""
    return fake_config(reference={**fake({**conformance_spec(), "era": "modern", **spec}), "protocol": "modern"})


@pytest.fixture
async def front() -> AsyncIterator[Front]:
    gateway = Gateway(modern_reference(), naming="pass-through", handle_signals=False, coalesce=0.01)
    await gateway.start()
    http = HttpGateway(gateway, HttpOptions())
    await http.start("127.0.0.1", 0)
    try:
        yield Front(gateway, http)
    finally:
        await http.aclose()
        await gateway.aclose()


async def call(port: int, rid: int, name: str, *, caps: dict[str, Any] | None = None, sse: bool = False,
               **params: Any) -> Any:
    """One stateless ``tools/call`` of the gateway; its JSON-RPC answer (or SSE events)."""
    meta = {META_VERSION: MODERN, META_CAPABILITIES: CAPS if caps is None else caps, **params.pop("meta", {})}
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": name, "arguments": {}, "_meta": meta, **params}}).encode()
    extra = f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
    if not sse:
        _status, _headers, data = await raw(port, post(body, extra=extra))
        return json.loads(data)
    request = post(body, extra=extra).replace(b"Accept: application/json", b"Accept: application/json, text/event-stream")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        events: list[Any] = []
        while True:  # until the answer's event
            line = await asyncio.wait_for(reader.readline(), 10)
            assert line, events
            if line.startswith(b"data: ") and line[6:].strip():  # (the priming event has no data)
                events.append(json.loads(line[6:]))
                if events[-1].get("id") == rid:
                    return events
    finally:
        writer.close()


async def test_the_downstream_key_and_its_answer(front: Front) -> None:
    first = (await call(front.port, 1, NAME))["result"]
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["user_name"]  # the server's own key
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await call(front.port, 2, NAME, inputResponses={"user_name": answer}, requestState=first["requestState"])
    assert done["result"]["structuredContent"] == {"inputResponses": {"user_name": answer}}


async def test_two_clients_asked_the_same_key_get_their_own_answers(front: Front) -> None:
    """Two requests in flight to the same server, each asked ``user_name``: each question goes
    to the request that caused it, and each answer back to its own call."""
    one, two = await asyncio.gather(call(front.port, 1, NAME), call(front.port, 2, NAME))
    states = [one["result"]["requestState"], two["result"]["requestState"]]
    assert [list(r["result"]["inputRequests"]) for r in (one, two)] == [["user_name"], ["user_name"]]
    answers = [{"action": "accept", "content": {"name": who}} for who in ("Ada", "Bob")]
    done = await asyncio.gather(*(call(front.port, 3 + i, NAME, inputResponses={"user_name": answers[i]},
                                       requestState=states[i]) for i in range(2)))
    assert [d["result"]["structuredContent"]["inputResponses"]["user_name"] for d in done] == answers
    # A state whose request has ended runs it again, the answers the retry brings first.
    again = await call(front.port, 5, NAME, inputResponses={"user_name": answers[0]}, requestState=states[1])
    assert again["result"]["structuredContent"]["inputResponses"]["user_name"] == answers[0]


async def test_abandoned_rounds_do_not_hold_up_the_next_request(front: Front) -> None:
    """Clients that never retry leave their questions waiting (until ``request_timeout``); the
    host's handler gate (4 at once by default) must not make the next client wait for them."""
    abandoned = await asyncio.gather(*(call(front.port, i, NAME) for i in range(8)))
    assert all(a["result"]["resultType"] == "input_required" for a in abandoned)
    tampered = await call(front.port, 20, "test_input_required_result_tampered_state")
    state = tampered["result"]["requestState"]
    refused = await call(front.port, 21, "test_input_required_result_tampered_state",
                         inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
                         requestState=state + "-TAMPERED")
    assert refused["error"]["code"] == -32602
    assert len(front.http.rounds.exchanges) == 9


async def test_a_retry_without_the_answer_is_asked_again(front: Front) -> None:
    first = (await call(front.port, 1, NAME))["result"]
    again = (await call(front.port, 2, NAME, inputResponses={"wrong_key": {"action": "accept"}},
                        requestState=first["requestState"]))["result"]
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["user_name"]
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await call(front.port, 3, NAME, inputResponses={"user_name": answer}, requestState=again["requestState"])
    assert done["result"]["resultType"] == "complete"


async def test_a_first_request_may_bring_its_answers(front: Front) -> None:
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await call(front.port, 1, NAME, inputResponses={"user_name": answer, "extra": {"x": 1}})
    assert done["result"]["structuredContent"] == {"inputResponses": {"user_name": answer}}
    not_an_answer = await call(front.port, 2, NAME, inputResponses={"user_name": 12345})
    assert not_an_answer["result"]["resultType"] == "input_required"


async def test_questions_follow_the_requests_capabilities(front: Front) -> None:
    """Asked for elicitation and sampling, a request that declared sampling only is asked the
    sampling (the elicitation is answered ``cancel`` for it); one that declared neither gets
    -32021 for the sampling the server needs."""
    name = "test_input_required_result_capabilities"
    only = (await call(front.port, 1, name, caps={"sampling": {}}))["result"]
    assert [r["method"] for r in only["inputRequests"].values()] == ["sampling/createMessage"]
    refused = await call(front.port, 2, "test_missing_capability", caps={})
    assert refused["error"]["code"] == -32021


async def test_the_per_request_log_level(front: Front) -> None:
    """Log messages come on the request's stream at its ``_meta`` logLevel, none without one."""
    tool = "test_logging_tool"
    progress = {"progressToken": "p"}  # (what makes the answer an SSE stream)
    logged = await call(front.port, 1, tool, sse=True, meta={**progress, META_LOG_LEVEL: "info"})
    notes = [e["params"]["data"] for e in logged if e.get("method") == "notifications/message"]
    assert notes == ["step 1", "step 2"]
    quiet = await call(front.port, 2, tool, sse=True, meta={**progress, META_LOG_LEVEL: "error"})
    assert not [e for e in quiet if e.get("method") == "notifications/message"]
    unset = await call(front.port, 3, tool, sse=True, meta=progress)
    assert not [e for e in unset if e.get("method") == "notifications/message"]


@pytest.mark.parametrize("scope", ["private", "public"])
async def test_the_read_cache_keeps_private_results_per_client(scope: str) -> None:
    """Two clients read the same resource of a server that lets it be kept a minute: a
    private result is served from the cache to the client that read it only; a public one to
    both."""
    config = modern_reference(cache={"ttlMs": 60_000, "cacheScope": scope})
    async with Gateway(config, handle_signals=False, coalesce=0.01) as gateway, \
            client_of(gateway) as first, client_of(gateway) as second:
        stats = gateway.host.get_metrics()["reference"]["cache"]
        assert stats["hit"] == 0
        uri = "test://static-text"
        for client in (first, first, second):
            read = await client.get_resource(uri, cache=False)
            assert read["contents"][0]["text"] == "This is the content of the static text resource."
        stats = gateway.host.get_metrics()["reference"]["cache"]
        if scope == "private":
            assert (stats["hit"], stats["miss"]) == (1, 2)  # the second client read it again
        else:
            assert (stats["hit"], stats["miss"]) == (2, 1)


async def test_the_handler_is_told_the_key() -> None:
    """``with_key=True``: the key of the 2026-07-28 server's question; ``None`` for a
    handshake-era server's request."""
    seen: list[tuple[str, Any]] = []

    def answer(server: str, params: dict[str, Any], *, key: Any = "unset") -> dict[str, Any]:
        seen.append((server, key))
        return {"action": "accept", "content": {"name": "Ada"}}

    spec = {"tools": [{"name": "ask", "behavior": {"request": {
        "method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}}}}}}}]}
    config = {"mcpServers": {**modern_reference()["mcpServers"], "old": fake(spec)}}
    host = MCPHost(config, handle_signals=False)
    host.on_elicitation(answer, with_key=True, concurrency=2)
    async with host:
        await host.call_tool(f"reference.{NAME}", {})
        await host.call_tool("old.ask", {})
    assert seen == [("reference", "user_name"), ("old", None)]
    with pytest.raises(UsageError, match="concurrency"):
        host.on_sampling(answer, concurrency=0)
    with pytest.raises(UsageError, match="with_key"):
        host.on_roots(answer, with_key="yes")  # type: ignore[arg-type]


async def test_workers_sharing_a_state_key() -> None:
    """Two processes of one deployment (two apps here) sealing with the same key: a retry
    that reaches the other one is run there again, answered with what its state carries and
    what it brings (here over two rounds, each retry at the other process); a process with
    another key sees an altered state."""
    key = "k" * 32
    fronts: list[tuple[Gateway, HttpGateway]] = []
    try:
        for state_key in (key, key, "o" * 32):
            gateway = Gateway(modern_reference(), naming="pass-through", handle_signals=False)
            await gateway.start()
            http = HttpGateway(gateway, HttpOptions(state_key=state_key))
            await http.start("127.0.0.1", 0)
            fronts.append((gateway, http))
        ports = [http.address[1] for _gateway, http in fronts]
        tool = "test_input_required_result_multi_round"
        first = (await call(ports[0], 1, tool))["result"]
        name = {"action": "accept", "content": {"name": "Ada"}}
        other_key = (await call(ports[2], 2, tool, inputResponses={"user_name": name},
                                requestState=first["requestState"]))["error"]
        assert other_key["code"] == -32602 and "altered" in other_key["message"]
        second = (await call(ports[1], 3, tool, inputResponses={"user_name": name},
                             requestState=first["requestState"]))["result"]
        assert list(second["inputRequests"]) == ["favorite_color"]  # round 1 answered at the other one
        color = {"action": "accept", "content": {"color": "green"}}
        done = (await call(ports[0], 4, tool, inputResponses={"favorite_color": color},
                           requestState=second["requestState"]))["result"]
        assert done["structuredContent"] == {"inputResponses": {"user_name": name, "favorite_color": color}}
        # A state is good for its own request only.
        other = await call(ports[1], 5, NAME, inputResponses={"user_name": name}, requestState=first["requestState"])
        assert other["error"]["code"] == -32602
    finally:
        for gateway, http in fronts:
            await http.aclose()
            await gateway.aclose()
    with pytest.raises(UsageError, match="state_key"):
        HttpOptions(state_key="short")


@pytest.mark.parametrize(("value", "said"), [(None, "not set or empty"), ("short", "at least 32 bytes")])
def test_serve_state_key_env_is_checked(tmp_path: Any, value: str | None, said: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(modern_reference()))
    env = {k: v for k, v in os.environ.items() if k != "GW_STATE_KEY"}
    env["PYTHONPATH"] = package_root()
    if value is not None:
        env["GW_STATE_KEY"] = value
    run = subprocess.run([sys.executable, "-m", "mcphost", "serve", "--http", "127.0.0.1:0", "--state-key-env",
                          "GW_STATE_KEY", str(config)], capture_output=True, text=True, env=env, timeout=60,
                         stdin=subprocess.DEVNULL, check=False)
    assert run.returncode != 0 and said in run.stderr, run.stderr


async def test_two_asgi_apps_sharing_a_state_key() -> None:
    """The deployment case itself: two ``asgi_app`` instances under uvicorn (two workers, as
    gunicorn would run them), one key; each round of a request at the other one."""
    uvicorn = pytest.importorskip("uvicorn", reason="uvicorn (in the 'test' extra) is not installed")
    key = secrets.token_urlsafe(32)
    servers = []
    try:
        for _ in range(2):
            app = asgi_app(modern_reference(), naming="pass-through",
                           http=HttpOptions(state_key=key, allowed_hosts=["127.0.0.1"]))
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
            task = asyncio.ensure_future(server.serve())
            servers.append((server, task))
            assert await wait_for(lambda s=server, t=task: s.started or t.done(), 60) and server.started
        ports = [int(server.servers[0].sockets[0].getsockname()[1]) for server, _task in servers]
        tool = "test_input_required_result_multi_round"
        first = (await call(ports[0], 1, tool))["result"]
        name = {"action": "accept", "content": {"name": "Ada"}}
        second = (await call(ports[1], 2, tool, inputResponses={"user_name": name},
                             requestState=first["requestState"]))["result"]
        color = {"action": "accept", "content": {"color": "green"}}
        done = (await call(ports[0], 3, tool, inputResponses={"favorite_color": color},
                           requestState=second["requestState"]))["result"]
        assert done["structuredContent"] == {"inputResponses": {"user_name": name, "favorite_color": color}}
    finally:
        for server, task in servers:
            server.should_exit = True
            await asyncio.wait_for(task, 30)
