"""The fake server over Streamable HTTP, both eras, driven with ``http.client`` (spec A.10)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcphost.testing import http_server, package_root
from tests.testing.conftest import read_record, wait_record

V = "2026-07-28"
OBJ = {"type": "object"}
SUB = "io.modelcontextprotocol/subscriptionId"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def meta(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": caps or {}}


class Fake:
    """One ``python -m mcphost.testing --http 0`` process and a raw HTTP client for it."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcphost.testing", "--http", "0", "--spec", json.dumps(spec)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONPATH": package_root()}, start_new_session=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        parsed = urllib.parse.urlsplit(self.url)
        self.host, self.port, self.path = parsed.hostname or "", parsed.port or 0, parsed.path
        self.conns: list[http.client.HTTPConnection] = []

    def conn(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        self.conns.append(conn)
        return conn

    def open(self, method: str, body: Any = None, headers: dict[str, str] | None = None,
             raw: bytes | None = None) -> http.client.HTTPResponse:
        conn = self.conn()
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        hdrs = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", **(headers or {})}
        conn.request(method, self.path, body=data, headers=hdrs)
        return conn.getresponse()

    def post(self, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], list[Any]]:
        """Status, headers and the messages of the answer (JSON or every SSE event's data)."""
        resp = self.open("POST", body, headers)
        text = resp.read().decode()
        resp.close()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        return resp.status, hdrs, parse(text, hdrs.get("content-type", ""))

    def modern(self, method: str, params: dict[str, Any] | None = None, rid: Any = 1,
               caps: dict[str, Any] | None = None, **headers: str) -> tuple[int, Any]:
        params = {"_meta": meta(caps), **(params or {})}
        hdrs = {"MCP-Protocol-Version": V, "Mcp-Method": method, **headers}
        for key in ("name", "uri"):
            if key in params and method != "subscriptions/listen":
                hdrs.setdefault("Mcp-Name", str(params[key]))
        status, _, msgs = self.post({"jsonrpc": "2.0", "id": rid, "method": method,
                                     "params": params}, hdrs)
        return status, msgs[-1] if msgs else None

    def session(self) -> str:
        status, hdrs, msgs = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
        assert status == 200 and msgs[-1]["result"]["protocolVersion"] == "2025-11-25"
        sid = hdrs["mcp-session-id"]
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                 {"Mcp-Session-Id": sid})
        assert status == 202
        return sid

    def kill(self) -> None:
        for conn in self.conns:
            conn.close()
        # SIGTERM first: under coverage ([tool.coverage.run] sigterm) the process writes its
        # data before it dies; SIGKILL only if it is still there after a bounded wait.
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate(timeout=10)


def parse(text: str, ctype: str) -> list[Any]:
    if "text/event-stream" not in ctype:
        return [json.loads(text)] if text else []
    return [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: ") and line[6:].strip()]


def events(text: str) -> list[dict[str, str]]:
    """The SSE events of a body: each a dict of its fields."""
    out = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = value.lstrip(" ")
        if fields:
            out.append(fields)
    return out


@pytest.fixture
def fake() -> Iterator[Callable[..., Fake]]:
    made: list[Fake] = []

    def start(spec: dict[str, Any] | None = None) -> Fake:
        f = Fake(spec or {})
        made.append(f)
        return f

    yield start
    for f in made:
        f.kill()


# ---------------------------------------------------------------------------- legacy era


def test_legacy_session_sse_json_and_lifecycle(fake: Callable[..., Fake]) -> None:
    f = fake({"tools": [{"name": "p", "inputSchema": OBJ, "behavior": {"progress": 2}}]})
    assert f.url.endswith("/mcp")
    sid = f.session()
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    resp = f.open("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "p", "_meta": {"progressToken": "t"}}}, h)
    assert resp.getheader("Content-Type") == "text/event-stream"
    evs = events(resp.read().decode())
    assert evs[0]["data"] == "" and "retry" in evs[0] and evs[0]["id"]  # the priming event
    msgs = [json.loads(e["data"]) for e in evs[1:]]
    assert [m.get("method") for m in msgs] == ["notifications/progress"] * 2 + [None]
    assert msgs[-1]["id"] == 2 and "result" in msgs[-1]
    assert f.post({"jsonrpc": "2.0", "id": 3, "method": "ping"})[0] == 400  # no session id
    assert f.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"Mcp-Session-Id": "nope"})[0] == 404
    bad_version = {**h, "MCP-Protocol-Version": "1999-01-01"}
    assert f.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, bad_version)[0] == 400
    assert f.open("DELETE", headers=h).status == 200
    assert f.post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, h)[0] == 404


def test_json_responses_and_the_standalone_stream(fake: Callable[..., Fake]) -> None:
    f = fake({"httpJson": True, "notifyOnInitialized": [{"method": "notifications/tools/list_changed"}]})
    sid = f.session()
    status, hdrs, msgs = f.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"Mcp-Session-Id": sid})
    assert status == 200 and hdrs["content-type"] == "application/json"
    assert msgs[0]["result"]["tools"][0]["name"] == "echo"
    get = f.open("GET", headers={"Mcp-Session-Id": sid, "Accept": "text/event-stream"})
    assert get.status == 200
    line = b""
    while not line.startswith(b"data: {"):
        line = get.fp.readline()
    assert json.loads(line[6:])["method"] == "notifications/tools/list_changed"
    second = f.open("GET", headers={"Mcp-Session-Id": sid, "Accept": "text/event-stream"})
    assert second.status == 409  # one standalone stream per session


def test_a_stream_closed_mid_call_resumes_with_last_event_id(fake: Callable[..., Fake]) -> None:
    f = fake({"sseRetry": 50, "tools": [{"name": "r", "inputSchema": OBJ, "behavior": {
        "closeStream": True, "delay": 0.1, "result": {"content": []}}}]})
    sid = f.session()
    resp = f.open("POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "r"}},
                  {"Mcp-Session-Id": sid})
    evs = events(resp.read().decode())
    assert len(evs) == 1 and evs[0]["retry"] == "50"
    again = f.open("GET", headers={"Mcp-Session-Id": sid, "Accept": "text/event-stream",
                                   "Last-Event-ID": evs[0]["id"]})
    msgs = [json.loads(e["data"]) for e in events(again.read().decode())]
    assert msgs == [{"jsonrpc": "2.0", "id": 7, "result": {"content": []}}]
    unknown = f.open("GET", headers={"Mcp-Session-Id": sid, "Accept": "text/event-stream",
                                     "Last-Event-ID": "999-1"})
    assert unknown.status == 400


def test_server_requests_travel_on_the_post_stream(fake: Callable[..., Fake]) -> None:
    f = fake({"tools": [{"name": "ask", "inputSchema": OBJ,
                         "behavior": {"request": {"method": "roots/list"}}}]})
    sid = f.session()
    resp = f.open("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}},
                  {"Mcp-Session-Id": sid})
    line = b""
    while not line.startswith(b"data: {"):
        line = resp.fp.readline()
    asked = json.loads(line[6:])
    assert asked["method"] == "roots/list"
    answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}
    assert f.post(answer, {"Mcp-Session-Id": sid})[0] == 202
    rest = parse(resp.read().decode(), "text/event-stream")
    assert rest[-1]["result"]["structuredContent"] == {"response": {"roots": []}}


# ---------------------------------------------------------------------------- modern era


def test_modern_requests_and_status_codes(fake: Callable[..., Fake]) -> None:
    f = fake({"era": "modern"})
    status, msg = f.modern("server/discover", rid="a")
    assert status == 200 and msg["id"] == "a" and msg["result"]["supportedVersions"] == [V]
    status, msg = f.modern("tools/call", {"name": "echo", "arguments": {"x": 1}}, rid=5)
    assert status == 200 and msg["id"] == 5 and msg["result"]["content"][0]["text"] == '{"x":1}'
    assert f.modern("nope")[0] == 404
    status, msg = f.modern("tools/list", **{"Mcp-Method": "tools/call"})
    assert status == 400 and msg["error"]["code"] == -32020 and msg["id"] == 1
    status, msg = f.modern("tools/call", {"name": "echo"}, **{"Mcp-Name": "other"})
    assert status == 400 and msg["error"]["code"] == -32020
    status, msg = f.modern("tools/list", **{"MCP-Protocol-Version": "2025-11-25"})
    assert status == 400 and msg["error"]["code"] == -32020
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}
    status, _, msgs = f.post(body, {"Mcp-Method": "tools/list", "MCP-Protocol-Version": V})
    assert status == 400 and msgs[0]["error"]["code"] == -32602 and msgs[0]["id"] == 9
    old = {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "2025-01-01"}}
    status, _, msgs = f.post({**body, "params": old},
                             {"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2025-01-01"})
    assert status == 400 and msgs[0]["error"]["data"]["supported"] == [V]
    assert f.open("GET", headers={"Accept": "text/event-stream"}).status == 405
    assert f.open("DELETE").status == 405
    assert f.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})[0] == 404


def test_x_mcp_header_params_are_checked(fake: Callable[..., Fake]) -> None:
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "Count"},
        "plain": {"type": "string"}}}
    f = fake({"era": "modern", "tools": [{"name": "h", "inputSchema": schema}]})
    args = {"name": "h", "arguments": {"region": "café", "n": 3, "plain": "x"}}
    coded = "=?base64?" + __import__("base64").b64encode("café".encode()).decode() + "?="
    ok = f.modern("tools/call", args, **{"Mcp-Param-Region": coded, "Mcp-Param-Count": "3"})
    assert ok[0] == 200 and "result" in ok[1]
    missing = f.modern("tools/call", args, **{"Mcp-Param-Region": coded})
    assert missing[0] == 400 and missing[1]["error"]["code"] == -32020
    wrong = f.modern("tools/call", args, **{"Mcp-Param-Region": "tea", "Mcp-Param-Count": "3"})
    assert wrong[0] == 400
    absent = f.modern("tools/call", {"name": "h", "arguments": {}})
    assert absent[0] == 200  # no value, no header needed


def test_modern_mrtr_over_http(fake: Callable[..., Fake]) -> None:
    f = fake({"era": "both", "tools": [{"name": "ask", "inputSchema": OBJ,
                                        "behavior": {"request": {"method": "roots/list"}}}]})
    status, msg = f.modern("tools/call", {"name": "ask"}, caps={"roots": {}})
    assert msg["result"]["resultType"] == "input_required"
    status, msg = f.modern("tools/call", {"name": "ask", "inputResponses": {"r0": {"roots": []}},
                                          "requestState": msg["result"]["requestState"]},
                           rid=2, caps={"roots": {}})
    assert msg["result"]["structuredContent"] == {"response": {"roots": []}}
    status, msg = f.modern("tools/call", {"name": "ask"})
    assert status == 400 and msg["error"]["code"] == -32021
    assert f.session()  # the dual-era server keeps legacy sessions too


def test_listen_stream_over_http_and_close_cancels(fake: Callable[..., Fake], tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    f = fake({"era": "modern", "record": str(record), "tools": [
        {"name": "change", "inputSchema": OBJ, "behavior": {"mutate": {"tools": []}}}]})
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}}}
    listen = f.open("POST", body, {"MCP-Protocol-Version": V, "Mcp-Method": "subscriptions/listen"})
    assert listen.getheader("Content-Type") == "text/event-stream"

    def next_msg() -> Any:
        line = b""
        while not line.startswith(b"data: {"):
            line = listen.fp.readline()
        return json.loads(line[6:])

    ack = next_msg()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"] == {SUB: 1}  # the client's own id, though another client used 1 too
    assert f.modern("tools/call", {"name": "change"}, rid=1)[0] == 200
    assert next_msg() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                          "params": {"_meta": {SUB: 1}}}
    listen.close()
    entries = wait_record(record, lambda e: e.get("event") == "listenEnd")
    assert [e["cancelled"] for e in entries if e.get("event") == "listenEnd"] == [True]
    assert read_record(record)


# ----------------------------------------------------------------------------- bounds


def test_bounds_and_origin_checks(fake: Callable[..., Fake]) -> None:
    f = fake({"httpMaxBody": 1000, "httpMaxSessions": 1})
    big = f.open("POST", raw=b"{" + b" " * 2000 + b"}")
    assert big.status == 413
    conn = f.conn()
    conn.request("POST", f.path, body=b"{}", headers={"Host": "evil.example.com",
                                                     "Content-Type": "application/json"})
    assert conn.getresponse().status == 403
    conn = f.conn()
    conn.request("POST", f.path, body=b"{}", headers={"Origin": "http://evil.example.com",
                                                     "Content-Type": "application/json"})
    assert conn.getresponse().status == 403
    conn = f.conn()
    conn.putrequest("POST", f.path)
    conn.putheader("X-Big", "x" * 70000)
    conn.endheaders()
    assert conn.getresponse().status == 431
    assert f.open("POST", raw=b"not json").status == 400
    for chunks, status in ((b"zz\r\n", 400), (b"800\r\n" + b" " * 2048 + b"\r\n0\r\n\r\n", 413)):
        conn = f.conn()
        conn.putrequest("POST", f.path)
        conn.putheader("Transfer-Encoding", "chunked")
        conn.putheader("Content-Type", "application/json")
        conn.endheaders()
        conn.send(chunks)
        assert conn.getresponse().status == status
    assert f.open("POST", raw=b"{}", headers={"Content-Type": "text/plain"}).status == 415
    assert f.open("GET", headers={"Accept": "text/event-stream"}).status == 400
    conn = f.conn()
    conn.request("POST", f.path, body=iter([b'{"jsonrpc":"2.0","id":1,', b'"method":"initialize","params":'
                                            + json.dumps(INIT).encode() + b"}"]),
                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    chunked = conn.getresponse()
    assert chunked.status == 200 and json.loads(chunked.read())["result"]["protocolVersion"]
    status, _, _ = f.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    assert status == 503  # httpMaxSessions
    conn = f.conn()
    conn.request("GET", "/other")
    assert conn.getresponse().status == 404


def test_closing_the_connection_cancels_a_modern_request(fake: Callable[..., Fake], tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    f = fake({"era": "modern", "record": str(record), "tools": [
        {"name": "wait", "inputSchema": OBJ, "behavior": {"waitCancelled": True}},
        {"name": "steps", "inputSchema": OBJ, "behavior": {"progress": 2}}]})
    conn = f.conn()
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": meta(), "name": "wait"}}
    conn.request("POST", f.path, body=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": "wait"})
    wait_record(record, lambda e: e.get("event") == "meta")
    conn.close()
    wait_record(record, lambda e: e.get("event") == "waitCancelled")
    params = {"name": "steps", "_meta": {**meta(), "progressToken": "p"}}
    resp = f.open("POST", {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params},
                  {"MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": "steps"})
    assert resp.getheader("Content-Type") == "text/event-stream"  # progress came first
    msgs = parse(resp.read().decode(), "text/event-stream")
    assert [m.get("method") for m in msgs] == ["notifications/progress"] * 2 + [None]


def test_the_http_server_helper() -> None:
    with http_server({"name": "helped"}, era="modern") as url:
        request = urllib.request.Request(url, json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()},
        }).encode(), method="POST", headers={"Content-Type": "application/json",
                                             "MCP-Protocol-Version": V, "Mcp-Method": "server/discover"})
        with urllib.request.urlopen(request, timeout=10) as response:
            result = json.loads(response.read())["result"]
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "helped"
    with pytest.raises(RuntimeError, match="did not start"), http_server(era="future"):
        pass


def test_a_2025_03_26_batch_over_http(fake: Callable[..., Fake]) -> None:
    f = fake({"httpJson": True})
    init = {**INIT, "protocolVersion": "2025-03-26"}
    status, hdrs, _ = f.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    sid = hdrs["mcp-session-id"]
    batch = [{"jsonrpc": "2.0", "id": 2, "method": "ping"},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]
    status, _, msgs = f.post(batch, {"Mcp-Session-Id": sid})
    assert status == 200
    assert sorted(m["id"] for m in msgs[0]) == [2, 3]
