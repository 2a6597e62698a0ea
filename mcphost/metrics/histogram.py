"""A fixed-memory latency histogram: logarithmic buckets, exact count, sum, min and max.

Layer 1 (no I/O, no clock): the caller measures a duration and passes it in seconds.

Layout (the same for every histogram, so any two merge). 512 buckets, 16 per power of two,
cover ``2**-20`` s (about 0.95 µs) to ``2**12`` s (4096 s, about 68 minutes). Bucket ``i``
holds the values in ``[2**((i - 320) / 16), 2**((i - 319) / 16))``: each bucket is about
4.4 % wider than the one below it. A value below the range (zero and negatives included)
is counted in the first bucket, one at or above it in the last; ``min`` and ``max`` stay
exact whatever the value. NaN is ignored. Memory is one list of 512 counters and four
numbers, however many values are recorded.

Accuracy. :meth:`Histogram.quantile` returns the nearest-rank quantile (the ``ceil(q * n)``-th
smallest value) estimated by the geometric middle of its bucket, clamped to ``[min, max]``.
For values inside the range the relative error is at most ``2**(1/32) - 1``, **2.2 %**, whatever
the distribution; ``quantile(0)`` and ``quantile(1)`` are exact. :meth:`cumulative_buckets`
counts a bucket under a bound ``le`` when the bucket's middle is ``<= le``: only values
within one bucket (4.4 %) of a bound may be counted on the wrong side of it, and a bound at
or above ``max`` (below ``min``) always counts every value (none).

Speed. :meth:`Histogram.record` is on the path of every call: one range test, one
``math.log2``, one list increment and the four running numbers, no search.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from math import log2

__all__ = ["BUCKETS", "DEFAULT_BOUNDS", "HIGHEST", "LOWEST", "MAX_RELATIVE_ERROR", "Histogram"]

#: Buckets per power of two, and the powers of two the buckets cover.
_PER_OCTAVE = 16
_LOW_EXP = -20
_HIGH_EXP = 12
#: Number of buckets (the number of counters every histogram holds).
BUCKETS = (_HIGH_EXP - _LOW_EXP) * _PER_OCTAVE
#: The range the buckets cover, in seconds (values outside it go to the end buckets).
LOWEST = 2.0**_LOW_EXP
HIGHEST = 2.0**_HIGH_EXP
#: The largest relative error of a quantile of values inside the range.
MAX_RELATIVE_ERROR = 2.0 ** (1 / (2 * _PER_OCTAVE)) - 1

#: The ``le`` bounds of the exported histogram, in seconds: the buckets OpenTelemetry's
#: semantic conventions recommend for ``mcp.client.operation.duration`` and
#: ``mcp.server.operation.duration`` (``+Inf`` is added by the exporter).
DEFAULT_BOUNDS: tuple[float, ...] = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)

_OFFSET = float(-_LOW_EXP * _PER_OCTAVE)
_SCALE = float(_PER_OCTAVE)
# Values in [_FAST_HIGH, HIGHEST) belong to the last bucket anyway; keeping them off the
# fast path means log2 rounding up to exactly 12.0 can never index past the end.
_FAST_HIGH = HIGHEST * (1 - 2.0**-20)
_LAST = BUCKETS - 1

#: The geometric middle of each bucket (the estimate of any value in it).
_MIDDLE: tuple[float, ...] = tuple(
    2.0 ** ((i + 0.5) / _PER_OCTAVE + _LOW_EXP) for i in range(BUCKETS)
)


def bucket_bounds(index: int) -> tuple[float, float]:
    """The ``[lower, upper)`` range of bucket ``index``, in seconds."""
    if not 0 <= index < BUCKETS:
        raise IndexError(f"bucket {index} is outside 0..{BUCKETS - 1}")
    return (2.0 ** (index / _PER_OCTAVE + _LOW_EXP), 2.0 ** ((index + 1) / _PER_OCTAVE + _LOW_EXP))


class Histogram:
    """Durations in seconds: count, sum, exact min and max, quantiles within 2.2 %."""

    __slots__ = ("_counts", "_max", "_min", "count", "sum")

    def __init__(self) -> None:
        self._counts = [0] * BUCKETS
        #: Values recorded (NaN excluded), and their sum.
        self.count = 0
        self.sum = 0.0
        self._min = math.inf
        self._max = -math.inf

    def record(self, seconds: float) -> None:
        """Count one duration (the hot path: keep it short)."""
        if LOWEST <= seconds < _FAST_HIGH:
            self._counts[int(log2(seconds) * _SCALE + _OFFSET)] += 1
        elif seconds != seconds:  # noqa: PLR0124 - NaN: a caller's bug, and it would poison the sum
            return
        else:
            self._counts[0 if seconds < LOWEST else _LAST] += 1
        self.count += 1
        self.sum += seconds
        if seconds < self._min:
            self._min = seconds
        if seconds > self._max:
            self._max = seconds

    @property
    def min(self) -> float:
        """The smallest value recorded (NaN when empty)."""
        return self._min if self.count else math.nan

    @property
    def max(self) -> float:
        """The largest value recorded (NaN when empty)."""
        return self._max if self.count else math.nan

    @property
    def mean(self) -> float:
        """The mean of the values recorded (NaN when empty)."""
        return self.sum / self.count if self.count else math.nan

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"<Histogram count={self.count} sum={self.sum:g}>"

    def quantile(self, q: float) -> float:
        """The nearest-rank ``q``-quantile, ``0 <= q <= 1`` (NaN when empty)."""
        return self.quantiles((q,))[0]

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        """Several quantiles in one pass over the buckets (for ``p50``, ``p95``, ``p99``)."""
        for q in qs:
            if not 0.0 <= q <= 1.0:  # also refuses NaN
                raise ValueError(f"quantile {q!r} is not between 0 and 1")
        n = self.count
        if not n:
            return [math.nan] * len(qs)
        low, high = self._min, self._max
        # Nearest rank: the ceil(q * n)-th smallest value, at least the first.
        order = sorted(range(len(qs)), key=qs.__getitem__)
        out = [math.nan] * len(qs)
        seen = 0
        index = 0
        counts = self._counts
        for k in order:
            q = qs[k]
            if q == 0.0:
                out[k] = low
                continue
            if q == 1.0:
                out[k] = high
                continue
            rank = max(1, math.ceil(q * n))
            while seen + counts[index] < rank:
                seen += counts[index]
                index += 1
            out[k] = min(high, max(low, _MIDDLE[index]))
        return out

    def cumulative_buckets(self, bounds: Iterable[float] = DEFAULT_BOUNDS) -> list[tuple[float, int]]:
        """``(le, values <= le)`` for each bound in ascending order, then ``(inf, count)``:
        the ``_bucket`` series of a Prometheus histogram. Exact for a bound at or above
        ``max`` or below ``min``; otherwise only values within one bucket (4.4 %) of the
        bound may be counted on the wrong side of it."""
        ordered = sorted({float(b) for b in bounds if not math.isnan(b) and b != math.inf})
        out: list[tuple[float, int]] = []
        counts = self._counts
        total = self.count
        seen = 0
        index = 0
        for le in ordered:
            if not total or le < self._min:
                out.append((le, 0))
                continue
            if le >= self._max:
                out.append((le, total))
                continue
            stop = bisect_right(_MIDDLE, le)  # buckets whose middle is <= le
            seen += sum(counts[index:stop])
            index = max(index, stop)
            out.append((le, seen))
        out.append((math.inf, total))
        return out

    def buckets(self) -> Iterator[tuple[float, float, int]]:
        """``(lower, upper, count)`` of every bucket that holds a value, in order."""
        for i, n in enumerate(self._counts):
            if n:
                low, high = bucket_bounds(i)
                yield low, high, n

    def bucket_counts(self) -> tuple[int, ...]:
        """A copy of the counters (always :data:`BUCKETS` of them)."""
        return tuple(self._counts)

    def merge(self, other: Histogram) -> Histogram:
        """Add ``other``'s values to this histogram (the layout is shared); returns self."""
        if not other.count:
            return self
        self._counts = [a + b for a, b in zip(self._counts, other._counts)]
        self.count += other.count
        self.sum += other.sum
        if other._min < self._min:
            self._min = other._min
        if other._max > self._max:
            self._max = other._max
        return self

    def copy(self) -> Histogram:
        new = Histogram()
        return new.merge(self)

    def clear(self) -> None:
        self._counts = [0] * BUCKETS
        self.count = 0
        self.sum = 0.0
        self._min = math.inf
        self._max = -math.inf
