"""The cache of reads and prompts (host/readcache.py), on an injected clock, against the
fake server: time to live, bounds, every invalidation, bypass, stale fallback, counters."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import HostEvents, fake, fake_config, wait_for

from mcphost import MCPHost, ServerUnavailableError
from mcphost.host.readcache import STALE, ReadCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


RESOURCES = [{"uri": f"mem://{n}", "name": n, "text": f"text of {n}"} for n in ("a", "b", "c")]
PROMPTS = [{"name": "greet", "arguments": [{"name": "who"}], "messages": [{"role": "user", "content": "Hi {who}"}]}]


def server(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": RESOURCES, "prompts": PROMPTS, "updateOnSubscribe": True,
                            "record": None, **extra}
    spec.pop("record")
    return fake(spec)


def host_with(cfg: dict[str, Any], **kwargs: Any) -> tuple[MCPHost, Clock]:
    host = MCPHost(cfg, **kwargs)
    clock = Clock()
    host.reads.set_clock(clock)
    return host, clock


def reads(host: MCPHost, server: str = "a") -> int:
    return int(host.get_metrics()[server]["methods"].get("resources/read", {}).get("calls", 0))


async def test_fresh_entries_are_served_until_their_ttl() -> None:
    cfg = fake_config(a=server())
    cfg["cache"] = {"ttl": 60}
    host, clock = host_with(cfg)
    async with host:
        first = await host.get_resource("mem://a")
        first["contents"][0]["text"] = "changed by the caller"  # cannot change the cache
        again = await host.get_resource("mem://a")
        assert again["contents"][0]["text"] == "text of a" and reads(host) == 1
        clock.now += 61
        await host.get_resource("mem://a")
        assert reads(host) == 2
        await host.get_prompt("a.greet", {"who": "Ada"})
        await host.get_prompt("a.greet", {"who": "Ada"})
        await host.get_prompt("a.greet", {"who": "Bob"})  # other arguments: another entry
        cache = host.get_metrics()["a"]["cache"]
    assert host.get_metrics()["a"]["methods"]["prompts/get"]["calls"] == 2
    assert cache == {"hit": 2, "miss": 4, "stale": 0, "expired": 1, "evicted": 0}


async def test_a_server_ttl_of_zero_and_cache_false_bypass_it() -> None:
    cfg = fake_config(a=server())
    host, _ = host_with(cfg)
    async with host:
        await host.get_resource("mem://a")
        await host.get_resource("mem://a", cache=False)
        assert reads(host) == 2
    cfg["mcpServers"]["a"]["cacheTtl"] = 0
    host, _ = host_with(cfg)
    async with host:
        await host.get_resource("mem://a")
        await host.get_resource("mem://a")
        assert reads(host) == 2 and host.get_metrics()["a"]["cache"]["hit"] == 0


async def test_the_bounds_evict_the_least_recently_used() -> None:
    cfg = fake_config(a=server())
    cfg["cache"] = {"maxEntries": 2}
    host, _ = host_with(cfg)
    async with host:
        for uri in ("mem://a", "mem://b", "mem://a", "mem://c"):  # c pushes b out
            await host.get_resource(uri)
        assert reads(host) == 3
        await host.get_resource("mem://a")
        assert reads(host) == 3
        await host.get_resource("mem://b")
        assert reads(host) == 4
        assert host.get_metrics()["a"]["cache"]["evicted"] == 2
    cfg["cache"] = {"maxBytes": 80}  # one read (55 bytes of JSON) fits, two do not
    host, _ = host_with(cfg)
    async with host:
        for uri in ("mem://a", "mem://b", "mem://a"):
            await host.get_resource(uri)
        assert reads(host) == 3


async def test_what_invalidates_an_entry() -> None:
    mutate = {"name": "mutate", "inputSchema": {"type": "object"},
              "behavior": {"mutate": {"resources": RESOURCES, "prompts": PROMPTS}}}
    host, _ = host_with(fake_config(a=server(tools=[mutate])))
    async with host:
        await host.get_resource("mem://a")
        await host.get_resource("mem://b")
        # resources/updated (sent by the fake once subscribed) drops that URI only.
        updated: list[Any] = []
        host.on_event(lambda e: updated.append(e) if e["type"] == "resource_updated" else None)
        await host.subscribe_resource("mem://a")
        assert await wait_for(lambda: bool(updated))  # the cache heard it first
        n = reads(host)
        await host.get_resource("mem://a")
        await host.get_resource("mem://b")
        assert reads(host) == n + 1
        # list_changed of resources drops every read of the server; of prompts, its prompts.
        await host.get_prompt("a.greet", {"who": "x"})
        changes = HostEvents(host)
        await host.call_tool("a.mutate", {})
        # The cache drops entries as each notification arrives, before the lists are
        # fetched again and capabilities_changed says so.
        def relisted() -> set[str]:
            return {kind for e in changes if e["type"] == "capabilities_changed" for kind in e["data"]}

        await changes.until(lambda e: {"resources", "prompts"} <= relisted())
        assert host.reads.cache.stats()["entries"] == 0
        # A restart drops everything of the server.
        await host.get_resource("mem://c")
        await host.restart_server("a")
        assert host.reads.cache.stats()["entries"] == 0


async def test_a_stale_entry_is_served_when_the_server_cannot_answer() -> None:
    die = {"name": "die", "inputSchema": {"type": "object"}, "behavior": {"exit": 3}}
    host, clock = host_with(fake_config(a=server(tools=[die])))
    async with host:
        await host.get_resource("mem://a")
        await host.get_prompt("a.greet", {"who": "Ada"})
        clock.now += 10_000
        with pytest.raises(ServerUnavailableError):
            await host.call_tool("a.die", {})
        assert host.servers["a"].state.value == "unavailable"
        with pytest.raises(ServerUnavailableError):
            await host.get_resource("mem://a")  # no stale unless asked
        stale = await host.get_resource("mem://a", server="a", allow_stale=True)
        assert stale["contents"][0]["text"] == "text of a"
        assert stale["_meta"][STALE] is True and stale["_meta"]["mcphost/ageSeconds"] == 10_000
        prompt = await host.get_prompt("a.greet", {"who": "Ada"}, allow_stale=True)
        assert prompt["_meta"][STALE] is True
        with pytest.raises(ServerUnavailableError):
            await host.get_prompt("a.greet", {"who": "Bob"}, allow_stale=True)  # never cached
        assert host.get_metrics()["a"]["cache"]["stale"] == 2


async def test_a_failed_read_drops_its_entry_unless_stale_is_allowed() -> None:
    # Talk-2-Tables' "invalidation on error": a read that fails does not leave its old
    # entry to be served later; allow_stale=True asks to keep it (and serves it).
    from mcphost.config.model import ServerConfig
    from mcphost.errors import ServerError, TimeoutError
    from mcphost.host.handle import ServerHandle

    clock = Clock()
    cache = ReadCache(clock=clock)
    handle = ServerHandle(ServerConfig(name="a", type="stdio", command="x"), request_timeout=1.0,
                          shutdown_timeout=1.0, call_hooks=[])
    params = {"uri": "mem://a"}

    async def answer() -> dict[str, Any]:
        return {"contents": [{"uri": "mem://a", "text": "old"}]}

    async def gone() -> dict[str, Any]:
        raise ServerError("Resource not found", server="a", code=-32002)

    async def slow() -> dict[str, Any]:
        raise TimeoutError("timed out", server="a")

    async def fetch(run: Any, **kwargs: Any) -> Any:
        return await cache.fetch(handle, "resources/read", params, run, use=kwargs.get("use", True),
                                 allow_stale=kwargs.get("allow_stale", False))

    await fetch(answer)
    clock.now += 10_000  # expired, still held for allow_stale
    with pytest.raises(ServerError):  # the server says it is gone: the entry goes
        await fetch(gone)
    with pytest.raises(TimeoutError):  # nothing stale left to serve
        await fetch(slow, allow_stale=True)
    await fetch(answer)
    clock.now += 10_000
    with pytest.raises(ServerError):  # allow_stale asks to keep it
        await fetch(gone, allow_stale=True)
    with pytest.raises(TimeoutError):  # the server could not answer: it said nothing of the content
        await fetch(slow)
    served = await fetch(slow, allow_stale=True)  # kept, and served, when asked
    assert served["_meta"][STALE] is True
    with pytest.raises(ServerError):  # a fresh entry read past the cache, and refused, is dropped too
        await fetch(gone, use=False)
    assert not cache.cache.holds(("a", "resources/read", '{"uri":"mem://a"}'))
