"""The throttle of repeated diagnostics: the first few, then one in ``every``."""

from __future__ import annotations

import pytest

from mcphost.transports.throttle import Throttle


def test_first_then_one_in_every() -> None:
    throttle = Throttle(first=5, every=1000)
    told = [n for n in range(1, 100_001) if throttle.tick()]
    assert told[:5] == [1, 2, 3, 4, 5] and len(told) == 5 + 100  # was 100,000 lines
    assert told[5:8] == [1000, 2000, 3000] and throttle.count == 100_000
    assert "100000 so far" in throttle.suffix()


def test_suffix_says_when_counting_starts() -> None:
    throttle = Throttle(first=2, every=10)
    throttle.tick()
    assert throttle.suffix() == ""
    throttle.tick()
    assert "one in 10" in throttle.suffix()
    with pytest.raises(ValueError):
        Throttle(every=0)
