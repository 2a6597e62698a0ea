"""The Talk-2-Tables example's parts: error classes, the schema check, answer parsing, the model
adapters, the servers' refusals and their interoperability, the metrics, the work bound."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from talk2tables_support import LOW_STOCK_SQL, ROOT, answer

from examples.talk2tables import configs
from examples.talk2tables.llm import (
    DemoLLM,
    ScriptedLLM,
    build_prompt,
    parse_response,
    resources_in,
)
from examples.talk2tables.orchestrator import Talk2TablesOrchestrator
from examples.talk2tables.servers import database
from examples.talk2tables.servers.catalog import PRODUCTS
from examples.talk2tables.servers.mcpserver import SseServer
from examples.talk2tables.sqlcheck import SchemaValidator, classify
from mcphost.compat.orchestrator import InvalidSQLError


@pytest.mark.parametrize(("message", "category"), [
    ('SQL error: near "FORM": syntax error', "SYNTAX_ERROR"),
    ("SQL error: incomplete input", "SYNTAX_ERROR"),
    ("SQL error: no such column: unknown_col", "MISSING_COLUMN"),
    ("SQL error: no such table: nonexistent", "MISSING_TABLE"),
    ("Table 'sale' not found", "MISSING_TABLE"),
    ("SQL error: ambiguous column name: product_id", "AMBIGUOUS_COLUMN"),
    ("SQL error: misuse of aggregate: SUM()", "AGGREGATION_ERROR"),
    ("SQL error: datatype mismatch", "DATA_TYPE_MISMATCH"),
    ("Permission denied: table employee_salaries is restricted", "PERMISSION_ERROR"),
    ("Access denied for user", "PERMISSION_ERROR"),
    ("attempt to write a readonly database", "PERMISSION_ERROR"),
    ("disk I/O error", "UNKNOWN_ERROR"),
])
def test_errors_are_classified_as_the_document_lists(message: str, category: str) -> None:
    assert classify(message) == category


def test_the_schema_check_finds_what_the_server_would_refuse() -> None:
    schemas = {"products": {"columns": [{"name": "product_id"}, {"name": "product_name"}],
                            "create_sql": "CREATE TABLE products (product_id INTEGER, product_name TEXT)"}}
    check = SchemaValidator(schemas)
    try:
        assert check.validate("SELECT product_name FROM products WHERE product_id = 123;") == []
        assert check.validate("") == ["the SQL query is empty"]
        assert check.validate("DROP TABLE products") == ["only one SELECT statement may be sent"]
        assert check.validate("SELECT (1 FROM products") == ["unbalanced parentheses"]
        assert check.validate("SELECT 1; SELECT 2") == ["exactly one complete SQL statement is expected"]
        assert check.validate("SELECT 'a;b' FROM products") == []
        assert check.validate("SELECT price FROM products") == ["no such column: price"]
        assert check.validate("SELECT * FROM sale") == ["no such table: sale"]
        with pytest.raises(InvalidSQLError, match="no such table"):
            check.check("SELECT * FROM sale")
    finally:
        check.close()
    unknown = SchemaValidator({})  # nothing published: the structure only
    assert unknown.validate("SELECT * FROM anything") == []
    assert unknown.validate("UPDATE anything SET x = 1") == ["only one SELECT statement may be sent"]
    unknown.close()


def test_model_answers_are_parsed_as_json_or_for_their_sql() -> None:
    assert parse_response('{"sql_query": "SELECT 1"}') == {"sql_query": "SELECT 1", "resolved_entities": {},
                                                           "explanation": ""}
    fenced = 'Here:\n```json\n{"sql_query": "SELECT 2", "explanation": "two"}\n```'
    assert parse_response(fenced)["sql_query"] == "SELECT 2"
    assert parse_response("Try this:\n```sql\nSELECT 3 FROM t;\n```")["sql_query"] == "SELECT 3 FROM t"
    assert parse_response("select name from products; -- done")["sql_query"] == "select name from products"
    with pytest.raises(InvalidSQLError):
        parse_response('{"sql_query": ""}')
    odd = parse_response('{"sql_query": "SELECT 4", "resolved_entities": ["x"], "explanation": null}')
    assert odd == {"sql_query": "SELECT 4", "resolved_entities": {}, "explanation": ""}
    prompt = build_prompt("q", [{"server": "b", "priority": 10, "resources": {}},
                                {"server": "a", "priority": 1, "resources": {"x://y": {"k": 1}}}])
    assert [s["server"] for s in resources_in(prompt)] == ["a", "b"]


async def test_tool_calling_adapters_go_through_tools_for_and_dispatch() -> None:
    from types import SimpleNamespace as NS

    from examples.talk2tables.providers import AnthropicLLM, GeminiLLM, OpenAILLM

    final = answer(LOW_STOCK_SQL)
    query = {"query": "SELECT count(*) AS n FROM products"}

    class OpenAIClient:
        def __init__(self) -> None:
            self.sent: list[Any] = []
            self.chat = NS(completions=NS(create=self.create))

        async def create(self, **kwargs: Any) -> Any:
            self.sent.append(json.loads(json.dumps(kwargs, default=str)))
            if len(self.sent) == 1:
                call = {"id": "c1", "type": "function",
                        "function": {"name": "database_mcp__execute_query", "arguments": json.dumps(query)}}
                return NS(choices=[NS(message=NS(content=None, tool_calls=[call],
                                                 model_dump=lambda **_: {"role": "assistant", "tool_calls": [call]}))])
            return NS(choices=[NS(message=NS(content=final, tool_calls=None))])

    class AnthropicClient:
        def __init__(self) -> None:
            self.sent: list[Any] = []
            self.messages = NS(create=self.create)

        async def create(self, **kwargs: Any) -> Any:
            self.sent.append(json.loads(json.dumps(kwargs, default=str)))
            if len(self.sent) == 1:
                return NS(content=[{"type": "tool_use", "id": "t1", "name": "database_mcp__execute_query",
                                    "input": query}])
            return NS(content=[{"type": "text", "text": final}])

    class GeminiClient:
        def __init__(self) -> None:
            self.sent: list[Any] = []
            self.aio = NS(models=NS(generate_content=self.generate))

        async def generate(self, **kwargs: Any) -> Any:
            self.sent.append(json.loads(json.dumps(kwargs, default=str)))
            if len(self.sent) == 1:
                call = {"name": "database_mcp__execute_query", "args": query, "id": "g1"}
                return NS(function_calls=[call], text=None,
                          candidates=[NS(content={"role": "model", "parts": [{"function_call": call}]})])
            return NS(function_calls=None, text=final)

    async with configs.serve_sse() as config, Talk2TablesOrchestrator(config) as orchestrator:
        count = str(len(PRODUCTS))
        openai = OpenAIClient()
        result = await orchestrator.process_query("low stock?", OpenAILLM(client=openai))
        assert result["success"] and len(openai.sent) == 2
        assert {t["function"]["name"] for t in openai.sent[0]["tools"]} == {"database_mcp__execute_query"}
        tool_reply = openai.sent[1]["messages"][-1]
        assert tool_reply["role"] == "tool" and tool_reply["tool_call_id"] == "c1" and count in tool_reply["content"]

        anthropic = AnthropicClient()
        result = await orchestrator.process_query("low stock?", AnthropicLLM(client=anthropic))
        assert result["success"] and anthropic.sent[0]["tools"][0]["input_schema"]["required"] == ["query"]
        [reply] = anthropic.sent[1]["messages"][-1]["content"]
        assert reply["type"] == "tool_result" and reply["tool_use_id"] == "t1" and count in reply["content"][0]["text"]

        gemini = GeminiClient()
        result = await orchestrator.process_query("low stock?", GeminiLLM(client=gemini))
        assert result["success"]
        declared = gemini.sent[0]["config"]["tools"][0]["function_declarations"]
        assert [d["name"] for d in declared] == ["database_mcp__execute_query"]
        [part] = gemini.sent[1]["contents"][-1]["parts"]
        assert part["function_response"]["name"] == "database_mcp__execute_query"
        assert part["function_response"]["id"] == "g1"

        failing = OpenAILLM(client=NS(chat=NS(completions=NS(create=_raise))))
        result = await orchestrator.process_query("low stock?", failing)
        assert result["error_type"] == "LLMCommunicationError" and "openai: RuntimeError" in result["error"]


async def _raise(**_: Any) -> Any:
    raise RuntimeError("429 rate limited")


async def test_the_servers_refuse_what_they_cannot_serve() -> None:
    async with configs.serve_sse() as config:
        url = config["mcp_servers"]["database_mcp"]["url"]
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        async def http(raw: bytes) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(raw)
            await writer.drain()
            data = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            await writer.wait_closed()
            return data

        unknown = await http(b"POST /messages?session_id=nope HTTP/1.1\r\nContent-Length: 2\r\n"
                             b"Connection: close\r\n\r\n{}")
        assert unknown.startswith(b"HTTP/1.1 404")
        missing = await http(b"GET /nothing HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert missing.startswith(b"HTTP/1.1 404")
        unsized = await http(b"POST /messages?session_id=x HTTP/1.1\r\n\r\n")
        assert unsized.startswith(b"HTTP/1.1 411")

    # stdio: a line that is not JSON is a parse error; the server goes on, and ends at EOF.
    lines = b'not json\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"nope"}\n'
    done = subprocess.run([sys.executable, "-m", "examples.talk2tables.servers.product_metadata"], cwd=ROOT,
                          input=lines, capture_output=True, timeout=60, check=True)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert replies[0]["error"]["code"] == -32700
    assert {r["id"]: r.get("result", r.get("error", {}).get("code")) for r in replies[1:]} == {1: {}, 2: -32601}


async def test_the_servers_serve_the_official_sdk_client_too() -> None:
    # "Resources accessible via MCP client": not only mcphost's; the SDK is a test-only peer.
    pytest.importorskip("mcp.client.sse", reason="the official SDK (a test extra) is not installed")
    from mcp.client.session import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def use(streams: Any) -> tuple[list[str], Any]:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            listed = await session.list_resources()
            called = await session.call_tool("execute_query", {"query": "SELECT count(*) AS n FROM products"})
            return sorted(str(r.uri) for r in listed.resources), called.structured_content

    async with SseServer(database.build_server()) as db, sse_client(db.url) as streams:
        over_sse = await use(streams)
    params = StdioServerParameters(command=sys.executable, args=["-m", "examples.talk2tables.servers.database"],
                                   cwd=str(ROOT))
    async with stdio_client(params) as streams:
        over_stdio = await use(streams)
    expected = (["database://available_tables", "database://table_schemas"],
                {"columns": ["n"], "rows": [[len(PRODUCTS)]], "row_count": 1, "truncated": False})
    assert over_sse == over_stdio == expected


async def test_the_documents_performance_metrics_are_counted() -> None:
    from examples.talk2tables.metrics import QueryMetrics, _percentiles

    async with configs.serve_sse() as config, Talk2TablesOrchestrator(config) as orchestrator:
        assert orchestrator.metrics()["queries"]["query_time_ms"] == {"p50": None, "p95": None, "p99": None}
        await orchestrator.process_query("which products are low on stock?", DemoLLM())
        await orchestrator.process_query("low stock", ScriptedLLM([answer("SELECT * FROM sale"), answer(LOW_STOCK_SQL)]))
        await orchestrator.process_query("salaries", ScriptedLLM([answer("SELECT * FROM employee_salaries")]))
        metrics = orchestrator.metrics()
    queries = metrics["queries"]
    assert (queries["queries"], queries["succeeded"], queries["failed"], queries["recovered"]) == (3, 2, 1, 1)
    assert queries["errors_by_type"] == {"MISSING_TABLE": 1, "PERMISSION_ERROR": 1, "SQLExecutionError": 1}
    assert queries["error_rate"] == pytest.approx(1 / 3)
    # The first query read both servers; the next two were answered from the cache.
    assert queries["resource_cache"] == {"hits": 4, "misses": 2, "hit_rate": pytest.approx(4 / 6)}
    times = queries["query_time_ms"]
    assert 0 < times["p50"] <= times["p95"] <= times["p99"]
    execute = metrics["servers"]["database_mcp"]["tools"]["execute_query"]
    assert execute["calls"] == 4 and execute["isError"] == 2  # the per-server latency is the host's
    assert _percentiles(__import__("collections").deque(float(v) for v in range(1, 101))) == {
        "p50": 50.0, "p95": 95.0, "p99": 99.0}
    assert QueryMetrics().snapshot()["resource_cache"]["hit_rate"] == 0.0


def test_a_query_that_never_ends_is_stopped_by_the_step_bound() -> None:
    from examples.talk2tables.servers.database import Database
    from examples.talk2tables.servers.mcpserver import ToolFailure

    db = Database(max_steps=1_000_000)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with pytest.raises(ToolFailure, match="query stopped after 1000000 steps"):
        db.query(endless)
    assert db.query("SELECT count(*) FROM products")["rows"] == [[len(PRODUCTS)]]  # the next one runs
    db.connection.close()
