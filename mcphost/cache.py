"""A bounded cache: entries expire after a time to live, the least recently used go first.

Layer 1 (no I/O, no clock of its own): the caller passes ``clock``, a function returning
seconds on a monotonic scale (the host passes ``time.monotonic``, tests a fake). Nothing
runs in the background: an entry's age is checked when it is read.

- :meth:`Cache.get` returns the value of a fresh entry, or :data:`MISS`. An entry past its
  time to live is a miss (counted once as an expiration) but is kept, for
- :meth:`Cache.get_stale`, which still returns it (counted as a stale serve): what a caller
  wants when the fresh answer is out of reach, e.g. the server is down. An entry older than
  its time to live plus ``max_stale`` is gone for both.
- :meth:`Cache.put` stores a value (its own ``ttl`` or the cache's), the most recently used;
  past ``max_entries`` the least recently used entry is evicted. Reads that hit (fresh or
  stale) make an entry the most recently used; misses do not, so expired entries drift
  to the old end and are evicted first.
- :meth:`Cache.invalidate` drops one key; :meth:`Cache.invalidate_where`,
  :meth:`Cache.invalidate_prefix` and :meth:`Cache.invalidate_server` drop every key that
  matches (keys are tuples whose first element is the server name, so one server's entries
  go at once when it restarts or says its lists changed). These scan the cache (O(n),
  n <= ``max_entries``); everything else is O(1).
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Final, Generic, Literal, TypeVar

__all__ = ["MISS", "Cache", "Miss"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Miss(enum.Enum):
    """The type of :data:`MISS` (an enum, so ``value is MISS`` narrows the type)."""

    MISS = "MISS"

    def __repr__(self) -> str:
        return "MISS"

    def __bool__(self) -> Literal[False]:
        return False


#: What :meth:`Cache.get` returns for a key it has no fresh value for (``None`` may be a value).
MISS: Final = Miss.MISS


class _Entry(Generic[V]):
    __slots__ = ("expired", "expires", "size", "value")

    def __init__(self, value: V, expires: float, size: int) -> None:
        self.value = value
        self.expires = expires
        self.size = size
        self.expired = False  # counted as an expiration already


class Cache(Generic[K, V]):
    """A TTL + LRU cache: ``Cache(max_entries=1024, ttl=60.0, clock=time.monotonic)``.

    ``ttl`` is seconds (``math.inf``: never expires; ``0``: every read is a miss, only
    :meth:`get_stale` serves). ``max_stale`` is how long past its ttl an entry may still be
    served stale (default: until it is evicted). ``max_entries=0`` keeps nothing.
    ``max_bytes`` bounds the sum of the sizes given to :meth:`put` (an entry larger than it
    is not kept); the least recently used entries go first.
    """

    __slots__ = ("_bytes", "_clock", "_data", "_on_drop", "_stats", "max_bytes", "max_entries", "max_stale", "ttl")

    def __init__(self, max_entries: int = 1024, ttl: float = 60.0, *, clock: Callable[[], float],
                 max_stale: float = math.inf, max_bytes: float = math.inf,
                 on_drop: Callable[[K, str], None] | None = None) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
            raise ValueError(f"max_entries must be an integer >= 0, not {max_entries!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, float)) or not max_bytes >= 0:
            raise ValueError(f"max_bytes must be a number >= 0, not {max_bytes!r}")
        self.max_bytes = max_bytes
        self._bytes = 0
        #: Told ``(key, "evicted" | "expired")`` when the cache itself lets an entry go or
        #: finds it expired (not for invalidations, which the caller asked for).
        self._on_drop = on_drop
        _check_seconds("ttl", ttl)
        _check_seconds("max_stale", max_stale)
        self.max_entries = max_entries
        self.ttl = float(ttl)
        self.max_stale = float(max_stale)
        self._clock = clock
        self._data: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._stats = dict.fromkeys(
            ("hits", "misses", "evictions", "expirations", "stale_serves", "invalidations"), 0
        )

    def __len__(self) -> int:
        """Entries held, fresh or stale."""
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        """``key`` has a fresh entry (no statistics counted, no LRU touch)."""
        entry = self._data.get(key)  # type: ignore[arg-type]
        return entry is not None and self._clock() < entry.expires

    def holds(self, key: object) -> bool:
        """``key`` has an entry, fresh or stale (no statistics counted, no LRU touch)."""
        entry = self._data.get(key)  # type: ignore[arg-type]
        return entry is not None and self._clock() < entry.expires + self.max_stale

    def __repr__(self) -> str:
        return f"<Cache {len(self._data)}/{self.max_entries} ttl={self.ttl:g}>"

    def _lookup(self, key: K, stale: bool) -> V | Miss:
        stats = self._stats
        entry = self._data.get(key)
        if entry is None:
            stats["misses"] += 1
            return MISS
        now = self._clock()
        if now < entry.expires:
            self._data.move_to_end(key)
            stats["hits"] += 1
            return entry.value
        if not entry.expired:
            entry.expired = True
            stats["expirations"] += 1
            if self._on_drop is not None:
                self._on_drop(key, "expired")
        if now >= entry.expires + self.max_stale:
            self._drop(key)  # past any use: gone for good
            stats["misses"] += 1
            return MISS
        if not stale:
            stats["misses"] += 1
            return MISS
        self._data.move_to_end(key)
        stats["stale_serves"] += 1
        return entry.value

    def get(self, key: K) -> V | Miss:
        """The value of ``key`` if it is fresh, else :data:`MISS`."""
        return self._lookup(key, False)

    def get_stale(self, key: K) -> V | Miss:
        """The value of ``key``, fresh or expired (a stale serve), else :data:`MISS`."""
        return self._lookup(key, True)

    def put(self, key: K, value: V, ttl: float | None = None, size: int = 0) -> None:
        """Store ``value`` for ``ttl`` seconds (``None``: the cache's ttl); ``size`` counts
        against ``max_bytes``."""
        if ttl is None:
            ttl = self.ttl
        else:
            _check_seconds("ttl", ttl)
        self._drop(key)
        if not self.max_entries or size > self.max_bytes:
            return
        data = self._data
        data[key] = _Entry(value, self._clock() + ttl, size)
        self._bytes += size
        while len(data) > self.max_entries or self._bytes > self.max_bytes:
            gone, old = data.popitem(last=False)
            self._bytes -= old.size
            self._stats["evictions"] += 1
            if self._on_drop is not None:
                self._on_drop(gone, "evicted")

    def _drop(self, key: K) -> bool:
        entry = self._data.pop(key, None)
        if entry is None:
            return False
        self._bytes -= entry.size
        return True

    @property
    def bytes(self) -> int:
        """The sum of the sizes of the entries held."""
        return self._bytes

    def invalidate(self, key: K) -> bool:
        """Drop ``key``; whether it was there."""
        if not self._drop(key):
            return False
        self._stats["invalidations"] += 1
        return True

    def invalidate_where(self, predicate: Callable[[K], bool]) -> int:
        """Drop every key ``predicate`` accepts; how many were dropped."""
        doomed = [key for key in self._data if predicate(key)]
        for key in doomed:
            self._drop(key)
        self._stats["invalidations"] += len(doomed)
        return len(doomed)

    def invalidate_prefix(self, prefix: tuple[Any, ...]) -> int:
        """Drop every tuple key that starts with ``prefix``; how many were dropped."""
        n = len(prefix)
        return self.invalidate_where(lambda key: isinstance(key, tuple) and key[:n] == prefix)

    def invalidate_server(self, name: str) -> int:
        """Drop every entry of server ``name`` (tuple keys whose first element is ``name``)."""
        return self.invalidate_prefix((name,))

    def clear(self) -> None:
        """Drop every entry (the statistics stay)."""
        self._data.clear()
        self._bytes = 0

    def stats(self) -> dict[str, int]:
        """``hits``, ``misses`` (a :meth:`get` of an expired entry included), ``evictions``,
        ``expirations``, ``stale_serves``, ``invalidations``, and the ``entries`` held."""
        return {**self._stats, "entries": len(self._data), "bytes": self._bytes}


def _check_seconds(what: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ValueError(f"{what} must be a number of seconds >= 0, not {value!r}")
