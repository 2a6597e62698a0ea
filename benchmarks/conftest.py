"""pytest glue for the benchmarks.

- ``benchmarks/bench_*.py`` files are collected when the directory is given
  (``python -m pytest benchmarks/ --benchmark-only``): the repository's ``python_files``
  only matches ``test_*.py``.
- The checkout's ``mcphost`` is importable without installing it.
- At the end of the session the calls/s ratios and the import-time difference are printed
  with their targets (PASS / BELOW TARGET; never a failure).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _benchutil

_benchutil.ensure_repo_on_path()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)
    ):
        return pytest.Module.from_parent(parent, path=file_path)  # type: ignore[no-any-return]
    return None


def pytest_terminal_summary(terminalreporter: Any) -> None:
    calls = _benchutil.calls_table(_benchutil.CALL_RESULTS)
    imports = _benchutil.import_table(_benchutil.IMPORT_RESULTS)
    if len(calls) <= 1 and not imports:
        return
    write = terminalreporter.write_line
    terminalreporter.section("mcphost vs targets (reported, not asserted)")
    if len(calls) > 1:
        write(
            "calls/s: median of the pytest-benchmark rounds; ratio = mcphost / floor of those "
            "medians; paired = median of the ratios of each mcphost round to the floor round "
            "run just before it (judged against the target)"
        )
        for line in calls:
            write(line)
    if imports:
        if len(calls) > 1:
            write("")
        write("import time: medians of subprocess runs; added = median of paired differences")
        for line in imports:
            write(line)
