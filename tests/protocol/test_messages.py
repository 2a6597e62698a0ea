"""mcphost.protocol.messages: MCP messages checked against schemas/mcp for each protocol version."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mcphost.errors import ProtocolError, ValidationError
from mcphost.protocol import messages, modern
from mcphost.protocol.legacy import Session, client_capabilities
from mcphost.protocol.messages import (
    KINDS,
    MODES,
    VERSIONS,
    MessageChecker,
    known_methods,
    outgoing_errors,
)

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "mcp"
V1, V2, V3, V4, V5 = VERSIONS  # 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28
SERVER_KINDS = ("server_result", "server_task_result", "server_request", "server_notification")


def at_least(version: str, minimum: str) -> bool:
    return version >= minimum


# -- valid samples, the richest each version allows ------------------------------------------


def icon() -> dict[str, Any]:
    return {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"],
            "theme": "light"}


def with_meta(version: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "_meta": {"vendor.example/trace": 1}} if at_least(version, V3) else obj


def named(version: str, obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    if at_least(version, V3):
        out.update(title=obj["name"].title(), _meta={})
    if at_least(version, V4):
        out["icons"] = [icon()]
    return out


def annotations(version: str) -> dict[str, Any]:
    ann: dict[str, Any] = {"audience": ["user"], "priority": 0.8}
    if at_least(version, V3):
        ann["lastModified"] = "2025-06-01T12:00:00Z"
    return ann


def content_blocks(version: str) -> list[dict[str, Any]]:
    blocks = [
        with_meta(version, {"type": "text", "text": "hello", "annotations": annotations(version)}),
        with_meta(version, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
        with_meta(version, {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a"}}),
        {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/x",
                                          "blob": "AAEC"}},
    ]
    if at_least(version, V2):
        blocks.append({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"})
    if at_least(version, V3):
        blocks.append(named(version, {"type": "resource_link", "uri": "file:///c.txt", "name": "c",
                                      "mimeType": "text/plain", "size": 12}))
    return blocks


def tool(version: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "read_text_file",
        "description": "Read a file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                        "required": ["path"]},
    }
    if at_least(version, V2):
        out["annotations"] = {"title": "Read", "readOnlyHint": True, "openWorldHint": False}
    out = named(version, out)
    if at_least(version, V3):
        out["outputSchema"] = {"type": "object", "properties": {"content": {"type": "string"}}}
    if at_least(version, V4):
        out["execution"] = {"taskSupport": "optional"}
    return out


def implementation(version: str) -> dict[str, Any]:
    info: dict[str, Any] = {"name": "srv", "version": "1.0.0"}
    if at_least(version, V3):
        info["title"] = "Server"
    if at_least(version, V4):
        info.update(description="A server", icons=[icon()], websiteUrl="https://example.com")
    return info


def task(status: str = "working") -> dict[str, Any]:
    return {"taskId": "t-1", "status": status, "createdAt": "2025-11-25T10:00:00Z",
            "lastUpdatedAt": "2025-11-25T10:00:01Z", "ttl": 60000, "pollInterval": 1000}


def sampling_messages(version: str) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": {"type": "text", "text": "Capital of France?"}},
        {"role": "assistant", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}},
    ]
    if at_least(version, V2):
        msgs.append({"role": "user", "content": {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}})
    if at_least(version, V4):
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": "call-1", "name": "lookup", "input": {"q": "France"}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "toolUseId": "call-1", "content": [{"type": "text", "text": "Paris"}],
             "structuredContent": {"capital": "Paris"}, "isError": False}]})
    return msgs


def requested_schema(version: str) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ok": {"type": "boolean", "default": False},
        "color": {"type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
    }
    if at_least(version, V4):
        props["size"] = {"type": "string", "oneOf": [{"const": "s", "title": "Small"}], "default": "s"}
        props["tags"] = {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2}
        props["score"] = {"type": "number", "default": 0.5}
    return {"type": "object", "properties": props, "required": ["name"]}


def modern_server_samples() -> dict[tuple[str, str], Any]:
    """2026-07-28: a valid payload for every (kind, method) a server sends (no requests: its
    questions come as the ``inputRequests`` of an ``input_required`` result)."""
    legacy = server_samples(V4)
    hints = {"ttlMs": 60000, "cacheScope": "private"}
    asks = {
        "who": {"method": "elicitation/create", "params": legacy[("server_request", "elicitation/create")]},
        "llm": {"method": "sampling/createMessage", "params": legacy[("server_request", "sampling/createMessage")]},
        "roots": {"method": "roots/list"},
    }
    required = {"resultType": "input_required", "inputRequests": asks, "requestState": "opaque"}
    detailed = {"taskId": "t-1", "status": "input_required", "pollIntervalMs": 500, "ttlMs": None,
                "inputRequests": {"who": asks["who"]}}
    complete = {"resultType": "complete"}
    caps = {**legacy[("server_result", "initialize")]["capabilities"], "extensions": {"io.modelcontextprotocol/tasks": {}}}
    return {
        ("server_result", "server/discover"): {**complete, **hints, "supportedVersions": [V5], "capabilities": caps,
                                               "instructions": "Use me",
                                               "_meta": {"io.modelcontextprotocol/serverInfo": implementation(V4)}},
        ("server_result", "tools/list"): {**legacy[("server_result", "tools/list")], **complete, **hints},
        ("server_result", "tools/call"): {**legacy[("server_result", "tools/call")], **complete,
                                          "structuredContent": [1, "any JSON value"]},
        ("server_result", "prompts/list"): {**legacy[("server_result", "prompts/list")], **hints},
        ("server_result", "prompts/get"): required,
        ("server_result", "resources/list"): {**legacy[("server_result", "resources/list")], **complete, **hints},
        ("server_result", "resources/templates/list"): {**legacy[("server_result", "resources/templates/list")],
                                                        **hints},
        ("server_result", "resources/read"): {**legacy[("server_result", "resources/read")], **complete, **hints},
        ("server_result", "completion/complete"): {**legacy[("server_result", "completion/complete")], **complete},
        ("server_result", "subscriptions/listen"): {**complete, "_meta": {}},
        ("server_result", "tasks/get"): {**detailed, "status": "completed", "result": {"content": []}},
        ("server_result", "tasks/update"): {},
        ("server_result", "tasks/cancel"): complete,
        ("server_task_result", "tools/call"): {"resultType": "task", "taskId": "t-1", "status": "working",
                                               "pollIntervalMs": 500, "ttlMs": 60000},
        ("server_notification", "notifications/cancelled"): {"requestId": 4},
        ("server_notification", "notifications/progress"): {"progressToken": 7, "progress": 0.5, "message": "half"},
        ("server_notification", "notifications/message"): legacy[("server_notification", "notifications/message")],
        ("server_notification", "notifications/resources/updated"): {
            "uri": "file:///a.txt", "_meta": {"io.modelcontextprotocol/subscriptionId": 3}},
        ("server_notification", "notifications/resources/list_changed"): {},
        ("server_notification", "notifications/tools/list_changed"): {"_meta": {}},
        ("server_notification", "notifications/prompts/list_changed"): {},
        ("server_notification", "notifications/subscriptions/acknowledged"): {
            "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["file:///a.txt"]}},
        ("server_notification", "notifications/tasks/status"): detailed,
    }


def server_samples(version: str) -> dict[tuple[str, str], Any]:
    """A valid payload for every (kind, method) a server sends in ``version``."""
    if version == V5:
        return modern_server_samples()
    caps: dict[str, Any] = {"logging": {}, "prompts": {"listChanged": True},
                            "resources": {"subscribe": True, "listChanged": True},
                            "tools": {"listChanged": True}, "experimental": {"x": {}}}
    if at_least(version, V2):
        caps["completions"] = {}
    if at_least(version, V4):
        caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    call_result: dict[str, Any] = {"content": content_blocks(version), "isError": False}
    if at_least(version, V3):
        call_result["structuredContent"] = {"content": "hello"}
    samples: dict[tuple[str, str], Any] = {
        ("server_result", "initialize"): {"protocolVersion": version, "capabilities": caps,
                                          "serverInfo": implementation(version), "instructions": "Use me"},
        ("server_result", "ping"): {},
        ("server_result", "tools/list"): {"tools": [tool(version)], "nextCursor": "2"},
        ("server_result", "tools/call"): call_result,
        ("server_result", "prompts/list"): {"prompts": [named(version, {
            "name": "greet", "description": "Say hi",
            "arguments": [{"name": "who", "description": "Name", "required": True}]})]},
        ("server_result", "prompts/get"): {
            "description": "Greeting", "messages": [{"role": "user", "content": b}
                                                    for b in content_blocks(version)]},
        ("server_result", "resources/list"): {"resources": [named(version, {
            "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain", "size": 1,
            "annotations": annotations(version)})]},
        ("server_result", "resources/templates/list"): {"resourceTemplates": [named(version, {
            "uriTemplate": "file:///{path}", "name": "files", "description": "Any file"})]},
        ("server_result", "resources/read"): {"contents": [
            with_meta(version, {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a"}),
            {"uri": "file:///b.bin", "blob": "AAEC"}]},
        ("server_result", "resources/subscribe"): {},
        ("server_result", "resources/unsubscribe"): {},
        ("server_result", "logging/setLevel"): {"_meta": {}},
        ("server_result", "completion/complete"): {"completion": {"values": ["Paris"], "total": 1,
                                                                  "hasMore": False}},
        ("server_request", "ping"): {},
        ("server_request", "roots/list"): {"_meta": {"progressToken": 3}},
        ("server_request", "sampling/createMessage"): {
            "messages": sampling_messages(version), "maxTokens": 100, "systemPrompt": "Be brief",
            "includeContext": "none", "temperature": 0.2, "stopSequences": ["\n"],
            "modelPreferences": {"hints": [{"name": "claude"}], "speedPriority": 0.5},
            "metadata": {"any": "thing"}},
        ("server_notification", "notifications/cancelled"): {"requestId": "r-1", "reason": "timeout"},
        ("server_notification", "notifications/progress"): {"progressToken": 7, "progress": 0.5,
                                                            "total": 1},
        ("server_notification", "notifications/message"): {"level": "warning", "logger": "db",
                                                           "data": {"msg": "slow"}},
        ("server_notification", "notifications/resources/updated"): {"uri": "file:///a.txt"},
        ("server_notification", "notifications/resources/list_changed"): {},
        ("server_notification", "notifications/tools/list_changed"): {"_meta": {}},
        ("server_notification", "notifications/prompts/list_changed"): {},
    }
    if at_least(version, V2):
        samples[("server_notification", "notifications/progress")]["message"] = "halfway"
    if at_least(version, V3):
        samples[("server_request", "elicitation/create")] = {
            "message": "Who are you?", "requestedSchema": requested_schema(version)}
    if at_least(version, V4):
        samples[("server_request", "sampling/createMessage")].update(
            tools=[tool(version)], toolChoice={"mode": "auto"})
        samples.update({
            ("server_result", "tasks/get"): task(),
            ("server_result", "tasks/result"): call_result,
            ("server_result", "tasks/list"): {"tasks": [task(), task("completed")], "nextCursor": "n"},
            ("server_result", "tasks/cancel"): task("cancelled"),
            ("server_task_result", "tools/call"): {"task": task()},
            ("server_request", "tasks/get"): {"taskId": "t-1"},
            ("server_request", "tasks/result"): {"taskId": "t-1"},
            ("server_request", "tasks/list"): {"cursor": "c"},
            ("server_request", "tasks/cancel"): {"taskId": "t-1"},
            ("server_notification", "notifications/elicitation/complete"): {"elicitationId": "e-1"},
            ("server_notification", "notifications/tasks/status"): task("input_required"),
        })
    return samples


def check(checker: MessageChecker, kind: str, method: str, payload: Any) -> None:
    if kind == "server_result":
        checker.result(method, payload)
    elif kind == "server_task_result":
        checker.result(method, payload, task=True)
    elif kind == "server_request":
        checker.request(method, payload)
    else:
        checker.notification(method, payload)


def strict_error(version: str, kind: str, method: str, payload: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        check(MessageChecker("fs", version, "strict"), kind, method, payload)
    return caught.value


# -- the schema files ------------------------------------------------------------------------


def test_schema_files_are_ours_and_consistent() -> None:
    names = sorted(p.name for p in SCHEMAS.glob("*.json"))
    assert names == sorted(["common.json", *(f"{v}.json" for v in VERSIONS)])
    for path in SCHEMAS.glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert doc["$id"] == f"https://mcphost.dev/schemas/mcp/{path.name}"
        text = path.read_text(encoding="utf-8")
        # Unknown members stay allowed everywhere; nothing is copied with its prose.
        assert '"additionalProperties": false' not in text
        assert '"description": "' not in text
        if path.name != "common.json":
            assert set(doc["methods"]) == set(KINDS)


@pytest.mark.parametrize("version", VERSIONS)
def test_samples_cover_every_server_method(version: str) -> None:
    listed = {(kind, m) for kind in SERVER_KINDS for m in known_methods(version, kind)}
    assert listed == set(server_samples(version))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_listed_method_has_a_working_schema(version: str) -> None:
    # "_meta" must be an object in every params and every result: each schema says no.
    bad = {"_meta": 5}
    for kind in SERVER_KINDS:
        for method in known_methods(version, kind):
            strict_error(version, kind, method, bad)
    for method in known_methods(version, "client_request"):
        assert outgoing_errors(version, {"jsonrpc": "2.0", "id": 1, "method": method, "params": bad})
    for method in known_methods(version, "client_notification"):
        assert outgoing_errors(version, {"jsonrpc": "2.0", "method": method, "params": bad})
    for method in known_methods(version, "client_result"):
        assert outgoing_errors(version, {"jsonrpc": "2.0", "id": 1, "result": bad}, method)


def test_method_inventory_per_version() -> None:
    assert "elicitation/create" not in known_methods(V2, "server_request")
    assert "elicitation/create" in known_methods(V3, "server_request")
    assert "tasks/get" not in known_methods(V3, "server_result")
    assert "tasks/get" in known_methods(V4, "server_result")
    assert known_methods(V3, "server_task_result") == ()
    assert known_methods(V4, "server_task_result") == ("tools/call",)
    assert "notifications/elicitation/complete" in known_methods(V4, "server_notification")
    for version in VERSIONS:
        assert "completion/complete" in known_methods(version, "server_result")
    assert "initialize" not in known_methods(V5, "server_result")
    assert known_methods(V5, "server_request") == ()
    assert "subscriptions/listen" in known_methods(V5, "client_request")
    with pytest.raises(ValueError, match="unsupported MCP version"):
        known_methods("2099-01-01", "server_result")
    with pytest.raises(ValueError, match="unknown message kind"):
        known_methods(V1, "results")


# -- valid messages pass ---------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_valid_samples_pass_strict(version: str) -> None:
    checker = MessageChecker("fs", version, "strict")
    for (kind, method), payload in server_samples(version).items():
        check(checker, kind, method, copy.deepcopy(payload))


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_members_are_accepted_everywhere(version: str) -> None:
    def sprinkle(x: Any) -> Any:
        if isinstance(x, dict):
            # (An elicitation's requestedSchema, also inside a 2026-07-28 input request: see
            # below; inputRequests maps keys to requests: an extra member is an extra request.)
            return {**{k: v if k == "requestedSchema" else
                       {n: sprinkle(r) for n, r in v.items()} if k == "inputRequests" else sprinkle(v)
                       for k, v in x.items()},
                    "x-vendor": {"anything": [1, None]}}
        if isinstance(x, list):
            return [sprinkle(v) for v in x]
        return x

    checker = MessageChecker("fs", version, "strict")
    for (kind, method), payload in server_samples(version).items():
        if method == "elicitation/create":
            # requestedSchema.properties maps names to field schemas: an extra member
            # there is an extra field, which must itself be a field schema.
            payload = {**payload, "x-vendor": 1}
        else:
            payload = sprinkle(payload)
        check(checker, kind, method, payload)


def test_absent_params_are_checked_as_empty() -> None:
    checker = MessageChecker("fs", V4, "strict")
    checker.request("ping", None)
    checker.request("roots/list", None)
    checker.notification("notifications/tools/list_changed", None)
    with pytest.raises(ProtocolError, match=r"notifications/progress params: \$: missing required"):
        checker.notification("notifications/progress", None)
    with pytest.raises(ProtocolError, match="'maxTokens'|'messages'"):
        checker.request("sampling/createMessage", None)


# -- malformed messages fail, naming the field -----------------------------------------------

MALFORMED: list[tuple[str, str, str, Any, str]] = [
    # (version, kind, method, payload, expected message after "fs: ")
    (V1, "server_result", "tools/list", {"tools": [{"inputSchema": {"type": "object"}}]},
     "tools/list result: $.tools[0]: missing required property 'name'"),
    (V4, "server_result", "tools/list", {"tools": [{"name": "t", "inputSchema": {"type": "array"}}]},
     'tools/list result: $.tools[0].inputSchema.type: "array" is not the constant "object"'),
    (V2, "server_result", "tools/list", {"tools": [{"name": "t", "inputSchema": {"type": "object"},
                                                    "annotations": {"readOnlyHint": "yes"}}]},
     "tools/list result: $.tools[0].annotations.readOnlyHint: expected boolean"),
    (V4, "server_result", "tools/list", {"tools": [{"name": "t", "inputSchema": {"type": "object"},
                                                    "execution": {"taskSupport": "sometimes"}}]},
     "tools/list result: $.tools[0].execution.taskSupport:"),
    (V1, "server_result", "tools/call", {"content": [{"type": "text", "text": 5}]},
     "tools/call result: $.content[0].text: expected string, got integer 5"),
    (V3, "server_result", "tools/call", {"content": [{"type": "image", "data": "AA=="}]},
     "tools/call result: $.content[0]: missing required property 'mimeType'"),
    (V4, "server_result", "tools/call", {"isError": True},
     "tools/call result: $: missing required property 'content'"),
    (V4, "server_result", "tools/call", {"content": [], "isError": "yes"},
     "tools/call result: $.isError: expected boolean"),
    (V4, "server_result", "tools/call", {"content": [{"type": "video"}]},
     'tools/call result: $.content[0].type: "video" is not one of'),
    (V3, "server_result", "tools/call", {"content": [{"type": "resource_link", "uri": "file:///x"}]},
     "tools/call result: $.content[0]: missing required property 'name'"),
    (V3, "server_result", "tools/call", {"content": [{"type": "text", "text": "x",
                                                      "annotations": {"priority": 2}}]},
     "tools/call result: $.content[0].annotations.priority: 2 is greater than the maximum 1"),
    (V2, "server_result", "initialize", {"protocolVersion": V2, "capabilities": {},
                                         "serverInfo": {"name": "x"}},
     "initialize result: $.serverInfo: missing required property 'version'"),
    (V4, "server_result", "initialize", {"protocolVersion": V4, "capabilities": {"tools": {"listChanged": 1}},
                                         "serverInfo": {"name": "x", "version": "1"}},
     "initialize result: $.capabilities.tools.listChanged: expected boolean"),
    (V1, "server_result", "resources/read", {"contents": [{"uri": "file:///a"}]},
     "resources/read result: $.contents[0]: missing required property 'text'"),
    (V1, "server_result", "resources/list", {"resources": [{"uri": "file:///a", "name": "a", "size": "1kB"}]},
     "resources/list result: $.resources[0].size: expected integer"),
    (V3, "server_result", "resources/templates/list", {"resourceTemplates": [{"name": "x"}]},
     "resources/templates/list result: $.resourceTemplates[0]: missing required property 'uriTemplate'"),
    (V3, "server_result", "prompts/get",
     {"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]},
     'prompts/get result: $.messages[0].role: "system" is not one of'),
    (V2, "server_result", "prompts/list", {"prompts": [{"name": "p", "arguments": [{"required": True}]}]},
     "prompts/list result: $.prompts[0].arguments[0]: missing required property 'name'"),
    (V1, "server_result", "completion/complete", {"completion": {"values": ["x"] * 101}},
     "completion/complete result: $.completion.values:"),
    (V4, "server_result", "tasks/get", {**task(), "ttl": "1m"},
     "tasks/get result: $.ttl:"),
    (V4, "server_result", "tasks/list", {"tasks": [{**task(), "status": "done"}]},
     'tasks/list result: $.tasks[0].status: "done" is not one of'),
    (V4, "server_task_result", "tools/call", {"task": {"taskId": "t"}},
     "tools/call task result: $.task: missing required property"),
    (V1, "server_request", "sampling/createMessage", {"messages": []},
     "sampling/createMessage params: $: missing required property 'maxTokens'"),
    (V2, "server_request", "sampling/createMessage",
     {"messages": [{"role": "user", "content": {"type": "text"}}], "maxTokens": 5},
     "sampling/createMessage params: $.messages[0].content: missing required property 'text'"),
    (V4, "server_request", "sampling/createMessage",
     {"messages": [], "maxTokens": 5, "toolChoice": {"mode": "always"}},
     "sampling/createMessage params: $.toolChoice.mode:"),
    (V1, "server_request", "ping", {"_meta": {"progressToken": 1.5}},
     "ping params: $._meta.progressToken:"),
    (V3, "server_request", "elicitation/create",
     {"message": "m", "requestedSchema": {"type": "object", "properties": {"a": {"type": "date"}}}},
     'elicitation/create params: $.requestedSchema.properties.a.type: "date" is not one of'),
    (V4, "server_request", "elicitation/create", {"mode": "url", "message": "m", "elicitationId": "e"},
     "elicitation/create params: $: missing required property 'url'"),
    (V1, "server_notification", "notifications/cancelled", {"reason": "x"},
     "notifications/cancelled params: $: missing required property 'requestId'"),
    (V3, "server_notification", "notifications/progress", {"progressToken": "p", "progress": "half"},
     "notifications/progress params: $.progress: expected number"),
    (V2, "server_notification", "notifications/message", {"level": "verbose", "data": "x"},
     'notifications/message params: $.level: "verbose" is not one of'),
    (V1, "server_notification", "notifications/resources/updated", {},
     "notifications/resources/updated params: $: missing required property 'uri'"),
    (V4, "server_notification", "notifications/tasks/status", {"taskId": "t", "status": "working"},
     "notifications/tasks/status params: $: missing required property"),
    (V4, "server_notification", "notifications/elicitation/complete", {"elicitationId": 5},
     "notifications/elicitation/complete params: $.elicitationId: expected string"),
]


@pytest.mark.parametrize(("version", "kind", "method", "payload", "expected"), MALFORMED)
def test_malformed_fails_in_strict_naming_the_field(
    version: str, kind: str, method: str, payload: Any, expected: str
) -> None:
    err = strict_error(version, kind, method, payload)
    assert err.server == "fs"
    assert str(err).startswith(f"fs: {expected}"), str(err)
    cause = err.__cause__
    assert isinstance(cause, ValidationError)
    assert cause.path in expected
    assert cause.keyword


def test_a_result_that_is_not_an_object() -> None:
    err = strict_error(V4, "server_result", "tools/call", ["not", "an", "object"])
    assert "tools/call result: $: expected object, got array" in str(err)
    err = strict_error(V1, "server_request", "roots/list", "params")
    assert "roots/list params: $: expected object, got string" in str(err)


# -- versions differ -------------------------------------------------------------------------


def test_audio_content_only_from_2025_03_26() -> None:
    result = {"content": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]}
    assert '"audio" is not one of ["text", "image", "resource"]' in str(
        strict_error(V1, "server_result", "tools/call", result))
    for version in (V2, V3, V4):
        MessageChecker("fs", version, "strict").result("tools/call", result)


def test_resource_link_only_from_2025_06_18() -> None:
    result = {"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]}
    for version in (V1, V2):
        err = strict_error(version, "server_result", "tools/call", result)
        assert '"resource_link" is not one of' in str(err)
    for version in (V3, V4):
        MessageChecker("fs", version, "strict").result("tools/call", result)


def test_structured_content_is_checked_from_2025_06_18() -> None:
    good = {"content": [], "structuredContent": {"temperature": 21}}
    bad = {"content": [], "structuredContent": [21]}
    for version in VERSIONS:
        MessageChecker("fs", version, "strict").result("tools/call", good)
    # Before 2025-06-18 the member does not exist: it is an unknown member, accepted as is.
    for version in (V1, V2):
        MessageChecker("fs", version, "strict").result("tools/call", bad)
    for version in (V3, V4):
        assert "$.structuredContent: expected object" in str(
            strict_error(version, "server_result", "tools/call", bad))


def test_later_members_are_unknown_members_in_earlier_versions() -> None:
    tools = {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "title": 5, "icons": "x",
                        "annotations": "x", "execution": 1, "outputSchema": []}]}
    MessageChecker("fs", V1, "strict").result("tools/list", tools)
    err = strict_error(V2, "server_result", "tools/list", tools)
    assert "$.tools[0].annotations: expected object" in str(err)
    assert "$.tools[0]." in str(strict_error(V3, "server_result", "tools/list", tools))
    progress = {"progressToken": 1, "progress": 2, "message": 3}
    MessageChecker("fs", V1, "strict").notification("notifications/progress", progress)
    assert "$.message: expected string" in str(
        strict_error(V2, "server_notification", "notifications/progress", progress))


def test_elicitation_url_mode_only_in_2025_11_25() -> None:
    url_mode = {"mode": "url", "message": "Sign in", "url": "https://example.com/auth",
                "elicitationId": "e-1"}
    assert "missing required property 'requestedSchema'" in str(
        strict_error(V3, "server_request", "elicitation/create", url_mode))
    MessageChecker("fs", V4, "strict").request("elicitation/create", url_mode)
    # Form mode is the default, and "form" may be said explicitly in 2025-11-25.
    form = {"mode": "form", "message": "Name?", "requestedSchema": requested_schema(V4)}
    MessageChecker("fs", V4, "strict").request("elicitation/create", form)
    assert '$.mode: "popup" is not the constant "form"' in str(
        strict_error(V4, "server_request", "elicitation/create", {**form, "mode": "popup"}))


def test_elicitation_field_kinds_per_version() -> None:
    multi = {"message": "m", "requestedSchema": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a"]}}}}}
    assert '$.requestedSchema.properties.tags.type: "array" is not one of' in str(
        strict_error(V3, "server_request", "elicitation/create", multi))
    MessageChecker("fs", V4, "strict").request("elicitation/create", multi)
    bad_titles = {"message": "m", "requestedSchema": {"type": "object", "properties": {
        "size": {"type": "string", "oneOf": [{"const": "s"}]}}}}
    assert "$.requestedSchema.properties.size.oneOf[0]: missing required property 'title'" in str(
        strict_error(V4, "server_request", "elicitation/create", bad_titles))


def test_tools_in_sampling_only_in_2025_11_25() -> None:
    params = {"maxTokens": 10, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}]}]}
    for version in (V1, V2, V3):
        assert "$.messages[0].content: expected object, got array" in str(
            strict_error(version, "server_request", "sampling/createMessage", params))
    MessageChecker("fs", V4, "strict").request("sampling/createMessage", params)
    single = {"maxTokens": 10, "messages": [{"role": "assistant", "content": {
        "type": "tool_use", "id": "c1", "name": "lookup"}}]}
    assert "$.messages[0].content: missing required property 'input'" in str(
        strict_error(V4, "server_request", "sampling/createMessage", single))


def test_cancellation_request_id_optional_only_in_2025_11_25() -> None:
    for version in (V1, V2, V3):
        assert "missing required property 'requestId'" in str(
            strict_error(version, "server_notification", "notifications/cancelled", {}))
    MessageChecker("fs", V4, "strict").notification("notifications/cancelled", {"reason": "task"})


def test_task_results_only_in_2025_11_25() -> None:
    created = {"task": task()}
    MessageChecker("fs", V4, "strict").result("tools/call", created, task=True)
    # A task-augmented answer is not a CallToolResult.
    assert "missing required property 'content'" in str(
        strict_error(V4, "server_result", "tools/call", created))
    # Versions without tasks have no CreateTaskResult, so there is nothing to check.
    MessageChecker("fs", V3, "strict").result("tools/call", {"bogus": True}, task=True)


def test_methods_missing_from_a_version_are_not_checked() -> None:
    checker = MessageChecker("fs", V2, "strict")
    checker.request("elicitation/create", {"garbage": True})
    checker.notification("notifications/tasks/status", 42)
    checker.result("tasks/get", None)
    checker.result("vendor/custom", "anything")
    checker.notification("notifications/vendor/event", [1, 2])


# -- modes -----------------------------------------------------------------------------------


def test_lenient_logs_once_per_kind_and_method(caplog: pytest.LogCaptureFixture) -> None:
    checker = MessageChecker("fs", V4)  # lenient by default
    assert checker.mode == "lenient"
    bad_tools = {"tools": [{"inputSchema": {"type": "object"}}]}
    with caplog.at_level(logging.WARNING, logger="mcphost.protocol.messages"):
        checker.result("tools/list", bad_tools)
        checker.result("tools/list", bad_tools)
        checker.result("tools/list", {"tools": "none"})
        checker.result("tools/call", {"content": [{"type": "text"}]})
        checker.result("tools/call", {})
        checker.notification("notifications/progress", {"progress": 1})
        checker.notification("notifications/progress", {"progress": 1})
        checker.request("sampling/createMessage", {})
        checker.result("tools/list", {"tools": []})  # valid: nothing logged
    messages = [r.getMessage() for r in caplog.records]
    assert all(r.levelno == logging.WARNING for r in caplog.records)
    assert messages == [
        "fs: tools/list result: $.tools[0]: missing required property 'name' (MCP 2025-11-25)",
        "fs: tools/call result: $.content[0]: missing required property 'text' (MCP 2025-11-25)",
        "fs: notifications/progress params: $: missing required property 'progressToken' (MCP 2025-11-25)",
        "fs: sampling/createMessage params: $: missing required property 'messages' (MCP 2025-11-25)",
    ]


def test_lenient_is_per_checker_and_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcphost.protocol.messages"):
        for server in ("a", "b"):
            checker = MessageChecker(server, V1, "lenient")
            checker.result("tools/call", {"content": 1})
            checker.result("tools/call", {"content": 1})
        # The same method as another kind is reported on its own.
        checker = MessageChecker("c", V4, "lenient")
        checker.result("tools/call", {"content": 1})
        checker.result("tools/call", {"task": 1}, task=True)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["a", "b", "c", "c"]


def test_lenient_uses_the_given_logger(caplog: pytest.LogCaptureFixture) -> None:
    mine = logging.getLogger("app.mcp")
    with caplog.at_level(logging.WARNING, logger="app.mcp"):
        MessageChecker("fs", V3, logger=mine).result("ping", [])
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("app.mcp", "fs: ping result: $: expected object, got array [] (MCP 2025-06-18)")]


@pytest.mark.parametrize("version", VERSIONS)
def test_off_never_raises_nor_logs(version: str, caplog: pytest.LogCaptureFixture) -> None:
    checker = MessageChecker("fs", version, "off")
    with caplog.at_level(logging.DEBUG):
        for method in ("tools/call", "tools/list", "initialize", "vendor/x"):
            checker.result(method, None)
            checker.result(method, object(), task=True)
        checker.request("sampling/createMessage", 5)
        checker.notification("notifications/progress", [])
    assert caplog.records == []


def test_bad_mode_or_version() -> None:
    assert MODES == ("strict", "lenient", "off")
    with pytest.raises(ValueError, match="mode must be one of"):
        MessageChecker("fs", V1, "loud")
    with pytest.raises(ValueError, match="unsupported MCP version '2024-10-07'"):
        MessageChecker("fs", "2024-10-07")


# -- what the host sends ---------------------------------------------------------------------


def modern_client_messages() -> list[tuple[dict[str, Any], str | None]]:
    """2026-07-28: well-formed messages of the client, each request with the era's ``_meta``."""
    caps = client_capabilities(V5, sampling=True, sampling_tools=True, elicitation_form=True, elicitation_url=True)
    meta = modern.request_meta(V5, {**caps, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                               {"name": "mcphost", "version": "0.1.0"}, "warning")
    answers = {"who": {"action": "accept", "content": {"name": "Ada"}}, "roots": {"roots": []}}
    requests: list[tuple[str, dict[str, Any] | None]] = [
        ("server/discover", None), ("tools/list", {"cursor": "abc"}),
        ("tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": 3}}),
        ("tools/call", {"name": "echo", "arguments": {}, "inputResponses": answers, "requestState": "opaque"}),
        ("prompts/list", None), ("prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}),
        ("resources/list", {}), ("resources/templates/list", None), ("resources/read", {"uri": "file:///a.txt"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "who", "value": "A"}}),
        ("subscriptions/listen", {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}}),
        ("tasks/get", {"taskId": "t-1"}), ("tasks/update", {"taskId": "t-1", "inputResponses": answers}),
        ("tasks/cancel", {"taskId": "t-1"}),
    ]
    out: list[tuple[dict[str, Any], str | None]] = [
        ({"jsonrpc": "2.0", "id": i, "method": method, "params": modern.with_meta(params, meta, False)}, None)
        for i, (method, params) in enumerate(requests)]
    out.append(({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}, None))
    return out


def client_messages(version: str) -> list[tuple[dict[str, Any], str | None]]:
    """Well-formed messages a client sends in ``version`` (with the method a response answers)."""
    if version == V5:
        return modern_client_messages()
    session = Session(
        client_info={"name": "mcphost", "version": "0.1.0", "title": "mcphost",
                     "description": "host", "websiteUrl": "https://example.com"},
        capabilities_for=lambda v: client_capabilities(
            v, sampling=True, sampling_tools=True, elicitation_form=True, elicitation_url=True),
        versions=(version,),
    )
    out: list[tuple[dict[str, Any], str | None]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": session.initialize_params()}, None),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "abc"}}, None),
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": 3}}}, None),
        ({"jsonrpc": "2.0", "id": 4, "method": "prompts/list"}, None),
        ({"jsonrpc": "2.0", "id": 5, "method": "prompts/get",
          "params": {"name": "greet", "arguments": {"who": "Ada"}}}, None),
        ({"jsonrpc": "2.0", "id": 6, "method": "resources/list", "params": {}}, None),
        ({"jsonrpc": "2.0", "id": 7, "method": "resources/templates/list"}, None),
        ({"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {"uri": "file:///a.txt"}}, None),
        ({"jsonrpc": "2.0", "id": "9", "method": "resources/subscribe",
          "params": {"uri": "file:///a"}}, None),
        ({"jsonrpc": "2.0", "id": 10, "method": "resources/unsubscribe",
          "params": {"uri": "file:///a"}}, None),
        ({"jsonrpc": "2.0", "id": 11, "method": "logging/setLevel", "params": {"level": "debug"}}, None),
        ({"jsonrpc": "2.0", "id": 12, "method": "completion/complete",
          "params": {"ref": {"type": "ref/resource", "uri": "file:///{path}"},
                     "argument": {"name": "path", "value": "RE"}}}, None),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": 3, "reason": "timed out"}}, None),
        ({"jsonrpc": "2.0", "method": "notifications/progress",
          "params": {"progressToken": "p", "progress": 1}}, None),
        ({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, None),
        ({"jsonrpc": "2.0", "id": "s-1", "result": {}}, "ping"),
        ({"jsonrpc": "2.0", "id": "s-2", "result": {"roots": [{"uri": "file:///home/ada", "name": "home"}]}},
         "roots/list"),
        ({"jsonrpc": "2.0", "id": "s-3", "result": {
            "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m",
            "stopReason": "endTurn"}}, "sampling/createMessage"),
        ({"jsonrpc": "2.0", "id": "s-4", "error": {"code": -32601, "message": "Method not found"}}, None),
    ]
    if at_least(version, V3):
        out.append(({"jsonrpc": "2.0", "id": 13, "method": "completion/complete", "params": {
            "ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "A"},
            "context": {"arguments": {"lang": "en"}}}}, None))
        out.append(({"jsonrpc": "2.0", "id": "s-5", "result": {"action": "accept", "content": {
            "name": "Ada", "age": 36, "ok": True}}}, "elicitation/create"))
        out.append(({"jsonrpc": "2.0", "id": "s-6", "result": {"action": "decline"}}, "elicitation/create"))
    if at_least(version, V4):
        out += [
            ({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {
                "name": "slow", "arguments": {}, "task": {"ttl": 60000}}}, None),
            ({"jsonrpc": "2.0", "id": 15, "method": "tasks/get", "params": {"taskId": "t-1"}}, None),
            ({"jsonrpc": "2.0", "id": 16, "method": "tasks/result", "params": {"taskId": "t-1"}}, None),
            ({"jsonrpc": "2.0", "id": 17, "method": "tasks/list"}, None),
            ({"jsonrpc": "2.0", "id": 18, "method": "tasks/cancel", "params": {"taskId": "t-1"}}, None),
            ({"jsonrpc": "2.0", "id": "s-7", "result": {"action": "accept", "content": {"tags": ["a", "b"]}}},
             "elicitation/create"),
            ({"jsonrpc": "2.0", "id": "s-8", "result": {
                "role": "assistant", "model": "m", "stopReason": "toolUse",
                "content": [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "x"}}]}},
             "sampling/createMessage"),
            ({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}, None),
        ]
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_outgoing_well_formed_messages(version: str) -> None:
    for message, method in client_messages(version):
        assert outgoing_errors(version, message, method) == [], message


def test_outgoing_initialize_matches_the_offered_version() -> None:
    for version in VERSIONS[:-1]:
        params = Session(client_info={"name": "h", "version": "1"}, versions=(version,)).initialize_params()
        assert params["protocolVersion"] == version
        assert outgoing_errors(version, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                         "params": params}) == []


OUTGOING_MALFORMED: list[tuple[str, Any, str | None, list[str]]] = [
    (V4, {"id": 1, "method": "ping"}, None, ['$.jsonrpc: must be "2.0"']),
    (V4, {"jsonrpc": "2.0", "id": None, "method": "ping"}, None, ["$.id: must be a string or an integer"]),
    (V4, {"jsonrpc": "2.0", "id": True, "method": "ping"}, None, ["$.id: must be a string or an integer"]),
    (V1, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}, None,
     ["tools/call params: $.name: expected string, got integer 5"]),
    (V1, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}, None,
     ["$.params: must be an object"]),
    (V1, {"jsonrpc": "2.0", "method": "notifications/initialized", "params": None}, None,
     ["$.params: must be an object"]),
    (V2, {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}, None,
     ["tools/call params: $: missing required property 'name'"]),
    (V3, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "t", "_meta": {"progressToken": 1.5}}}, None,
     ["tools/call params: $._meta.progressToken: expected integer or string, got number 1.5"]),
    (V3, {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "t"}}, None,
     ["tasks/get is not a client request of MCP 2025-06-18 (only of 2025-11-25, 2026-07-28)"]),
    (V1, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V1, "capabilities": {"roots": {"listChanged": "yes"}},
        "clientInfo": {"name": "h"}}},
     None, ["initialize params: $.capabilities.roots.listChanged: expected boolean, got string \"yes\"",
            "initialize params: $.clientInfo: missing required property 'version'"]),
    (V2, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "x"}}, None,
     ["notifications/cancelled params: $: missing required property 'requestId'"]),
    (V4, {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "trace"}}, None,
     ['logging/setLevel params: $.level: "trace" is not one of ["debug", "info", "notice", '
      '"warning", "error", "critical", "alert", "emergency"]']),
    (V4, {"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}}, None,
     ["$: a request or notification carries no result or error"]),
    (V4, {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}, None,
     ["$: a response carries either result or error, not both"]),
    (V4, {"jsonrpc": "2.0", "result": {}}, None, ["$: a response needs the id of its request"]),
    (V4, {"jsonrpc": "2.0", "id": 1, "result": []}, None, ["$.result: must be an object"]),
    (V3, {"jsonrpc": "2.0", "id": 1, "result": {"roots": [{"name": "home"}]}}, "roots/list",
     ["roots/list result: $.roots[0]: missing required property 'uri'"]),
    (V4, {"jsonrpc": "2.0", "id": 1, "result": {"action": "maybe"}}, "elicitation/create",
     ['elicitation/create result: $.action: "maybe" is not one of ["accept", "decline", "cancel"]']),
    (V4, {"jsonrpc": "2.0", "id": 1, "result": {"action": "accept", "content": {"tags": [1]}}},
     "elicitation/create", ["elicitation/create result: $.content.tags[0]: expected string, got integer 1"]),
    (V2, {"jsonrpc": "2.0", "id": 1, "result": {"action": "accept"}}, "elicitation/create",
     ["elicitation/create is not a client result of MCP 2025-03-26 (only of 2025-06-18, 2025-11-25)"]),
    (V1, {"jsonrpc": "2.0", "id": 1, "result": {"role": "assistant", "model": "m",
                                                "content": {"type": "audio", "data": "", "mimeType": "a"}}},
     "sampling/createMessage",
     ['sampling/createMessage result: $.content.type: "audio" is not one of ["text", "image"]']),
    (V3, {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}, None,
     ["$: an error response needs the id of its request"]),
    (V4, {"jsonrpc": "2.0", "id": 1, "error": {"code": "oops"}}, None,
     ["$.error.code: must be an integer", "$.error.message: must be a string"]),
    (V4, {"jsonrpc": "2.0", "id": 1}, None, ["$: neither a request, a notification nor a response"]),
    (V4, "ping", None, ["$: a JSON-RPC message must be an object"]),
    (V4, {"jsonrpc": "2.0", "method": 5}, None, ["$.method: must be a string"]),
]


@pytest.mark.parametrize(("version", "message", "method", "expected"), OUTGOING_MALFORMED)
def test_outgoing_malformed_messages(
    version: str, message: Any, method: str | None, expected: list[str]
) -> None:
    assert outgoing_errors(version, message, method) == expected


def test_outgoing_batches_only_in_2025_03_26() -> None:
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert outgoing_errors(V2, batch) == []
    assert outgoing_errors(V3, batch) == ["$: batches are not part of MCP 2025-06-18"]
    assert outgoing_errors(V2, []) == ["$: a batch must not be empty"]
    assert outgoing_errors(V2, [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}]) == [
        "[0] tools/call params: $: missing required property 'name'"]


def test_outgoing_unknown_methods_are_not_judged() -> None:
    assert outgoing_errors(V4, {"jsonrpc": "2.0", "id": 1, "method": "vendor/extension",
                                "params": {"x": 1}}) == []
    with pytest.raises(ValueError, match="unsupported MCP version"):
        outgoing_errors("1.0", {"jsonrpc": "2.0", "id": 1, "method": "ping"})


# -- real servers' tool lists ----------------------------------------------------------------

FILESYSTEM_TOOLS = {"tools": [
    {"name": "read_text_file", "title": "Read Text File",
     "description": "Read the complete contents of a file from the file system as text.",
     "inputSchema": {"type": "object", "properties": {
         "path": {"type": "string"},
         "tail": {"type": "number", "description": "If provided, returns only the last N lines of the file"},
         "head": {"type": "number",
                  "description": "If provided, returns only the first N lines of the file"}},
         "required": ["path"], "additionalProperties": False,
         "$schema": "http://json-schema.org/draft-07/schema#"},
     "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}},
                      "required": ["content"], "additionalProperties": False,
                      "$schema": "http://json-schema.org/draft-07/schema#"},
     "annotations": {"readOnlyHint": True}, "execution": {"taskSupport": "forbidden"}},
    {"name": "read_multiple_files", "title": "Read Multiple Files",
     "description": "Read the contents of multiple files simultaneously.",
     "inputSchema": {"type": "object", "properties": {
         "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, "required": ["paths"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "write_file", "title": "Write File",
     "description": "Create a new file or overwrite an existing file.",
     "inputSchema": {"type": "object",
                     "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                     "required": ["path", "content"]},
     "annotations": {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": True}},
    {"name": "edit_file", "title": "Edit File", "description": "Make line-based edits to a text file.",
     "inputSchema": {"type": "object", "properties": {
         "path": {"type": "string"},
         "edits": {"type": "array", "items": {"type": "object", "properties": {
             "oldText": {"type": "string"}, "newText": {"type": "string"}},
             "required": ["oldText", "newText"], "additionalProperties": False}},
         "dryRun": {"type": "boolean", "default": False}}, "required": ["path", "edits"]},
     "annotations": {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True}},
    {"name": "directory_tree", "description": "Get a recursive tree view of files and directories as JSON.",
     "inputSchema": {"type": "object", "properties": {
         "path": {"type": "string"}, "excludePatterns": {"type": "array", "items": {"type": "string"},
                                                         "default": []}}, "required": ["path"]}},
    {"name": "list_allowed_directories",
     "description": "Returns the list of directories this server may access.",
     "inputSchema": {"type": "object", "properties": {}, "required": []}},
]}

EVERYTHING_TOOLS = {"tools": [
    {"name": "echo", "title": "Echo Tool", "description": "Echoes back the input string",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string",
                                                                  "description": "Message to echo"}},
                     "required": ["message"], "$schema": "https://json-schema.org/draft/2020-12/schema"},
     "execution": {"taskSupport": "forbidden"}},
    {"name": "get-sum", "title": "Get Sum", "description": "Returns the sum of two numbers",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]}},
    {"name": "get-tiny-image", "description": "Returns a tiny MCP logo image.",
     "inputSchema": {"type": "object", "properties": {}},
     "icons": [{"src": "data:image/png;base64,iVBORw0KGgo=", "mimeType": "image/png", "sizes": ["any"]}]},
    {"name": "get-structured-content",
     "description": "Returns structured content along with an output schema",
     "inputSchema": {"type": "object", "properties": {"location": {"type": "string",
                                                                   "enum": ["New York", "Chicago"]}},
                     "required": ["location"]},
     "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number"},
                                                       "conditions": {"type": "string"}},
                      "required": ["temperature", "conditions"]}},
    {"name": "simulate-research-query", "description": "Simulates a long research task",
     "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
     "execution": {"taskSupport": "required"},
     "_meta": {"io.modelcontextprotocol/example": True}},
    {"name": "trigger-sampling-request", "description": "Asks the client to sample an LLM",
     "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"},
                                                      "maxTokens": {"type": "number", "default": 100}},
                     "required": ["prompt"]}},
]}


@pytest.mark.parametrize("version", [V3, V4])
@pytest.mark.parametrize("tools", [FILESYSTEM_TOOLS, EVERYTHING_TOOLS], ids=["filesystem", "everything"])
def test_real_tool_lists_are_valid(version: str, tools: dict[str, Any]) -> None:
    MessageChecker("fs", version, "strict").result("tools/list", tools)


def test_real_tool_lists_are_valid_in_older_versions_too() -> None:
    # Later members (title, outputSchema, execution, icons) are unknown members there.
    for version in (V1, V2):
        MessageChecker("fs", version, "strict").result("tools/list", FILESYSTEM_TOOLS)
        MessageChecker("fs", version, "strict").result("tools/list", EVERYTHING_TOOLS)


def test_importing_mcphost_does_not_import_messages() -> None:
    import subprocess
    import sys

    code = "import sys, mcphost; print('mcphost.protocol.messages' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the fast acceptance paths never accept what the schemas refuse ----------------------

_CALL_RESULTS: list[Any] = [
    {"content": []},
    {"content": [{"type": "text", "text": "x"}]},
    {"content": [{"type": "text", "text": "x"}, {"type": "text", "text": ""}], "isError": True},
    {"content": [{"type": "text", "text": "x"}], "isError": "yes"},
    {"content": [{"type": "text", "text": 5}]},
    {"content": [{"type": "text"}]},
    {"content": [{"type": "image", "text": "x"}]},
    {"content": [{"type": "text", "text": "x", "annotations": 5}]},
    {"content": [{"type": "text", "text": "x"}], "structuredContent": [1]},
    {"content": [{"type": "text", "text": "x"}], "_meta": 5},
    {"content": [["text"]]},
    {"content": {"type": "text", "text": "x"}},
    {"isError": False},
    [],
    None,
]
_PROGRESS: list[Any] = [
    {"progressToken": 1, "progress": 1},
    {"progressToken": "t", "progress": 0.5, "total": 2, "message": "half"},
    {"progressToken": True, "progress": 1},
    {"progressToken": 1.5, "progress": 1},
    {"progressToken": None, "progress": 1},
    {"progressToken": 1, "progress": "1"},
    {"progressToken": 1, "progress": 1, "total": "2"},
    {"progressToken": 1, "progress": 1, "message": 3},
    {"progressToken": 1, "progress": 1, "_meta": 5},
    {"progressToken": 1, "progress": 1, "total": 3},
    {"progressToken": 1, "progress": 1, "message": "m"},
    {"progressToken": 1, "progress": 1, "total": True},
    {"progressToken": 1, "progress": 1, "total": 2, "message": 3},
    {"progressToken": 1, "progress": 1, "total": "2", "message": "m"},
    {"progressToken": 1, "progress": 1, "total": 2, "message": "m", "_meta": {}},
    {"progressToken": 1},
    {"progress": 1},
    [],
    None,
]


@pytest.mark.parametrize("version", messages.VERSIONS)
def test_fast_paths_agree_with_the_schemas(version: str) -> None:
    fast_accepted = 0
    for result in _CALL_RESULTS:
        if messages._plain_call_result(result):
            fast_accepted += 1
            assert not messages._schema_errors(version, "server_result", "tools/call", result)
    for params in _PROGRESS:
        if messages._plain_progress(params):
            fast_accepted += 1
            assert not messages._schema_errors(
                version, "server_notification", "notifications/progress", params
            )
    assert fast_accepted == 7


@pytest.mark.parametrize(("method", "payload", "expected"), [
    ("tools/call", {"resultType": "partial", "content": []}, '$.resultType: "partial" is not the constant "complete"'),
    ("tools/call", {"resultType": "input_required", "inputRequests": {"a": {"method": "tools/call"}}},
     '$.inputRequests.a.method: "tools/call" is not one of ["sampling/createMessage", "elicitation/create", '
     '"roots/list"]'),
    ("tools/call", {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create"}}},
     "$.inputRequests.a: missing required property 'params'"),
    ("tools/call", {"resultType": "task", "taskId": 5, "status": "working"}, "$.taskId: expected string"),
    ("tools/list", {"tools": [], "ttlMs": -1}, "$.ttlMs: -1 is less than the minimum 0"),
    ("resources/read", {"contents": [], "cacheScope": "shared"}, '$.cacheScope: "shared" is not one of'),
    ("server/discover", {"capabilities": {}}, "missing required property 'supportedVersions'"),
    ("tasks/get", {"taskId": "t", "status": "paused"}, '$.status: "paused" is not one of'),
])
def test_modern_results_are_checked(method: str, payload: Any, expected: str) -> None:
    assert expected in str(strict_error(V5, "server_result", method, payload))
