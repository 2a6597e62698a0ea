"""The optional semantic half of tool search: the application's embeddings, fused with BM25.

Layer 4. ``MCPHost(tool_search=embed)`` takes the application's embedding function, sync
or async, ``embed(texts: list[str]) -> list[list[float]]`` (one vector per text, all of one
length). :class:`SemanticIndex` embeds every tool once per version of the tool lists (its
qualified name and description, in batches of at most :data:`BATCH` texts), remembers the
last :data:`QUERY_CACHE` queries' vectors, ranks the tools by cosine similarity to the
query, and :func:`~mcphost.host.search.fuse` combines that ranking with the lexical one
(reciprocal rank fusion: ranks, not scores, so neither scale needs calibrating).

Nothing here runs without ``tool_search``: no dependency, no vector, no change to the
lexical ranking. A failure of the function (an exception, or vectors of the wrong number,
length or type) is an :class:`~mcphost.errors.MCPHostError` naming what was wrong.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from ..errors import MCPHostError, UsageError
from ..types import Embedder

__all__ = ["BATCH", "Embedder", "QUERY_CACHE", "SEMANTIC_DEPTH", "SemanticIndex", "check_embedder", "is_async"]

logger = logging.getLogger("mcphost.host.search_semantic")


#: Texts per call of the embedding function (services cap their batches).
BATCH: Final = 128
#: Query vectors remembered per version of the tool lists.
QUERY_CACHE: Final = 256
#: How many of the semantic ranking's best tools take part in the fusion.
SEMANTIC_DEPTH: Final = 50
#: The longest vector accepted.
MAX_DIMENSIONS: Final = 65_536


def check_embedder(value: object) -> Embedder | None:
    """``value`` if it can be ``tool_search`` (None or a callable), else ``UsageError``."""
    if value is None:
        return None
    if not callable(value) or isinstance(value, type):
        raise UsageError(f"tool_search must be an embedding function, list[str] -> list[list[float]] "
                         f"(sync or async), not {type(value).__name__}")
    return value  # type: ignore[return-value,unused-ignore]


def is_async(embed: Embedder) -> bool:
    """Whether ``embed`` is a coroutine function (or an object whose ``__call__`` is one)."""
    call = type(embed).__call__ if not inspect.isroutine(embed) else None
    return inspect.iscoroutinefunction(embed) or (call is not None and inspect.iscoroutinefunction(call))


def _unit(vector: object, dimensions: int | None, what: str) -> list[float]:
    if not isinstance(vector, Sequence) or isinstance(vector, (str, bytes)):
        raise UsageError(f"tool_search: the vector of {what} is a {type(vector).__name__}, not a list of numbers")
    if not vector or len(vector) > MAX_DIMENSIONS or (dimensions is not None and len(vector) != dimensions):
        raise UsageError(f"tool_search: the vector of {what} has {len(vector)} numbers"
                         + (f", the others {dimensions}" if dimensions is not None else ""))
    out = []
    for x in vector:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise UsageError(f"tool_search: the vector of {what} holds {x!r}, not a finite number")
        out.append(float(x))
    norm = math.sqrt(sum(x * x for x in out))
    return [x / norm for x in out] if norm else out


class SemanticIndex:
    """The embeddings of one version of the tool lists, and the ranking they give."""

    def __init__(self, embed: Embedder, texts: Sequence[str]) -> None:
        self._embed = embed
        self._texts = list(texts)
        self._vectors: list[list[float]] | None = None
        self._dimensions: int | None = None
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._lock: asyncio.Lock | None = None

    @property
    def ready(self) -> bool:
        """Whether the tools are embedded."""
        return self._vectors is not None

    def _accept(self, got: object, texts: Sequence[str]) -> list[list[float]]:
        if not isinstance(got, Sequence) or isinstance(got, (str, bytes)) or len(got) != len(texts):
            size = len(got) if isinstance(got, Sequence) else type(got).__name__
            raise UsageError(f"tool_search: {len(texts)} texts gave {size} vectors (one per text expected)")
        out = []
        for text, vector in zip(texts, got):
            unit = _unit(vector, self._dimensions, repr(text[:40]))
            self._dimensions = len(unit)
            out.append(unit)
        return out

    def _call_sync(self, texts: list[str]) -> list[list[float]]:
        try:
            got = self._embed(texts)
        except MCPHostError:
            raise
        except Exception as exc:
            raise MCPHostError(f"tool_search: the embedding function failed: {exc!r}") from exc
        if inspect.isawaitable(got):
            if inspect.iscoroutine(got):
                got.close()
            raise UsageError("tool_search is async: use await host.search_tools_async(...)")
        return self._accept(got, texts)

    async def _call(self, texts: list[str]) -> list[list[float]]:
        try:
            got = self._embed(texts)
            if inspect.isawaitable(got):
                got = await got
        except (MCPHostError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise MCPHostError(f"tool_search: the embedding function failed: {exc!r}") from exc
        return self._accept(got, texts)

    def _query_cached(self, query: str) -> list[float] | None:
        found = self._queries.get(query)
        if found is not None:
            self._queries.move_to_end(query)
        return found

    def _remember(self, query: str, vector: list[float]) -> None:
        self._queries[query] = vector
        if len(self._queries) > QUERY_CACHE:
            self._queries.popitem(last=False)

    def rank_sync(self, query: str) -> list[int]:
        """The tools by similarity to ``query``, best first (sync embedding functions)."""
        if self._vectors is None:
            vectors: list[list[float]] = []
            for start in range(0, len(self._texts), BATCH):
                vectors.extend(self._call_sync(self._texts[start:start + BATCH]))
            self._vectors = vectors
            logger.debug("tool_search: %d tools embedded", len(vectors))
        vector = self._query_cached(query)
        if vector is None:
            vector = self._call_sync([query])[0]
            self._remember(query, vector)
        return self._order(vector)

    async def rank(self, query: str) -> list[int]:
        """The tools by similarity to ``query``, best first."""
        if self._vectors is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:  # concurrent searches embed the tools once
                if self._vectors is None:
                    vectors: list[list[float]] = []
                    for start in range(0, len(self._texts), BATCH):
                        vectors.extend(await self._call(self._texts[start:start + BATCH]))
                    self._vectors = vectors
                    logger.debug("tool_search: %d tools embedded", len(vectors))
        vector = self._query_cached(query)
        if vector is None:
            vector = (await self._call([query]))[0]
            self._remember(query, vector)
        return self._order(vector)

    def _order(self, query: list[float]) -> list[int]:
        assert self._vectors is not None
        similarity = [(sum(a * b for a, b in zip(query, v)), i) for i, v in enumerate(self._vectors)]
        similarity.sort(key=lambda item: (-item[0], item[1]))
        return [i for _, i in similarity[:SEMANTIC_DEPTH]]

