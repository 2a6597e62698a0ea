"""Every command-line test leaves the process table as it found it, and reads no real login."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import fake_servers


@pytest.fixture(autouse=True)
def process_table_clean() -> Iterator[None]:
    """No fake server of the CLI's is left (they are not our children: only the table tells)."""
    before = fake_servers()
    yield
    deadline = time.monotonic() + 10
    while (left := fake_servers() - before) and time.monotonic() < deadline:
        time.sleep(0.05)  # bounded: a server killed at the CLI's exit may take a moment to be reaped
    assert not left, f"fake servers left running: {sorted(left)}"


@pytest.fixture(autouse=True)
def own_token_directory(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command line's default token directory (``$XDG_CONFIG_HOME/mcphost/tokens``) is
    the test's own, never the logins of whoever runs the tests."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home
