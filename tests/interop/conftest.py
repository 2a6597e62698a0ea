"""Fixtures of the interop suites: server-everything over each transport (see
``everything_targets.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from everything_targets import REMOTE, TRANSPORTS, Servers, Target


@pytest.fixture(scope="session")
def everything_servers() -> Iterator[Servers]:
    pool = Servers()
    try:
        yield pool
    finally:
        pool.stop()


def _target(mode: str, servers: Servers) -> Target:
    return Target(mode) if mode == "stdio" else Target(mode, servers.get(mode))


@pytest.fixture(scope="module", params=TRANSPORTS)
def target(request: pytest.FixtureRequest, everything_servers: Servers) -> Target:
    """server-everything over each transport in turn."""
    return _target(request.param, everything_servers)


@pytest.fixture(scope="module", params=REMOTE)
def remote(request: pytest.FixtureRequest, everything_servers: Servers) -> Target:
    """server-everything over each HTTP transport in turn."""
    return _target(request.param, everything_servers)
