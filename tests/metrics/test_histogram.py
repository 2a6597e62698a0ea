"""The latency histogram: exact running numbers, quantiles within the documented error,
fixed memory, merging, and the cumulative buckets Prometheus reads."""

from __future__ import annotations

import math
import random
import sys

import pytest

from mcphost.metrics.histogram import (
    BUCKETS,
    DEFAULT_BOUNDS,
    HIGHEST,
    LOWEST,
    MAX_RELATIVE_ERROR,
    PENDING,
    Histogram,
    bucket_bounds,
    bucket_index,
)


def exact_quantile(ordered: list[float], q: float) -> float:
    """Nearest rank: the ceil(q * n)-th smallest value."""
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def test_the_documented_error_bound() -> None:
    assert MAX_RELATIVE_ERROR <= 0.016
    assert BUCKETS == 1056
    assert LOWEST < 1e-6 and HIGHEST > 3600


def test_empty() -> None:
    h = Histogram()
    assert h.count == 0 and h.sum == 0.0 and len(h) == 0
    assert math.isnan(h.min) and math.isnan(h.max) and math.isnan(h.mean)
    assert math.isnan(h.quantile(0.5))
    assert h.cumulative_buckets((0.1, 1.0)) == [(0.1, 0), (1.0, 0), (math.inf, 0)]
    assert list(h.buckets()) == []


def test_running_numbers_are_exact() -> None:
    h = Histogram()
    for v in (0.25, 0.5, 1.5, 0.003):
        h.record(v)
    assert h.count == 4
    assert h.sum == pytest.approx(2.253)
    assert h.min == 0.003 and h.max == 1.5
    assert h.mean == pytest.approx(2.253 / 4)
    assert h.quantile(0) == 0.003 and h.quantile(1) == 1.5


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_quantiles_of_lognormal_latencies(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.lognormvariate(math.log(0.05), 1.2) for _ in range(20_000)]
    h = Histogram()
    for v in values:
        h.record(v)
    ordered = sorted(values)
    qs = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)
    estimates = h.quantiles(qs)
    for q, got in zip(qs, estimates):
        want = exact_quantile(ordered, q)
        assert abs(got - want) / want <= MAX_RELATIVE_ERROR + 1e-12, (q, got, want)
        assert h.quantile(q) == got
    # Exact to the nanosecond a value given in seconds is rounded to.
    assert h.min == pytest.approx(ordered[0], abs=5e-10) and h.max == pytest.approx(ordered[-1], abs=5e-10)
    assert h.sum == pytest.approx(math.fsum(values))


def test_quantiles_of_few_values() -> None:
    h = Histogram()
    for v in (0.010, 0.020, 0.030, 0.040):
        h.record(v)
    for q, want in ((0.25, 0.010), (0.5, 0.020), (0.75, 0.030), (0.99, 0.040)):
        assert abs(h.quantile(q) - want) / want <= MAX_RELATIVE_ERROR
    one = Histogram()
    one.record(0.1234)
    assert one.quantile(0.5) == 0.1234  # clamped to [min, max]: a single value is exact


def test_every_value_lands_in_the_bucket_that_holds_it() -> None:
    for i in (0, 1, 17, 255, 320, 500, BUCKETS - 1):
        low, high = bucket_bounds(i)
        assert 1 + 1 / 64 <= high / low <= 1 + 1 / 32
        for v in (low, math.sqrt(low * high), high - 1e-9):  # its first and last nanosecond
            h = Histogram()
            h.record(v)
            assert h.bucket_counts()[i] == 1, (i, v)
    with pytest.raises(IndexError):
        bucket_bounds(BUCKETS)


def test_values_outside_the_range_clamp_but_min_and_max_stay_exact() -> None:
    h = Histogram()
    for v in (0.0, -1.0, 1e-9, 5000.0, 1e9, math.inf):
        h.record(v)
    counts = h.bucket_counts()
    assert counts[0] == 3 and counts[-1] == 3 and sum(counts) == 6
    assert h.min == -1.0 and h.max == math.inf
    assert h.quantile(0) == -1.0
    nan_free = Histogram()
    nan_free.record(math.nan)
    assert nan_free.count == 0 and nan_free.sum == 0.0
    near_top = Histogram()
    near_top.record(HIGHEST * (1 - 1e-17))  # log2 may round to the top exponent: still in range
    near_top.record(math.nextafter(HIGHEST, 0.0))
    assert near_top.bucket_counts()[-1] == 2


def test_memory_is_sized_by_what_it_holds_and_does_not_grow() -> None:
    h = Histogram()
    empty = sys.getsizeof(h._counts)
    assert empty < 100  # no counter for a bucket that holds nothing
    rng = random.Random(7)
    values = [rng.expovariate(10.0) for _ in range(1000)]
    record = h.record
    for value in values:
        record(value)
    assert h.count == 1000 and h.max > 0  # a read of the values puts what is pending in the buckets
    assert not h.pending
    size = sys.getsizeof(h._counts)
    filled = len(h._counts)
    for _ in range(999):  # a million observations
        for value in values:
            record(value)
    assert len(h.bucket_counts()) == BUCKETS
    assert len(h.pending) < PENDING
    assert h.count == 1_000_000 and h.max > 0 and not h.pending
    assert sys.getsizeof(h._counts) == size and len(h._counts) == filled
    assert h.count == 1_000_000 == sum(h.bucket_counts())
    steady = Histogram()
    for _ in range(10_000):  # a steady latency: one counter
        steady.record_ns(1_234_567)
    assert len(steady._counts) == 1 and steady.count == 10_000


def test_integer_nanoseconds_are_the_hot_path() -> None:
    h = Histogram()
    for ns in (1500, 2_000_000, 2_000_001, 7_000_000_000):
        h.record_ns(ns)
    assert h.count == 4
    assert h.sum == (1500 + 2_000_000 + 2_000_001 + 7_000_000_000) / 1e9  # an exact integer sum
    assert h.min == 1.5e-6 and h.max == 7.0
    seconds = Histogram()
    for v in (1.5e-6, 0.002, 0.002000001, 7.0):
        seconds.record(v)
    assert seconds.bucket_counts() == h.bucket_counts()  # one layout, whichever unit was given
    # The bucket of every integer is the one whose bounds hold it (edges included).
    for i in range(BUCKETS):
        low, high = (round(b * 1e9) for b in bucket_bounds(i))
        assert bucket_index(low) == i and bucket_index(high - 1) == i
        assert bucket_index(high) == min(i + 1, BUCKETS - 1)
    assert bucket_index(0) == bucket_index(-5) == bucket_index(511) == 0
    assert bucket_index(2**60) == BUCKETS - 1


def test_batched_buckets_are_the_buckets_of_each_value() -> None:
    # Values are put in their buckets PENDING at a time (a sorted batch, a bucket at a time):
    # the same bucket as bucket_index says, edges, clamped and mixed batches included.
    rng = random.Random(3)
    values = [rng.randrange(1, 2**44) for _ in range(5000)]
    for i in range(BUCKETS):
        low, high = (round(b * 1e9) for b in bucket_bounds(i))
        values += [low, high - 1]
    values += [0, -7, 511, 512, 2**42 - 1, 2**42, 2**53 + 1]
    rng.shuffle(values)
    h = Histogram()
    for ns in values:
        h.record_ns(ns)
    want = [0] * BUCKETS
    for ns in values:
        want[bucket_index(ns)] += 1
    assert list(h.bucket_counts()) == want
    assert h.count == len(values)
    assert h.sum == sum(values) / 1e9 and h.min == -7e-9 and h.max == (2**53 + 1) / 1e9
    inside = Histogram()
    for ns in values:
        if 512 <= ns < 2**42:
            inside.record_ns(ns)
    assert sum(inside.bucket_counts()) == inside.count


def test_merge() -> None:
    rng = random.Random(11)
    a_values = [rng.lognormvariate(-3, 1) for _ in range(3000)]
    b_values = [rng.lognormvariate(-1, 0.5) for _ in range(2000)]
    a, b, both = Histogram(), Histogram(), Histogram()
    for v in a_values:
        a.record(v)
        both.record(v)
    for v in b_values:
        b.record(v)
        both.record(v)
    assert a.merge(b) is a
    assert a.bucket_counts() == both.bucket_counts()
    assert a.count == both.count and a.min == both.min and a.max == both.max
    assert a.sum == pytest.approx(both.sum)
    assert a.quantiles((0.5, 0.99)) == both.quantiles((0.5, 0.99))
    assert b.count == 2000  # the other is left alone
    assert a.merge(Histogram()).count == 5000
    empty = Histogram().merge(b)
    assert empty.min == b.min and empty.count == 2000
    copy = b.copy()
    copy.record(1.0)
    assert copy.count == 2001 and b.count == 2000
    copy.clear()
    assert copy.count == 0 and sum(copy.bucket_counts()) == 0


def test_cumulative_buckets() -> None:
    h = Histogram()
    for v in (0.005, 0.015, 0.03, 0.07, 0.3, 0.3, 4.0, 400.0):
        h.record(v)
    got = h.cumulative_buckets()
    assert [le for le, _ in got] == [*DEFAULT_BOUNDS, math.inf]
    assert dict(got) == {
        0.01: 1, 0.02: 2, 0.05: 3, 0.1: 4, 0.2: 4, 0.5: 6, 1.0: 6, 2.0: 6, 5.0: 7, 10.0: 7,
        30.0: 7, 60.0: 7, 120.0: 7, 300.0: 7, math.inf: 8,
    }
    counts = [n for _, n in got]
    assert counts == sorted(counts)
    # Unsorted, duplicated and infinite bounds are tidied; a bound at max counts everything.
    assert h.cumulative_buckets([400.0, 0.01, 0.01, math.inf]) == [(0.01, 1), (400.0, 8), (math.inf, 8)]
    assert h.cumulative_buckets([0.001]) == [(0.001, 0), (math.inf, 8)]


def test_cumulative_buckets_are_close_on_random_data() -> None:
    rng = random.Random(5)
    values = [rng.lognormvariate(math.log(0.2), 1.5) for _ in range(10_000)]
    h = Histogram()
    for v in values:
        h.record(v)
    for le, n in h.cumulative_buckets():
        if le == math.inf:
            assert n == len(values)
            continue
        # Only values within one bucket of the bound may fall on the wrong side.
        surely_below = sum(v <= le / (1 + 2 * MAX_RELATIVE_ERROR) for v in values)
        maybe_below = sum(v <= le * (1 + 2 * MAX_RELATIVE_ERROR) for v in values)
        assert surely_below <= n <= maybe_below


def test_quantile_arguments() -> None:
    h = Histogram()
    h.record(1.0)
    for bad in (-0.1, 1.1, math.nan):
        with pytest.raises(ValueError):
            h.quantile(bad)
    assert repr(h).startswith("<Histogram count=1")
    assert list(h.buckets()) == [(*bucket_bounds(bucket_index(10**9)), 1)]


def test_dense_batches_are_the_buckets_of_each_value() -> None:
    # A batch whose values span fewer buckets than half its size (latencies close together)
    # is cut at the buckets' bounds at once: the same buckets as bucket_index says, at the
    # bucket edges, at both ends of the range (values clamped into them included) and when
    # the counters must widen below and above what they held.
    rng = random.Random(5)
    h = Histogram()
    want = [0] * BUCKETS
    total = 0
    for first in (0, 1, 500, 17, BUCKETS - 40, BUCKETS - 1, 300, 3, BUCKETS - 2):
        span = rng.randrange(1, PENDING // 2 - 2)
        first = min(first, BUCKETS - span)
        edges = [round(b * 1e9) for i in range(first, first + span) for b in bucket_bounds(i)]
        batch = [edges[0], edges[-1] - 1]
        batch += [rng.randrange(edges[0], edges[-1]) for _ in range(PENDING // 3)]
        near = [e - d for e in edges for d in (0, 1)]
        batch += rng.sample(near, min(len(near), PENDING // 3))
        if first == 0:
            batch += [0, -3, 511]  # below the range: the first bucket
        if first + span == BUCKETS:
            batch += [2**42, 2**50]  # above it: the last bucket
        batch = [ns for ns in batch if bucket_index(ns) in range(first, first + span)]
        batch += [batch[0]] * (PENDING - len(batch))
        rng.shuffle(batch)
        for ns in batch:
            h.record_ns(ns)
            want[bucket_index(ns)] += 1
        total += sum(batch)
        assert not h.pending  # a batch of PENDING values went to its buckets
        assert list(h.bucket_counts()) == want
    assert h.count == sum(want) and h.sum == total / 1e9
