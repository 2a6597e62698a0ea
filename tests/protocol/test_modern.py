"""The modern (2026-07-28) era's sans-I/O rules: _meta, resultType, MRTR rounds, -32022, headers."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcphost.errors import ProtocolError
from mcphost.protocol import modern
from mcphost.protocol.legacy import client_capabilities
from mcphost.protocol.modern import ModernSession, State

CAPS = {"roots": {}, "sampling": {}, "elicitation": {"form": {}}}


def test_request_meta_and_merge_keep_the_callers_own_members() -> None:
    meta = modern.request_meta("2026-07-28", CAPS, {"name": "h", "version": "1"}, "info")
    assert meta == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": CAPS,
        "io.modelcontextprotocol/clientInfo": {"name": "h", "version": "1"},
        "io.modelcontextprotocol/logLevel": "info",
    }
    assert modern.with_meta(None, meta, False) == {"_meta": meta}
    params = {"name": "t", "_meta": {"progressToken": 7}}
    merged = modern.with_meta(params, meta, False)
    assert merged["_meta"] == {"progressToken": 7, **meta} and merged["name"] == "t"
    assert params == {"name": "t", "_meta": {"progressToken": 7}}  # not owned: untouched
    assert modern.with_meta(params, meta, True) is params and "io.modelcontextprotocol/clientInfo" in params["_meta"]


def test_capabilities_have_the_2026_shapes() -> None:
    caps = client_capabilities("2026-07-28", roots=True, sampling=True, sampling_tools=True,
                               elicitation_form=True, elicitation_url=True, task_requests=True)
    assert caps == {"roots": {}, "sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}},
                    "extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert client_capabilities("2025-11-25")["roots"] == {"listChanged": True}


@pytest.mark.parametrize(("method", "result", "kind"), [
    ("tools/call", {"content": []}, "complete"),  # absent: complete
    ("tools/call", {"resultType": "complete", "content": []}, "complete"),
    ("tools/call", {"resultType": "input_required", "requestState": "s"}, "input_required"),
    ("prompts/get", {"resultType": "input_required", "requestState": "s"}, "input_required"),
    ("resources/read", {"resultType": "input_required", "requestState": "s"}, "input_required"),
])
def test_result_type(method: str, result: dict[str, Any], kind: str) -> None:
    assert modern.result_type(method, result) == kind


@pytest.mark.parametrize(("method", "result"), [
    ("tools/call", {"resultType": "partial"}),
    ("tools/list", {"resultType": "input_required", "requestState": "s"}),  # not a multi-round method
    ("tools/call", {"resultType": 3}),
    ("tools/call", {"resultType": "task", "taskId": "t"}),  # not opted in
])
def test_unknown_result_type_is_invalid(method: str, result: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError, match="resultType"):
        modern.result_type(method, result)


def test_a_task_only_to_a_client_that_opted_in() -> None:
    assert modern.result_type("resources/read", {"resultType": "task", "taskId": "t"}, tasks=True) == "task"
    with pytest.raises(ProtocolError):
        modern.result_type("tools/call", {"resultType": "task"}, tasks=True)  # no taskId


def test_input_round_and_retry_params_echo_the_state_byte_for_byte() -> None:
    state = "  opaque \u00e9 state\n"
    result = {"resultType": "input_required", "requestState": state, "inputRequests": {
        "who": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {}}},
        "where": {"method": "roots/list"},
    }}
    round_ = modern.input_round(result, CAPS)
    assert list(round_.requests) == ["who", "where"]
    assert round_.requests["where"] == ("roots/list", {})
    original = {"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 1}}
    again = modern.retry_params(original, {"who": {"action": "decline"}}, round_.state)
    assert again["requestState"] is state and again["inputResponses"] == {"who": {"action": "decline"}}
    assert again["arguments"] == {"a": 1} and "inputResponses" not in original
    # The next round replaces the answers of this one; no state given: none sent.
    third = modern.retry_params(again, {"x": {}}, None)
    assert third["inputResponses"] == {"x": {}} and "requestState" not in third


@pytest.mark.parametrize(("result", "problem"), [
    ({"resultType": "input_required"}, "neither"),
    ({"inputRequests": {"a": {"method": "tools/call"}}}, "not an input request"),
    ({"inputRequests": {"a": {"method": "sampling/createMessage"}}}, "did not declare 'sampling'"),
    ({"inputRequests": {"a": {"params": {}}}}, "has no method"),
    ({"inputRequests": []}, "not an object"),
    ({"requestState": 5}, "not a string"),
    ({"inputRequests": {str(i): {"method": "roots/list"} for i in range(33)}}, "at most 32"),
])
def test_input_round_refuses(result: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        modern.input_round(result, {"roots": {}})


def test_unsupported_version_data_and_pick() -> None:
    assert modern.unsupported_versions({"supported": ["2026-07-28", 3], "requested": "x"}) == ("2026-07-28",)
    assert modern.unsupported_versions("nope") is None
    assert modern.unsupported_versions({"supported": "2026-07-28"}) is None
    assert modern.pick_version(("2025-11-25", "2026-07-28")) == "2026-07-28"
    assert modern.pick_version(("2030-01-01",)) is None


def test_modern_session_discover() -> None:
    session = ModernSession(client_info={"name": "h", "version": "1"},
                            capabilities_for=lambda v: client_capabilities(v, sampling=True))
    params = session.discover_params()
    assert params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert params["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {"roots": {}, "sampling": {}}
    session.accept_discover_result({
        "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}},
        "instructions": "hi", "ttlMs": 0, "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"}},
    })
    assert session.state is State.READY and session.protocol_version == "2026-07-28"
    assert session.server_info == {"name": "s", "version": "2"} and session.instructions == "hi"
    assert session.has_capability("tools", "listChanged") and not session.has_capability("prompts")
    assert not session.accepts_server_request("roots/list") and session.version.stateless
    session.set_log_level("debug")
    assert session.meta["io.modelcontextprotocol/logLevel"] == "debug"


@pytest.mark.parametrize(("result", "problem"), [
    ([], "not an object"),
    ({"capabilities": {}}, "no supportedVersions"),
    ({"supportedVersions": ["2030-01-01"]}, "the client speaks 2026-07-28"),
    ({"supportedVersions": ["2026-07-28"], "capabilities": []}, "capabilities is not an object"),
    ({"supportedVersions": ["2026-07-28"], "resultType": "odd"}, "resultType"),
])
def test_modern_session_refuses_a_bad_discover_result(result: Any, problem: str) -> None:
    session = ModernSession(client_info={"name": "h", "version": "1"})
    session.discover_params()
    with pytest.raises(ProtocolError, match=problem):
        session.accept_discover_result(result)
    assert session.state is State.FAILED


# -- headers: the conformance scenario http-invalid-tool-headers' rules --------------------------


def _schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(("schema", "problem"), [
    (_schema(a={"type": "string", "x-mcp-header": ""}), "empty"),
    (_schema(a={"type": "string", "x-mcp-header": "Has Space"}), "not an HTTP token"),
    (_schema(a={"type": "string", "x-mcp-header": "Colon:"}), "not an HTTP token"),
    (_schema(a={"type": "string", "x-mcp-header": "Caf\u00e9"}), "not an HTTP token"),
    (_schema(a={"type": "string", "x-mcp-header": "Ctl\x01"}), "not an HTTP token"),
    (_schema(a={"type": "string", "x-mcp-header": "Dup"}, b={"type": "string", "x-mcp-header": "dup"}), "repeats"),
    (_schema(a={"type": "string", "x-mcp-header": "Same"}, b={"type": "integer", "x-mcp-header": "Same"}), "repeats"),
    (_schema(a={"type": "object", "x-mcp-header": "Obj"}), "only string, integer, boolean"),
    (_schema(a={"type": "array", "x-mcp-header": "Arr"}), "only string, integer, boolean"),
    (_schema(a={"type": "null", "x-mcp-header": "Nul"}), "only string, integer, boolean"),
    (_schema(a={"type": "number", "x-mcp-header": "Num"}), "only string, integer, boolean"),
    (_schema(a={"type": "string", "x-mcp-header": 5}), "not a string"),
    ({"type": "object", "anyOf": [_schema(a={"type": "string", "x-mcp-header": "A"})]}, "not a property"),
    ({"type": "object", "x-mcp-header": "Root"}, "not a property"),
])
def test_invalid_header_annotations(schema: dict[str, Any], problem: str) -> None:
    assert problem in str(modern.header_problem(schema))


def test_valid_header_annotations_and_their_map() -> None:
    schema = _schema(region={"type": "string", "x-mcp-header": "Region"}, n={"type": "integer"},
                     deep=_schema(flag={"type": "boolean", "x-mcp-header": "Flag"}))
    assert modern.header_problem(schema) is None
    assert modern.header_map(schema) == {("region",): "Region", ("deep", "flag"): "Flag"}
    assert modern.header_problem(None) is None and modern.header_map({"$ref": "http://x/"}) == {}


@pytest.mark.parametrize(("value", "sent"), [
    ("plain", "plain"),
    ("with inner space", "with inner space"),
    (" lead", None), ("trail ", None), ("caf\u00e9", None), ("line\nbreak", None), ("cr\r", None),
    ("tab\t", None), ("ctl\x7f", None), ("=?base64?abc?=", None),
])
def test_header_values_and_the_base64_sentinel(value: str, sent: str | None) -> None:
    encoded = modern.encode_header_value(value)
    if sent is not None:
        assert encoded == sent
    else:
        assert encoded.startswith("=?base64?") and encoded.endswith("?=")
        assert base64.b64decode(encoded[9:-2]).decode("utf-8") == value


def test_request_headers() -> None:
    tool = {("region",): "Region", ("count",): "Count", ("flag",): "Flag", ("gone",): "Gone",
            ("nested", "x"): "X", ("obj",): "Obj"}
    params = {"name": "t\u00e9", "arguments": {"region": "eu", "count": 42, "flag": False, "gone": None,
                                               "nested": {"x": True}, "obj": {"a": 1}, "other": "no"}}
    headers = modern.request_headers("2026-07-28", "tools/call", params, tool)
    assert headers == [
        ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "=?base64?dMOp?="),
        ("Mcp-Param-Region", "eu"), ("Mcp-Param-Count", "42"), ("Mcp-Param-Flag", "false"),
        ("Mcp-Param-X", "true"),
    ]
    assert modern.request_headers("2026-07-28", "resources/read", {"uri": "file:///a%20b"}) == [
        ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/read"), ("Mcp-Name", "file:///a%20b")]
    assert modern.request_headers("2026-07-28", "tools/list", {}) == [
        ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")]


@pytest.mark.parametrize(("data", "names"), [
    ({"requiredCapabilities": {"elicitation": {"form": {}}, "sampling": {}}}, ("elicitation", "sampling")),
    ({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}},
     ("extensions/io.modelcontextprotocol/tasks",)),
    ({"requiredCapabilities": {f"c{i}": {} for i in range(40)}}, tuple(f"c{i}" for i in range(16))),
    ({"requiredCapabilities": ["sampling"]}, ()),
    (None, ()),
])
def test_required_capabilities_are_named_within_bounds(data: Any, names: tuple[str, ...]) -> None:
    assert modern.required_capabilities(data) == names
