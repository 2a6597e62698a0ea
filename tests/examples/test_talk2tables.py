"""The Talk-2-Tables example end to end with scripted models (the orchestrator document, issue 22 part 4).

Real servers (the example's SQLite database and product-metadata servers) over stdio and over
legacy SSE on 127.0.0.1; the model is scripted, so each test says exactly what SQL arrives.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from talk2tables_support import DOCUMENT_EVENTS, LOW_STOCK, LOW_STOCK_SQL, ROOT, Lines, answer

from examples.talk2tables import configs
from examples.talk2tables.__main__ import answer as ask
from examples.talk2tables.__main__ import main, render
from examples.talk2tables.llm import DemoLLM, ScriptedLLM, resources_in
from examples.talk2tables.orchestrator import QUERY_EVENTS, Talk2TablesOrchestrator
from examples.talk2tables.servers import database, product_metadata
from examples.talk2tables.servers.mcpserver import SseServer
from mcphost import MCPHostError
from mcphost.compat.orchestrator import (
    InitialConnectionError,
    InvalidSQLError,
    LLMCommunicationError,
    MCPOrchestratorException,
    SQLExecutionError,
    SQLSchemaError,
)


def resolve_price(prompt: str) -> str:
    """A model's work for "price of abracadabra": the alias from the metadata server's resource."""
    servers = resources_in(prompt)
    assert [s["server"] for s in servers] == ["product_metadata_mcp", "database_mcp"]  # by priority
    aliases = servers[0]["resources"]["product-metadata://product_aliases"]
    refs = aliases["abracadabra"]["database_references"]
    assert "products" in servers[1]["resources"]["database://table_schemas"]
    return json.dumps({"sql_query": f"SELECT product_name, unit_price FROM products WHERE product_id = "
                                    f"{refs['products.product_id']}",
                       "resolved_entities": {"abracadabra": refs}, "explanation": "alias from product metadata"})


async def _price_of_abracadabra(config: Any) -> None:
    llm = ScriptedLLM([resolve_price])
    async with Talk2TablesOrchestrator(config) as orchestrator:
        result = await orchestrator.process_query("what does abracadabra cost?", llm)
    assert result["success"] is True, result
    assert result["result"] == {"columns": ["product_name", "unit_price"], "rows": [["Magic Wand Pro", 59.99]]}
    assert result["resolved_entities"]["abracadabra"]["products.product_id"] == 123
    assert result["metadata"]["mcp_servers_used"] == ["product_metadata_mcp", "database_mcp"]
    assert result["recovery"]["attempts"] == [] and result["metadata"]["attempts"] == 1


async def test_a_question_is_answered_through_both_servers_over_stdio() -> None:
    await _price_of_abracadabra(configs.stdio_config())


async def test_a_question_is_answered_through_both_servers_over_sse() -> None:
    async with configs.serve_sse() as config:
        assert all(e["url"].startswith("http://127.0.0.1:") and e["transport"] == "sse"
                   for e in config["mcp_servers"].values())
        await _price_of_abracadabra(config)


async def test_the_documents_configuration_file_is_read_as_written() -> None:
    # The YAML (PyYAML is a test dependency) and its JSON twin say the same; the servers it names
    # run here on free ports instead of 8000 and 8002, the rest of the file as it is.
    yaml = pytest.importorskip("yaml", reason="PyYAML (a test dependency) is not installed")
    doc = yaml.safe_load((ROOT / "examples/talk2tables/mcp_config.yaml").read_text())
    assert json.loads((ROOT / "examples/talk2tables/mcp_config.json").read_text()) == doc
    assert doc["orchestration"] == {"resource_cache_ttl": 300, "fail_fast": True, "enable_logging": True,
                                    "log_level": "DEBUG"}
    async with configs.serve_sse() as served:
        for name, entry in doc["mcp_servers"].items():
            entry["url"] = served["mcp_servers"][name]["url"]
        async with Talk2TablesOrchestrator(doc) as orchestrator:
            clients = orchestrator.mcp_clients
            assert {n: (c["priority"], c["capabilities"]) for n, c in clients.items()} == {
                "database_mcp": (10, ["execute_query", "list_resources"]),
                "product_metadata_mcp": (1, ["list_resources"])}
            assert orchestrator.find_executor() == "database_mcp"
            assert orchestrator.servers_for("products") == ["product_metadata_mcp", "database_mcp"]
            result = await orchestrator.process_query("which products are low on stock?", DemoLLM())
    assert sorted(r[1] for r in result["result"]["rows"]) == LOW_STOCK


@pytest.mark.parametrize(("failing", "error", "category", "instruction"), [
    ("SELECT product_name, stock FROM products", "SQL error: no such column: stock", "MISSING_COLUMN",
     "Use correct column names from schema."),
    ("SELECT product_name FORM products", 'SQL error: near "products": syntax error', "SYNTAX_ERROR",
     "Fix SQL syntax."),
])
async def test_a_failing_query_is_recovered_on_the_second_attempt(
        log_lines: Lines, failing: str, error: str, category: str, instruction: str) -> None:
    def corrected(prompt: str) -> str:
        # The recovery prompt carries what the document's template lists.
        assert prompt.startswith("PREVIOUS SQL EXECUTION FAILED")
        assert f"FAILED SQL: {failing}" in prompt
        assert f"ERROR ({category}): {error}" in prompt
        assert instruction in prompt
        assert "database://table_schemas" in prompt and "product-metadata://column_mappings" in prompt
        return answer(LOW_STOCK_SQL, changes="fixed")

    llm = ScriptedLLM([answer(failing), corrected])
    async with Talk2TablesOrchestrator(configs.stdio_config()) as orchestrator:
        result = await orchestrator.process_query("which products are low on stock?", llm)
    assert result["success"] is True, result
    assert [r[0] for r in result["result"]["rows"]] == LOW_STOCK
    assert result["sql"] == LOW_STOCK_SQL
    [failed] = result["recovery"]["attempts"]
    assert failed == {"attempt": 1, "sql": failing, "error": error, "error_type": category, "executed": True}
    assert result["metadata"]["attempts"] == 2 and len(llm.prompts) == 2
    assert f"recovered after 1 failed attempt(s): {category}; fixed" in result["explanation"]
    query = log_lines.events()
    at = query.index("sql_execution_started")
    assert query[at:] == ["sql_execution_started", "error_occurred", "recovery_attempted", "llm_prompt_created",
                          "llm_response_received", "sql_generated", "sql_execution_started",
                          "sql_execution_completed", "query_processing_completed"]
    [recovery] = [line for line in log_lines.lines if line["event"] == "recovery_attempted"]
    assert recovery["context"]["attempt"] == 2 and recovery["context"]["error_type"] == category
    [logged] = [line for line in log_lines.lines if line["event"] == "error_occurred"]
    assert logged["error"] == {"type": category, "message": error}
    assert logged["context"]["mcp_server"] == "database_mcp"


async def test_a_permission_error_is_not_retried(log_lines: Lines) -> None:
    llm = ScriptedLLM([answer("SELECT employee_name, salary FROM employee_salaries"), answer(LOW_STOCK_SQL)])
    async with Talk2TablesOrchestrator(configs.stdio_config()) as orchestrator:
        result = await orchestrator.process_query("what do employees earn?", llm)
        assert result["success"] is False
        assert result["error_category"] == "PERMISSION_ERROR" and result["error_type"] == "SQLExecutionError"
        assert [a["error_type"] for a in result["recovery"]["attempts"]] == ["PERMISSION_ERROR"]
        assert "Permission denied: table employee_salaries is restricted" in result["error"]
        assert len(llm.prompts) == 1  # the model was never asked for a fix
        assert log_lines.events()[-4:] == ["sql_execution_started", "error_occurred", "exception_raised",
                                           "fatal_error"]
        assert "recovery_attempted" not in log_lines.events()
        assert render(result).startswith("Could not answer: database_mcp: PERMISSION_ERROR after 1 attempt(s)")
        fatal = log_lines.lines[-1]
        assert fatal["level"] == "ERROR" and fatal["error"]["type"] == "SQLExecutionError"

        # A write is permission-class too; raise_errors gives the document's exception, also an MCPHostError.
        with pytest.raises(SQLExecutionError) as caught:
            await orchestrator.process_query("delete everything", ScriptedLLM([answer("DELETE FROM products")]),
                                             raise_errors=True)
        assert isinstance(caught.value, MCPHostError) and caught.value.server == "database_mcp"
        assert "only SELECT statements are allowed" in str(caught.value)


async def test_recovery_gives_up_after_three_attempts_and_a_correction_that_fails_the_check_is_not_run() -> None:
    llm = ScriptedLLM([answer("SELECT * FROM sale"), answer("SELECT * FROM sales_2024"),
                       answer("SELECT amount FROM sales"), answer(LOW_STOCK_SQL)])
    async with Talk2TablesOrchestrator(configs.stdio_config()) as orchestrator:
        result = await orchestrator.process_query("sales please", llm)
        with pytest.raises(SQLSchemaError):
            await orchestrator.process_query("sales please", ScriptedLLM(
                [answer("SELECT * FROM sale")] * 3), raise_errors=True)
    assert result["success"] is False and result["error_type"] == "SQLSchemaError"
    attempts = result["recovery"]["attempts"]
    assert [(a["error_type"], a["executed"]) for a in attempts] == [
        ("MISSING_TABLE", True), ("MISSING_TABLE", False), ("MISSING_COLUMN", False)]
    assert attempts[1]["error"] == "no such table: sales_2024"  # the schema check, not the server
    assert len(llm.prompts) == 3 and llm.answers == [answer(LOW_STOCK_SQL)]
    assert result["suggestions"] and result["metadata"]["attempts"] == 3


async def test_a_correction_without_sql_costs_an_attempt_and_the_third_can_still_succeed() -> None:
    llm = ScriptedLLM([answer("SELECT * FROM sale"), "Sorry, I do not know.", answer(LOW_STOCK_SQL)])
    async with configs.serve_sse() as config, Talk2TablesOrchestrator(config) as orchestrator:
        result = await orchestrator.process_query("which products are low on stock?", llm)
    assert result["success"] is True and result["metadata"]["attempts"] == 3
    assert [(a["error_type"], a["executed"]) for a in result["recovery"]["attempts"]] == [
        ("MISSING_TABLE", True), ("UNKNOWN_ERROR", False)]
    assert "holds no SQL query" in result["recovery"]["attempts"][1]["error"]


async def test_the_event_sequence_and_log_lines_are_the_documents(log_lines: Lines) -> None:
    clock = [1000.0]
    llm = ScriptedLLM([answer(LOW_STOCK_SQL)] * 3)
    async with Talk2TablesOrchestrator(configs.stdio_config(), clock=lambda: clock[0]) as orchestrator:
        first = await orchestrator.process_query("which products are low on stock?", llm)
        events = log_lines.events()
        assert [e for e in events if e in QUERY_EVENTS] == [
            "query_received", "query_processing_started", "llm_prompt_created", "llm_response_received",
            "sql_generated", "sql_execution_started", "sql_execution_completed", "query_processing_completed"]
        start, end = events.index("resource_gathering_started"), events.index("resource_gathering_completed")
        assert events.index("query_processing_started") < start < end < events.index("llm_prompt_created")
        gathering = events[start + 1:end]  # both servers at once: their events interleave
        assert sorted(gathering) == sorted(["resource_cache_miss"] * 2 + ["resource_list_requested"] * 2
                                           + ["resource_list_received"] * 2 + ["resource_fetch_requested"] * 5
                                           + ["resource_fetch_completed"] * 5)
        # Every line: the document's shape, and one operation id for the whole query.
        lines = [line for line in log_lines.lines if line["event"] in DOCUMENT_EVENTS]
        ids = {line["context"]["operation_id"] for line in lines}
        assert ids == {first["metadata"]["operation_id"]}
        for line in lines:
            assert {"timestamp", "level", "event", "component", "context"} <= set(line)
            assert line["timestamp"].endswith("Z") and line["level"] in ("DEBUG", "INFO", "WARNING", "ERROR")
        received = lines[0]
        assert received["component"] == "talk2tables.orchestrator"
        assert received["context"]["user_query"] == "which products are low on stock?"
        done = next(line for line in lines if line["event"] == "query_processing_completed")
        assert done["metrics"]["duration_ms"] > 0 and done["metrics"]["row_count"] == len(LOW_STOCK)

        # Within the TTL the resources come from the cache; past it they are read again.
        log_lines.lines.clear()
        await orchestrator.process_query("which products are low on stock?", llm)
        assert sorted(e for e in log_lines.events() if e.startswith("resource_")) == [
            "resource_cache_hit", "resource_cache_hit", "resource_gathering_completed", "resource_gathering_started"]
        log_lines.lines.clear()
        clock[0] += 301
        await orchestrator.process_query("which products are low on stock?", llm)
        assert log_lines.events().count("resource_cache_expired") == 2
        assert log_lines.events().count("resource_fetch_completed") == 5


async def test_a_model_that_fails_or_answers_without_sql_is_the_documents_error() -> None:
    async with configs.serve_sse() as config, Talk2TablesOrchestrator(config) as orchestrator:
        broken = await orchestrator.process_query("anything", ScriptedLLM([ConnectionResetError("reset")]))
        assert broken["success"] is False and broken["error_type"] == "LLMCommunicationError"
        with pytest.raises(LLMCommunicationError):
            await orchestrator.process_query("anything", ScriptedLLM([]), raise_errors=True)
        with pytest.raises(InvalidSQLError) as caught:
            await orchestrator.process_query("anything", ScriptedLLM(["I cannot help with that."]),
                                             raise_errors=True)
        assert isinstance(caught.value, MCPOrchestratorException)
        with pytest.raises(ValueError, match="user_query"):
            await orchestrator.process_query("  ", DemoLLM())
    with pytest.raises(ValueError, match="max_attempts"):
        Talk2TablesOrchestrator(configs.stdio_config(), max_attempts=0)


async def test_concurrent_questions_keep_their_own_operation(log_lines: Lines) -> None:
    questions = ["which products are low on stock?", "best selling products", "price of floaty"]
    async with configs.serve_sse() as config, Talk2TablesOrchestrator(config) as orchestrator:
        results = await asyncio.gather(*(orchestrator.process_query(q, DemoLLM()) for q in questions))
    assert all(r["success"] for r in results)
    assert results[2]["result"]["rows"] == [["Levitation Kit", 45.5]]
    ids = [r["metadata"]["operation_id"] for r in results]
    assert len(set(ids)) == 3
    for question, op_id in zip(questions, ids):
        mine = [line for line in log_lines.lines if line["context"].get("operation_id") == op_id]
        assert {line["context"]["user_query"] for line in mine if "user_query" in line["context"]} == {question}
        assert [line["event"] for line in mine if line["event"] in QUERY_EVENTS][-1] == "query_processing_completed"


def test_the_readme_command_runs() -> None:
    command = 'python -m examples.talk2tables "which products are low on stock?"'
    assert command in (ROOT / "examples/talk2tables/README.md").read_text()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "examples.talk2tables", "which products are low on stock?"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for name in LOW_STOCK:
        assert name in done.stdout
    assert "Servers: product_metadata_mcp, database_mcp; 5 row(s)" in done.stdout
    assert done.stderr == ""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_one_server_down_fails_fast_or_is_skipped_when_fail_fast_is_off() -> None:
    # The document's test scenario 3, "Partial MCP Failure": with fail_fast (its configuration)
    # the orchestrator does not start without every server; without it, the others answer.
    async with configs.serve_sse() as config:
        config["mcp_servers"]["product_metadata_mcp"].update(
            url=f"http://127.0.0.1:{_closed_port()}/sse", retry={"retries": 0})
        with pytest.raises(InitialConnectionError) as caught:
            async with Talk2TablesOrchestrator(config):
                pass
        assert "product_metadata_mcp" in str(caught.value)

        config["orchestration"]["fail_fast"] = False
        async with Talk2TablesOrchestrator(config) as orchestrator:
            result = await orchestrator.process_query("which products are low on stock?", DemoLLM())
    assert result["success"] is True
    assert result["metadata"]["mcp_servers_used"] == ["database_mcp"]


async def test_a_server_lost_after_the_start_fails_the_query_with_fail_fast() -> None:
    async with SseServer(database.build_server()) as db, SseServer(product_metadata.build_server()) as meta:
        config = configs.sse_config({"database_mcp": db.url, "product_metadata_mcp": meta.url})
        async with Talk2TablesOrchestrator(config) as orchestrator:
            gone = asyncio.Event()
            orchestrator.host.on_event(lambda e: gone.set() if e.get("server") == "product_metadata_mcp"
                                       and e.get("type") == "state_changed"
                                       and e.get("data", {}).get("to") == "unavailable" else None)
            first = await orchestrator.process_query("which products are low on stock?", DemoLLM())
            assert first["success"] is True
            await meta.close()
            await asyncio.wait_for(gone.wait(), 30)
            assert set(orchestrator.resource_cache) == {"database_mcp", "product_metadata_mcp"}
            result = await orchestrator.process_query("which products are low on stock?", DemoLLM())
            # "Cache invalidation on error": the lost server's resources are not kept.
            assert set(orchestrator.resource_cache) == {"database_mcp"}
    assert result["success"] is False and result["error_type"] == "ConnectionLostError"
    assert "product_metadata_mcp" in result["error"]


@pytest.mark.parametrize(("legacy_priority", "product"), [(5, ["Magic Wand Pro", 59.99]), (0, ["Vanishing Cabinet", 1250.0])])
async def test_an_entity_two_servers_define_is_taken_from_the_higher_priority_one(
        tmp_path: Path, legacy_priority: int, product: list[Any]) -> None:
    # The document's test scenario 2, "Priority Resolution": a second metadata server says
    # "abracadabra" is product 102; the lower priority number wins (Algorithm 4).
    legacy = json.loads((ROOT / "examples/talk2tables/data/product_metadata.json").read_text())
    legacy["product_aliases"] = {"abracadabra": {
        "canonical_id": "PROD_102", "canonical_name": "Vanishing Cabinet", "aliases": ["cadabra"],
        "database_references": {"products.product_name": "Vanishing Cabinet", "products.product_id": 102}}}
    (tmp_path / "legacy.json").write_text(json.dumps(legacy))
    async with configs.serve_sse() as config, \
            SseServer(product_metadata.build_server(tmp_path / "legacy.json")) as old:
        config["mcp_servers"]["legacy_metadata_mcp"] = {
            "name": "Legacy Product Metadata", "url": old.url, "priority": legacy_priority, "transport": "sse",
            "domains": ["products", "product_aliases"], "capabilities": ["list_resources"]}
        async with Talk2TablesOrchestrator(config) as orchestrator:
            result = await orchestrator.process_query("what is the price of abracadabra?", DemoLLM())
            winner = "product_metadata_mcp" if legacy_priority > 1 else "legacy_metadata_mcp"
            found = orchestrator.resolve_entity("CADABRA", "product_aliases")
            assert found is not None and found["server"] == winner and found["key"] == "abracadabra"
            assert orchestrator.resolve_entity("abracadabra", "sales") is None  # no server of that domain
            assert orchestrator.resolve_entity("nothing-like-it", "product_aliases") is None
    assert result["success"] is True, result
    assert result["result"]["rows"] == [product]
    assert result["entity_sources"]["abracadabra"]["server"] == winner


async def test_enable_logging_false_silences_the_query_events(log_lines: Lines) -> None:
    async with configs.serve_sse(enable_logging=False) as config, Talk2TablesOrchestrator(config) as orchestrator:
        result = await orchestrator.process_query("which products are low on stock?", DemoLLM())
        assert result["success"] is True
        assert [line for line in log_lines.lines if line["component"].startswith("talk2tables.orchestrator")] == []
    async with configs.serve_sse() as config, Talk2TablesOrchestrator(config) as orchestrator:
        await orchestrator.process_query("which products are low on stock?", DemoLLM())
    assert "query_processing_completed" in log_lines.events()


def test_the_command_line_prints_the_whole_result_as_json(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["price of poof box", "--transport", "sse", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["success"] is True and result["result"]["rows"] == [["Vanishing Cabinet", 1250.0]]
    assert result["entity_sources"]["poof box"]["server"] == "product_metadata_mcp"
    assert set(result) >= {"success", "query", "sql", "result", "explanation", "resolved_entities", "metadata"}
    assert set(result["metadata"]) >= {"execution_time", "mcp_servers_used", "timestamp"}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(SystemExit, match="OPENAI_API_KEY"):
        main(["anything", "--model", "openai"])


async def test_a_configuration_file_names_the_servers(tmp_path: Path) -> None:
    doc = json.loads((ROOT / "examples/talk2tables/mcp_config.json").read_text())
    async with configs.serve_sse() as served:
        for name, entry in doc["mcp_servers"].items():
            entry["url"] = served["mcp_servers"][name]["url"]
        (tmp_path / "mcp_config.json").write_text(json.dumps(doc))
        result = await ask("total sales for abracadabra this month", config=str(tmp_path / "mcp_config.json"))
    assert result["success"] is True and result["result"]["columns"] == ["total_sales"]
    assert "s.product_id = 123" in result["sql"]
