"""The TTL + LRU cache, on a clock that moves only when the test says so."""

from __future__ import annotations

import math

import pytest

from mcphost.cache import MISS, Cache, Miss


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(max_entries: int = 3, ttl: float = 10.0, **kw: float) -> tuple[Cache[tuple[str, str], object], Clock]:
    clock = Clock()
    return Cache(max_entries, ttl, clock=clock, **kw), clock


def test_get_and_put() -> None:
    cache, _ = make()
    assert cache.get(("a", "x")) is MISS
    cache.put(("a", "x"), 1)
    cache.put(("a", "none"), None)  # None is a value, not a miss
    assert cache.get(("a", "x")) == 1
    assert cache.get(("a", "none")) is None
    assert len(cache) == 2 and ("a", "x") in cache and ("a", "y") not in cache
    cache.put(("a", "x"), 2)  # replaced
    assert cache.get(("a", "x")) == 2 and len(cache) == 2
    assert cache.stats() == {"hits": 3, "misses": 1, "evictions": 0, "expirations": 0, "stale_serves": 0,
                             "invalidations": 0, "entries": 2, "bytes": 0}
    assert not MISS and repr(MISS) == "MISS" and isinstance(MISS, Miss)


def test_entries_expire_after_their_ttl() -> None:
    cache, clock = make(ttl=10.0)
    cache.put(("a", "x"), "v")
    cache.put(("a", "short"), "s", ttl=1.0)
    clock.now += 9.999
    assert cache.get(("a", "x")) == "v"
    assert cache.get(("a", "short")) is MISS
    clock.now += 0.001  # exactly the ttl: expired
    assert cache.get(("a", "x")) is MISS
    assert cache.get(("a", "x")) is MISS  # counted as an expiration once
    assert ("a", "x") not in cache
    stats = cache.stats()
    assert stats["expirations"] == 2 and stats["misses"] == 3 and stats["hits"] == 1
    cache.put(("a", "x"), "fresh")  # a new put starts a new life
    assert cache.get(("a", "x")) == "fresh"


def test_stale_reads() -> None:
    cache, clock = make(ttl=10.0, max_stale=5.0)
    cache.put(("a", "x"), "v")
    assert cache.get_stale(("a", "x")) == "v"  # fresh: an ordinary hit
    clock.now += 12.0
    assert cache.get(("a", "x")) is MISS
    assert cache.get_stale(("a", "x")) == "v"
    assert cache.get_stale(("a", "x")) == "v"
    stats = cache.stats()
    assert stats["stale_serves"] == 2 and stats["expirations"] == 1 and stats["hits"] == 1
    clock.now += 3.0  # 15 s old: past ttl + max_stale, gone for good
    assert cache.get_stale(("a", "x")) is MISS
    assert len(cache) == 0
    assert cache.get_stale(("a", "never")) is MISS
    assert cache.stats()["expirations"] == 1


def test_a_ttl_of_zero_serves_only_stale() -> None:
    cache, _ = make(ttl=0.0)
    cache.put(("a", "x"), 1)
    assert cache.get(("a", "x")) is MISS
    assert cache.get_stale(("a", "x")) == 1


def test_no_expiry() -> None:
    cache, clock = make(ttl=math.inf)
    cache.put(("a", "x"), 1)
    clock.now += 1e12
    assert cache.get(("a", "x")) == 1


def test_least_recently_used_goes_first() -> None:
    cache, _ = make(max_entries=3)
    for name in "abc":
        cache.put((name, "k"), name)
    assert cache.get(("a", "k")) == "a"  # a is now the most recently used
    cache.put(("d", "k"), "d")  # evicts b
    assert cache.get(("b", "k")) is MISS
    assert [cache.get((n, "k")) for n in "acd"] == ["a", "c", "d"]
    cache.put(("c", "k"), "c2")  # a put refreshes too
    cache.put(("e", "k"), "e")  # evicts a: d and c were used after it
    assert cache.get(("a", "k")) is MISS
    assert len(cache) == 3
    assert cache.stats()["evictions"] == 2


def test_misses_do_not_keep_expired_entries_alive() -> None:
    cache, clock = make(max_entries=2, ttl=10.0)
    cache.put(("a", "old"), 1)
    cache.put(("a", "fresh"), 2, ttl=100.0)
    clock.now += 20.0
    assert cache.get(("a", "old")) is MISS  # not touched: still the oldest
    assert cache.get(("a", "fresh")) == 2
    cache.put(("a", "new"), 3)
    assert ("a", "fresh") in cache and ("a", "new") in cache
    assert cache.get_stale(("a", "old")) is MISS  # evicted first


def test_invalidation() -> None:
    cache, _ = make(max_entries=10)
    for server in ("fs", "git"):
        for name in ("tools", "prompts", "resources"):
            cache.put((server, name), f"{server}/{name}")
    cache.put(("fs-extra", "tools"), "other server")
    assert cache.invalidate(("fs", "prompts")) is True
    assert cache.invalidate(("fs", "prompts")) is False
    assert cache.invalidate_server("fs") == 2  # not fs-extra: the whole first element matches
    assert cache.get(("fs-extra", "tools")) == "other server"
    assert cache.invalidate_prefix(("git", "tools")) == 1
    assert cache.invalidate_where(lambda key: key[1] == "resources") == 1
    assert len(cache) == 2
    assert cache.stats()["invalidations"] == 5
    cache.clear()
    assert len(cache) == 0 and cache.stats()["invalidations"] == 5


def test_non_tuple_keys() -> None:
    cache: Cache[object, int] = Cache(clock=Clock())
    cache.put("plain", 1)
    cache.put(("srv", 1), 2)
    assert cache.invalidate_server("srv") == 1
    assert cache.get("plain") == 1
    assert cache.max_entries == 1024 and cache.ttl == 60.0


def test_zero_entries_keeps_nothing() -> None:
    cache, _ = make(max_entries=0)
    cache.put(("a", "x"), 1)
    assert len(cache) == 0 and cache.get(("a", "x")) is MISS
    assert cache.stats()["evictions"] == 0


def test_arguments_are_checked() -> None:
    clock = Clock()
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_entries"):
            Cache(bad, clock=clock)  # type: ignore[arg-type]
    for bad_ttl in (-1.0, math.nan, "10"):
        with pytest.raises(ValueError, match="ttl"):
            Cache(10, bad_ttl, clock=clock)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_stale"):
        Cache(10, 1.0, clock=clock, max_stale=-1)
    cache = Cache[str, int](clock=clock)
    with pytest.raises(ValueError, match="ttl"):
        cache.put("x", 1, ttl=-5)
    assert repr(cache) == "<Cache 0/1024 ttl=60>"


def test_the_byte_bound_evicts_the_least_recently_used() -> None:
    clock = Clock()
    cache: Cache[str, str] = Cache(max_entries=10, ttl=10, clock=clock, max_bytes=100)
    cache.put("a", "A", size=40)
    cache.put("b", "B", size=40)
    assert cache.get("a") == "A"  # a is now the most recently used
    cache.put("c", "C", size=40)  # 120 > 100: b goes
    assert "b" not in cache and cache.get("a") == "A" and cache.get("c") == "C"
    assert cache.bytes == 80 and cache.stats()["evictions"] == 1
    cache.put("a", "A2", size=10)  # replacing an entry replaces its size
    assert cache.bytes == 50
    cache.put("huge", "H", size=101)  # larger than the bound: not kept, nothing evicted
    assert "huge" not in cache and cache.bytes == 50
    cache.invalidate("c")
    assert cache.bytes == 10
    cache.clear()
    assert cache.bytes == 0
    with pytest.raises(ValueError, match="max_bytes"):
        Cache(clock=clock, max_bytes=-1)
