"""Interop tests against the MCP reference server ``@modelcontextprotocol/server-everything``,
one body per behaviour, each run over every transport the server speaks (the ``target``
fixture, ``everything_targets.py``): stdio, Streamable HTTP and legacy HTTP+SSE.

Found on this machine: server-everything 2026.8.31 (serverInfo ``mcp-servers/everything``
2.0.0), protocol 2025-11-25 over all three transports (the SDK server behind them is the
same; only the transport differs). It offers kebab-case tools (``echo``, ``get-sum``,
``trigger-sampling-request``, ``trigger-elicitation-request``, ``trigger-url-elicitation``,
``get-roots-list``, ``trigger-long-running-operation``, ``toggle-simulated-logging``,
``toggle-subscriber-updates``, ``get-structured-content``, ``get-resource-links``,
``get-resource-reference``, ``get-annotated-message``, ``get-tiny-image``,
``gzip-file-as-resource``, ``get-env`` and the task tool ``simulate-research-query`` with
``execution.taskSupport: "required"``); no audio tool. Because the host declares that it
runs task-augmented sampling and elicitation, the server also offers
``trigger-sampling-request-async`` and ``trigger-elicitation-request-async``, which follow
the host's client-side tasks. The capability-dependent tools are
registered after ``notifications/initialized``, which the server announces with a burst of
``notifications/tools/list_changed``.

Over Streamable HTTP the server answers each request on the request's POST, mostly as an
SSE stream that also carries what it sends *for* that request (progress, the sampling and
elicitation requests a tool asks while it runs); what it sends outside a request (log
notifications, ``resources/updated``, ``list_changed``, its ``roots/list`` request, a task's
``elicitation/create``) goes on the standalone GET stream the host opens after the
handshake, so receiving those at all shows that stream works. Over legacy HTTP+SSE every
server message comes on one GET stream. Such messages may come after the response of the
request that caused them: the tests wait for them (bounded).

Each test asserts what the application received. Stateless features share one host per
transport (its handlers delegate to a per-test :class:`Recorder`); features that change
server state (log level, subscriptions, roots, startup notifications, tasks waiting for
input, shutdown) get a host of their own. What only the HTTP transports have (session ids,
the end of a session, several HTTP servers at once) is in ``test_remote_everything.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from everything_targets import SERVER, Target
from helpers import descendants, needs_npx, wait_for
from recorder import Recorder, raw_result, texts

from mcphost import MCPHost
from mcphost.errors import MCPHostError, ServerError, TimeoutError, ValidationError
from mcphost.policy import NO_RETRY
from mcphost.transports.http import StreamableHttpTransport
from mcphost.transports.sse import SseTransport
from mcphost.transports.stdio import StdioTransport

pytestmark = [pytest.mark.interop, needs_npx, pytest.mark.asyncio(loop_scope="module")]

TRANSPORT_CLASSES = {"stdio": StdioTransport, "http": StreamableHttpTransport, "sse": SseTransport}
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STATIC_DOCS = "demo://resource/static/document/"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_host(target: Target) -> AsyncIterator[tuple[MCPHost, Recorder]]:
    recorder = Recorder()
    # The shared host serves every feature test; one of them times a call out on purpose,
    # which must not make the server unavailable for the rest (health has its own tests).
    host = target.new_host(unavailable_after_timeouts=0, roots=[])  # roots declared: get-roots-list exists
    host.on_sampling(recorder.on_sampling)
    host.on_elicitation(recorder.on_elicitation, url=True)
    host.on_event(recorder.events.append)
    host.on_log(recorder.on_log)
    host.on_progress(recorder.on_progress)
    async with host:
        yield host, recorder
        if target.remote:
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


# -- what the server asks of the client ----------------------------------------------------


async def test_server_info_and_capabilities(everything: tuple[MCPHost, Recorder], target: Target) -> None:
    host, _ = everything
    assert isinstance(host.servers[SERVER].transport, TRANSPORT_CLASSES[target.transport])
    info = host.get_tools()[SERVER]
    assert info["state"] == "ready"
    assert info["protocolVersion"] == "2025-11-25"
    assert info["serverInfo"]["name"] == "mcp-servers/everything"
    assert info["instructions"]
    caps = info["capabilities"]
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert "logging" in caps and "completions" in caps
    assert caps["tasks"]["requests"]["tools"]["call"] == {}
    # The client declared what its handlers serve, so the server registered those tools.
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
    # A process only where the host spawned one.
    assert (host.get_metrics()[SERVER]["pid"] is None) == target.remote


async def test_echo_and_get_sum(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    echoed = await host.call_tool(f"{SERVER}.echo", {"message": "hello ✓"})
    assert echoed["content"] == [{"type": "text", "text": "Echo: hello ✓"}]
    summed = await host.call_tool(f"{SERVER}.get-sum", {"a": 2, "b": 40.5})
    assert texts(summed) == ["The sum of 2 and 40.5 is 42.5."]
    # Calls in flight at once, each answered to its caller.
    many = await asyncio.gather(*(host.call_tool(f"{SERVER}.get-sum", {"a": i, "b": i}) for i in range(12)))
    assert [texts(r)[0] for r in many] == [f"The sum of {i} and {i} is {2 * i}." for i in range(12)]


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
    assert len(rec.sampling) == 1
    server, params = rec.sampling[0]
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
    # The host declares tasks.requests.sampling.createMessage, so the server offers this tool:
    # it asks for sampling as a task, polls the host's tasks/get, then fetches tasks/result.
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


async def test_elicitation_as_a_client_task(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    rec.elicitation_reply = {"action": "accept", "content": {"name": "Ada Lovelace"}}
    result = await host.call_tool(f"{SERVER}.trigger-elicitation-request-async", {}, timeout=60)
    status, inputs, _ = texts(result)
    assert status.startswith("[COMPLETED]"), status
    assert "- Name: Ada Lovelace" in inputs
    raw = raw_result(result)
    assert raw["action"] == "accept" and raw["content"] == {"name": "Ada Lovelace"}
    assert "io.modelcontextprotocol/related-task" in raw["_meta"]
    [(_, params)] = rec.elicitation
    assert "task" in params and "name" in params["requestedSchema"]["properties"]


async def test_form_elicitation_accept_and_decline(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    rec.elicitation_reply = {
        "action": "accept",
        "content": {"name": "Ada Lovelace", "check": True, "email": "ada@example.com"},
    }
    accepted = await host.call_tool(f"{SERVER}.trigger-elicitation-request", {})
    server, params = rec.elicitation[0]
    assert server == SERVER
    assert params.get("mode", "form") == "form"
    assert params["message"] == "Please provide inputs for the following fields:"
    schema = params["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["name"]
    assert schema["properties"]["email"]["format"] == "email"
    assert {"name", "check", "email", "birthdate", "integer"} <= set(schema["properties"])
    assert "User inputs:\n- Name: Ada Lovelace\n- Agreed to terms: true\n- Email: ada@example.com" in texts(accepted)
    assert raw_result(accepted) == rec.elicitation_reply

    rec.elicitation_reply = {"action": "decline"}
    declined = await host.call_tool(f"{SERVER}.trigger-elicitation-request", {})
    assert len(rec.elicitation) == 2
    assert any("declined" in t for t in texts(declined))
    assert raw_result(declined) == {"action": "decline"}


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
    assert params["mode"] == "url"
    assert params["url"] == url
    assert params["message"] == "Sign in, please"
    assert params["elicitationId"] == "elic-1"
    first = texts(result)[0]
    assert "completed the URL elicitation" in first
    assert "Elicitation ID: elic-1" in first and url in first
    assert raw_result(result) == {"action": "accept"}

    rec.elicitation_reply = {"action": "cancel"}
    cancelled = await host.call_tool(f"{SERVER}.trigger-url-elicitation", {"url": url})
    assert "cancelled the URL elicitation" in texts(cancelled)[0]


async def test_url_elicitation_required_error(everything: tuple[MCPHost, Recorder]) -> None:
    # The error path: the server answers tools/call with -32042 and the URL to open.
    host, rec = everything
    with pytest.raises(ServerError) as caught:
        await host.call_tool(
            f"{SERVER}.trigger-url-elicitation",
            {"url": "https://example.com/needs-auth", "errorPath": True},
        )
    assert caught.value.code == -32042
    assert caught.value.server == SERVER
    [pending] = caught.value.data["elicitations"]
    assert pending["mode"] == "url"
    assert pending["url"].startswith("https://")
    assert pending["elicitationId"]
    assert rec.elicitation == []  # nothing was asked through elicitation/create


async def test_roots_from_constructor_and_set_roots(target: Target, tmp_path: Path, no_leftovers: None) -> None:
    first = tmp_path / "project-a"
    second = tmp_path / "project-b"
    first.mkdir()
    second.mkdir()
    logs: list[str] = []
    host = target.new_host(roots=[str(first)])
    host.on_log(lambda server, params: logs.append(str(params.get("data"))))
    async with host:
        # roots/list is a request the server sends outside any request of the client (over
        # Streamable HTTP on the GET stream; the answer is a POST). It asks by itself
        # ~350 ms after initialize, then logs the count.
        assert await wait_for(lambda: "Roots updated: 1 root(s) received from client" in logs)
        result = await host.call_tool(f"{SERVER}.get-roots-list", {})
        text = texts(result)[0]
        assert "Current MCP Roots (1 total)" in text
        assert f"1. project-a\n   URI: {first.as_uri()}" in text

        await host.set_roots([str(second), {"uri": "file:///srv/data", "name": "data"}])
        # roots/list_changed -> the server asks again -> the new answer is logged.
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
    assert [p["progress"] for p in seen] == [1, 2, 3, 4]
    assert {p["total"] for p in seen} == {4}
    token = seen[0]["progressToken"]
    assert {p["progressToken"] for p in seen} == {token}
    # The global on_progress handler saw the same notifications, with the server's name.
    mine = [(s, p) for s, p in rec.progress if p.get("progressToken") == token]
    assert [p["progress"] for _, p in mine] == [1, 2, 3, 4]
    assert {s for s, _ in mine} == {SERVER}


async def test_progress_resets_the_timeout(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    seen: list[float] = []
    # 2 s of work in 8 steps of 0.25 s, with a 0.75 s timeout renewed by each notification.
    result = await host.call_tool(
        f"{SERVER}.trigger-long-running-operation", {"duration": 2, "steps": 8},
        timeout=0.75, reset_timeout_on_progress=True,
        progress=lambda p: seen.append(p["progress"]),
    )
    assert not result.get("isError")
    assert seen == [1, 2, 3, 4, 5, 6, 7, 8]


async def test_timeout_cancels_the_call(target: Target) -> None:
    # Without the renewal the call times out: the host cancels it (over Streamable HTTP it
    # also closes the request's stream) and the session serves the next call. (The tool is
    # idempotent, so the default policy would try it again: one try here.)
    host = target.new_host(retry=NO_RETRY, unavailable_after_timeouts=0)
    async with host:
        with pytest.raises(TimeoutError):
            await host.call_tool(f"{SERVER}.trigger-long-running-operation", {"duration": 2, "steps": 8},
                                 timeout=0.75, progress=lambda p: None)
        assert host.get_metrics()[SERVER]["tools"]["trigger-long-running-operation"]["timeouts"] == 1
        assert host.get_tools()[SERVER]["state"] == "ready"
        assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "still here"})) == ["Echo: still here"]
        if target.remote:
            assert host.get_metrics()[SERVER]["transport"]["http_errors"] == 0


async def test_concurrent_calls_with_progress(everything: tuple[MCPHost, Recorder]) -> None:
    # Over Streamable HTTP more calls hold a response stream open than the transport keeps
    # connections (8): the rest wait for one, and a sampling request asked meanwhile is
    # still answered.
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


async def test_logging_respects_the_level(target: Target, no_leftovers: None) -> None:
    # The server's log notifications are sent outside any request (over Streamable HTTP: on
    # the GET stream), so they may come after the response of the request that caused them:
    # each is waited for. A GET stream (or the SSE stream) is ordered, which makes a later
    # message the proof that an earlier one was not sent.
    received: list[tuple[str, dict[str, Any], str]] = []
    current = {"level": "debug"}
    host = target.new_host(roots=[])  # roots declared: the server syncs them and logs it
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


async def test_resource_subscription_updates(target: Target, no_leftovers: None) -> None:
    events: list[dict[str, Any]] = []
    host = target.new_host()
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


# -- content, resources, prompts, completions ----------------------------------------------


async def test_structured_content_matches_output_schema(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    schema = tool(host, "get-structured-content")["outputSchema"]
    assert schema["type"] == "object"
    props = schema["properties"]
    assert set(schema["required"]) == set(props) == {"temperature", "conditions", "humidity"}
    result = await host.call_tool(f"{SERVER}.get-structured-content", {"location": "Los Angeles"})
    structured = result["structuredContent"]
    assert structured == {"temperature": 73, "conditions": "Sunny / Clear", "humidity": 48}
    py_types = {"number": (int, float), "string": str, "integer": int, "boolean": bool}
    for key, value in structured.items():
        assert isinstance(value, py_types[props[key]["type"]]), (key, value)
    # The text block carries the same data for clients without structured content.
    assert json.loads(texts(result)[0]) == structured


async def test_resource_links_and_templates(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    templates = {t["uriTemplate"] for t in host.get_tools()[SERVER]["resourceTemplates"]}
    assert templates == {"demo://resource/dynamic/text/{resourceId}",
                         "demo://resource/dynamic/blob/{resourceId}"}
    result = await host.call_tool(f"{SERVER}.get-resource-links", {"count": 4})
    intro, *links = result["content"]
    assert intro == {"type": "text",
                     "text": "Here are 4 resource links to resources available in this server:"}
    assert [link["type"] for link in links] == ["resource_link"] * 4
    assert [link["uri"] for link in links] == [
        "demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/2",
        "demo://resource/dynamic/blob/3", "demo://resource/dynamic/text/4",
    ]
    for n, link in enumerate(links, 1):
        assert link["name"].endswith(f"Resource {n}")
        assert link["mimeType"] == "text/plain"
        # Follow the link: no listed resource has this URI, a template routes it.
        read = await host.get_resource(link["uri"])
        [content] = read["contents"]
        assert content["uri"] == link["uri"]
        if "blob" in link["uri"]:
            body = base64.b64decode(content["blob"]).decode()
        else:
            body = content["text"]
        assert body.startswith(f"Resource {n}: This is a ")

    # An embedded resource (type "resource") instead of a link.
    ref = await host.call_tool(f"{SERVER}.get-resource-reference",
                               {"resourceType": "Blob", "resourceId": 3})
    embedded = [b for b in ref["content"] if b["type"] == "resource"]
    assert len(embedded) == 1
    assert embedded[0]["resource"]["uri"] == "demo://resource/dynamic/blob/3"
    assert base64.b64decode(embedded[0]["resource"]["blob"]).startswith(b"Resource 3:")


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


async def test_completions_filter_by_prefix(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    ref = {"type": "ref/prompt", "name": f"{SERVER}.completable-prompt"}

    async def values(name: str, value: str, context: dict[str, Any] | None = None) -> list[str]:
        completion = await host.complete(ref, {"name": name, "value": value}, context=context)
        return list(completion["values"])

    assert await values("department", "") == ["Engineering", "Sales", "Marketing", "Support"]
    assert await values("department", "E") == ["Engineering"]
    assert await values("department", "S") == ["Sales", "Support"]
    assert await values("department", "x") == []
    # The context (2025-06-18+) narrows the second argument by the first.
    sales = {"arguments": {"department": "Sales"}}
    assert await values("name", "", sales) == ["David", "Eve", "Frank"]
    assert await values("name", "E", sales) == ["Eve"]
    # A resource-template variable.
    completion = await host.complete(
        {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
        {"name": "resourceId", "value": "12"},
    )
    assert completion["values"] == ["12"]


async def test_annotated_message_and_image(everything: tuple[MCPHost, Recorder]) -> None:
    # This server version has no audio tool; images are the only binary content blocks.
    host, _ = everything
    result = await host.call_tool(f"{SERVER}.get-annotated-message",
                                  {"messageType": "error", "includeImage": True})
    text, image = result["content"]
    assert text["type"] == "text"
    assert text["text"] == "Error: Operation failed"
    assert text["annotations"] == {"priority": 1, "audience": ["user", "assistant"]}
    assert image["type"] == "image"
    assert image["mimeType"] == "image/png"
    assert image["annotations"] == {"priority": 0.5, "audience": ["user"]}
    assert base64.b64decode(image["data"]).startswith(PNG_MAGIC)

    debug = await host.call_tool(f"{SERVER}.get-annotated-message", {"messageType": "debug"})
    [block] = debug["content"]
    assert block["annotations"]["audience"] == ["assistant"]
    assert block["annotations"]["priority"] == pytest.approx(0.3)

    tiny = await host.call_tool(f"{SERVER}.get-tiny-image", {})
    assert [b["type"] for b in tiny["content"]] == ["text", "image", "text"]
    assert tiny["content"][1]["mimeType"] == "image/png"
    assert base64.b64decode(tiny["content"][1]["data"]).startswith(PNG_MAGIC)


async def test_arguments_are_checked_against_the_servers_schemas(
    everything: tuple[MCPHost, Recorder],
) -> None:
    host, _ = everything
    assert tool(host, "get-sum")["inputSchema"]["properties"]["a"]["type"] == "number"
    sent = host.get_metrics()[SERVER]["connection"]["requests"]
    with pytest.raises(ValidationError) as caught:
        await host.call_tool(f"{SERVER}.get-sum", {"a": "one", "b": 2})
    assert caught.value.path == "$.a" and caught.value.keyword == "type"
    assert "get-sum" in str(caught.value)
    with pytest.raises(ValidationError, match="b"):
        await host.call_tool(f"{SERVER}.get-sum", {"a": 1})
    assert host.get_metrics()[SERVER]["connection"]["requests"] == sent  # nothing reached the server
    assert "3" in texts(await host.call_tool(f"{SERVER}.get-sum", {"a": 1, "b": 2}))[0]


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
    only_city = await host.get_prompt(f"{SERVER}.args-prompt", {"city": "Lyon"})
    assert only_city["messages"][0]["content"]["text"] == "What's weather in Lyon?"
    team = await host.get_prompt(f"{SERVER}.completable-prompt",
                                 {"department": "Engineering", "name": "Alice"})
    assert team["messages"][0]["content"]["text"] == (
        "Please promote Alice to the head of the Engineering team.")
    # A non-string argument is sent as a string; the prompt embeds a resource.
    embedded = await host.get_prompt(f"{SERVER}.resource-prompt",
                                     {"resourceType": "Text", "resourceId": 2})
    intro, resource = embedded["messages"]
    assert "Text resource with id: 2" in intro["content"]["text"]
    assert resource["content"]["type"] == "resource"
    assert resource["content"]["resource"]["uri"] == "demo://resource/dynamic/text/2"
    assert resource["content"]["resource"]["text"].startswith("Resource 2: ")


async def test_listed_resources_read_back(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    listed = [r for r in host.get_tools()[SERVER]["resources"]
              if r["uri"].startswith("demo://resource/static/document/")]
    assert {r["name"] for r in listed} >= {"features.md", "instructions.md", "architecture.md"}
    for resource in listed:
        read = await host.get_resource(resource["uri"])
        [content] = read["contents"]
        assert content["uri"] == resource["uri"]
        assert content["mimeType"] == resource["mimeType"] == "text/markdown"
        assert content["text"].strip()
    features = await host.get_resource("demo://resource/static/document/features.md")
    assert features["contents"][0]["text"].startswith("# Everything Server - Features")
    # The instructions resource is the text the server sent in its initialize result.
    instructions = await host.get_resource("demo://resource/static/document/instructions.md")
    assert instructions["contents"][0]["text"] == host.get_tools()[SERVER]["instructions"]
    # Templates route URIs no list names.
    text = await host.get_resource("demo://resource/dynamic/text/3")
    assert text["contents"][0]["text"].startswith("Resource 3: ")
    blob = await host.get_resource("demo://resource/dynamic/blob/4", cache=False)
    assert blob["contents"][0]["blob"]


# -- list_changed ---------------------------------------------------------------------------


async def test_startup_list_changed_burst_coalesces(target: Target, no_leftovers: None) -> None:
    raw: list[str] = []
    changed: list[dict[str, Any]] = []
    host = target.new_host(roots=[])  # roots declared: the server registers get-roots-list too
    host.on_sampling(lambda server, params: {})
    host.on_elicitation(lambda server, params: {"action": "decline"})
    host.on_event(lambda e: changed.append(e) if e["type"] == "capabilities_changed" else None)
    # Count the raw notifications too (the registry sees each one first; wrapped before start).
    relay = host.registry.changed

    def spy(handle: Any, method: str) -> bool:
        raw.append(method)
        return relay(handle, method)

    host.registry.changed = spy  # type: ignore[method-assign]
    async with host:
        assert await wait_for(lambda: len(changed) >= 1)
        burst = raw.count("notifications/tools/list_changed")
        assert burst >= 2, raw  # one per tool registered after initialized (5 here)
        await host.call_tool(f"{SERVER}.echo", {"message": "sync"})  # a round trip later ...
        assert raw.count("notifications/tools/list_changed") == burst
        assert changed == [{"type": "capabilities_changed", "server": SERVER, "data": ["tools"]}]
        names = {t["name"] for t in host.get_tools()[SERVER]["tools"]}
        assert {"get-roots-list", "trigger-sampling-request", "trigger-elicitation-request",
                "simulate-research-query"} <= names


# -- tasks ----------------------------------------------------------------------------------


async def test_task_required_tool(everything: tuple[MCPHost, Recorder]) -> None:
    host, rec = everything
    assert tool(host, "simulate-research-query")["execution"] == {"taskSupport": "required"}
    assert tool(host, "echo")["execution"]["taskSupport"] == "forbidden"
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


async def test_task_forbidden_tool_is_refused_by_the_host(everything: tuple[MCPHost, Recorder]) -> None:
    host, _ = everything
    with pytest.raises(MCPHostError) as caught:
        await host.call_tool(f"{SERVER}.echo", {"message": "x"}, task=True)
    assert not isinstance(caught.value, ServerError), caught.value
    assert "task" in str(caught.value).lower()


async def test_task_input_required_delivers_elicitation(target: Target, no_leftovers: None) -> None:
    # The server asks its question while the task runs, after tools/call was answered (over
    # Streamable HTTP: not on the ended stream of the tools/call but on the GET stream).
    asked: list[dict[str, Any]] = []

    def answer(_server: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"interpretation": "snake"}}

    host = target.new_host()
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


async def test_shutdown_ends_the_session(target: Target) -> None:
    # The type is inferred: from the command, or from the URL's path (/mcp: http, /sse: sse).
    before = set(descendants(os.getpid()))
    host = target.new_host(typed=False)
    await host.initialize()
    try:
        assert isinstance(host.servers[SERVER].transport, TRANSPORT_CLASSES[target.transport])
        pid = host.get_metrics()[SERVER]["pid"]
        if target.remote:
            assert pid is None and set(descendants(os.getpid())) == before  # nothing spawned
        else:
            assert pid in set(descendants(os.getpid())) - before  # npx and the node server it runs
        assert (await host.call_tool(f"{SERVER}.echo", {"message": "bye"}))["content"] == [
            {"type": "text", "text": "Echo: bye"}]
    finally:
        await host.shutdown()
    assert host.get_tools()[SERVER]["state"] == "stopped"
    assert set(descendants(os.getpid())) - before == set()
    await host.shutdown()  # idempotent
