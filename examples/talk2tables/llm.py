"""The LLM side of Talk-2-Tables: the interface, the prompts, the parsing of answers, and scripted models.

The document's Algorithm 3 (GenerateSQLWithLLM) and its recovery prompt template live here:

- :class:`LLMInterface`: what the orchestrator needs of a model, ``await complete(prompt,
  host=...)`` -> text. Models that call tools get the host, whose ``tools_for()`` and
  ``dispatch()`` give them the servers' tools (see :mod:`.providers`);
- :func:`build_prompt` and :func:`build_recovery_prompt`: every server's resources as JSON,
  ordered by priority, with domains and capabilities, then instructions and the answer format;
- :func:`parse_response`: JSON first; failing that, the SQL is taken from the text (a fenced
  block or a SELECT) into the minimal structure; no SQL at all is ``InvalidSQLError``;
- :class:`ScriptedLLM` (answers given in advance, for tests) and :class:`DemoLLM` (a
  deterministic stand-in that reads the prompt's resources, for the README's command).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, Union

from mcphost.compat.orchestrator import InvalidSQLError, LLMCommunicationError

logger = logging.getLogger("talk2tables.llm")

__all__ = ["RESOURCES_BEGIN", "RESOURCES_END", "DemoLLM", "LLMInterface", "ScriptedLLM", "build_prompt",
           "build_recovery_prompt", "parse_response", "resources_in"]

RESOURCES_BEGIN = "=== MCP RESOURCES (JSON) ==="
RESOURCES_END = "=== END OF MCP RESOURCES ==="

RESPONSE_FORMAT = """Answer with one JSON object and nothing else:
{"sql_query": "<one SQLite SELECT statement>",
 "resolved_entities": {"<user term>": {"<column>": "<value>"}},
 "explanation": "<how the question maps to the SQL>",
 "confidence": <0.0 to 1.0>}"""


class LLMInterface(Protocol):
    """A model the orchestrator can ask for SQL."""

    async def complete(self, prompt: str, *, host: Any = None) -> str:
        """The model's answer to ``prompt``. ``host`` (an MCPHost) is there for models that call tools."""
        ...


def build_prompt(user_query: str, servers: Sequence[Mapping[str, Any]]) -> str:
    """Algorithm 3, step 2: the question, every server's resources by priority, instructions, format.

    ``servers``: ``[{"server", "priority", "domains", "capabilities", "resources": {uri: data}}]``.
    """
    ordered = sorted(servers, key=lambda s: (s.get("priority", 0), s["server"]))
    lines = [f"USER QUERY: {user_query}", "", RESOURCES_BEGIN, json.dumps(ordered, indent=1, default=str),
             RESOURCES_END, "",
             "INSTRUCTIONS:",
             "- Servers are listed by priority: a lower number wins when two servers define the same term.",
             "- Resolve product names and user terms through the product metadata (product_aliases, "
             "column_mappings) before writing SQL; use the database references it gives.",
             "- Use only the tables and columns of database://table_schemas. The database is SQLite.",
             "- Write exactly one read-only SELECT statement.",
             "", RESPONSE_FORMAT]
    return "\n".join(lines)


def build_recovery_prompt(user_query: str, failed_sql: str, error_message: str, category: str,
                          instruction: str, servers: Sequence[Mapping[str, Any]],
                          attempts: Sequence[Mapping[str, Any]]) -> str:
    """The document's Recovery Prompt Structure: context, resources, instructions, output format."""
    ordered = sorted(servers, key=lambda s: (s.get("priority", 0), s["server"]))
    lines = ["PREVIOUS SQL EXECUTION FAILED", f"USER QUERY: {user_query}", f"FAILED SQL: {failed_sql}",
             f"ERROR ({category}): {error_message}",
             "EARLIER ATTEMPTS: " + json.dumps([{"sql": a.get("sql"), "error": a.get("error")} for a in attempts]),
             "", RESOURCES_BEGIN, json.dumps(ordered, indent=1, default=str), RESOURCES_END, "",
             "INSTRUCTIONS:", f"- {instruction}",
             "- Use only tables and columns that exist in database://table_schemas.",
             "- Example of correct syntax: SELECT p.product_name, SUM(s.total_amount) FROM sales s "
             "JOIN products p ON p.product_id = s.product_id GROUP BY p.product_name",
             "", RESPONSE_FORMAT.replace('"confidence"', '"changes": "<what was fixed>", "confidence"')]
    return "\n".join(lines)


def resources_in(prompt: str) -> list[dict[str, Any]]:
    """The servers' resources a prompt carries (what a model reads of it)."""
    start, end = prompt.find(RESOURCES_BEGIN), prompt.find(RESOURCES_END)
    if start < 0 or end < start:
        return []
    data = json.loads(prompt[start + len(RESOURCES_BEGIN):end])
    return list(data) if isinstance(data, list) else []


_FENCE = re.compile(r"```(?:json|sql)?\s*(.*?)```", re.S | re.I)
# A SELECT, or a WITH that has one ("I cannot help with that." is no SQL).
_SELECT = re.compile(r"\b((?:WITH\b.*?\bSELECT|SELECT)\b.*?)(?:;|$)", re.S | re.I)


def parse_response(text: str) -> dict[str, Any]:
    """Algorithm 3, steps 5-6: the model's answer as ``{"sql_query", "resolved_entities", "explanation"}``."""
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("sql_query"), str) and data["sql_query"].strip():
            # Optional fields of the wrong shape are dropped rather than trusted.
            if not isinstance(data.get("resolved_entities"), dict):
                data["resolved_entities"] = {}
            if not isinstance(data.get("explanation"), str):
                data["explanation"] = ""
            return data
    # Not JSON: the SQL is taken as written, in the minimal structure (step 5.b).
    for candidate in [*(m.strip() for m in _FENCE.findall(text)), text]:
        found = _SELECT.search(candidate)
        if found:
            return {"sql_query": found.group(1).strip(), "resolved_entities": {},
                    "explanation": "SQL extracted from a response that was not JSON"}
    raise InvalidSQLError(f"the model's response holds no SQL query: {text[:200]!r}")


Answer = Union[str, Mapping[str, Any], Callable[[str], Union[str, Mapping[str, Any], Awaitable[str]]], BaseException]


class ScriptedLLM:
    """A model whose answers are given in advance, one per call, in order (for tests).

    An answer is a string, a mapping (sent as JSON), a callable of the prompt, or an exception
    to raise (a model that fails). ``prompts`` keeps every prompt it was given.
    """

    def __init__(self, answers: Sequence[Answer]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def complete(self, prompt: str, *, host: Any = None) -> str:
        self.prompts.append(prompt)
        if not self.answers:
            raise LLMCommunicationError(f"the scripted model has no answer left for call {len(self.prompts)}")
        scripted = self.answers.pop(0)
        if isinstance(scripted, BaseException):
            raise scripted
        out = scripted(prompt) if callable(scripted) else scripted
        if inspect.isawaitable(out):
            out = await out
        return out if isinstance(out, str) else json.dumps(out)


class DemoLLM:
    """A deterministic stand-in for a model, enough to run the example with no API key.

    It knows a few kinds of question ("low on stock", "sales ... this month", "best selling",
    prices) and resolves product names through the product_aliases resource of the prompt, as a
    model would; a recovery prompt is answered with the same question's SQL.
    """

    async def complete(self, prompt: str, *, host: Any = None) -> str:
        question = re.search(r"USER QUERY: (.*)", prompt)
        text = (question.group(1) if question else "").lower()
        resources = resources_in(prompt)
        entities: dict[str, Any] = {}
        product = self._product(text, resources)
        where = ""
        if product is not None:
            term, refs = product
            entities[term] = refs
            where = f" AND s.product_id = {int(refs['products.product_id'])}"
        month = "strftime('%Y-%m', s.sale_date) = strftime('%Y-%m', 'now')"
        if "stock" in text or "inventory" in text or "reorder" in text:
            sql = ("SELECT p.product_id, p.product_name, i.quantity_on_hand, i.reorder_level FROM products p "
                   "JOIN inventory i ON i.product_id = p.product_id WHERE i.quantity_on_hand < i.reorder_level "
                   "ORDER BY i.quantity_on_hand")
            why = "low on stock = inventory.quantity_on_hand < inventory.reorder_level (column_mappings)"
        elif "best" in text or "top" in text:
            sql = ("SELECT p.product_name, SUM(s.quantity) AS units FROM sales s JOIN products p "
                   "ON p.product_id = s.product_id GROUP BY p.product_name ORDER BY units DESC LIMIT 5")
            why = "best selling = ORDER BY SUM(sales.quantity) DESC (aggregation_terms)"
        elif "sales" in text or "revenue" in text:
            period = f" AND {month}" if "this month" in text else ""
            sql = f"SELECT SUM(s.total_amount) AS total_sales FROM sales s WHERE 1 = 1{where}{period}"
            why = "sales amount = sales.total_amount" + ("; this month on sales.sale_date" if period else "")
        elif "price" in text and product is not None:
            sql = (f"SELECT product_name, unit_price FROM products "
                   f"WHERE product_id = {int(product[1]['products.product_id'])}")
            why = "price = products.unit_price"
        else:
            sql = "SELECT product_id, product_name, category, unit_price FROM products ORDER BY product_id"
            why = "no specific measure asked: the product catalog"
        return json.dumps({"sql_query": sql, "resolved_entities": entities, "explanation": why, "confidence": 0.9})

    @staticmethod
    def _product(text: str, resources: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        # Servers arrive by priority: the first server that knows the term wins (Algorithm 4).
        for server in resources:
            for uri, data in (server.get("resources") or {}).items():
                if not uri.endswith("product_aliases") or not isinstance(data, dict):
                    continue
                for key, alias in data.items():
                    terms = [key, *alias.get("aliases", [])]
                    for term in sorted(terms, key=len, reverse=True):
                        if re.search(r"\b" + re.escape(term.lower().replace("_", " ")) + r"\b", text):
                            return term, dict(alias.get("database_references", {}))
        return None
