"""The fake MCP server, driven as a raw subprocess with plain JSON lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcphost.testing import config, package_root, server_config

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and process groups")

TOOL = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": TOOL, "behavior": behavior}


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


# ---------------------------------------------------------------- command line and helpers


def test_help_lists_the_spec_keys() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcphost.testing", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": package_root()},
        check=True,
    ).stdout
    for key in ("--spec-file", "tools", "exitAtStart", "garbage", "record", "pageSize", "tasks"):
        assert key in out


def test_bad_spec_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcphost.testing", "--spec", "[1, 2"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": package_root()},
        check=False,
    )
    assert proc.returncode == 2
    assert "bad spec" in proc.stderr


def test_server_config_and_config() -> None:
    entry = server_config({"name": "x"}, exitAtStart=1, stderr="boom", pid_file="p")
    assert entry["command"] == sys.executable
    assert entry["args"][:3] == ["-m", "mcphost.testing", "--spec"]
    assert json.loads(entry["args"][3]) == {
        "name": "x",
        "exitAtStart": 1,
        "stderr": "boom",
        "pid_file": "p",
    }
    assert (Path(entry["env"]["PYTHONPATH"]) / "mcphost" / "testing" / "server.py").is_file()
    snake = server_config(exit_on_call=2, ignore_stdin_eof=True)
    assert json.loads(snake["args"][3]) == {"exitOnCall": 2, "ignoreStdinEof": True}
    assert config({"a": entry}) == {"mcpServers": {"a": entry}}


def test_runs_from_another_cwd_with_default_echo_tool(fake: Any, tmp_path: Path) -> None:
    p = fake(None, cwd=str(tmp_path))
    p.initialize()
    tools = p.request("tools/list")["tools"]
    assert [t["name"] for t in tools] == ["echo"]
    assert "behavior" not in tools[0]
    result = p.request("tools/call", {"name": "echo", "arguments": {"text": "héllo"}})
    assert json.loads(text_of(result)) == {"text": "héllo"}


def test_spec_file_json_and_py(fake: Any, tmp_path: Path) -> None:
    js = tmp_path / "spec.json"
    js.write_text(json.dumps({"name": "from-json"}))
    py = tmp_path / "spec.py"
    py.write_text("SPEC = {'name': 'from-' + 'py'}\n")
    for path, name in ((js, "from-json"), (py, "from-py")):
        p = fake(raw_args=["--spec-file", str(path)])
        assert p.initialize()["serverInfo"]["name"] == name


# ---------------------------------------------------------------- lifecycle


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
def test_initialize_echoes_supported_versions(fake: Any, asked: str, answered: str) -> None:
    p = fake({"name": "n", "version": "9", "instructions": "be nice"})
    result = p.initialize(asked)
    assert result["protocolVersion"] == answered
    assert result["serverInfo"] == {"name": "n", "version": "9"}
    assert result["instructions"] == "be nice"


def test_forced_version_and_capabilities(fake: Any) -> None:
    p = fake({"protocolVersion": "2099-01-01", "capabilities": {"experimental": {}}})
    result = p.initialize("2025-06-18")
    assert result["protocolVersion"] == "2099-01-01"
    assert result["capabilities"] == {"experimental": {}}


def test_derived_capabilities(fake: Any) -> None:
    p = fake(
        {
            "tools": [{**tool("t"), "execution": {"taskSupport": "optional"}}],
            "prompts": [],
            "resourceTemplates": [],
            "completions": {},
        }
    )
    caps = p.initialize()["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert caps["logging"] == {}
    assert caps["completions"] == {}
    assert caps["tasks"]["requests"] == {"tools": {"call": {}}}
    bare = fake({"tools": []}).initialize()["capabilities"]
    assert set(bare) == {"logging"}


def test_ping_unknown_method_parse_error_and_notifications(fake: Any) -> None:
    p = fake()
    p.initialize()
    p.notify("notifications/whatever", {"x": 1})  # ignored, no answer
    assert p.request("ping") == {}
    assert p.error("no/such/method")["code"] == -32601
    p.send(b"not json {")
    parse = p.recv()
    assert parse["id"] is None
    assert parse["error"]["code"] == -32700
    p.send({"jsonrpc": "1.0", "id": 7, "method": "ping"})
    assert p.response(7)["error"]["code"] == -32600
    assert p.request("ping") == {}


# ---------------------------------------------------------------- tools


def test_tools_list_pagination(fake: Any) -> None:
    tools = [tool(f"t{i}") for i in range(5)]
    p = fake({"tools": tools, "pageSize": 2})
    p.initialize()
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = p.request("tools/list", {} if cursor is None else {"cursor": cursor})
        pages += 1
        names += [t["name"] for t in page["tools"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert names == [f"t{i}" for i in range(5)]
    assert pages == 3
    assert p.error("tools/list", {"cursor": "garbage"})["code"] == -32602


def test_cursor_loop_and_invalid_cursor_error(fake: Any) -> None:
    tools = [tool(f"t{i}") for i in range(5)]
    p = fake({"tools": tools, "pageSize": 2, "cursorLoop": True})
    p.initialize()
    first = p.request("tools/list")
    second = p.request("tools/list", {"cursor": first["nextCursor"]})
    assert second["nextCursor"] == first["nextCursor"]
    q = fake({"tools": tools, "pageSize": 2, "invalidCursorError": True})
    q.initialize()
    page = q.request("tools/list")
    assert q.error("tools/list", {"cursor": page["nextCursor"]})["code"] == -32602


def test_echo_error_iserror_result(fake: Any) -> None:
    schema_tool = {
        "name": "structured",
        "inputSchema": TOOL,
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    }
    p = fake(
        {
            "tools": [
                schema_tool,
                tool("fail", error={"code": -32000, "message": "nope", "data": {"x": 1}}),
                tool("soft", isError="bad input"),
                tool("raw", result={"content": "not a list"}),
            ]
        }
    )
    p.initialize()
    listed = {t["name"]: t for t in p.request("tools/list")["tools"]}
    assert listed["structured"]["annotations"] == {"readOnlyHint": True}
    res = p.request("tools/call", {"name": "structured", "arguments": {"a": 1}})
    assert res["structuredContent"] == {"a": 1}
    assert json.loads(text_of(res)) == {"a": 1}
    assert p.error("tools/call", {"name": "fail"}) == {
        "code": -32000,
        "message": "nope",
        "data": {"x": 1},
    }
    soft = p.request("tools/call", {"name": "soft"})
    assert soft == {"content": [{"type": "text", "text": "bad input"}], "isError": True}
    assert p.request("tools/call", {"name": "raw"}) == {"content": "not a list"}
    assert p.error("tools/call", {"name": "missing"})["code"] == -32602


def test_slow_call_does_not_block_and_cancel_sends_nothing(fake: Any, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake({"tools": [tool("slow", delay=30)], "record": str(rec)})
    p.initialize()
    slow = p.call("tools/call", {"name": "slow"})
    assert p.request("ping") == {}  # answered while the slow call runs
    p.notify("notifications/cancelled", {"requestId": slow, "reason": "user"})
    assert p.request("ping") == {}
    p.close_stdin()
    rest = p.drain()
    assert all(m.get("id") != slow for m in rest)
    assert p.wait() == 0
    events = [e for e in json.loads("[" + ",".join(rec.read_text().split()) + "]") if "event" in e]
    assert {"event": "cancelled", "requestId": slow, "known": True, "reason": "user"} in events
    assert events[-1] == {"event": "eof"}


def test_wait_cancelled_records(fake: Any, tmp_path: Path, records: Any) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake({"tools": [tool("w", waitCancelled=True)], "record": str(rec)})
    p.initialize()
    rid = p.call("tools/call", {"name": "w"})
    p.notify("notifications/cancelled", {"requestId": rid})
    entries = records(rec, lambda e: e.get("event") == "waitCancelled")
    assert {"event": "waitCancelled", "requestId": rid, "reason": None} in entries
    assert p.request("ping") == {}


def test_progress(fake: Any) -> None:
    p = fake({"tools": [tool("p", progress=3, progressInterval=0.001)]})
    p.initialize()
    rid = p.call("tools/call", {"name": "p", "_meta": {"progressToken": "tok"}})
    notes = [p.recv() for _ in range(4)]
    progress = [n["params"] for n in notes[:3]]
    assert [n["progress"] for n in progress] == [1, 2, 3]
    assert all(n["progressToken"] == "tok" and n["total"] == 3 and n["message"] for n in progress)
    assert notes[3]["id"] == rid
    # Without a progress token: no progress notifications, just the result.
    rid2 = p.call("tools/call", {"name": "p"})
    assert p.recv()["id"] == rid2


def test_log_level_filtering(fake: Any) -> None:
    logs = [{"level": "debug", "data": "d"}, {"level": "warning", "data": "w"}]
    p = fake({"tools": [tool("l", log=logs)]})
    p.initialize()
    rid = p.call("tools/call", {"name": "l"})
    got = [p.recv() for _ in range(3)]
    assert [m["params"]["data"] for m in got[:2]] == ["d", "w"]
    assert got[2]["id"] == rid
    assert p.request("logging/setLevel", {"level": "info"}) == {}
    rid = p.call("tools/call", {"name": "l"})
    got = [p.recv() for _ in range(2)]
    assert got[0]["method"] == "notifications/message"
    assert got[0]["params"]["data"] == "w"
    assert got[1]["id"] == rid
    assert p.error("logging/setLevel", {"level": "loud"})["code"] == -32602


def test_server_to_client_requests(fake: Any) -> None:
    sampling = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    p = fake(
        {
            "tools": [
                tool("ask", request=sampling),
                tool("both", request=[{"method": "roots/list"}, {"method": "ping"}]),
            ]
        }
    )
    p.initialize(capabilities={"sampling": {}})
    rid = p.call("tools/call", {"name": "ask"})
    req = p.recv()
    assert req["method"] == "sampling/createMessage"
    assert req["params"]["maxTokens"] == 5
    answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    p.send({"jsonrpc": "2.0", "id": req["id"], "result": answer})
    res = p.result(rid)
    assert res["structuredContent"] == {"response": answer}
    assert json.loads(text_of(res)) == {"response": answer}

    rid = p.call("tools/call", {"name": "both"})
    r1, r2 = p.recv(), p.recv()
    assert {r1["method"], r2["method"]} == {"roots/list", "ping"}  # sent before either answer
    for r in (r2, r1):
        if r["method"] == "ping":
            p.send({"jsonrpc": "2.0", "id": r["id"], "result": {}})
        else:
            p.send({"jsonrpc": "2.0", "id": r["id"], "error": {"code": -32601, "message": "no"}})
    order = [r["method"] for r in (r1, r2)]
    res = p.result(rid)["structuredContent"]["responses"]
    by_method = dict(zip(order, res, strict=True))
    assert by_method["ping"] == {"response": {}}
    assert by_method["roots/list"] == {"error": {"code": -32601, "message": "no"}}


def test_notify_and_mutate(fake: Any) -> None:
    new_tools = [tool("fresh")]
    p = fake(
        {
            "tools": [
                tool(
                    "n",
                    notify=[
                        {"method": "notifications/resources/updated", "params": {"uri": "x:/"}}
                    ],
                ),
                tool("m", mutate={"tools": new_tools, "prompts": [{"name": "pp"}]}),
            ],
            "prompts": [],
        }
    )
    p.initialize()
    rid = p.call("tools/call", {"name": "n"})
    note = p.recv()
    assert note == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "x:/"},
    }
    assert p.recv()["id"] == rid
    rid = p.call("tools/call", {"name": "m"})
    methods = {p.recv().get("method") for _ in range(3)}
    assert methods == {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        None,
    }
    assert [t["name"] for t in p.request("tools/list")["tools"]] == ["fresh"]
    assert [x["name"] for x in p.request("prompts/list")["prompts"]] == ["pp"]


# ---------------------------------------------------------------- prompts, resources, completions


def test_prompts(fake: Any) -> None:
    prompt = {
        "name": "weather",
        "description": "d",
        "arguments": [{"name": "city", "required": True}, {"name": "unit"}],
        "messages": [{"role": "user", "content": {"type": "text", "text": "Weather in {city}?"}}],
    }
    p = fake({"prompts": [prompt]})
    p.initialize()
    listed = p.request("prompts/list")["prompts"]
    assert listed == [{k: v for k, v in prompt.items() if k != "messages"}]
    got = p.request("prompts/get", {"name": "weather", "arguments": {"city": "Paris"}})
    assert got["messages"][0]["content"]["text"] == "Weather in Paris?"
    assert got["description"] == "d"
    assert p.error("prompts/get", {"name": "weather", "arguments": {}})["code"] == -32602
    assert p.error("prompts/get", {"name": "nope"})["code"] == -32602


def test_resources_templates_and_subscribe(fake: Any, tmp_path: Path, records: Any) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake(
        {
            "resources": [
                {"uri": "mem://a", "name": "a", "mimeType": "text/plain", "text": "A"},
                {"uri": "mem://b", "name": "b", "blob": "AAEC"},
            ],
            "resourceTemplates": [
                {"uriTemplate": "file:///{path}", "name": "f", "text": "content for {path}"},
                {"uriTemplate": "deep://{+rest}", "name": "d", "text": "deep {rest}"},
            ],
            "updateOnSubscribe": True,
            "record": str(rec),
        }
    )
    p.initialize()
    assert p.request("resources/list")["resources"] == [
        {"uri": "mem://a", "name": "a", "mimeType": "text/plain"},
        {"uri": "mem://b", "name": "b"},
    ]
    templates = p.request("resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["file:///{path}", "deep://{+rest}"]
    assert "text" not in templates[0]
    assert p.request("resources/read", {"uri": "mem://a"})["contents"] == [
        {"uri": "mem://a", "mimeType": "text/plain", "text": "A"}
    ]
    assert p.request("resources/read", {"uri": "mem://b"})["contents"][0]["blob"] == "AAEC"
    assert p.request("resources/read", {"uri": "file:///x%20y.txt"})["contents"][0]["text"] == (
        "content for x y.txt"
    )
    assert (
        p.request("resources/read", {"uri": "deep://a/b/c"})["contents"][0]["text"] == "deep a/b/c"
    )
    # {path} is one segment only
    err = p.error("resources/read", {"uri": "file:///a/b"})
    assert err["code"] == -32002
    assert err["data"] == {"uri": "file:///a/b"}

    rid = p.call("resources/subscribe", {"uri": "mem://a"})
    assert p.recv() == {"jsonrpc": "2.0", "id": rid, "result": {}}
    assert p.recv() == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "mem://a"},
    }
    assert p.request("resources/unsubscribe", {"uri": "mem://a"}) == {}
    entries = records(rec, lambda e: e.get("event") == "unsubscribe")
    assert {"event": "subscribe", "uri": "mem://a"} in entries


def test_completions(fake: Any) -> None:
    p = fake(
        {
            "prompts": [{"name": "weather"}],
            "completions": {
                "weather": {"city": ["Paris", "Parma", "Rome"]},
                "file:///{path}": {"path": ["a.txt", "b.txt"]},
            },
        }
    )
    p.initialize()
    got = p.request(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "weather"},
            "argument": {"name": "city", "value": "Par"},
        },
    )
    assert got["completion"]["values"] == ["Paris", "Parma"]
    assert got["completion"]["hasMore"] is False
    got = p.request(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "file:///{path}"},
            "argument": {"name": "path", "value": ""},
        },
    )
    assert got["completion"]["values"] == ["a.txt", "b.txt"]
    got = p.request(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "other"}, "argument": {"name": "x", "value": ""}},
    )
    assert got["completion"]["values"] == []


# ---------------------------------------------------------------- batching


def test_batch_on_2025_03_26(fake: Any) -> None:
    p = fake({"batch": True, "batchNotifications": True, "tools": [tool("l", log=[{"data": "x"}])]})
    p.initialize("2025-03-26")
    p.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/whatever"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
    )
    line = p.recv()
    assert isinstance(line, list)
    assert sorted(m["id"] for m in line) == [1, 2]
    # A lone call: its log notification and its response travel in one array line.
    rid = p.call("tools/call", {"name": "l"})
    line = p.recv()
    assert isinstance(line, list)
    assert [m.get("method") for m in line] == ["notifications/message", None]
    assert line[1]["id"] == rid


def test_batches_are_accepted_but_answered_singly_on_other_versions(fake: Any) -> None:
    p = fake({"batch": True})
    p.initialize("2025-06-18")
    p.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
    )
    got = [p.recv(), p.recv()]
    assert all(isinstance(m, dict) for m in got)
    assert sorted(m["id"] for m in got) == [1, 2]


# ---------------------------------------------------------------- tasks


def task_spec(**extra: Any) -> dict[str, Any]:
    return {
        "tasks": True,
        "taskPollInterval": 10,
        "taskStatusNotifications": True,
        "tools": [
            tool("ok"),
            tool("bad", error={"code": -32001, "message": "broken"}),
            tool("slow", delay=30),
            {**tool("must"), "execution": {"taskSupport": "required"}},
            {**tool("never"), "execution": {"taskSupport": "forbidden"}},
        ],
        **extra,
    }


def test_task_success_and_list(fake: Any) -> None:
    p = fake(task_spec())
    p.initialize()
    created = p.request("tools/call", {"name": "ok", "arguments": {"a": 1}, "task": {"ttl": 1000}})
    task = created["task"]
    assert task["status"] == "working"
    assert task["ttl"] == 1000
    assert task["pollInterval"] == 10
    assert {"taskId", "createdAt", "lastUpdatedAt"} <= set(task)
    result = p.request("tasks/result", {"taskId": task["taskId"]})
    assert json.loads(text_of(result)) == {"a": 1}
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    status = p.wait_for(lambda m: m.get("method") == "notifications/tasks/status")
    assert status["params"]["status"] == "completed"
    assert p.request("tasks/get", {"taskId": task["taskId"]})["status"] == "completed"
    listed = p.request("tasks/list")["tasks"]
    assert [t["taskId"] for t in listed] == [task["taskId"]]
    assert p.error("tasks/get", {"taskId": "nope"})["code"] == -32602


def test_task_failure(fake: Any) -> None:
    p = fake(task_spec())
    p.initialize()
    task = p.request("tools/call", {"name": "bad", "task": {}})["task"]
    err = p.error("tasks/result", {"taskId": task["taskId"]})
    assert err == {"code": -32001, "message": "broken"}
    assert p.request("tasks/get", {"taskId": task["taskId"]})["status"] == "failed"


def test_task_cancel(fake: Any) -> None:
    p = fake(task_spec())
    p.initialize()
    task = p.request("tools/call", {"name": "slow", "task": {}})["task"]
    waiting = p.call("tasks/result", {"taskId": task["taskId"]})
    cancelled = p.request("tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["status"] == "cancelled"
    assert "error" in p.response(waiting)
    assert p.error("tasks/cancel", {"taskId": task["taskId"]})["code"] == -32602


def test_task_support_required_and_forbidden(fake: Any) -> None:
    p = fake(task_spec())
    p.initialize()
    assert p.error("tools/call", {"name": "must"})["code"] == -32601
    assert "task" in p.request("tools/call", {"name": "must", "task": {}})
    assert p.error("tools/call", {"name": "never", "task": {}})["code"] == -32601
    assert p.request("tools/call", {"name": "never"})["content"]


def test_task_list_pagination(fake: Any) -> None:
    p = fake(task_spec(pageSize=1, taskStatusNotifications=False))
    p.initialize()
    ids = {
        p.request("tools/call", {"name": "slow", "task": {}})["task"]["taskId"] for _ in range(2)
    }
    first = p.request("tasks/list")
    second = p.request("tasks/list", {"cursor": first["nextCursor"]})
    assert "nextCursor" not in second
    assert {t["taskId"] for t in first["tasks"] + second["tasks"]} == ids


# ---------------------------------------------------------------- on-start scripts


def test_on_initialized_requests_and_notifications(fake: Any, tmp_path: Path, records: Any) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake(
        {
            "onInitialized": [{"method": "roots/list"}],
            "notifyOnInitialized": [{"method": "notifications/tools/list_changed"}] * 5,
            "record": str(rec),
        }
    )
    p.initialize(capabilities={"roots": {}})
    got = [p.recv() for _ in range(6)]
    assert [m["method"] for m in got[:5]] == ["notifications/tools/list_changed"] * 5
    assert got[5]["method"] == "roots/list"
    roots = {"roots": [{"uri": "file:///tmp"}]}
    p.send({"jsonrpc": "2.0", "id": got[5]["id"], "result": roots})
    entries = records(rec, lambda e: e.get("event") == "answer")
    assert {"event": "answer", "method": "roots/list", "response": roots} in entries
    init = next(e for e in entries if e.get("event") == "initialize")
    assert init["capabilities"] == {"roots": {}}


# ---------------------------------------------------------------- faults


def test_exit_at_start_with_stderr(fake: Any) -> None:
    p = fake({"exitAtStart": 7, "stderr": ["API key is required", "see docs"]})
    assert p.wait() == 7
    assert p.drain() == []
    p.stderr_line(lambda s: s == "see docs")
    assert p.stderr_lines == ["API key is required", "see docs"]


def test_exit_on_call(fake: Any) -> None:
    p = fake({"exitOnCall": 2})
    p.initialize()
    assert p.request("tools/call", {"name": "echo", "arguments": {}})["content"]
    p.call("tools/call", {"name": "echo", "arguments": {}})
    assert p.wait() == 3
    p.stderr_line(lambda s: s == "crashing on call 2")
    assert p.drain() == []


def test_exit_behavior_after_notification(fake: Any) -> None:
    p = fake({"tools": [tool("die", notify=[{"method": "notifications/x"}], exit=5, stderr="bye")]})
    p.initialize()
    p.call("tools/call", {"name": "die"})
    assert p.recv()["method"] == "notifications/x"
    assert p.wait() == 5
    p.stderr_line(lambda s: s == "bye")


def test_huge_result_and_huge_start_message(fake: Any) -> None:
    n = 10_000_000
    p = fake({"tools": [tool("big", huge=n)], "hugeMessageOnStart": 1_000_000})
    first = p.recv()
    assert len(first["params"]["data"]) == 1_000_000
    p.initialize()
    result = p.request("tools/call", {"name": "big"})
    assert len(text_of(result)) == n


def test_huge_request_is_read(fake: Any) -> None:
    p = fake()
    p.initialize()
    big = "y" * 5_000_000
    result = p.request("tools/call", {"name": "echo", "arguments": {"text": big}})
    assert json.loads(text_of(result)) == {"text": big}


def test_garbage_flood_and_invalid_json_rpc(fake: Any) -> None:
    invalid = ['{"jsonrpc":"2.0","id":999,"result":{}}', {"jsonrpc": "1.0"}]
    p = fake(
        {
            "garbage": ["banner text", "not json {"],
            "garbageEvery": "# noise",
            "notificationFlood": 3,
            "invalidJsonRpc": invalid,
        }
    )
    assert p.recv_raw() == b"banner text"
    assert p.recv_raw() == b"not json {"
    flood = [json.loads(p.recv_raw()) for _ in range(3)]
    assert all(m["method"] == "notifications/message" for m in flood)
    rid = p.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert p.recv_raw() == b"# noise"
    assert json.loads(p.recv_raw())["id"] == rid
    assert json.loads(p.recv_raw()) == {"jsonrpc": "2.0", "id": 999, "result": {}}
    assert json.loads(p.recv_raw()) == {"jsonrpc": "1.0"}


def test_never_answer(fake: Any, tmp_path: Path, records: Any) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake({"neverAnswer": True, "record": str(rec)})
    p.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    records(rec, lambda e: e.get("method") == "initialize")
    p.close_stdin()
    assert p.drain() == []
    assert p.wait() == 0


def test_answer_late_and_initialize_delay(fake: Any) -> None:
    p = fake({"answerLate": 0.05, "initializeDelay": 0.05})
    assert p.initialize()["protocolVersion"] == "2025-11-25"
    assert p.request("ping") == {}


def test_exit_on_stdin_eof_code(fake: Any, tmp_path: Path) -> None:
    p = fake({"exitOnStdinEof": 4, "pid_file": str(tmp_path / "pid")})
    p.initialize()
    assert (tmp_path / "pid").read_text() == str(p.proc.pid)
    p.close_stdin()
    assert p.wait() == 4


@posix_only
def test_ignore_stdin_eof(fake: Any, tmp_path: Path, records: Any) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake({"ignoreStdinEof": True, "record": str(rec), "tools": [tool("slow", delay=0.2)]})
    p.initialize()
    rid = p.call("tools/call", {"name": "slow"})
    p.close_stdin()
    records(rec, lambda e: e.get("event") == "eof")
    # Still running after EOF: the in-flight call is answered.
    assert p.result(rid)["content"]
    assert p.proc.poll() is None
    p.proc.send_signal(signal.SIGTERM)
    assert p.wait() == -signal.SIGTERM
    assert records(rec)[-1] == {"event": "sigterm"}


@posix_only
def test_ignore_sigterm(fake: Any, tmp_path: Path, records: Any) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake({"ignoreSigterm": True, "record": str(rec)})
    p.initialize()
    p.proc.send_signal(signal.SIGTERM)
    records(rec, lambda e: e.get("event") == "sigterm")
    assert p.request("ping") == {}  # alive after the signal was handled
    p.proc.send_signal(signal.SIGKILL)
    assert p.wait() == -signal.SIGKILL


@posix_only
def test_spawn_child_in_same_group(fake: Any) -> None:
    p = fake({"spawnChild": {"stdio": "devnull"}})
    line = p.stderr_line(lambda s: s.startswith("child pid "))
    child = int(line.split()[-1])
    assert os.getpgid(child) == os.getpgid(p.proc.pid) == p.proc.pid
    p.initialize()
    os.killpg(p.proc.pid, signal.SIGKILL)
    assert p.wait() == -signal.SIGKILL
    assert _gone(child)


def _gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            state = "R"
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


def test_record_file(fake: Any, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    p = fake({"record": str(rec)})
    p.initialize()
    rid = p.call("ping")
    p.response(rid)
    p.notify("notifications/cancelled", {"requestId": 12345})
    p.send([{"jsonrpc": "2.0", "id": "b1", "method": "ping"}])
    p.response("b1")
    p.close_stdin()
    assert p.wait() == 0
    entries = [json.loads(line) for line in rec.read_text().splitlines()]
    methods = [e.get("method") for e in entries if "method" in e]
    assert methods == [
        "initialize",
        "notifications/initialized",
        "ping",
        "notifications/cancelled",
        "ping",
    ]
    assert {"event": "cancelled", "requestId": 12345, "known": False, "reason": None} in entries
    assert {"event": "batch", "size": 1} in entries
    assert entries[-1] == {"event": "eof"}
