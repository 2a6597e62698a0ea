"""Shared pieces of the Talk-2-Tables tests: scripted answers, the expected rows, the log lines.

``conftest.py`` of this folder puts the repository root on ``sys.path`` first: the example
lives beside the package, not in it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from examples.talk2tables.orchestrator import QUERY_EVENTS
from examples.talk2tables.servers.catalog import PRODUCTS
from mcphost.logs import JSONFormatter

ROOT = Path(__file__).resolve().parents[2]

LOW_STOCK = sorted(p[1] for p in PRODUCTS if p[4] < p[5])


LOW_STOCK_SQL = ("SELECT p.product_name FROM products p JOIN inventory i ON i.product_id = p.product_id "
                 "WHERE i.quantity_on_hand < i.reorder_level ORDER BY p.product_name")


DOCUMENT_EVENTS = set(QUERY_EVENTS) | {
    "resource_gathering_started", "resource_gathering_completed", "resource_list_requested",
    "resource_list_received", "resource_fetch_requested", "resource_fetch_completed", "resource_cache_hit",
    "resource_cache_miss", "resource_cache_expired"}


def answer(sql: str, **more: Any) -> str:
    return json.dumps({"sql_query": sql, "resolved_entities": {}, "explanation": "scripted", **more})


class Lines(logging.Handler):
    """The JSON lines the document's log shape gives, parsed back."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JSONFormatter(nested=True))
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))

    def events(self) -> list[str]:
        return [line["event"] for line in self.lines if line["event"] in DOCUMENT_EVENTS]
