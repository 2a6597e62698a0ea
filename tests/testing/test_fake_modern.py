"""The fake server's 2026-07-28 era over stdio, driven with raw JSON lines (spec A.6-A.9)."""

from __future__ import annotations

from typing import Any

from tests.testing.conftest import FakeProc

V = "2026-07-28"
OBJ = {"type": "object"}
FORM = {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}
SUB = "io.modelcontextprotocol/subscriptionId"
TASKS = "io.modelcontextprotocol/tasks"


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        **extra,
    }


def mreq(p: FakeProc, method: str, caps: dict[str, Any] | None = None, **params: Any) -> Any:
    """A modern request's whole response (result or error)."""
    return p.response(p.call(method, {"_meta": meta(caps), **params}))


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


def test_discover_answers_with_versions_capabilities_and_hints(fake: Any) -> None:
    p = fake({"era": "modern", "instructions": "be nice", "name": "srv",
              "cache": {"ttlMs": 5000, "cacheScope": "public", "tools/list": {"ttlMs": 1}}})
    res = mreq(p, "server/discover")["result"]
    assert res["supportedVersions"] == [V]
    assert res["capabilities"]["tools"] == {"listChanged": True}
    assert res["instructions"] == "be nice"
    assert res["resultType"] == "complete"
    assert (res["ttlMs"], res["cacheScope"]) == (5000, "public")
    assert res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "srv"
    tools = mreq(p, "tools/list")["result"]
    assert (tools["ttlMs"], tools["cacheScope"]) == (1, "private")
    assert [t["name"] for t in tools["tools"]] == ["echo"]
    called = mreq(p, "tools/call", name="echo", arguments={"x": 1})["result"]
    assert called["resultType"] == "complete" and "ttlMs" not in called


def test_each_probe_outcome_is_scriptable(fake: Any) -> None:
    legacy = fake({})
    assert mreq(legacy, "server/discover")["error"]["code"] == -32601
    rejecting = fake({"era": "both", "rejectVersionTimes": 1})
    err = mreq(rejecting, "server/discover")["error"]
    assert err["code"] == -32022 and err["data"] == {"supported": [V], "requested": V}
    assert mreq(rejecting, "server/discover")["result"]["supportedVersions"] == [V]
    silent = fake({"era": "both", "neverAnswerMethods": ["server/discover"]})
    probe = silent.call("server/discover", {"_meta": meta()})
    assert silent.initialize()["protocolVersion"] == "2025-11-25"  # the fallback works
    assert not any(m.get("id") == probe for m in silent.backlog)


def test_dual_era_connection_keeps_the_era_it_started_with(fake: Any) -> None:
    modern = fake({"era": "both"})
    assert "result" in mreq(modern, "server/discover")
    resp = modern.response(modern.call("initialize", {"protocolVersion": "2025-11-25",
                                                      "capabilities": {}, "clientInfo": {}}))
    assert resp["error"]["code"] == -32601
    legacy = fake({"era": "both"})
    legacy.initialize()
    assert legacy.request("tools/list")["tools"][0]["name"] == "echo"
    assert mreq(legacy, "server/discover")["error"]["code"] == -32601
    only = fake({"era": "modern"})
    assert only.response(only.call("ping"))["error"]["code"] == -32601


def test_meta_is_required_and_checked(fake: Any) -> None:
    p = fake({"era": "modern", "supportedVersions": ["2026-07-28", "2027-01-01"]})
    assert p.error("tools/list")["code"] == -32602
    assert p.error("tools/list", {"_meta": {}})["code"] == -32602
    no_caps = {"io.modelcontextprotocol/protocolVersion": V}
    assert p.error("tools/list", {"_meta": no_caps})["code"] == -32602
    bad = {**meta(), "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    err = p.error("tools/list", {"_meta": bad})
    assert err["code"] == -32022
    assert err["data"] == {"supported": ["2026-07-28", "2027-01-01"], "requested": "2025-11-25"}
    assert p.error("resources/read", {"_meta": meta(), "uri": "x://nope"})["code"] == -32602


def test_mrtr_rounds_check_capabilities_state_and_responses(fake: Any) -> None:
    rounds = [{"who": {"method": "elicitation/create", "params": FORM}},
              {"llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
               "dirs": {"method": "roots/list", "params": {}}}]
    p = fake({"era": "modern", "tools": [tool("ask", inputRounds=rounds)]})
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    first = mreq(p, "tools/call", caps, name="ask", arguments={})["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == rounds[0]
    state = first["requestState"]
    answer = {"action": "accept", "content": {"name": "Ada"}}
    tampered = mreq(p, "tools/call", caps, name="ask", arguments={},
                    inputResponses={"who": answer}, requestState=state + "x")
    assert tampered["error"]["code"] == -32602
    lacking = mreq(p, "tools/call", caps, name="ask", arguments={}, inputResponses={},
                   requestState=state)["result"]
    assert lacking["inputRequests"] == rounds[0]  # the same round, asked again (SEP-2322)
    second = mreq(p, "tools/call", caps, name="ask", arguments={},
                  inputResponses={"who": answer}, requestState=state)["result"]
    assert second["inputRequests"] == rounds[1]
    done = mreq(p, "tools/call", caps, name="ask", arguments={},
                inputResponses={"llm": {"role": "assistant"}, "dirs": {"roots": []}},
                requestState=second["requestState"])["result"]
    assert done["resultType"] == "complete"
    assert done["structuredContent"]["inputResponses"] == {
        "who": answer, "llm": {"role": "assistant"}, "dirs": {"roots": []}}
    err = mreq(p, "tools/call", {"sampling": {}}, name="ask", arguments={})["error"]
    assert err["code"] == -32021
    assert err["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_optional_input_requests_are_left_out_for_a_client_without_the_capability(fake: Any) -> None:
    both = [{"llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
             "who": {"method": "elicitation/create", "params": FORM}}]
    p = fake({"era": "modern", "tools": [tool("ask", inputRounds=both, inputOptional=True)]})
    asked = mreq(p, "tools/call", {"sampling": {}}, name="ask")["result"]
    assert list(asked["inputRequests"]) == ["llm"]
    done = mreq(p, "tools/call", {"sampling": {}}, name="ask", inputResponses={"llm": {}},
                requestState=asked["requestState"])["result"]
    assert done["resultType"] == "complete"


def test_a_legacy_request_behaviour_becomes_one_round(fake: Any) -> None:
    p = fake({"era": "both", "tools": [tool("roots", request={"method": "roots/list"})]})
    first = mreq(p, "tools/call", {"roots": {}}, name="roots")["result"]
    assert first["inputRequests"] == {"r0": {"method": "roots/list"}}
    done = mreq(p, "tools/call", {"roots": {}}, name="roots", inputResponses={"r0": {"roots": []}},
                requestState=first["requestState"])["result"]
    assert done["structuredContent"] == {"response": {"roots": []}}
    legacy = fake({"era": "both", "tools": [tool("roots", request={"method": "roots/list"})]})
    legacy.initialize(capabilities={"roots": {}})
    rid = legacy.call("tools/call", {"name": "roots"})
    asked = legacy.wait_for(lambda m: m.get("method") == "roots/list")
    legacy.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}})
    assert legacy.result(rid)["structuredContent"] == {"response": {"roots": []}}


def test_prompts_and_resources_can_ask_for_input_too(fake: Any) -> None:
    ask = [{"q": {"method": "elicitation/create", "params": FORM}}]
    p = fake({"era": "modern",
              "prompts": [{"name": "p", "messages": [{"role": "user", "content": "hi"}],
                           "inputRounds": ask}],
              "resources": [{"uri": "mem://r", "name": "r", "text": "body", "inputRounds": ask}]})
    listed = mreq(p, "prompts/list")["result"]["prompts"]
    assert "inputRounds" not in listed[0]
    caps = {"elicitation": {}}
    first = mreq(p, "prompts/get", caps, name="p")["result"]
    assert first["resultType"] == "input_required"
    got = mreq(p, "prompts/get", caps, name="p", inputResponses={"q": {"action": "decline"}},
               requestState=first["requestState"])["result"]
    assert got["messages"][0]["content"]["text"] == "hi"
    first = mreq(p, "resources/read", caps, uri="mem://r")["result"]
    read = mreq(p, "resources/read", caps, uri="mem://r", inputResponses={"q": {"action": "cancel"}},
                requestState=first["requestState"])["result"]
    assert read["contents"][0]["text"] == "body"


def test_listen_streams_acknowledge_deliver_and_end(fake: Any) -> None:
    new_tools = [tool("echo", echo=True), tool("other")]
    p = fake({"era": "modern", "resources": [{"uri": "mem://a", "name": "a", "text": "x"}],
              "tools": [tool("change", mutate={"tools": new_tools}, updated=["mem://a", "mem://b"])]})
    lid = p.call("subscriptions/listen", {"_meta": meta(), "notifications": {
        "toolsListChanged": True, "promptsListChanged": True,
        "resourceSubscriptions": ["mem://a"]}})
    ack = p.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
    assert ack["params"] == {"_meta": {SUB: lid}, "notifications": {
        "toolsListChanged": True, "resourceSubscriptions": ["mem://a"]}}
    assert "result" in mreq(p, "tools/call", name="change")
    changed = p.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed")
    assert changed["params"] == {"_meta": {SUB: lid}}
    updated = p.wait_for(lambda m: m.get("method") == "notifications/resources/updated")
    assert updated["params"] == {"uri": "mem://a", "_meta": {SUB: lid}}
    p.notify("notifications/cancelled", {"requestId": lid})
    later = p.call("subscriptions/listen", {"_meta": meta(), "notifications": {"toolsListChanged": True}})
    p.wait_for(lambda m: m.get("params", {}).get("_meta", {}).get(SUB) == later)
    p.close_stdin()
    rest = p.drain()
    ends = [m for m in rest if "id" in m and "method" not in m]
    assert ends == [{"jsonrpc": "2.0", "id": later, "result": {
        "_meta": {SUB: later, "io.modelcontextprotocol/serverInfo": {"name": "fake-mcp", "version": "1.0.0"}},
        "resultType": "complete"}}]
    assert not any(m.get("method") == "notifications/resources/updated"
                   and m["params"]["uri"] == "mem://b" for m in rest)


def test_listen_close_after_ends_the_stream_gracefully(fake: Any) -> None:
    p = fake({"era": "modern", "listenCloseAfter": 0.05})
    res = mreq(p, "subscriptions/listen", notifications={"toolsListChanged": True})
    assert res["result"]["_meta"][SUB] == res["id"]


def test_logging_only_with_a_level_in_meta(fake: Any) -> None:
    logs = [{"level": "debug", "data": "d"}, {"level": "error", "data": "e"}]
    p = fake({"era": "modern", "tools": [tool("log", log=logs)]})
    rid = p.call("tools/call", {"_meta": meta(), "name": "log"})
    p.response(rid)
    rid = p.call("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "info"}),
                                "name": "log"})
    p.response(rid)
    sent = [m["params"]["data"] for m in p.backlog if m.get("method") == "notifications/message"]
    assert sent == ["e"]


def test_result_type_can_be_left_out_or_made_up(fake: Any) -> None:
    p = fake({"era": "modern", "omitResultType": True, "tools": [tool("odd", resultType="weird")]})
    assert "resultType" not in mreq(p, "tools/list")["result"]
    assert mreq(p, "tools/call", name="odd")["result"]["resultType"] == "weird"


def test_tasks_extension(fake: Any) -> None:
    rounds = [{"ok": {"method": "elicitation/create", "params": FORM}}]
    p = fake({"era": "modern", "taskPollInterval": 10, "tools": [
        {**tool("job", inputRounds=rounds), "execution": {"taskSupport": "required"}},
        {**tool("slow", waitCancelled=True), "execution": {"taskSupport": "optional"}},
        {**tool("quick", echo=True), "execution": {"taskSupport": "optional"}}]})
    discover = mreq(p, "server/discover")["result"]
    assert discover["capabilities"]["extensions"] == {TASKS: {}}
    err = mreq(p, "tools/call", {"elicitation": {}}, name="job")["error"]
    assert err["code"] == -32021 and err["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}
    caps = {"elicitation": {}, "extensions": {TASKS: {}}}
    created = mreq(p, "tools/call", caps, name="job", arguments={"n": 1})["result"]
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["pollIntervalMs"] == 10 and created["ttlMs"] == 60000
    tid = created["taskId"]
    while True:
        got = mreq(p, "tasks/get", caps, taskId=tid)["result"]
        if got["status"] == "input_required":
            break
    assert got["inputRequests"] == rounds[0] and got["resultType"] == "complete"
    assert mreq(p, "tasks/update", caps, taskId=tid,
                inputResponses={"ok": {"action": "accept", "content": {}}})["result"]["resultType"] == "complete"
    while got["status"] != "completed":
        got = mreq(p, "tasks/get", caps, taskId=tid)["result"]
    assert got["result"]["structuredContent"] == {"inputResponses": {"ok": {"action": "accept", "content": {}}}}
    slow = mreq(p, "tools/call", caps, name="slow")["result"]["taskId"]
    assert "result" in mreq(p, "tasks/cancel", caps, taskId=slow)
    assert mreq(p, "tasks/get", caps, taskId=slow)["result"]["status"] == "cancelled"
    assert mreq(p, "tasks/cancel", caps, taskId=slow)["result"] == {"resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-mcp", "version": "1.0.0"}}}
    assert mreq(p, "tasks/get", {}, taskId=slow)["error"]["code"] == -32021
    assert mreq(p, "tasks/get", caps, taskId="nope")["error"]["code"] == -32602
    plain = mreq(p, "tools/call", {}, name="quick", arguments={"a": 1})["result"]
    assert plain["resultType"] == "complete" and plain["content"][0]["text"] == '{"a":1}'


def test_command_line_era_and_script(fake: Any) -> None:
    p = fake(None, raw_args=["--era", "modern", "--script", "conformance"])
    names = [t["name"] for t in mreq(p, "tools/list")["result"]["tools"]]
    assert "test_simple_text" in names and "test_input_required_result_elicitation" in names
    assert mreq(p, "prompts/get", name="test_simple_prompt")["result"]["messages"]
    legacy = fake(None, raw_args=["--script", "conformance", "--spec", '{"name": "mine"}'])
    assert legacy.initialize()["serverInfo"]["name"] == "mine"


def test_a_bad_era_is_a_usage_error(fake: Any) -> None:
    for args in (["--era", "future"], ["--spec", '{"era": "future"}']):
        p = fake(None, raw_args=args)
        assert p.wait() == 2
        assert "era" in p.stderr_line(lambda line: "era" in line)
