"""Every code block of README.md and docs/*.md is checked here, or marked as a fragment.

A block is run or read according to what precedes it and its language:

- ``<!-- example: fake -->`` / ``<!-- example: interop -->`` then ```` ```python ````: a
  complete program, run as written (interop ones start real servers through npx);
- an unmarked ```` ```python ```` block: a complete program too, run the same way;
- an unmarked ```` ```json ```` block parses as JSON, ```` ```jsonc ```` as mcphost reads
  mcp.json (comments, trailing commas);
- ``<!-- fragment: why -->``: a synopsis, an excerpt, an output or a diagram, not run.

Any other block is an error of the docs: it is neither checked nor marked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import needs_npx

ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```\s*$", re.S | re.M)
_MARK = re.compile(r"<!-- (?:example: (fake|interop)|(fragment): \S[^>]*) -->")


def _blocks() -> list[tuple[str, str, str]]:
    """(where, kind, code) of every fenced block; kind: fake, interop, fragment, json,
    jsonc, or "unmarked <language>"."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip().rsplit("\n", 1)[-1].strip()
            mark = _MARK.fullmatch(before)
            language = match.group(1)
            if mark:
                kind = mark.group(1) or "fragment"
                if kind != "fragment" and language != "python":
                    kind = f"unmarked {language or 'block'} (an example mark on a non-python block)"
            elif language == "python":
                kind = "fake"
            elif language in ("json", "jsonc"):
                kind = language
            else:
                kind = f"unmarked {language or 'block'}"
            found.append((f"{path.name}:{line}", kind, match.group(2)))
    return found


BLOCKS = _blocks()


def test_every_block_is_checked_or_marked_as_a_fragment() -> None:
    unmarked = [(where, kind) for where, kind, _ in BLOCKS if kind.startswith("unmarked")]
    assert unmarked == [], "mark these <!-- fragment: why --> or make them complete programs"
    assert len([b for b in BLOCKS if b[0].startswith("README.md") and b[1] in ("fake", "interop")]) >= 2


def test_the_marks_are_well_formed() -> None:
    """A mark that is misspelt would leave its block unmarked; none is."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for comment in re.findall(r"<!--.*?-->", path.read_text(encoding="utf-8")):
            if "example" in comment or "fragment" in comment:
                assert _MARK.fullmatch(comment), f"{path.name}: malformed mark {comment}"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.parametrize(("where", "code"), [(w, c) for w, k, c in BLOCKS if k == "fake"])
def test_example_runs(where: str, code: str) -> None:
    done = _run(code)
    assert done.returncode == 0, done.stderr


@pytest.mark.interop
@needs_npx
@pytest.mark.parametrize(("where", "code"), [(w, c) for w, k, c in BLOCKS if k == "interop"])
def test_interop_example_runs(where: str, code: str) -> None:
    done = _run(code)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("where", "kind", "code"), [b for b in BLOCKS if b[1] in ("json", "jsonc")])
def test_json_blocks_parse(where: str, kind: str, code: str) -> None:
    if kind == "json":
        json.loads(code)
    else:
        from mcphost.config.jsonpos import loads

        loads(code, path="example.jsonc")
