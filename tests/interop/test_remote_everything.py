"""Interop tests of the remote transports against the reference server
``@modelcontextprotocol/server-everything`` served over HTTP.

The same client features as the stdio suite (``test_everything.py``), driven over both
remote modes of the server, each test parametrized by the mode:

- ``http``: Streamable HTTP (``npx ... server-everything streamableHttp``, endpoint
  ``/mcp``, configuration ``"type": "http"``). The server answers each request on the
  request's POST, mostly as an SSE stream that also carries the messages it sends *for* that
  request (progress, and the sampling and elicitation requests a tool asks while it runs).
  What it sends outside a request (log notifications, ``resources/updated``,
  ``list_changed``, its ``roots/list`` request, a task's ``elicitation/create`` and status
  notifications) goes on the standalone GET stream the host opens after the handshake; with
  no GET stream open the server drops them, so receiving them at all shows the stream
  works. The end of a session is a DELETE, which the server logs.
- ``sse``: the legacy HTTP+SSE transport (``npx ... server-everything sse``, endpoint
  ``/sse``, configuration ``"type": "sse"``): every server message on one GET stream, every
  client message POSTed to the ``/message?sessionId=...`` endpoint the stream announced.
  The session ends when the GET stream closes, which the server logs.

Found on this machine: server-everything 2026.8.31 (serverInfo ``mcp-servers/everything``
2.0.0); both modes negotiate protocol 2025-11-25 and offer the same tools, resources and
prompts (the SDK server behind both modes is the same; only the transport differs).

One server process per mode serves the whole module (each host is a session of its own on
it); stateless features share one host per mode (its handlers delegate to a per-test
:class:`Recorder`); features that change session state (log level, subscriptions, roots,
tasks waiting for input, shutdown) get a host of their own. The last test runs two SSE
servers in one Talk-2-Tables-shaped configuration.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import os
import re
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from helpers import descendants, needs_npx, wait_for
from recorder import Recorder, raw_result, texts
from remote_everything import EverythingServer

from mcphost import MCPHost
from mcphost.errors import MCPHostError, ServerError, TimeoutError, ValidationError
from mcphost.policy import NO_RETRY
from mcphost.transports.http import StreamableHttpTransport
from mcphost.transports.sse import SseTransport

pytestmark = [pytest.mark.interop, needs_npx, pytest.mark.asyncio(loop_scope="module")]

SERVER = "everything"
MODES = ["http", "sse"]
TRANSPORTS = {"http": StreamableHttpTransport, "sse": SseTransport}
SHUTDOWN_TIMEOUT = 2.0
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
STATIC_DOCS = "demo://resource/static/document/"


class Servers:
    """The module's server processes, started on first use, stopped at the module's end."""

    def __init__(self) -> None:
        self.running: dict[str, EverythingServer] = {}
        self.failed: dict[str, RuntimeError] = {}

    def get(self, mode: str) -> EverythingServer:
        if mode in self.failed:
            raise self.failed[mode]
        if mode not in self.running:
            server = EverythingServer(mode)
            self.running[mode] = server  # stopped below even if the start fails half-way
            try:
                server.start()
            except RuntimeError as exc:
                self.failed[mode] = exc
                raise
        return self.running[mode]

    def stop(self) -> None:
        for server in self.running.values():
            try:
                server.stop()
            finally:
                server.remove_log()


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    pool = Servers()
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture(scope="module", params=MODES)
def server(request: pytest.FixtureRequest, servers: Servers) -> EverythingServer:
    return servers.get(request.param)


@pytest.fixture(scope="module")
def sse_server(servers: Servers) -> EverythingServer:
    """The module's SSE server, outside the parametrization (started before a test's own
    process checks)."""
    return servers.get("sse")


def config(server: EverythingServer, name: str = SERVER, *, typed: bool = True) -> dict[str, Any]:
    """One server entry; ``typed=False`` leaves the type to be inferred from the URL path."""
    entry: dict[str, Any] = {"url": server.url}
    if typed:
        entry["type"] = server.mode
    return {"mcpServers": {name: entry}}


def new_host(server: EverythingServer, **kwargs: Any) -> MCPHost:
    kwargs.setdefault("shutdown_timeout", SHUTDOWN_TIMEOUT)
    return MCPHost(config(server), **kwargs)


def session_id(host: MCPHost, name: str = SERVER) -> str:
    """The server's id of the host's session: the ``Mcp-Session-Id`` (Streamable HTTP) or
    the ``sessionId`` of the endpoint the SSE stream announced (legacy HTTP+SSE)."""
    transport = host.servers[name].transport
    if isinstance(transport, StreamableHttpTransport):
        assert transport.session_id
        return transport.session_id
    assert isinstance(transport, SseTransport), transport
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(transport.post_target).query)
    [sid] = query["sessionId"]
    return sid


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_host(server: EverythingServer) -> AsyncIterator[tuple[MCPHost, Recorder]]:
    recorder = Recorder()
    host = new_host(server, unavailable_after_timeouts=0, roots=[])
    host.on_sampling(recorder.on_sampling)
    host.on_elicitation(recorder.on_elicitation, url=True)
    host.on_event(recorder.events.append)
    host.on_log(recorder.on_log)
    host.on_progress(recorder.on_progress)
    async with host:
        yield host, recorder
        # Every feature test went through without a single failed HTTP exchange.
        transport = host.get_metrics()[SERVER]["transport"]
        assert transport["http_errors"] == 0, (transport, host.servers[SERVER].stderr_tail())


@pytest.fixture
def everything(shared_host: tuple[MCPHost, Recorder]) -> Iterator[tuple[MCPHost, Recorder]]:
    host, recorder = shared_host
    recorder.reset()
    yield host, recorder


def tool(host: MCPHost, name: str) -> dict[str, Any]:
    tools = {t["name"]: t for t in host.get_tools()[SERVER]["tools"]}
    assert name in tools, f"{name} not offered; tools: {sorted(tools)}"
    return tools[name]


# -- the session and the tool list ---------------------------------------------------------


async def test_server_info_and_tool_list(everything: tuple[MCPHost, Recorder],
                                         server: EverythingServer) -> None:
    host, _ = everything
    assert isinstance(host.servers[SERVER].transport, TRANSPORTS[server.mode])
    info = host.get_tools()[SERVER]
    assert info["state"] == "ready"
    assert info["protocolVersion"] == "2025-11-25"
    assert info["serverInfo"]["name"] == "mcp-servers/everything"
    assert info["instructions"]
    caps = info["capabilities"]
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert "logging" in caps and "completions" in caps
    assert caps["tasks"]["requests"]["tools"]["call"] == {}
    client_caps = host.servers[SERVER].session.client_caps
    assert client_caps["sampling"] == {}
    assert client_caps["elicitation"] == {"form": {}, "url": {}}
    names = {t["name"] for t in info["tools"]}
    # The always-registered tools, and those the server registers once it knows what the
    # client declared (sampling, elicitation, roots, tasks).
    assert {"echo", "get-sum", "trigger-long-running-operation", "toggle-simulated-logging",
            "toggle-subscriber-updates", "get-structured-content", "get-resource-links"} <= names
    assert {"trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation",
            "get-roots-list", "simulate-research-query", "trigger-sampling-request-async",
            "trigger-elicitation-request-async"} <= names
    assert tool(host, "get-sum")["inputSchema"]["properties"]["a"]["type"] == "number"
    assert host.get_metrics()[SERVER]["pid"] is None  # nothing was spawned for it


async def test_echo_and_get_sum(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    echoed = await host.call_tool(f"{SERVER}.echo", {"message": "hello over HTTP ✓"})
    assert echoed["content"] == [{"type": "text", "text": "Echo: hello over HTTP ✓"}]
    summed = await host.call_tool(f"{SERVER}.get-sum", {"a": 2, "b": 40.5})
    assert texts(summed) == ["The sum of 2 and 40.5 is 42.5."]
    # Calls in flight at once, each answered on its own POST.
    many = await asyncio.gather(*(host.call_tool(f"{SERVER}.get-sum", {"a": i, "b": i}) for i in range(12)))
    assert [texts(r)[0] for r in many] == [f"The sum of {i} and {i} is {2 * i}." for i in range(12)]
    # Arguments are still checked against the schema before anything is sent.
    with pytest.raises(ValidationError) as caught:
        await host.call_tool(f"{SERVER}.get-sum", {"a": "one", "b": 2})
    assert caught.value.path == "$.a"


async def test_structured_content(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    result = await host.call_tool(f"{SERVER}.get-structured-content", {"location": "Los Angeles"})
    assert result["structuredContent"] == {"temperature": 73, "conditions": "Sunny / Clear", "humidity": 48}
    assert json.loads(texts(result)[0]) == result["structuredContent"]


# -- what the server asks of the client ----------------------------------------------------


async def test_sampling(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    rec.sampling_reply = {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris is the capital of France."},
        "model": "test-model-1",
        "stopReason": "endTurn",
    }
    result = await host.call_tool(
        f"{SERVER}.trigger-sampling-request", {"prompt": "Capital of France?", "maxTokens": 42}
    )
    assert not result.get("isError")
    [(server, params)] = rec.sampling
    assert server == SERVER
    assert params["maxTokens"] == 42
    assert params["systemPrompt"] == "You are a helpful test server."
    [message] = params["messages"]
    assert message["role"] == "user"
    assert message["content"]["type"] == "text"
    assert message["content"]["text"].endswith("Capital of France?")
    [text] = texts(result)
    assert text.startswith("LLM sampling result:")
    assert json.loads(text.split(":", 1)[1]) == rec.sampling_reply


async def test_sampling_as_a_client_task(everything: tuple[MCPHost, Recorder]) -> None:
    # The server asks for sampling as a task, polls the host's tasks/get, then tasks/result.
    host, rec = everything
    rec.sampling_reply = {"role": "assistant", "model": "test-model-2",
                          "content": {"type": "text", "text": "run as a task"}}
    result = await host.call_tool(f"{SERVER}.trigger-sampling-request-async",
                                  {"prompt": "background?", "maxTokens": 7}, timeout=60)
    [text] = texts(result)
    assert text.startswith("[COMPLETED]"), text
    [(server, params)] = rec.sampling
    assert server == SERVER and params["maxTokens"] == 7 and "task" in params
    task_id = re.search(r"Task created: (\S+)", text)
    assert task_id is not None
    final = json.loads(text.split("**Result:**", 1)[1])
    assert final["content"] == rec.sampling_reply["content"]
    assert final["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id.group(1)}


async def test_form_elicitation_accept_and_decline(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    rec.elicitation_reply = {
        "action": "accept",
        "content": {"name": "Ada Lovelace", "check": True, "email": "ada@example.com"},
    }
    accepted = await host.call_tool(f"{SERVER}.trigger-elicitation-request", {})
    [(server, params)] = rec.elicitation
    assert server == SERVER
    assert params.get("mode", "form") == "form"
    assert params["message"] == "Please provide inputs for the following fields:"
    schema = params["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["name"]
    assert {"name", "check", "email", "birthdate", "integer"} <= set(schema["properties"])
    assert ("User inputs:\n- Name: Ada Lovelace\n- Agreed to terms: true\n- Email: ada@example.com"
            in texts(accepted))
    assert raw_result(accepted) == rec.elicitation_reply

    rec.elicitation_reply = {"action": "decline"}
    declined = await host.call_tool(f"{SERVER}.trigger-elicitation-request", {})
    assert len(rec.elicitation) == 2
    assert any("declined" in t for t in texts(declined))
    assert raw_result(declined) == {"action": "decline"}


async def test_elicitation_as_a_client_task(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    rec.elicitation_reply = {"action": "accept", "content": {"name": "Ada Lovelace"}}
    result = await host.call_tool(f"{SERVER}.trigger-elicitation-request-async", {}, timeout=60)
    status, inputs, _ = texts(result)
    assert status.startswith("[COMPLETED]"), status
    assert "- Name: Ada Lovelace" in inputs
    raw = raw_result(result)
    assert raw["action"] == "accept" and raw["content"] == {"name": "Ada Lovelace"}
    [(_, params)] = rec.elicitation
    assert "task" in params and "name" in params["requestedSchema"]["properties"]


async def test_url_elicitation(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    rec.elicitation_reply = {"action": "accept"}
    url = "https://example.com/authorize?state=42"
    result = await host.call_tool(
        f"{SERVER}.trigger-url-elicitation",
        {"url": url, "message": "Sign in, please", "elicitationId": "elic-1"},
    )
    [(server, params)] = rec.elicitation
    assert server == SERVER
    assert (params["mode"], params["url"], params["elicitationId"]) == ("url", url, "elic-1")
    assert "completed the URL elicitation" in texts(result)[0]
    assert raw_result(result) == {"action": "accept"}
    # The error path: tools/call answered with -32042 and the URL to open.
    with pytest.raises(ServerError) as caught:
        await host.call_tool(f"{SERVER}.trigger-url-elicitation",
                             {"url": "https://example.com/needs-auth", "errorPath": True})
    assert caught.value.code == -32042
    [pending] = caught.value.data["elicitations"]
    assert pending["mode"] == "url" and pending["url"].startswith("https://") and pending["elicitationId"]
    assert len(rec.elicitation) == 1  # nothing more was asked through elicitation/create


async def test_roots_from_constructor_and_set_roots(server: EverythingServer, tmp_path: Path) -> None:
    # roots/list is a request the server sends outside any request of the client: over
    # Streamable HTTP it comes on the standalone GET stream, and the answer is a POST.
    first = tmp_path / "project-a"
    second = tmp_path / "project-b"
    first.mkdir()
    second.mkdir()
    logs: list[str] = []
    host = new_host(server, roots=[str(first)])
    host.on_log(lambda _server, params: logs.append(str(params.get("data"))))
    async with host:
        # The server asks roots/list by itself ~350 ms after initialize, then logs the count.
        assert await wait_for(lambda: "Roots updated: 1 root(s) received from client" in logs)
        text = texts(await host.call_tool(f"{SERVER}.get-roots-list", {}))[0]
        assert "Current MCP Roots (1 total)" in text
        assert f"1. project-a\n   URI: {first.as_uri()}" in text

        await host.set_roots([str(second), {"uri": "file:///srv/data", "name": "data"}])
        # roots/list_changed (a POSTed notification) -> the server asks again -> logged.
        assert await wait_for(lambda: "Roots updated: 2 root(s) received from client" in logs)
        text = texts(await host.call_tool(f"{SERVER}.get-roots-list", {}))[0]
        assert "Current MCP Roots (2 total)" in text
        assert f"1. project-b\n   URI: {second.as_uri()}" in text
        assert "2. data\n   URI: file:///srv/data" in text
        assert first.as_uri() not in text


# -- progress, logging, subscriptions ------------------------------------------------------


async def test_long_running_operation_progress(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    seen: list[dict[str, Any]] = []
    result = await host.call_tool(
        f"{SERVER}.trigger-long-running-operation", {"duration": 1, "steps": 4},
        progress=seen.append,
    )
    assert texts(result) == ["Long running operation completed. Duration: 1 seconds, Steps: 4."]
    # Every notification came before the response (they share the request's stream).
    assert [p["progress"] for p in seen] == [1, 2, 3, 4]
    assert {p["total"] for p in seen} == {4}
    token = seen[0]["progressToken"]
    assert {p["progressToken"] for p in seen} == {token}
    mine = [(s, p) for s, p in rec.progress if p.get("progressToken") == token]
    assert [p["progress"] for _, p in mine] == [1, 2, 3, 4]
    assert {s for s, _ in mine} == {SERVER}


async def test_progress_resets_the_timeout(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    seen: list[float] = []
    # 2 s of work in 8 steps, with a 0.75 s timeout renewed by each notification.
    result = await host.call_tool(
        f"{SERVER}.trigger-long-running-operation", {"duration": 2, "steps": 8},
        timeout=0.75, reset_timeout_on_progress=True,
        progress=lambda p: seen.append(p["progress"]),
    )
    assert not result.get("isError")
    assert seen == [1, 2, 3, 4, 5, 6, 7, 8]


async def test_timeout_cancels_the_call(server: EverythingServer) -> None:
    # Without the renewal the call times out: the host cancels it (over Streamable HTTP it
    # also closes the request's stream) and the session serves the next call. (The tool is
    # idempotent, so the default policy would try it again: one try here.)
    host = new_host(server, retry=NO_RETRY, unavailable_after_timeouts=0)
    async with host:
        with pytest.raises(TimeoutError):
            await host.call_tool(f"{SERVER}.trigger-long-running-operation", {"duration": 2, "steps": 8},
                                 timeout=0.75, progress=lambda p: None)
        assert host.get_metrics()[SERVER]["tools"]["trigger-long-running-operation"]["timeouts"] == 1
        assert host.get_tools()[SERVER]["state"] == "ready"
        assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "still here"})) == ["Echo: still here"]
        assert host.get_metrics()[SERVER]["transport"]["http_errors"] == 0


async def test_concurrent_calls_with_progress(everything: tuple[MCPHost, Recorder]) -> None:
    # More calls holding a response stream open than the transport keeps connections (8):
    # the rest wait for one, and a sampling request asked meanwhile is still answered.
    host, rec = everything
    rec.sampling_reply = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "ok"}}
    progress: dict[int, list[float]] = {}
    calls = [host.call_tool(f"{SERVER}.trigger-long-running-operation", {"duration": 1, "steps": 2},
                            progress=lambda p, i=i: progress.setdefault(i, []).append(p["progress"]))
             for i in range(12)]
    calls += [host.call_tool(f"{SERVER}.trigger-sampling-request", {"prompt": f"q{i}", "maxTokens": 3})
              for i in range(3)]
    results = await asyncio.wait_for(asyncio.gather(*calls), 60)
    assert [texts(r)[0] for r in results[:12]] == [
        "Long running operation completed. Duration: 1 seconds, Steps: 2."] * 12
    assert progress == {i: [1, 2] for i in range(12)}
    assert all(texts(r)[0].startswith("LLM sampling result:") for r in results[12:])
    assert sorted(p["messages"][0]["content"]["text"][-2:] for _, p in rec.sampling) == ["q0", "q1", "q2"]


async def test_logging_respects_the_level(server: EverythingServer) -> None:
    # The server's log notifications are sent outside any request (over Streamable HTTP: on
    # the GET stream), so they may come after the response of the request that caused them:
    # each is waited for. A GET stream (or the SSE stream) is ordered, which makes a later
    # message the proof that an earlier one was not sent.
    received: list[tuple[str, dict[str, Any], str]] = []
    current = {"level": "debug"}
    host = new_host(server, roots=[])  # roots declared: the server syncs them and logs it
    host.on_log(lambda name, params: received.append((name, params, current["level"])))
    uri = "demo://resource/dynamic/text/1"

    def logged(pattern: str, since: int = 0) -> bool:
        return any(re.search(pattern, str(p["data"])) for _, p, _ in received[since:])

    async def set_level(level: str) -> None:
        await host.set_log_level(SERVER, level)
        current["level"] = level

    async with host:
        # Before any setLevel the server sends everything (its roots sync logs at info).
        assert await wait_for(lambda: logged("Roots updated"))

        await set_level("info")
        await host.subscribe_resource(uri)  # the server logs the subscription at info ...
        assert await wait_for(lambda: logged(f"^Received Subscribe Resource request for URI: {uri}"))
        assert any(p["level"] == "info" for _, p, _ in received if "Subscribe" in str(p["data"]))

        await set_level("warning")
        await host.unsubscribe_resource(uri)  # ... and this one, below warning, is not sent.

        await set_level("debug")
        started = len(received)
        await host.call_tool(f"{SERVER}.toggle-simulated-logging", {})
        simulated = r"^\w+[- ]level[- ]message"
        assert await wait_for(lambda: logged(simulated, started))
        # The simulated message came after the unsubscription's place in the stream.
        assert not logged("Unsubscribe")
        await host.call_tool(f"{SERVER}.toggle-simulated-logging", {})

    assert {name for name, _, _ in received} == {SERVER}
    for _, params, level in received:
        assert params["level"] in LEVELS
        assert LEVELS.index(params["level"]) >= LEVELS.index(level), (params, level)


async def test_resource_subscription_updates(server: EverythingServer) -> None:
    events: list[dict[str, Any]] = []
    host = new_host(server)
    host.on_event(lambda event: events.append(event) if event["type"] == "resource_updated" else None)
    uri = "demo://resource/dynamic/text/7"  # routed by the text resource template
    async with host:
        await host.get_resource(uri)
        await host.get_resource(uri)
        assert host.get_metrics()[SERVER]["cache"]["hit"] == 1  # the second read was cached
        await host.subscribe_resource(uri)
        result = await host.call_tool(f"{SERVER}.toggle-subscriber-updates", {})
        assert texts(result)[0].startswith("Started simulated resource updated notifications")
        # The server sends one update at once (then one every 5 s), outside any request.
        assert await wait_for(lambda: len(events) >= 1)
        assert events[0] == {"type": "resource_updated", "server": SERVER, "data": {"uri": uri}}
        assert {e["data"]["uri"] for e in events} == {uri}
        # resources/updated emptied the cache for that URI: the next read asks the server.
        reads = host.get_metrics()[SERVER]["methods"]["resources/read"]["calls"]
        await host.get_resource(uri)
        assert host.get_metrics()[SERVER]["methods"]["resources/read"]["calls"] == reads + 1
        stopped = await host.call_tool(f"{SERVER}.toggle-subscriber-updates", {})
        assert texts(stopped)[0].startswith("Stopped simulated resource updates")
        await host.unsubscribe_resource(uri)


# -- resources, prompts, completions ---------------------------------------------------------


async def test_resources_list_and_read(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    info = host.get_tools()[SERVER]
    listed = [r for r in info["resources"] if r["uri"].startswith(STATIC_DOCS)]
    assert {r["name"] for r in listed} >= {"features.md", "instructions.md", "architecture.md"}
    for resource in listed:
        read = await host.get_resource(resource["uri"])
        [content] = read["contents"]
        assert content["uri"] == resource["uri"]
        assert content["mimeType"] == resource["mimeType"] == "text/markdown"
        assert content["text"].strip()
    features = await host.get_resource(STATIC_DOCS + "features.md")
    assert features["contents"][0]["text"].startswith("# Everything Server - Features")
    instructions = await host.get_resource(STATIC_DOCS + "instructions.md")
    assert instructions["contents"][0]["text"] == info["instructions"]
    # Templates route URIs no list names.
    templates = {t["uriTemplate"] for t in info["resourceTemplates"]}
    assert templates == {"demo://resource/dynamic/text/{resourceId}",
                         "demo://resource/dynamic/blob/{resourceId}"}
    text = await host.get_resource("demo://resource/dynamic/text/3")
    assert text["contents"][0]["text"].startswith("Resource 3: ")
    blob = await host.get_resource("demo://resource/dynamic/blob/4", cache=False)
    assert blob["contents"][0]["blob"]


async def test_session_resource_appears_after_list_changed(everything: tuple[MCPHost, Recorder]) -> None:
    # gzip-file-as-resource registers a resource at run time; the server's
    # resources/list_changed is sent outside the request (over Streamable HTTP: on the GET
    # stream) and the host lists the resources again.
    host, rec = everything
    payload = b"hello from mcphost\n" * 3
    data_uri = "data:text/plain;base64," + base64.b64encode(payload).decode()
    result = await host.call_tool(f"{SERVER}.gzip-file-as-resource", {"name": "hello.txt.gz", "data": data_uri})
    uri = "demo://resource/session/hello.txt.gz"
    assert result["content"] == [{"type": "resource_link", "uri": uri, "name": "hello.txt.gz",
                                  "mimeType": "application/gzip"}]
    assert await wait_for(lambda: any(
        e["type"] == "capabilities_changed" and "resources" in e["data"] for e in rec.events))
    assert await wait_for(lambda: uri in {r["uri"] for r in host.get_tools()[SERVER]["resources"]})
    [content] = (await host.get_resource(uri))["contents"]
    assert content["mimeType"] == "application/gzip"
    assert gzip.decompress(base64.b64decode(content["blob"])) == payload


async def test_prompts(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    prompts = {p["name"]: p for p in host.get_tools()[SERVER]["prompts"]}
    assert set(prompts) == {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"}
    assert [(a["name"], a.get("required")) for a in prompts["args-prompt"]["arguments"]] == [
        ("city", True), ("state", False)]
    simple = await host.get_prompt(f"{SERVER}.simple-prompt")
    assert simple["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "This is a simple prompt without arguments."}}]
    args = await host.get_prompt(f"{SERVER}.args-prompt", {"city": "Paris", "state": "TX"})
    assert args["messages"][0]["content"]["text"] == "What's weather in Paris, TX?"
    embedded = await host.get_prompt(f"{SERVER}.resource-prompt", {"resourceType": "Text", "resourceId": 2})
    intro, resource = embedded["messages"]
    assert "Text resource with id: 2" in intro["content"]["text"]
    assert resource["content"]["resource"]["uri"] == "demo://resource/dynamic/text/2"


async def test_completions(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    ref = {"type": "ref/prompt", "name": f"{SERVER}.completable-prompt"}
    completion = await host.complete(ref, {"name": "department", "value": "S"})
    assert list(completion["values"]) == ["Sales", "Support"]
    sales = await host.complete(ref, {"name": "name", "value": "E"},
                                context={"arguments": {"department": "Sales"}})
    assert list(sales["values"]) == ["Eve"]


# -- tasks ----------------------------------------------------------------------------------


async def test_task_required_tool(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    assert tool(host, "simulate-research-query")["execution"] == {"taskSupport": "required"}
    # Called plainly, the task-only tool is followed to its end: the caller gets the result
    # (run meanwhile: each research takes a few seconds).
    plain = asyncio.ensure_future(host.call_tool(f"{SERVER}.simulate-research-query", {"topic": "tides"}))
    try:
        handle = await host.call_tool(f"{SERVER}.simulate-research-query", {"topic": "tidal energy"}, task=True)
        assert handle.server == SERVER
        assert handle.task_id
        assert handle.status in ("working", "completed")
        result = await asyncio.wait_for(handle.result(), 20)
        assert handle.status == "completed"
        [text] = texts(result)
        assert text.startswith("# Research Report: tidal energy")
        assert "Stage 4: Generating report" in text
        statuses = [e["data"] for e in rec.events
                    if e["type"] == "task_status" and e["data"]["taskId"] == handle.task_id]
        assert statuses and statuses[-1]["status"] == "completed"
        listed = {t["taskId"]: t for t in await host.list_tasks(SERVER)}
        assert listed[handle.task_id]["status"] == "completed"
        assert texts(await asyncio.wait_for(plain, 30))[0].startswith("# Research Report: tides")
    finally:
        if not plain.done():
            plain.cancel()
            with contextlib.suppress(asyncio.CancelledError, MCPHostError):
                await plain
    # A task-forbidden tool is refused by the host, before anything is sent.
    with pytest.raises(MCPHostError) as caught:
        await host.call_tool(f"{SERVER}.echo", {"message": "x"}, task=True)
    assert not isinstance(caught.value, ServerError), caught.value


async def test_task_input_required_delivers_elicitation(server: EverythingServer) -> None:
    # The server asks its question while the task runs, after tools/call was answered: not on
    # the (ended) stream of the tools/call but, over Streamable HTTP, on the GET stream.
    asked: list[dict[str, Any]] = []

    def answer(_server: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"interpretation": "snake"}}

    host = new_host(server)
    host.on_elicitation(answer)
    async with host:
        handle = await host.call_tool(f"{SERVER}.simulate-research-query",
                                      {"topic": "python", "ambiguous": True}, task=True)
        try:
            assert await wait_for(lambda: bool(asked), timeout=15)
            assert "multiple interpretations" in asked[0]["message"]
            props = asked[0]["requestedSchema"]["properties"]
            assert "snake" in {o["const"] for o in props["interpretation"]["oneOf"]}
            result = await asyncio.wait_for(handle.result(), 15)
            assert "**Clarification**: snake" in texts(result)[0]
        finally:
            if not handle.done:
                with contextlib.suppress(MCPHostError):
                    await handle.cancel()
                with contextlib.suppress(MCPHostError, asyncio.TimeoutError):
                    await asyncio.wait_for(handle.result(), 5)


# -- shutdown -------------------------------------------------------------------------------


async def test_shutdown_ends_the_session(server: EverythingServer) -> None:
    # The type is inferred from the URL's path (/mcp: http, /sse: sse).
    before = set(descendants(os.getpid()))
    host = MCPHost(config(server, typed=False), shutdown_timeout=SHUTDOWN_TIMEOUT)
    await host.initialize()
    try:
        assert isinstance(host.servers[SERVER].transport, TRANSPORTS[server.mode])
        sid = session_id(host)
        assert (await host.call_tool(f"{SERVER}.echo", {"message": "bye"}))["content"] == [
            {"type": "text", "text": "Echo: bye"}]
        if server.mode == "http":
            assert f"Session initialized with ID: {sid}" in server.log()
        else:
            assert f"Client Connected:  {sid}" in server.log()
    finally:
        await host.shutdown()
    assert host.get_tools()[SERVER]["state"] == "stopped"
    if server.mode == "http":
        # The session was DELETEd: the server closed its transport and forgot the session.
        assert await wait_for(lambda: f"Received session termination request for session {sid}" in server.log())
        assert await wait_for(lambda: f"Transport closed for session {sid}" in server.log())
    else:
        # The GET stream was closed: the server saw its client go.
        assert await wait_for(lambda: f"Client Disconnected:  {sid}" in server.log())
    assert host.get_metrics()[SERVER]["transport"]["http_errors"] == 0
    assert set(descendants(os.getpid())) - before == set()  # a remote server spawns nothing
    await host.shutdown()  # idempotent


async def test_restart_starts_a_new_session(server: EverythingServer) -> None:
    async with new_host(server) as host:
        old = session_id(host)
        await host.restart_server(SERVER)
        new = session_id(host)
        assert new != old
        assert host.get_tools()[SERVER]["state"] == "ready"
        assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "again"})) == ["Echo: again"]
        ended = (f"Transport closed for session {old}" if server.mode == "http"
                 else f"Client Disconnected:  {old}")
        assert await wait_for(lambda: ended in server.log())
        assert (f"Transport closed for session {new}" if server.mode == "http"
                else f"Client Disconnected:  {new}") not in server.log()


# -- two SSE servers, Talk-2-Tables-shaped ------------------------------------------------------


async def test_two_sse_servers_talk_2_tables_shape(sse_server: EverythingServer, no_leftovers: None) -> None:
    first = sse_server
    with EverythingServer("sse") as second:  # its own port; stopped (group and all) at the end
        assert second.port != first.port
        cfg = {
            "mcp_servers": {
                "database_mcp": {"name": "Database MCP Server", "url": first.url, "priority": 10,
                                 "domains": ["sales", "transactions", "orders", "products"],
                                 "capabilities": ["execute_query", "list_resources"], "transport": "sse"},
                "product_metadata_mcp": {"name": "Product Metadata MCP", "url": second.url, "priority": 1,
                                         "domains": ["products", "product_aliases", "column_mappings"],
                                         "capabilities": ["list_resources"], "transport": "sse"},
            },
            "orchestration": {"resource_cache_ttl": 300, "fail_fast": True, "log_level": "WARNING"},
        }
        async with MCPHost(cfg, shutdown_timeout=SHUTDOWN_TIMEOUT) as host:
            names = ("database_mcp", "product_metadata_mcp")
            for name in names:
                assert isinstance(host.servers[name].transport, SseTransport)
                assert host.get_tools()[name]["state"] == "ready"
            assert host.get_tools()["database_mcp"]["declaredCapabilities"] == ["execute_query", "list_resources"]
            assert host.servers_for("products") == ["product_metadata_mcp", "database_mcp"]
            sids = {name: session_id(host, name) for name in names}
            assert f"Client Connected:  {sids['database_mcp']}" in first.log()
            assert f"Client Connected:  {sids['product_metadata_mcp']}" in second.log()

            gathered = await host.gather_resources(uri_filter=STATIC_DOCS + "*")
            assert gathered["errors"] == []
            found = gathered["resources"]
            # Both servers list the same documents: each is read from each, by priority.
            per_server = {name: sorted(r["uri"] for r in found if r["server"] == name) for name in names}
            listed = sorted(r["uri"] for r in host.get_tools()["database_mcp"]["resources"]
                            if r["uri"].startswith(STATIC_DOCS))
            assert listed and per_server == dict.fromkeys(names, listed)
            assert [r["server"] for r in found] == ["product_metadata_mcp"] * len(listed) + ["database_mcp"] * len(listed)
            assert {r["priority"] for r in found if r["server"] == "database_mcp"} == {10}
            for resource in found:
                [content] = resource["contents"]
                assert content["uri"] == resource["uri"] and content["text"].strip()
            reads = {name: host.get_metrics()[name]["methods"]["resources/read"]["calls"] for name in names}
            assert reads == {name: len(listed) for name in names}

            # A tool called on one server: only that server's session sees it.
            result = await host.call_tool("database_mcp.get-sum", {"a": 19, "b": 23})
            assert texts(result) == ["The sum of 19 and 23 is 42."]
            metrics = host.get_metrics()
            assert metrics["database_mcp"]["tools"]["get-sum"]["calls"] == 1
            assert "get-sum" not in metrics["product_metadata_mcp"]["tools"]
        for name, server in (("database_mcp", first), ("product_metadata_mcp", second)):
            assert await wait_for(lambda s=server, n=name: f"Client Disconnected:  {sids[n]}" in s.log())
