"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
from fake_http import FakeHttpFront
from helpers import descendants
from transport_matrix import REMOTE, TRANSPORTS, HostMaker


@pytest.fixture(scope="session", autouse=True)
def compiled_config_schema() -> Iterator[object]:
    """The tests hold the compiled mcp.json schema: a host holds it only while it loads a
    configuration, and recompiling it for each of the suite's loads costs ~20 ms a load
    (tests/config alone: 14 s instead of 6 s)."""
    from mcphost.config.schema_errors import config_schema

    held = config_schema()
    yield held


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    before = set(descendants(os.getpid()))
    yield
    leftover = [p for p in descendants(os.getpid()) if p not in before]
    assert leftover == [], f"processes left behind: {leftover}"


@pytest.fixture(params=TRANSPORTS)
async def new_host(request: pytest.FixtureRequest) -> AsyncIterator[HostMaker]:
    """Makes the test's hosts; the test runs once per transport (``transport_matrix.py``)."""
    if request.param in REMOTE:
        async with FakeHttpFront() as front:
            yield HostMaker(request.param, front)
    else:
        yield HostMaker(request.param)
