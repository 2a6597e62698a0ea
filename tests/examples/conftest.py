"""Fixtures of the Talk-2-Tables tests; the repository root on ``sys.path`` (the example is not in the package)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from talk2tables_support import Lines  # noqa: E402


@pytest.fixture
def log_lines() -> Iterator[Lines]:
    handler = Lines()
    loggers = [logging.getLogger(n) for n in ("talk2tables", "mcphost.compat")]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler
    for lg, level in zip(loggers, saved):
        lg.removeHandler(handler)
        lg.setLevel(level)
