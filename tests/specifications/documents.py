"""Running a specification document's code as it is written.

A document's snippet is kept verbatim in the test (a string) and run here: top-level
``await`` allowed, its imports resolved to mcphost's modules through the module names the
document uses (``corteX.interop.mcp.client`` -> ``mcphost.compat.manager``...). The servers it
names are replaced where they would need the network or credentials: a program of the
document (``npx``) is a shim on ``PATH`` that runs the fake server, and a URL is given as the
address of a local server. Each replacement is named by the test that makes it.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from mcphost.testing import package_root


async def run(code: str, namespace: dict[str, Any] | None = None, **replace: str) -> dict[str, Any]:
    """Run ``code`` (``replace``: its literal text -> what runs instead); its namespace."""
    for old, new in replace.items():
        assert old in code, f"{old!r} is not in the document's code"
        code = code.replace(old, new)
    scope: dict[str, Any] = {"__name__": "document", **(namespace or {})}
    compiled = compile(code, "<document>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, scope)
    if result is not None:
        await result
    return scope


def alias_modules(monkeypatch: pytest.MonkeyPatch, modules: dict[str, Any]) -> None:
    """Make ``import a.b.c`` give ``modules["a.b.c"]`` (its parents made as empty packages)."""
    for dotted, module in modules.items():
        parts = dotted.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in sys.modules or not hasattr(sys.modules[parent], "__path__"):
                package = types.ModuleType(parent)
                package.__path__ = []
                monkeypatch.setitem(sys.modules, parent, package)
        monkeypatch.setitem(sys.modules, dotted, module)
        monkeypatch.setattr(sys.modules[".".join(parts[:-1])], parts[-1], module, raising=False)


def program_shim(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, program: str, spec: dict[str, Any]) -> Path:
    """``program`` (e.g. ``npx``), whatever its arguments, runs the fake server with ``spec``:
    a script first on ``PATH``."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    spec_file = tmp_path / f"{program}-spec.json"
    spec_file.write_text(json.dumps(spec))
    shim = bindir / program
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={package_root()!s} exec {sys.executable} -m mcphost.testing "
                    f"--spec-file {spec_file}\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return shim
