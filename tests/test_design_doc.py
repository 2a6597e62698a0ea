"""docs/design.md is drawn from the code: every module is named in it, in the row of its room,
and every room's docstring (its ``__init__.py``) names each of its modules. A module added
without a word in both places fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcphost"


def _rooms() -> dict[str, list[str]]:
    """Room (a package path relative to mcphost/, "" for the top) -> its direct modules and
    sub-packages."""
    rooms: dict[str, list[str]] = {}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        folder = init.parent
        rel = folder.relative_to(PACKAGE).as_posix()
        rel = "" if rel == "." else rel
        names = [p.stem for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        names += [p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
        rooms[rel] = sorted(names)
    return rooms


def _table_rows() -> list[str]:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.startswith("|")]


def test_every_module_is_named_in_the_row_of_its_room() -> None:
    rows = _table_rows()
    missing = []
    for room, names in _rooms().items():
        if room == "":
            for name in names:
                if (PACKAGE / f"{name}.py").exists() and not any(f"`{name}.py`" in row for row in rows):
                    missing.append(f"{name}.py")
            continue
        row = next((r for r in rows if f"`{room}/`" in r.split("|")[2]), None)
        if row is None:
            missing.append(f"{room}/ (no row)")
            continue
        missing += [f"{room}/{name}" for name in names if f"`{name}`" not in row]
    assert missing == [], f"docs/design.md's room table does not name: {missing}"


def test_every_room_docstring_names_its_modules() -> None:
    missing = []
    for room, names in _rooms().items():
        if room == "":
            continue
        doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text(encoding="utf-8"))) or ""
        missing += [f"{room}/{name}" for name in names if not re.search(rf"\b{re.escape(name)}\b", doc)]
    assert missing == [], f"modules their room's __init__ docstring does not name: {missing}"
