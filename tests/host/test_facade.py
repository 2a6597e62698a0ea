"""The facade: importing the package stays light, MCPHost is loaded on first use."""

from __future__ import annotations

import sys

import pytest

import mcphost
from mcphost import MCPHost

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_import_is_light() -> None:
    # The facade is loaded lazily; importing the package does not import asyncio.
    import subprocess

    code = "import sys, mcphost; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert mcphost.MCPHost is MCPHost
