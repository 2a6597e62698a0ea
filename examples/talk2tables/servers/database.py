"""The Database MCP server of Talk-2-Tables: read-only SQL over a generated SQLite database.

What it offers (the document's "execute_query, list_resources"):

- tool ``execute_query(query)``: runs one SELECT and answers ``{"columns", "rows",
  "row_count", "truncated"}``; an SQL failure is a tool error (``isError: true``) whose text
  is SQLite's message (``no such column: x``...), which the orchestrator classifies;
- resources ``database://table_schemas`` (every table: columns, types, its ``CREATE``
  statement) and ``database://available_tables`` (names and row counts).

Permissions are enforced by SQLite's authorizer, not by parsing: only reads are allowed, and
the restricted tables of :mod:`.catalog` cannot be read (``Permission denied: ...``).

Run: ``python -m examples.talk2tables.servers.database --transport sse --port 8000``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sqlite3
import threading
from typing import Any

from .catalog import RESTRICTED_TABLES, build_database
from .mcpserver import MCPServer, Resource, Tool, ToolFailure, run

logger = logging.getLogger("talk2tables.servers.database")

__all__ = ["Database", "build_server", "main"]

MAX_ROWS = 1000  # rows returned by one query (the rest is cut and "truncated" says so)
MAX_STEPS = 200_000_000  # SQLite virtual-machine steps one query may take (0: no bound)
_TICK = 10_000  # steps between two calls of the progress handler

# What a read-only SELECT needs of SQLite's authorizer; anything else is refused.
# (SQLITE_RECURSIVE, for WITH RECURSIVE, is code 33: the module names it from Python 3.11.)
_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33}


class Database:
    """One SQLite connection, filled by :func:`catalog.build_database`, read-only once built."""

    def __init__(self, path: str = ":memory:", max_steps: int = MAX_STEPS) -> None:
        self.connection = sqlite3.connect(path, check_same_thread=False)
        exists = self.connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='products'").fetchone()[0]
        if not exists:
            build_database(self.connection)
        self.denied: list[str] = []
        # The server's own reads of the catalog (PRAGMA, restricted names) pass; a query's do not.
        # (A flag, not set_authorizer(None): Python 3.10 takes None as "deny everything".)
        self._trusted = False
        self.connection.set_authorizer(self._authorize)
        self.max_steps = max_steps
        self._ticks = 0
        self.connection.set_progress_handler(self._progress, _TICK)
        self._lock = threading.Lock()

    def close(self) -> None:
        self.connection.close()

    def _progress(self) -> int:
        # A query the client wrote is bounded in work, not in time (a recursive CTE can loop
        # for ever); non-zero stops it with "interrupted".
        self._ticks += 1
        return 1 if self.max_steps and self._ticks * _TICK > self.max_steps else 0

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None,
                   _trigger: str | None) -> int:
        if self._trusted:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ and arg1 in RESTRICTED_TABLES:
            self.denied.append(f"table {arg1} is restricted")
            return sqlite3.SQLITE_DENY
        if action not in _ALLOWED:
            self.denied.append("the database is read-only: only SELECT statements are allowed")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    def query(self, sql: str) -> dict[str, Any]:
        """Run one statement; ToolFailure with the database's message when it fails."""
        with self._lock:
            self.denied.clear()
            self._ticks = 0
            try:
                cursor = self.connection.execute(sql)
                rows = cursor.fetchmany(MAX_ROWS + 1)
            except sqlite3.DatabaseError as exc:
                if self.denied:
                    raise ToolFailure(f"Permission denied: {self.denied[0]}") from exc
                if self.max_steps and self._ticks * _TICK > self.max_steps:
                    raise ToolFailure(f"SQL error: query stopped after {self.max_steps} steps (--max-steps); "
                                      "write a query that reads less") from exc
                raise ToolFailure(f"SQL error: {exc}") from exc
            except sqlite3.Warning as exc:  # e.g. "You can only execute one statement at a time."
                raise ToolFailure(f"SQL error: {exc}") from exc
            columns = [d[0] for d in cursor.description or ()]
        return {"columns": columns, "rows": [list(r) for r in rows[:MAX_ROWS]],
                "row_count": min(len(rows), MAX_ROWS), "truncated": len(rows) > MAX_ROWS}

    def schemas(self) -> dict[str, Any]:
        with self._lock:
            self._trusted = True
            try:
                tables = self.connection.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type='table' ORDER BY name").fetchall()
                out: dict[str, Any] = {}
                for name, ddl in tables:
                    if name in RESTRICTED_TABLES:
                        continue
                    info = self.connection.execute(f"PRAGMA table_info({name})").fetchall()
                    count = self.connection.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
                    out[name] = {"columns": [{"name": c[1], "type": c[2], "primary_key": bool(c[5])} for c in info],
                                 "row_count": count, "create_sql": ddl}
            finally:
                self._trusted = False
        return out


def build_server(db: Database | None = None) -> MCPServer:
    """The server object (tests serve it in-process over SSE)."""
    database = db or Database()
    server = MCPServer("talk2tables-database", instructions=(
        "Read-only SQLite database of products, inventory, customers, orders and sales. "
        "Read database://table_schemas, then call execute_query with one SELECT statement."))
    if db is None:
        server.closers.append(database.close)  # its own connection: closed with the server

    async def execute_query(arguments: dict[str, Any]) -> dict[str, Any]:
        sql = arguments.get("query")
        if not isinstance(sql, str) or not sql.strip():
            raise ToolFailure("SQL error: 'query' must be a non-empty SQL string")
        # SQLite blocks; a thread keeps the server answering while a query runs.
        return await asyncio.to_thread(database.query, sql)

    server.add_tool(Tool("execute_query", "Execute one read-only SQL SELECT statement on the SQLite database "
                         "and return its columns and rows.",
                         {"type": "object", "required": ["query"], "additionalProperties": False,
                          "properties": {"query": {"type": "string", "description": "one SQLite SELECT statement"}}},
                         execute_query))
    server.add_resource(Resource("database://table_schemas", "table_schemas",
                                 "Every table: columns, types, row count and CREATE statement",
                                 lambda: json.dumps(database.schemas(), indent=1)))
    server.add_resource(Resource("database://available_tables", "available_tables", "The tables queries may read",
                                 lambda: json.dumps(sorted(database.schemas()))))
    return server


def main(argv: list[str] | None = None) -> int:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--db", default=":memory:", help="SQLite file (generated when empty)")
        parser.add_argument("--max-steps", type=int, default=MAX_STEPS,
                            help="SQLite steps one query may take (0: no bound)")

    return run(lambda args: build_server(Database(args.db, args.max_steps)), "Talk-2-Tables database MCP server", argv,
               default_port=8000, extra=extra)


if __name__ == "__main__":
    raise SystemExit(main())
