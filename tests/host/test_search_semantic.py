"""The semantic hook of tool search: ``MCPHost(tool_search=embed)``, fused with BM25 by
reciprocal rank fusion, embeddings cached per tool-list version."""

from __future__ import annotations

import asyncio
import json
import math
import re
import zlib
from typing import Any

import pytest

from mcphost import MCPHost, MCPHostError, UsageError
from mcphost.host.search import ToolIndex
from mcphost.host.search_semantic import BATCH, QUERY_CACHE

# A small deterministic embedding: each word counts towards its topic (words nobody listed
# towards a hashed one), so texts about the same thing point the same way.
TOPICS = {
    "memory": "remember reminder jot note notes observation observations entity entities knowledge",
    "files": "file files disk write read folder directory",
    "web": "web internet search online page",
}
TOPIC_OF = {word: i for i, (_, text) in enumerate(TOPICS.items()) for word in text.split()}
DIMENSIONS = 16


def embed_one(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        topic = TOPIC_OF.get(word)
        if topic is not None:
            vector[topic] += 3.0
        elif len(word) > 3:
            vector[len(TOPICS) + zlib.crc32(word.encode()) % (DIMENSIONS - len(TOPICS))] += 0.1
    return vector


class Embedder:
    """Counts what it is asked to embed."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [embed_one(t) for t in texts]

    @property
    def texts(self) -> int:
        return sum(len(c) for c in self.calls)


class AsyncEmbedder(Embedder):
    async def __call__(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().__call__(texts)


TOOLS = {
    "notes": [{"name": "add_observations", "description": "Add observations to existing entities.",
               "inputSchema": {"type": "object"}}],
    "fs": [{"name": "write_file", "description": "Write a file to disk.", "inputSchema": {"type": "object"}},
           {"name": "read_file", "description": "Read a file from disk.", "inputSchema": {"type": "object"}}],
    "web": [{"name": "web_search", "description": "Search the web.", "inputSchema": {"type": "object"}}],
}
QUERY = "jot down a reminder"  # no word of it is in any tool: only the embeddings know


def handler(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": name}]}


async def started(**options: Any) -> MCPHost:
    host = MCPHost({"mcpServers": {}}, **options)
    for server, tools in TOOLS.items():
        await host.register_tools(server, tools, handler)
    await host.initialize()
    return host


async def test_without_tool_search_nothing_changes() -> None:
    host = await started()
    try:
        index = ToolIndex((f"{s}.{t['name']}", s, t) for s, tools in TOOLS.items() for t in tools)
        for query in ("write a file", "search the web", QUERY):
            assert host.search_tools(query) == index.search(query) == await host.search_tools_async(query)
        assert host.search_tools(QUERY) == []
    finally:
        await host.shutdown()


async def test_a_sync_embedding_is_fused_with_the_lexical_ranking() -> None:
    embed = Embedder()
    host = await started(tool_search=embed)
    try:
        assert host.search_tools(QUERY, limit=1)[0]["name"] == "notes.add_observations"
        assert (await host.search_tools_async(QUERY, limit=1))[0]["name"] == "notes.add_observations"
        # Where the words agree, the lexical best stays first.
        assert host.search_tools("read a file from disk", limit=1)[0]["name"] == "fs.read_file"
        hits = host.search_tools("search the web", limit=4)
        assert hits[0]["name"] == "web.web_search" and len(hits) == 4
        assert all(set(hit) == {"name", "score", "description"} for hit in hits)
    finally:
        await host.shutdown()


async def test_an_async_embedding_serves_the_meta_tool_and_the_async_method() -> None:
    embed = AsyncEmbedder()
    host = await started(tool_search=embed)
    try:
        reply = await host.dispatch({"type": "tool_use", "id": "1", "name": "search_tools",
                                     "input": {"query": QUERY, "limit": "2"}})
        found = json.loads(reply["content"][0]["text"])
        assert found[0]["name"] == "notes.add_observations" and len(found) == 2
        assert (await host.search_tools_async(QUERY))[0]["name"] == "notes.add_observations"
        with pytest.raises(UsageError, match="search_tools_async"):
            host.search_tools(QUERY)  # a sync call cannot wait for it
    finally:
        await host.shutdown()


async def test_embeddings_are_cached_per_tool_list_version() -> None:
    embed = Embedder()
    host = await started(tool_search=embed)
    try:
        host.search_tools(QUERY)
        assert embed.texts == 4 + 1  # every tool once, then the query
        host.search_tools(QUERY)
        host.search_tools("write a file")
        assert embed.texts == 4 + 2  # the tools are not embedded again; a known query is not either
        await host.register_tools("more", [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}],
                                  handler)
        host.search_tools(QUERY)
        assert embed.texts == 4 + 2 + 5 + 1  # a new version of the tool lists: embedded again
        assert all(len(call) <= BATCH for call in embed.calls)
    finally:
        await host.shutdown()


async def test_concurrent_searches_embed_the_tools_once() -> None:
    embed = AsyncEmbedder()
    host = await started(tool_search=embed)
    try:
        results = await asyncio.gather(*(host.search_tools_async(f"{QUERY} {i}") for i in range(5)))
        assert all(r[0]["name"] == "notes.add_observations" for r in results)
        assert sum(1 for call in embed.calls if len(call) == 4) == 1
    finally:
        await host.shutdown()


def test_the_query_cache_is_bounded() -> None:
    from mcphost.host.search_semantic import SemanticIndex

    embed = Embedder()
    index = SemanticIndex(embed, ["a file", "the web"])
    for i in range(QUERY_CACHE + 10):
        index.rank_sync(f"query {i}")
    assert len(index._queries) == QUERY_CACHE
    before = embed.texts
    index.rank_sync(f"query {QUERY_CACHE + 9}")  # the newest is kept
    index.rank_sync("query 0")  # the oldest is gone
    assert embed.texts == before + 1


@pytest.mark.parametrize("bad", [42, "embed", [embed_one], ToolIndex])
def test_a_bad_tool_search_is_a_usage_error_in_the_constructor(bad: Any) -> None:
    with pytest.raises(UsageError, match="tool_search must be an embedding function"):
        MCPHost({"mcpServers": {}}, tool_search=bad)


@pytest.mark.parametrize(("embed", "message"), [
    (lambda texts: [[1.0, 0.0]] * (len(texts) + 1), "texts gave"),
    (lambda texts: [[1.0, math.nan] for _ in texts], "not a finite number"),
    (lambda texts: [["x"] for _ in texts], "not a finite number"),
    (lambda texts: ["abc" for _ in texts], "not a list of numbers"),
    (lambda texts: [[1.0] * (i + 1) for i, _ in enumerate(texts)], "the others"),
    (lambda texts: None, "texts gave NoneType"),
])
async def test_vectors_of_the_wrong_shape_are_named(embed: Any, message: str) -> None:
    host = await started(tool_search=embed)
    try:
        with pytest.raises(UsageError, match=message):
            host.search_tools(QUERY)
        with pytest.raises(UsageError, match=message):
            await host.search_tools_async(QUERY)
    finally:
        await host.shutdown()


async def test_a_failing_embedding_function_is_an_mcphost_error() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedding service down")

    host = await started(tool_search=broken)
    try:
        with pytest.raises(MCPHostError, match="embedding service down") as raised:
            host.search_tools(QUERY)
        assert isinstance(raised.value.__cause__, ConnectionError)
        reply = await host.dispatch({"type": "tool_use", "id": "1", "name": "search_tools", "input": {"query": QUERY}})
        assert reply["is_error"] is True and "embedding service down" in reply["content"][0]["text"]
    finally:
        await host.shutdown()


async def test_bad_search_arguments_are_usage_errors() -> None:
    host = await started()
    try:
        with pytest.raises(UsageError, match="query must be a string"):
            host.search_tools(42)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="limit must be an integer"):
            host.search_tools("x", limit="5")  # type: ignore[arg-type]
        reply = await host.dispatch({"type": "tool_use", "id": "1", "name": "search_tools",
                                     "input": {"query": "file", "limit": "many"}})
        assert reply["is_error"] is True and "limit must be an integer" in reply["content"][0]["text"]
        assert len(host.search_tools("file", limit=1000)) <= 50
    finally:
        await host.shutdown()
