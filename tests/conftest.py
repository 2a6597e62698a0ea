"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from helpers import descendants


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    before = set(descendants(os.getpid()))
    yield
    leftover = [p for p in descendants(os.getpid()) if p not in before]
    assert leftover == [], f"processes left behind: {leftover}"
