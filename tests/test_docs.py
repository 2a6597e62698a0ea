"""The examples of README.md and docs/*.md are complete programs: each one marked
``<!-- example: fake -->`` or ``<!-- example: interop -->`` runs here, as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import needs_npx

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"<!-- example: (fake|interop) -->\s*\n```python\n(.*?)\n```", re.S)


def _examples() -> list[tuple[str, str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for n, match in enumerate(_BLOCK.finditer(text), 1):
            found.append((f"{path.name}#{n}", match.group(1), match.group(2)))
    return found


EXAMPLES = _examples()


def test_the_readme_examples_are_marked() -> None:
    assert len([e for e in EXAMPLES if e[0].startswith("README.md")]) >= 2


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.parametrize(("name", "code"), [(n, c) for n, k, c in EXAMPLES if k == "fake"])
def test_example_runs(name: str, code: str) -> None:
    done = _run(code)
    assert done.returncode == 0, done.stderr


@pytest.mark.interop
@needs_npx
@pytest.mark.parametrize(("name", "code"), [(n, c) for n, k, c in EXAMPLES if k == "interop"])
def test_interop_example_runs(name: str, code: str) -> None:
    done = _run(code)
    assert done.returncode == 0, done.stderr
