"""The Talk-2-Tables orchestrator: a question in, SQL generated, run, and recovered when it fails.

Built on :class:`mcphost.compat.orchestrator.MCPOrchestrator` (connections, resource listing
and reading, parallel gathering by priority with the TTL cache, the exception tree), this
module owns the document's ``process_query(user_query, llm_client)``:

1. (Algorithm 1) gather every connected server's resources (fail-fast as configured;
   ``NoMCPAvailableError`` when none);
2. (Algorithm 3) one prompt with every server's resources sorted by priority, domains and
   capabilities; the model's answer parsed (JSON, else the SQL found in its text);
3. the server that has ``execute_query`` runs the SQL;
4. (Algorithm 5) a failure is classified; a permission-class failure is final at once;
   any other is sent back to the model with the failed SQL, the error, every resource and the
   fix its class calls for; the corrected SQL is checked against the published schema before
   it is run (a check that fails costs an attempt, without running it). At most
   ``max_attempts`` (3) SQL attempts in all: the first, then two corrections.

Every step logs one of the document's Query Processing events (``query_received`` ...
``query_processing_completed``, ``error_occurred``, ``recovery_attempted``,
``exception_raised``, ``fatal_error``) on the ``talk2tables.orchestrator`` logger, inside an
``mcphost.logs.operation()`` so that the host's own records of the query carry its
``operation_id``; format them with ``mcphost.logs.JSONFormatter(nested=True)``.

The result is the document's ``Query_Result``; a failure is one too (``success: false``, with
what was attempted, why it failed and what to try), unless ``raise_errors=True``, when the
document's exception is raised.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any

from mcphost.compat.orchestrator import (
    InvalidSQLError,
    LLMCommunicationError,
    MCPConnectionError,
    MCPOrchestrator,
    MCPOrchestratorException,
    ResourceFetchError,
    SQLExecutionError,
)
from mcphost.logs import operation

from .llm import LLMInterface, build_prompt, build_recovery_prompt, parse_response
from .metrics import QueryMetrics
from .sqlcheck import RETRYABLE, SchemaValidator, classify, exception_for, instruction_for

logger = logging.getLogger("talk2tables.orchestrator")

__all__ = ["QUERY_EVENTS", "Talk2TablesOrchestrator", "resolve_entity"]

#: The document's "Query Processing" and "Error Events" this module logs.
QUERY_EVENTS = ("query_received", "query_processing_started", "llm_prompt_created", "llm_response_received",
                "sql_generated", "sql_execution_started", "sql_execution_completed", "query_processing_completed",
                "error_occurred", "exception_raised", "recovery_attempted", "fatal_error")

MAX_RETRY_ATTEMPTS = 3
EXECUTE_TOOL = "execute_query"

_SUGGESTIONS = {
    "PERMISSION_ERROR": "The database refused access: ask about tables you may read, or ask an administrator.",
    "MISSING_TABLE": "Name the data you want with the table names of database://table_schemas.",
    "MISSING_COLUMN": "Use the column names of database://table_schemas.",
    "SYNTAX_ERROR": "Rephrase the question more simply, or write the SQL yourself.",
}


class Talk2TablesOrchestrator(MCPOrchestrator):
    """:class:`MCPOrchestrator` with the document's query pipeline (``process_query``)."""

    def __init__(self, config_path: Any = "mcp_config.yaml", *, max_attempts: int = MAX_RETRY_ATTEMPTS,
                 **options: Any) -> None:
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be a positive integer, not {max_attempts!r}")
        super().__init__(config_path, **options)
        self.max_attempts = max_attempts
        self.query_metrics = QueryMetrics()

    def metrics(self) -> dict[str, Any]:
        """The document's performance metrics: the queries' (times by percentile, model time,
        cache hit rate, errors by type) and the servers' (the host's ``get_metrics()``)."""
        return {"queries": self.query_metrics.snapshot(), "servers": self.host.get_metrics()}

    async def __aenter__(self) -> Talk2TablesOrchestrator:
        await self.initialize()
        return self

    def resolve_entity(self, entity_name: str, resource_type: str) -> dict[str, Any] | None:
        """Algorithm 4 over the gathered resources (see :func:`resolve_entity`)."""
        servers = [{"server": name, **entry} for name, entry in self.resource_cache.items()]
        return resolve_entity(entity_name, resource_type, servers)

    async def process_query(self, user_query: str, llm_client: LLMInterface, *,
                            raise_errors: bool = False) -> dict[str, Any]:
        """The document's ``process_query``: the ``Query_Result`` of one question."""
        if not isinstance(user_query, str) or not user_query.strip():
            raise ValueError("process_query(): user_query must be a non-empty string")
        with operation() as operation_id:
            return await _Query(self, user_query, llm_client, operation_id).run(raise_errors)


def _event(event: str, message: str, *args: Any, level: int = logging.INFO, server: str | None = None,
           context: Mapping[str, Any] | None = None, metrics: Mapping[str, Any] | None = None,
           error: Mapping[str, Any] | None = None) -> None:
    extra: dict[str, Any] = {"event": event}
    if server is not None:
        extra["server"] = server
    if context:
        extra["context"] = dict(context)
    if metrics:
        extra["metrics"] = dict(metrics)
    if error:
        extra["error"] = dict(error)
    logger.log(level, message, *args, extra=extra)


class _Query:
    """One question on its way through the pipeline (its state, so each step stays small)."""

    def __init__(self, orchestrator: Talk2TablesOrchestrator, user_query: str, llm: LLMInterface,
                 operation_id: str) -> None:
        self.o, self.user_query, self.llm, self.operation_id = orchestrator, user_query, llm, operation_id
        self.started = time.perf_counter()
        self.servers: list[dict[str, Any]] = []
        self.executor: str | None = None
        self.sql = ""
        self.generation: dict[str, Any] = {}
        self.attempts: list[dict[str, Any]] = []
        self.llm_ms = 0.0
        self.cache_hits = self.cache_misses = 0
        # orchestration.enable_logging: false silences the query's events as it does the host's.
        config = orchestrator.host.config
        self.logging = config is None or config.enable_logging is not False

    def _record(self, error_type: str | None) -> None:
        self.o.query_metrics.record(
            duration_ms=self._ms(), llm_ms=self.llm_ms, error_type=error_type, recovered=bool(self.attempts),
            cache_hits=self.cache_hits, cache_misses=self.cache_misses,
            sql_errors=[a["error_type"] for a in self.attempts])

    def _event(self, event: str, message: str, *args: Any, **fields: Any) -> None:
        if self.logging:
            _event(event, message, *args, **fields)

    def _ctx(self, **more: Any) -> dict[str, Any]:
        return {"user_query": self.user_query, **more}

    async def run(self, raise_errors: bool) -> dict[str, Any]:
        self._event("query_received", "query received", context=self._ctx())
        self._event("query_processing_started", "query processing started", context=self._ctx())
        try:
            result = await self._pipeline()
        except MCPOrchestratorException as exc:
            if isinstance(exc, (MCPConnectionError, ResourceFetchError)):
                # "Cache invalidation on error": what a failing server gave is not served again.
                self.o.invalidate_cache(exc.server)
            self._event("exception_raised", "%s: %s", type(exc).__name__, exc, level=logging.ERROR, server=exc.server,
                        context=self._ctx(attempts=len(self.attempts)),
                        error={"type": type(exc).__name__, "message": str(exc)})
            self._event("fatal_error", "query failed: %s", exc, level=logging.ERROR, context=self._ctx(),
                        metrics={"duration_ms": self._ms()},
                        error={"type": type(exc).__name__, "message": str(exc)})
            self._record(type(exc).__name__)
            if raise_errors:
                raise
            return self._failure(exc)
        self._record(None)
        self._event("query_processing_completed", "query answered", context=self._ctx(success=True),
                    metrics={"duration_ms": self._ms(), "attempts": len(self.attempts) + 1,
                             "row_count": len(result["result"]["rows"])})
        return result

    async def _pipeline(self) -> dict[str, Any]:
        before = dict(self.o.cache_timestamps)
        gathered = await self.o.gather_all_resources()
        # A server whose cache stamp did not move was answered from the cache.
        hits = sum(1 for name in gathered if name in before and before[name] == self.o.cache_timestamps.get(name))
        self.cache_hits, self.cache_misses = hits, len(gathered) - hits
        self.servers = [{"server": name, "priority": entry["priority"], "domains": entry["domains"],
                         "capabilities": entry["capabilities"], "resources": entry["resources"]}
                        for name, entry in gathered.items()]
        self.generation = await self._ask(build_prompt(self.user_query, self.servers), "generate")
        self.sql = self.generation["sql_query"]
        self.executor = self.o.find_executor(EXECUTE_TOOL)
        validator = SchemaValidator(_table_schemas(gathered.get(self.executor, {}).get("resources", {})))
        try:
            return await self._execute_with_recovery(validator)
        finally:
            validator.close()

    async def _execute_with_recovery(self, validator: SchemaValidator) -> dict[str, Any]:
        assert self.executor is not None
        for attempt in range(1, self.o.max_attempts + 1):
            if attempt > 1:
                last = self.attempts[-1]
                self._event("recovery_attempted", "attempt %d: asking for a corrected query (%s)", attempt,
                            last["error_type"], level=logging.WARNING, server=self.executor,
                            context=self._ctx(attempt=attempt, error_type=last["error_type"], failed_sql=last["sql"]))
                prompt = build_recovery_prompt(self.user_query, last["sql"], last["error"], last["error_type"],
                                               instruction_for(last["error_type"]), self.servers, self.attempts)
                try:
                    self.generation = await self._ask(prompt, "recover")
                except InvalidSQLError as exc:  # no SQL in the answer: "malformed", an attempt spent
                    self.sql = ""
                    self._failed(attempt, str(exc), validated=False)
                    continue
                self.sql = self.generation["sql_query"]
                problems = validator.validate(self.sql)
                if problems:
                    # "Validation Fail: skip execution, try again" (it still costs an attempt).
                    self._failed(attempt, "; ".join(problems), validated=False)
                    continue
            self._event("sql_execution_started", "executing on %s", self.executor, server=self.executor,
                        context=self._ctx(sql=self.sql, attempt=attempt))
            started = time.perf_counter()
            result = await self.o.call_tool(self.executor, EXECUTE_TOOL, {"query": self.sql})
            if not result.get("isError"):
                data = result.get("structuredContent") or {}
                self._event("sql_execution_completed", "%d rows", data.get("row_count", len(data.get("rows", []))),
                            server=self.executor, context=self._ctx(attempt=attempt),
                            metrics={"duration_ms": _ms(started), "row_count": len(data.get("rows", []))})
                return self._success(data)
            category = self._failed(attempt, _text(result), validated=True)
            if category not in RETRYABLE:
                break  # PERMISSION_ERROR: "Fail immediately (no retry)"
        last = self.attempts[-1]
        raise exception_for(last["error_type"])(
            f"{last['error_type']} after {len(self.attempts)} attempt(s): {last['error']}", server=self.executor)

    def _failed(self, attempt: int, message: str, *, validated: bool) -> str:
        category = classify(message)
        self.attempts.append({"attempt": attempt, "sql": self.sql, "error": message, "error_type": category,
                              "executed": validated})
        self._event("error_occurred", "attempt %d failed (%s): %s", attempt, category, message, level=logging.WARNING,
                    server=self.executor, context=self._ctx(attempt=attempt, sql=self.sql, executed=validated),
                    error={"type": category, "message": message})
        return category

    async def _ask(self, prompt: str, purpose: str) -> dict[str, Any]:
        self._event("llm_prompt_created", "prompt for %s", purpose, context=self._ctx(purpose=purpose),
                    metrics={"prompt_chars": len(prompt),
                             "resource_count": sum(len(s["resources"]) for s in self.servers)})
        started = time.perf_counter()
        try:
            text = await self.llm.complete(prompt, host=self.o.host)
        except MCPOrchestratorException:
            raise
        except Exception as exc:  # the model's own failure is the document's LLMCommunicationError
            raise LLMCommunicationError(f"the model failed: {type(exc).__name__}: {exc}") from exc
        took = _ms(started)
        self.llm_ms += took
        self._event("llm_response_received", "model answered", context=self._ctx(purpose=purpose),
                    metrics={"duration_ms": took, "response_chars": len(text)})
        generation = parse_response(text)
        sql = generation["sql_query"]
        self._event("sql_generated", "%s", sql, context=self._ctx(sql=sql, purpose=purpose))
        return generation

    def _metadata(self, attempts: int) -> dict[str, Any]:
        used = [s["server"] for s in self.servers]
        if self.executor is not None and self.executor not in used:
            used.append(self.executor)
        return {"execution_time": round(time.perf_counter() - self.started, 6), "mcp_servers_used": used,
                "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                "operation_id": self.operation_id, "attempts": attempts}

    def _success(self, data: Mapping[str, Any]) -> dict[str, Any]:
        explanation = str(self.generation.get("explanation", ""))
        if self.attempts:
            fixed = self.generation.get("changes") or "the query was corrected"
            explanation = (f"{explanation} (recovered after {len(self.attempts)} failed attempt(s): "
                           f"{self.attempts[-1]['error_type']}; {fixed})").strip()
        entities = dict(self.generation.get("resolved_entities") or {})
        # Where each entity the model resolved is defined, by Algorithm 4 (lower priority first).
        sources = {}
        for term in entities:
            found = resolve_entity(term, "product_aliases", self.servers)
            if found is not None:
                sources[term] = {k: found[k] for k in ("server", "priority", "uri", "key")}
        return {"success": True, "query": self.user_query, "sql": self.sql, "entity_sources": sources,
                "result": {"columns": list(data.get("columns", [])), "rows": list(data.get("rows", []))},
                "explanation": explanation, "resolved_entities": entities,
                "recovery": {"attempts": list(self.attempts)}, "metadata": self._metadata(len(self.attempts) + 1)}

    def _failure(self, exc: MCPOrchestratorException) -> dict[str, Any]:
        category = self.attempts[-1]["error_type"] if self.attempts and isinstance(exc, SQLExecutionError) else None
        return {"success": False, "query": self.user_query, "sql": self.sql, "error": str(exc),
                "error_type": type(exc).__name__, "error_category": category,
                "explanation": str(self.generation.get("explanation", "")),
                "resolved_entities": dict(self.generation.get("resolved_entities") or {}),
                "recovery": {"attempts": list(self.attempts)},
                "suggestions": _SUGGESTIONS.get(category or "", "Check the MCP servers and try again."),
                "metadata": self._metadata(len(self.attempts))}

    def _ms(self) -> float:
        return _ms(self.started)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _text(result: Mapping[str, Any]) -> str:
    return " ".join(str(c.get("text", "")) for c in result.get("content", []) if isinstance(c, dict)) or "unknown error"


def _table_schemas(resources: Mapping[str, Any]) -> dict[str, Any]:
    """The executor's resource that describes tables (``{table: {"columns": [...]}}``)."""
    for data in resources.values():
        if isinstance(data, dict) and data and all(isinstance(v, dict) and "columns" in v for v in data.values()):
            return data
    return {}


def resolve_entity(entity_name: str, resource_type: str,
                   all_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The document's Algorithm 4, ResolveEntityWithPriority.

    Among the servers whose ``domains`` include ``resource_type``, the entries of their
    resources named ``entity_name`` (a key, or one of an entry's ``aliases``; case is ignored)
    are candidates; the one of the lowest priority number wins. ``all_resources``:
    ``[{"server", "priority", "domains", "resources": {uri: data}}]``. Returns ``{"server",
    "priority", "uri", "key", "entity"}`` or None.
    """
    wanted = entity_name.strip().lower()
    candidates = []
    for server in sorted(all_resources, key=lambda s: (s.get("priority", 0), s["server"])):
        if resource_type not in server.get("domains", ()):
            continue
        for uri, data in sorted((server.get("resources") or {}).items()):
            if not isinstance(data, dict):
                continue
            for key, entry in data.items():
                aliases = entry.get("aliases", []) if isinstance(entry, dict) else []
                if wanted == str(key).lower() or wanted in (str(a).lower() for a in aliases):
                    candidates.append({"server": server["server"], "priority": server.get("priority", 0),
                                       "uri": uri, "key": key, "entity": entry})
    return min(candidates, key=lambda c: c["priority"]) if candidates else None
