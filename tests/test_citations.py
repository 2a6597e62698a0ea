"""Comments and docstrings cite only what is in the repository: every requirement id of the
specification documents cited in ``mcphost/`` is quoted in ``docs/specifications.md``, and no
comment points into a reference that does not ship with the code (``§A.4``-style sections)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcphost"
CITED = re.compile(r"\b((?:FR|TR)\d+(?:\.\d+)?)\b")


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_cited_requirement_id_is_quoted_in_the_docs() -> None:
    quoted = set(CITED.findall((ROOT / "docs" / "specifications.md").read_text(encoding="utf-8").split(
        "## Requirement ids cited in the code", 1)[1].split("\n## ", 1)[0]))
    missing = {}
    for path in _sources():
        for cited in CITED.findall(path.read_text(encoding="utf-8")):
            if cited not in quoted:
                missing.setdefault(cited, path.relative_to(ROOT).as_posix())
    assert missing == {}, f"requirement ids cited in the code but not quoted in docs/specifications.md: {missing}"


def test_no_comment_cites_a_section_of_a_document_outside_the_repository() -> None:
    found = [f"{path.relative_to(ROOT).as_posix()}:{n}"
             for path in _sources()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"§[A-Z]\.\d", line)]
    assert found == []
