"""Finding tools by what they do, for tool sets too large to give a model whole.

Layer 4 (pure). BM25 (k1 = 1.2, b = 0.75) over each tool's words: its name split on
``_ - . /`` and camelCase (counted twice: a name says the most), its description, and the
names and descriptions of its parameters. Words are lower-cased, cut to a simple stem
(plural and -ing/-ed endings), and stop words dropped. The index is built once per version
of the tool lists and queried in time proportional to the tools that share a word with the
query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["ToolIndex", "query_words", "words"]

_SPLIT: Final = re.compile(r"[^A-Za-z0-9]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STOP: Final = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "with"])
K1: Final = 1.2
B: Final = 0.75


def _stem(word: str) -> str:
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


# What people say for what tools call it (the query's words gain these, never the tools').
_SYNONYMS: Final = {
    "folder": ("directory",), "dir": ("directory",), "rename": ("move",), "find": ("search",),
    "remove": ("delete",), "erase": ("delete",), "make": ("create",), "new": ("create",),
    "picture": ("image",), "photo": ("image",), "modify": ("edit",), "change": ("edit",),
    "replace": ("edit",), "show": ("list", "get"), "fetch": ("get", "read"), "open": ("read",),
    "save": ("write",), "store": ("write", "create"), "lookup": ("search",), "query": ("search",),
}


def words(text: str) -> list[str]:
    """The searchable words of ``text``."""
    out = []
    for part in _SPLIT.split(_CAMEL.sub(" ", text)):
        word = part.lower()
        if word and word not in _STOP:
            out.append(_stem(word))
    return out


def query_words(text: str) -> list[str]:
    """The words of a query, with the words tools use for them."""
    out = words(text)
    for word in list(out):
        out.extend(_SYNONYMS.get(word, ()))
    return out


def _tool_words(server: str, tool: Mapping[str, Any]) -> list[str]:
    name = str(tool.get("name", ""))
    found = words(name) * 2 + words(server)
    found += words(str(tool.get("description") or ""))
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for param, sub in list(properties.items())[:100]:
            found += words(str(param))
            if isinstance(sub, Mapping):
                found += words(str(sub.get("description") or ""))[:50]
    return found[:2000]


class ToolIndex:
    """BM25 over ``(canonical name, server, tool)`` entries."""

    def __init__(self, entries: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
        self.names: list[str] = []
        self.descriptions: list[str] = []
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, (canonical, server, tool) in enumerate(entries):
            self.names.append(canonical)
            self.descriptions.append(str(tool.get("description") or ""))
            terms = _tool_words(server, tool)
            self.lengths.append(len(terms))
            counts: dict[str, int] = {}
            for term in terms:
                counts[term] = counts.get(term, 0) + 1
            for term, n in counts.items():
                self.postings.setdefault(term, []).append((i, n))
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` best tools for ``query``: ``{"name", "score", "description"}``."""
        total = len(self.names)
        scores: dict[int, float] = {}
        for term in set(query_words(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (total - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, n in posting:
                norm = n * (K1 + 1) / (n + K1 * (1 - B + B * self.lengths[i] / (self.average or 1.0)))
                scores[i] = scores.get(i, 0.0) + idf * norm
        best = sorted(scores.items(), key=lambda item: (-item[1], self.names[item[0]]))[:limit]
        return [{"name": self.names[i], "score": round(score, 4), "description": self.descriptions[i]}
                for i, score in best]
