"""SQL failures of Talk-2-Tables: their classification, and the check of a query before it is sent.

The document's Algorithm 5 sorts an execution failure into SYNTAX_ERROR, MISSING_COLUMN,
MISSING_TABLE, DATA_TYPE_MISMATCH, AMBIGUOUS_COLUMN, AGGREGATION_ERROR, PERMISSION_ERROR or
UNKNOWN_ERROR (:func:`classify`); a permission-class failure is never retried. Its
"Validation Before Retry" checks a corrected query's structure and that every table and
column exists (:class:`SchemaValidator`): the database server publishes each table's
``CREATE`` statement, so the check compiles the query (``EXPLAIN``) against an empty
in-memory copy of that schema. SQLite itself then says what is wrong, with no parser of our
own to disagree with the server's.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Mapping
from typing import Any

from mcphost.compat.orchestrator import (
    InvalidSQLError,
    SQLDataError,
    SQLExecutionError,
    SQLSchemaError,
    SQLSyntaxError,
)

logger = logging.getLogger("talk2tables.sqlcheck")

__all__ = ["CATEGORIES", "RETRYABLE", "SchemaValidator", "classify", "exception_for", "instruction_for"]

#: Every category of the document, with the fix the recovery prompt asks for.
CATEGORIES: dict[str, str] = {
    "SYNTAX_ERROR": "Fix SQL syntax.",
    "MISSING_COLUMN": "Use correct column names from schema.",
    "MISSING_TABLE": "Use correct table names from schema.",
    "DATA_TYPE_MISMATCH": "Ensure proper type casting.",
    "AMBIGUOUS_COLUMN": "Qualify every column with its table name.",
    "AGGREGATION_ERROR": "Add a GROUP BY with every column that is not aggregated.",
    "PERMISSION_ERROR": "Do not retry: access was denied.",
    "UNKNOWN_ERROR": "Read the error message and correct the query.",
}

#: "PERMISSION_ERROR: Fail immediately (no retry)"; every other category is retried.
RETRYABLE = frozenset(CATEGORIES) - {"PERMISSION_ERROR"}

# First match wins; permission first, since a denied statement can also read as a syntax error.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("PERMISSION_ERROR", re.compile(r"permission denied|access denied|not authori[sz]ed|prohibited|"
                                    r"read-?only|insufficient privilege", re.I)),
    ("MISSING_TABLE", re.compile(r"no such table|table .* (not found|does not exist)|unknown table", re.I)),
    ("MISSING_COLUMN", re.compile(r"no such column|unknown column|column .* (not found|does not exist)", re.I)),
    ("AMBIGUOUS_COLUMN", re.compile(r"ambiguous column", re.I)),
    ("AGGREGATION_ERROR", re.compile(r"misuse of aggregate|group by|aggregate functions? (are|is) not allowed", re.I)),
    ("DATA_TYPE_MISMATCH", re.compile(r"datatype mismatch|type mismatch|cannot cast|invalid input syntax for type|"
                                      r"could not convert", re.I)),
    ("SYNTAX_ERROR", re.compile(r"syntax error|incomplete input|unrecognized token|near \"", re.I)),
)

_EXCEPTIONS: dict[str, type[SQLExecutionError]] = {
    "SYNTAX_ERROR": SQLSyntaxError,
    "AGGREGATION_ERROR": SQLSyntaxError,
    "MISSING_COLUMN": SQLSchemaError,
    "MISSING_TABLE": SQLSchemaError,
    "AMBIGUOUS_COLUMN": SQLSchemaError,
    "DATA_TYPE_MISMATCH": SQLDataError,
}


def classify(message: str) -> str:
    """The document's category of an execution error message."""
    for category, pattern in _PATTERNS:
        if pattern.search(message):
            return category
    return "UNKNOWN_ERROR"


def exception_for(category: str) -> type[SQLExecutionError]:
    """The exception of the document's tree for a category (permission and unknown: the base)."""
    return _EXCEPTIONS.get(category, SQLExecutionError)


def instruction_for(category: str) -> str:
    return CATEGORIES.get(category, CATEGORIES["UNKNOWN_ERROR"])


class SchemaValidator:
    """Checks a query against the schema the database server published, without running it."""

    def __init__(self, table_schemas: Mapping[str, Any]) -> None:
        self.tables = {name: [c["name"] for c in info.get("columns", ())] for name, info in table_schemas.items()}
        self._shadow = sqlite3.connect(":memory:")
        for name, info in table_schemas.items():
            ddl = info.get("create_sql")
            if not ddl:
                cols = ", ".join(f'"{c["name"]}" {c.get("type", "")}' for c in info.get("columns", ()))
                ddl = f'CREATE TABLE "{name}" ({cols})'
            try:
                self._shadow.execute(ddl)
            except sqlite3.DatabaseError as exc:
                logger.warning("schema of %s not usable for validation: %s", name, exc)

    def close(self) -> None:
        self._shadow.close()

    def validate(self, sql: str) -> list[str]:
        """What is wrong with ``sql`` (empty: it may be sent). Raises nothing."""
        text = (sql or "").strip()
        if not text:
            return ["the SQL query is empty"]
        body = text.rstrip(";").strip()
        if not re.match(r"(?is)^(select|with)\b", body):
            return ["only one SELECT statement may be sent"]
        if body.count("(") != body.count(")"):
            return ["unbalanced parentheses"]
        if not sqlite3.complete_statement(body + ";") or ";" in _strip_strings(body):
            return ["exactly one complete SQL statement is expected"]
        if not self.tables:
            return []  # no schema was published: only the structure can be checked
        try:
            self._shadow.execute("EXPLAIN " + body)
        except sqlite3.Warning as exc:
            return [str(exc)]
        except sqlite3.DatabaseError as exc:
            return [str(exc)]
        return []

    def check(self, sql: str) -> None:
        """:meth:`validate`, raising the document's InvalidSQLError with what was wrong."""
        problems = self.validate(sql)
        if problems:
            raise InvalidSQLError("; ".join(problems))


def _strip_strings(sql: str) -> str:
    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "''", sql)
