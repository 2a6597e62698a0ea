"""DESIGN §1: dependencies point downward only; the core does no I/O."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcphost"

LAYER = {
    "errors": 0, "types": 0, "version": 0, "_json": 0,
    "wire": 1, "protocol": 1, "config": 1, "jsonpos": 1, "schema": 1, "metrics": 1,
    "process": 2, "transports": 2,
    "connection": 3, "rpc": 3, "client": 3,
    "server": 4, "host": 4, "cli": 4, "__init__": 4, "__main__": 4,
}
# Modules of layer 1 must not touch the outside world.
FORBIDDEN_IN_CORE = {"asyncio", "subprocess", "socket", "time", "selectors",
                     "urllib.request", "http.client", "signal"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "testing":
            continue  # the fake server is a separate, stdlib-only program
        out.append((rel.parts[0].removesuffix(".py"), path))
    return out


def _imports(path: Path) -> list[tuple[str, int]]:
    """(module, level) of every import in the file; level>0 for relative imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.append((node.module or "", 0))
            else:
                mods = [node.module] if node.module else [a.name for a in node.names]
                found += [(m or "", node.level) for m in mods]
    return found


def test_every_module_has_a_layer() -> None:
    unknown = {top for top, _ in _modules() if top not in LAYER}
    assert unknown == set()


def test_imports_point_downward() -> None:
    problems = []
    for top, path in _modules():
        mine = LAYER[top]
        inside_sub = path.parent != PACKAGE
        for module, level in _imports(path):
            if level == 0:
                if module.startswith("mcphost."):
                    target = module.split(".")[1]
                elif module == "mcphost":
                    continue
                else:
                    if mine == 1 and (module in FORBIDDEN_IN_CORE or module.split(".")[0] in
                                      {"asyncio", "subprocess", "socket", "selectors"}):
                        problems.append(f"{path.name}: layer-1 module imports {module}")
                    continue
            else:
                if inside_sub and level == 1:
                    continue  # a sibling inside the same sub-package
                target = module.split(".")[0]
            if target == "testing":
                problems.append(f"{path.name}: imports the fake server")
                continue
            if target in LAYER and LAYER[target] > mine and top not in ("__init__",):
                problems.append(f"{path.relative_to(PACKAGE)} (layer {mine}) imports {target} (layer {LAYER[target]})")
    assert problems == []


def test_core_reads_no_environment() -> None:
    for top, path in _modules():
        if LAYER[top] == 1:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
                        and isinstance(node.value, ast.Name) and node.value.id == "os"):
                    raise AssertionError(f"{path.name}:{node.lineno} reads the environment")


def test_fake_server_is_standalone() -> None:
    for path in (PACKAGE / "testing").rglob("*.py"):
        for module, level in _imports(path):
            assert level <= 1, f"{path.name} imports outside mcphost.testing"
            assert not module.startswith("mcphost.") or module.startswith("mcphost.testing"), path.name
