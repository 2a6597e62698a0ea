"""A latency histogram: logarithmic buckets, exact count and sum, min and max.

Layer 1 (no I/O, no clock): the caller measures a duration and passes it in, as integer
nanoseconds (:meth:`Histogram.record_ns`, the hot path: ``time.perf_counter_ns()``
differences) or as seconds (:meth:`Histogram.record`, rounded to the nanosecond).

Layout (the same for every histogram, so any two merge). 1056 buckets, 32 per power of two,
cover ``2**9`` ns (0.5 µs) to ``2**42`` ns (about 73 minutes). A duration of ``ns``
nanoseconds, ``b = ns.bit_length()``, goes to bucket ``32 * (b - 10) + (ns >> (b - 6)) - 32``:
its power of two, then the next five bits below the leading one. Bucket ``i`` thus holds
the integers in ``[(32 + i % 32) * 2**(i // 32 + 4), (33 + i % 32) * 2**(i // 32 + 4))``:
each is at most ``1/32`` (3.1 %) wider than its lower bound. A value below the range (zero
and negatives included) is counted in the first bucket, one at or above it in the last.
NaN is ignored. Memory holds one 8-byte counter per bucket from the lowest that holds a
value to the highest (the latencies of one tool span a few dozen buckets), four numbers
and at most :data:`PENDING` - 1 values not yet in their buckets, however many values are
recorded.

Exactness. ``count`` is exact; ``sum``, ``min`` and ``max`` are exact sums and extremes of
the recorded nanoseconds (a value given in seconds is rounded to the nearest nanosecond
first; an infinity is kept as it is).

Accuracy. :meth:`Histogram.quantile` returns the nearest-rank quantile (the ``ceil(q * n)``-th
smallest value) estimated by the geometric middle of its bucket, clamped to ``[min, max]``.
For values inside the range the relative error is at most ``sqrt(33/32) - 1``, **1.6 %**,
whatever the distribution (plus the nanosecond rounding of a value given in seconds);
``quantile(0)`` and ``quantile(1)`` are exact. :meth:`cumulative_buckets` counts a bucket
under a bound ``le`` when the bucket's middle is ``<= le``: only values within one bucket
(3.1 %) of a bound may be counted on the wrong side of it, and a bound at or above ``max``
(below ``min``) always counts every value (none).

Speed. :meth:`Histogram.record_ns` is on the path of every call: it appends the integer to
a list of at most :data:`PENDING` values. The hottest caller (``call_tool``) does the same
without a call: it appends to :attr:`Histogram.pending` (the same list for the histogram's
life) and calls :meth:`Histogram.fold` when it holds ``PENDING`` values. Every ``PENDING`` values are put in their buckets
at once, sorted (in C). A batch whose values span fewer buckets than half its size (the
latencies of a busy tool, close together though nearly each in its own 3 % bucket) is cut at
the bounds of the buckets it spans in C (one ``bisect`` per bucket, mapped) and its counts
are added to the span's counters at once: no Python step per value or per bucket. A batch
spread wider is taken a bucket that holds values at a time: the bucket of the smallest value
left comes from ``int.bit_length`` and a shift, the number of values in it is where its upper
bound falls in the sorted batch. Sum, min and max come with the sorted batch. No logarithm,
no float. Every read folds what is pending first, so what is read is always exact as
documented above.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from operator import add, sub

__all__ = ["BUCKETS", "DEFAULT_BOUNDS", "HIGHEST", "LOWEST", "MAX_RELATIVE_ERROR", "PENDING", "Histogram", "bucket_index"]

#: Buckets per power of two (``2**_BITS``), and the powers of two of nanoseconds covered.
_BITS = 5
_PER_OCTAVE = 1 << _BITS
_LOW_EXP = 9
_HIGH_EXP = 42
#: Number of buckets (the highest bucket index is ``BUCKETS - 1``).
BUCKETS = (_HIGH_EXP - _LOW_EXP) * _PER_OCTAVE
_LOW_NS = 1 << _LOW_EXP
_HIGH_NS = 1 << _HIGH_EXP
#: The range the buckets cover, in seconds (values outside it go to the end buckets).
LOWEST = _LOW_NS / 1e9
HIGHEST = _HIGH_NS / 1e9
#: The largest relative error of a quantile of values inside the range.
MAX_RELATIVE_ERROR = math.sqrt((_PER_OCTAVE + 1) / _PER_OCTAVE) - 1

#: The ``le`` bounds of the exported histogram, in seconds: the buckets OpenTelemetry's
#: semantic conventions recommend for ``mcp.client.operation.duration`` and
#: ``mcp.server.operation.duration`` (``+Inf`` is added by the exporter).
DEFAULT_BOUNDS: tuple[float, ...] = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)

_LAST = BUCKETS - 1
#: Values a histogram holds before it puts them in their buckets (a bound on its memory:
#: at most 255 ints, about 10 kB; a larger batch is denser, which the fold is cheaper for).
PENDING = 256
# index = 32 * (b - 10) + (ns >> (b - 6)) - 32 = (b << 5) + (ns >> (b - 6)) - _SHIFT
_SHIFT = (_LOW_EXP + 1) * _PER_OCTAVE + _PER_OCTAVE
_TOP = _BITS + 1


def _lower_ns(index: int) -> int:
    return (_PER_OCTAVE + index % _PER_OCTAVE) << (index // _PER_OCTAVE + _LOW_EXP - _BITS)


#: The geometric middle of each bucket, in seconds (the estimate of any value in it).
_MIDDLE: tuple[float, ...] = tuple(
    math.sqrt(_lower_ns(i) * _lower_ns(i + 1)) / 1e9 for i in range(BUCKETS)
)
#: The lower bound of each bucket, in nanoseconds (a dense batch is cut at them, in C).
_LOWER_NS: tuple[int, ...] = tuple(_lower_ns(i) for i in range(BUCKETS))




def bucket_index(ns: int) -> int:
    """The bucket of a duration of ``ns`` nanoseconds (what :meth:`Histogram.record_ns` uses)."""
    if _LOW_NS <= ns < _HIGH_NS:
        b = ns.bit_length()
        return (b << _BITS) + (ns >> (b - _TOP)) - _SHIFT
    return 0 if ns < _LOW_NS else _LAST


def bucket_bounds(index: int) -> tuple[float, float]:
    """The ``[lower, upper)`` range of bucket ``index``, in seconds."""
    if not 0 <= index < BUCKETS:
        raise IndexError(f"bucket {index} is outside 0..{BUCKETS - 1}")
    return (_lower_ns(index) / 1e9, _lower_ns(index + 1) / 1e9)


class Histogram:
    """Durations: count, sum, exact min and max, quantiles within 1.6 %."""

    __slots__ = ("_base", "_counts", "_folded", "_max", "_min", "_sum", "pending")

    def __init__(self) -> None:
        #: Values in buckets ``_base``, ``_base + 1``... up to the highest that holds one
        #: (8 bytes a bucket, over the span of the values seen; nothing when empty).
        self._counts = array("Q")
        self._base = 0
        #: Values recorded but not yet in the buckets (at most ``PENDING - 1`` of them after
        #: a record): appended to by ``record_ns`` or by a caller that then calls ``fold()``
        #: once it holds ``PENDING``. Always the same list.
        self.pending: list[int] = []
        self._folded = 0
        # Nanoseconds (ints; a float only once an infinity was recorded).
        self._sum: float = 0
        self._min: float = math.inf
        self._max: float = -math.inf

    def record_ns(self, ns: int) -> None:
        """Count one duration of ``ns`` nanoseconds (the hot path: an append, mostly)."""
        pending = self.pending
        pending.append(ns)
        if len(pending) >= PENDING:
            self.fold()

    def fold(self) -> None:
        """Put the pending values into their buckets (see Speed)."""
        pending = self.pending
        if not pending:
            return
        values = sorted(pending)
        pending.clear()
        size = len(values)
        low = bucket_index(values[0])
        high = bucket_index(values[-1])
        if high - low < size >> 1:
            self._fold_dense(values, low, high)
        else:
            self._fold_sparse(values)
        self._folded += size
        self._sum += sum(values)
        if values[0] < self._min:
            self._min = values[0]
        if values[-1] > self._max:
            self._max = values[-1]

    def _fold_dense(self, values: list[int], low: int, high: int) -> None:
        """A sorted batch spanning fewer buckets than half its values (latencies close
        together): where each bucket of the span ends in the batch is found in C, one
        ``bisect`` per bucket, and the span's counters are added to at once; no Python
        step per bucket. Values below (above) the range are in bucket 0 (the last) here too:
        no bound below bucket 1 (above the last's lower bound) is ever looked for."""
        if not (self._counts and self._base <= low and high < self._base + len(self._counts)):
            self._bump(low, 0)  # widen the counters over the span first (adds nothing)
            self._bump(high, 0)
        ends = [*map(bisect_left, repeat(values), _LOWER_NS[low + 1:high + 1]), len(values)]
        counts = self._counts
        start = low - self._base
        stop = start + len(ends)
        counts[start:stop] = array("Q", map(add, counts[start:stop], map(sub, ends, [0, *ends])))

    def _fold_sparse(self, values: list[int]) -> None:
        """A sorted batch spread over many buckets: taken a bucket that holds values at a
        time; the bucket of the smallest value left from ``int.bit_length`` and a shift, the
        number of values in it from where its upper bound falls in the batch."""
        counts = self._counts
        base = self._base
        span = len(counts)
        size = len(values)
        at = 0
        while at < size:
            ns = values[at]
            if ns < _LOW_NS:
                index, end = 0, bisect_left(values, _LOW_NS, at + 1)
            elif ns < _HIGH_NS:
                b = ns.bit_length()
                shift = b - _TOP
                top = ns >> shift
                index = (b << _BITS) + top - _SHIFT
                end = bisect_left(values, (top + 1) << shift, at + 1)  # the first value past the bucket
            else:
                index, end = _LAST, size
            if 0 <= index - base < span:
                counts[index - base] += end - at
            else:
                self._bump(index, end - at)
                counts, base, span = self._counts, self._base, len(self._counts)
            at = end

    def record(self, seconds: float) -> None:
        """Count one duration given in seconds (rounded to the nanosecond; NaN is ignored)."""
        ns = seconds * 1e9
        if ns - ns == 0.0:  # finite (an infinity or NaN gives NaN)
            self.record_ns(round(ns))
        elif ns == ns:  # noqa: PLR0124 - an infinity: counted at its end, kept as it is
            self.fold()
            self._bump(_LAST if ns > 0 else 0, 1)
            self._folded += 1
            self._sum += ns
            self._min = min(self._min, ns)
            self._max = max(self._max, ns)
        # NaN: a caller's bug, ignored (it would poison the sum).

    def _bump(self, index: int, n: int) -> None:
        """Add ``n`` values to bucket ``index``, widening the span of counters to hold it."""
        counts = self._counts
        if not counts:
            self._base = index
            counts.append(0)
        elif index < self._base:
            wider = array("Q", bytes(8 * (self._base - index)))
            wider.extend(counts)
            self._counts = counts = wider
            self._base = index
        elif index >= self._base + len(counts):
            counts.extend(array("Q", bytes(8 * (index - self._base - len(counts) + 1))))
        counts[index - self._base] += n

    def _filled(self) -> list[tuple[int, int]]:
        """``(index, values)`` of every bucket that holds a value, in order."""
        self.fold()
        base = self._base
        return [(base + i, n) for i, n in enumerate(self._counts) if n]

    @property
    def count(self) -> int:
        """Values recorded (NaN excluded)."""
        return self._folded + len(self.pending)

    @property
    def sum(self) -> float:
        """The sum of the values recorded, in seconds."""
        self.fold()
        return self._sum / 1e9

    @property
    def min(self) -> float:
        """The smallest value recorded, in seconds (NaN when empty)."""
        self.fold()
        return self._min / 1e9 if self._folded else math.nan

    @property
    def max(self) -> float:
        """The largest value recorded, in seconds (NaN when empty)."""
        self.fold()
        return self._max / 1e9 if self._folded else math.nan

    @property
    def mean(self) -> float:
        """The mean of the values recorded, in seconds (NaN when empty)."""
        self.fold()
        return self._sum / 1e9 / self._folded if self._folded else math.nan

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"<Histogram count={self.count} sum={self.sum:g}>"

    def quantile(self, q: float) -> float:
        """The nearest-rank ``q``-quantile, ``0 <= q <= 1``, in seconds (NaN when empty)."""
        return self.quantiles((q,))[0]

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        """Several quantiles in one pass over the buckets (for ``p50``, ``p95``, ``p99``)."""
        for q in qs:
            if not 0.0 <= q <= 1.0:  # also refuses NaN
                raise ValueError(f"quantile {q!r} is not between 0 and 1")
        self.fold()
        n = self._folded
        if not n:
            return [math.nan] * len(qs)
        low, high = self.min, self.max
        # Nearest rank: the ceil(q * n)-th smallest value, at least the first.
        order = sorted(range(len(qs)), key=qs.__getitem__)
        out = [math.nan] * len(qs)
        filled = self._filled()
        seen = 0
        at = 0
        for k in order:
            q = qs[k]
            if q == 0.0:
                out[k] = low
                continue
            if q == 1.0:
                out[k] = high
                continue
            rank = max(1, math.ceil(q * n))
            while seen + filled[at][1] < rank:
                seen += filled[at][1]
                at += 1
            out[k] = min(high, max(low, _MIDDLE[filled[at][0]]))
        return out

    def cumulative_buckets(self, bounds: Iterable[float] = DEFAULT_BOUNDS) -> list[tuple[float, int]]:
        """``(le, values <= le)`` for each bound in ascending order, then ``(inf, count)``:
        the ``_bucket`` series of a Prometheus histogram. Exact for a bound at or above
        ``max`` or below ``min``; otherwise only values within one bucket (3.1 %) of the
        bound may be counted on the wrong side of it."""
        ordered = sorted({float(b) for b in bounds if not math.isnan(b) and b != math.inf})
        out: list[tuple[float, int]] = []
        self.fold()
        filled = self._filled()
        total = self._folded
        low, high = self.min, self.max
        seen = 0
        at = 0
        for le in ordered:
            if not total or le < low:
                out.append((le, 0))
                continue
            if le >= high:
                out.append((le, total))
                continue
            stop = bisect_right(_MIDDLE, le)  # buckets whose middle is <= le
            while at < len(filled) and filled[at][0] < stop:
                seen += filled[at][1]
                at += 1
            out.append((le, seen))
        out.append((math.inf, total))
        return out

    def buckets(self) -> Iterator[tuple[float, float, int]]:
        """``(lower, upper, count)`` of every bucket that holds a value, in order."""
        for index, n in self._filled():
            low, high = bucket_bounds(index)
            yield low, high, n

    def bucket_counts(self) -> tuple[int, ...]:
        """The counters of all :data:`BUCKETS` buckets, in order (a copy)."""
        counts = [0] * BUCKETS
        for index, n in self._filled():
            counts[index] = n
        return tuple(counts)

    def merge(self, other: Histogram) -> Histogram:
        """Add ``other``'s values to this histogram (the layout is shared); returns self."""
        other.fold()
        if not other._folded:
            return self
        self.fold()
        for index, n in other._filled():
            self._bump(index, n)
        self._folded += other._folded
        self._sum += other._sum
        if other._min < self._min:
            self._min = other._min
        if other._max > self._max:
            self._max = other._max
        return self

    def copy(self) -> Histogram:
        new = Histogram()
        return new.merge(self)

    def clear(self) -> None:
        self._counts = array("Q")
        self._base = 0
        self.pending.clear()
        self._folded = 0
        self._sum = 0
        self._min = math.inf
        self._max = -math.inf
