"""The cache of ``resources/read`` and ``prompts/get`` results (FR8, FR7.3).

Layer 4, over :class:`mcphost.cache.Cache`. An entry is keyed by the server, the method and
its parameters in a canonical form (keys sorted), holds the result as encoded JSON (its size
counts against ``maxBytes``, and every hit decodes a fresh copy: a caller that changes what
it got cannot change the cache), and is fresh for the server's ``cacheTtl`` or the host's
``cache.ttl`` (300 s by default).

It is emptied, for one server, by what says its content changed:

- ``notifications/resources/updated`` drops that URI's reads;
- ``notifications/resources/list_changed`` drops the server's reads,
  ``notifications/prompts/list_changed`` its prompts;
- a new start (a restart, a start after a stop) drops everything of the server.

``cache=False`` on a call bypasses it (neither read nor filled). ``allow_stale=True`` serves
an expired entry, or one of a server that cannot answer (unavailable, timed out), marked
``"_meta": {"mcphost/stale": true, "mcphost/ageSeconds": ...}``. Without it, a read the
server answers with an error (not found, a JSON-RPC error, a malformed result) drops the
entry of what it read (the orchestrator specification's "invalidation on error"); one the
server could not answer (unavailable, timed out) keeps it for a later ``allow_stale`` read.
Tool results are never cached.

A 2026-07-28 server says how long each result may be kept (``ttlMs``): an entry is fresh for
the shorter of the two times, and a result without ``ttlMs``, with 0 or a negative value, or
that took more than one round of input (``_meta["mcphost/rounds"]``) is not kept at all. It
also says who may see it (``cacheScope``). A read made for a ``scope`` (a gateway's client)
keeps a ``private`` result under that scope: served to that scope only, never to another
(nor to a read without a scope); ``public`` results, and those of handshake-era servers,
are shared by every scope. A read without a scope serves one user (the application), whose
private results are kept as shared ones.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._json import dumps, loads
from ..cache import MISS, Cache
from ..config.model import CacheSettings
from ..errors import MCPHostError
from ..policy import is_transient
from .handle import ServerHandle

__all__ = ["ROUNDS", "ReadCache", "STALE"]

logger = logging.getLogger("mcphost.host.cache")

#: The ``_meta`` key that marks a result served from an expired entry.
STALE = "mcphost/stale"
#: The ``_meta`` key of a result that took input rounds (never cached).
ROUNDS = "mcphost/rounds"


class ReadCache:
    """The host's cache of reads and prompts; ``clock`` is injectable for tests."""

    def __init__(self, settings: CacheSettings | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        settings = settings or CacheSettings()
        self.settings = settings
        self.clock = clock
        #: (server, method, parameters, scope: "" for what every scope shares) -> (JSON, when).
        self.cache: Cache[tuple[str, str, str, str], tuple[bytes, float]] = self._new(settings)
        #: Each server's cache counters (its handle's ``cache_stats``), for evictions and
        #: expirations, which the cache reports by key.
        self.counters: dict[str, dict[str, int]] = {}

    def set_clock(self, clock: Callable[[], float]) -> None:
        """Read time from ``clock`` from now on (a fake clock in tests; the cache starts empty)."""
        self.clock = clock
        self.cache = self._new(self.settings)

    def configure(self, settings: CacheSettings) -> None:
        """New bounds (a reload): what is cached stays within them."""
        if settings != self.settings:
            self.settings = settings
            self.cache = self._new(settings)

    def _new(self, settings: CacheSettings) -> Cache[tuple[str, str, str, str], tuple[bytes, float]]:
        return Cache(settings.max_entries, settings.ttl, clock=self.clock, max_bytes=settings.max_bytes,
                     on_drop=self._dropped)

    def _dropped(self, key: tuple[str, str, str, str], why: str) -> None:
        counters = self.counters.get(key[0])
        if counters is not None:
            counters[why] = counters.get(why, 0) + 1
            if why == "expired":
                logger.debug("%s: %s entry expired", key[0], key[1],
                             extra={"event": "cache_expired", "server": key[0], "method": key[1]})

    def ttl(self, handle: ServerHandle) -> float:
        own = handle.config.cache_ttl
        return self.settings.ttl if own is None else own

    async def fetch(self, handle: ServerHandle | None, method: str, params: dict[str, Any],
                    run: Callable[[], Awaitable[Any]], *, use: bool, allow_stale: bool,
                    scope: str | None = None) -> Any:
        """The result of ``run()`` (the request ``method(params)`` of ``handle``), from the
        cache when fresh there; ``handle`` is ``None`` when it could not be routed; ``scope``
        the user it is read for (``None``: the application's one user)."""
        ttl = self.ttl(handle) if handle is not None else 0.0
        if handle is not None:
            self.counters[handle.name] = handle.cache_stats
        key = (handle.name, method, _canonical(params), "") if handle is not None else None
        own = (key[0], key[1], key[2], f"user:{scope}") if key is not None and scope is not None else None
        if key is not None and handle is not None and use and ttl > 0:
            hit = self.cache.get(key)
            if hit is MISS and own is not None:
                hit = self.cache.get(own)
            if hit is not MISS:
                handle.cache_stats["hit"] += 1
                logger.debug("%s: %s from the cache", handle.name, method,
                             extra={"event": "cache_hit", "server": handle.name, "method": method})
                return loads(hit[0])
            handle.cache_stats["miss"] += 1
            logger.debug("%s: %s not in the cache", handle.name, method,
                         extra={"event": "cache_miss", "server": handle.name, "method": method})
        try:
            result = await run()
        except MCPHostError as exc:
            if key is not None and handle is not None:
                if allow_stale:
                    if is_transient(exc):
                        stale = self.cache.get_stale(key)
                        if stale is MISS and own is not None:
                            stale = self.cache.get_stale(own)
                        if stale is not MISS:
                            return self._stale(handle, method, stale, exc)
                elif not is_transient(exc) and (self.cache.invalidate(key) |
                                                (own is not None and self.cache.invalidate(own))):
                    # "Invalidation on error" (Talk-2-Tables): what the server refused to read
                    # now (not found, an error, a broken answer) is not served later from an
                    # entry kept for allow_stale. A server that could not answer (gone, timed
                    # out) said nothing of the content: its entry stays for allow_stale.
                    logger.debug("%s: %s failed: its cache entry is dropped", handle.name, method)
            raise
        session = handle.session if handle is not None else None
        if session is not None and session.version.cache_hints:
            ttl = _hinted(result, ttl)
        if key is not None and ttl > 0 and (use or allow_stale):
            if own is not None and type(result) is dict and result.get("cacheScope") == "private":
                key = own  # for this scope only
            data = dumps(result)
            self.cache.put(key, (data, self.clock()), ttl=ttl, size=len(data))
        return result

    def _stale(self, handle: ServerHandle, method: str, entry: tuple[bytes, float], exc: MCPHostError) -> Any:
        handle.cache_stats["stale"] += 1
        age = round(self.clock() - entry[1], 3)
        logger.warning("%s: %s served from the cache (%.0f s old): %s", handle.name, method, age,
                       exc.message.splitlines()[0], extra={"event": "cache_stale", "server": handle.name,
                                                           "method": method})
        result = loads(entry[0])
        if isinstance(result, dict):
            meta = result.get("_meta")
            result["_meta"] = {**(meta if isinstance(meta, dict) else {}), STALE: True, "mcphost/ageSeconds": age}
        return result

    def owner(self, method: str, params: dict[str, Any], servers: Mapping[str, ServerHandle]) -> ServerHandle | None:
        """The server whose cache holds ``method(params)`` (for a stale read of a resource
        whose server cannot be routed to any more)."""
        canonical = _canonical(params)
        for name, handle in servers.items():
            if self.cache.holds((name, method, canonical, "")):
                return handle
        return None

    # -- invalidation ---------------------------------------------------------------------

    def notified(self, server: str, method: str, params: Any) -> None:
        """A notification of ``server``: drop what it says changed."""
        if method == "notifications/resources/updated" and isinstance(params, dict):
            uri = params.get("uri")
            if isinstance(uri, str):
                self.cache.invalidate_prefix((server, "resources/read", _canonical({"uri": uri})))
        elif method == "notifications/resources/list_changed":
            self.cache.invalidate_prefix((server, "resources/read"))
        elif method == "notifications/prompts/list_changed":
            self.cache.invalidate_prefix((server, "prompts/get"))

    def restarted(self, server: str) -> None:
        """``server`` starts anew: nothing it said before holds."""
        self.cache.invalidate_server(server)


def _hinted(result: Any, ttl: float) -> float:
    """``ttl`` bounded by the result's own ``ttlMs`` (2026-07-28: absent, 0 or negative means
    stale at once, and so does a result of input rounds)."""
    if type(result) is not dict:
        return 0.0
    meta = result.get("_meta")
    hint = result.get("ttlMs")
    if (type(meta) is dict and meta.get(ROUNDS)) or type(hint) is not int or hint <= 0:
        return 0.0
    return min(ttl, hint / 1000)


def _canonical(params: dict[str, Any]) -> str:
    """The parameters as a key: the same JSON for the same values, whatever their order."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
