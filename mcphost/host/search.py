"""Finding tools by what they do, for tool sets too large to give a model whole.

Layer 4 (pure). :class:`ToolIndex` ranks tools by field-weighted BM25 (BM25F: Robertson,
Zaragoza and Taylor, "Simple BM25 extension to multiple weighted fields", 2004). Each tool
has five fields, each with its own weight and length normalisation:

- ``name``: the tool's name split on ``_ - . /`` and camelCase, and its title;
- ``lead``: the first sentence of its description (what the tool is for);
- ``rest``: the rest of the description (usage notes, which often name other things);
- ``params``: its parameters' names, descriptions and enum values;
- ``server``: the server's name and its ``domains`` from the configuration.

Words are the stems of :mod:`~mcphost.host.search_words`; adjacent pairs of words are
indexed too, so a query's phrase ("pull request") counts more where the tool says it as a
phrase. Every term's contribution to every tool is computed when the index is built (it
does not depend on the query), so a query costs a dictionary look-up per alternative of
each of its concepts and a pass over the tools that share one of them. Ties go to the tool
whose server's words the query uses ("web", "memory", "file"), then to the name.

:func:`fuse` combines this ranking with another (the application's embeddings, see
:mod:`~mcphost.host.search_semantic`) by reciprocal rank fusion.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from operator import itemgetter
from typing import Any, Final

from .search_words import PAIR, Concept, query_concepts, words

__all__ = ["FIELDS", "ToolIndex", "fuse", "tool_text"]

logger = logging.getLogger("mcphost.host.search")

#: BM25 saturation: how fast repeated matches stop adding.
K1: Final = 2.0
#: Per field: (weight, length normalisation b).
FIELDS: Final = {
    "name": (2.0, 0.0),
    "lead": (1.0, 0.9),
    "rest": (0.5, 0.75),
    "params": (0.2, 0.75),
    "server": (1.5, 0.0),
}
#: What an indexed adjacent pair adds to the field's own weight's share.
_PAIR_FIELDS: Final = ("name", "lead")
#: Bounds on what one tool (a server's data) may cost the index.
MAX_FIELD_WORDS: Final = 150
MAX_PARAMS: Final = 50
PARAM_CHARS: Final = 120
#: The fewest letters a query word and an index word share to stand for each other.
MIN_PREFIX: Final = 5
#: How strongly a tool's score follows the share of the query's words it matches.
COORDINATION: Final = 0.5
#: How much a tool's score grows with the share of its name's words the query asked for.
NAME_PRECISION: Final = 0.1
#: With a limit, how many of the best tools before the word-share scaling are ranked.
CANDIDATES: Final = 100
#: Reciprocal rank fusion constant (Cormack, Clarke and Buettcher, 2009).
RRF_K: Final = 60

_SENTENCE_END: Final = re.compile(r"(?<=[a-z0-9)\]])[.!?](?:\s|$)|\n\s*\n")


def _lead_and_rest(description: str) -> tuple[str, str]:
    found = _SENTENCE_END.search(description)
    if found is None:
        return description, ""
    return description[: found.start()], description[found.end():]


def _param_text(schema: Any) -> str:
    """Each parameter's name, the start of its description, and its enum values."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return ""
    parts: list[str] = []
    for name, sub in list(properties.items())[:MAX_PARAMS]:
        parts.append(str(name))
        if isinstance(sub, Mapping):
            parts.append(str(sub.get("description") or "")[:PARAM_CHARS])
            enum = sub.get("enum")
            if isinstance(enum, list):
                parts.extend(str(v) for v in enum[:10] if isinstance(v, str))
    return " ".join(parts)


def _fields(server: str, tool: Mapping[str, Any], domains: Sequence[str]) -> dict[str, list[str]]:
    description = str(tool.get("description") or "")
    lead, rest = _lead_and_rest(description)
    annotations = tool.get("annotations")
    title = tool.get("title") or (annotations.get("title") if isinstance(annotations, Mapping) else None)
    name = str(tool.get("name", "")) + (" " + str(title) if title else "")
    found = {"name": words(name), "lead": words(lead), "rest": words(rest),
             "params": words(_param_text(tool.get("inputSchema"))),
             "server": words(server + " " + " ".join(domains))}
    return {field: terms[:MAX_FIELD_WORDS] for field, terms in found.items()}


def tool_text(server: str, tool: Mapping[str, Any]) -> str:
    """The text of a tool to embed: its qualified name and its description."""
    return f"{server}.{tool.get('name', '')}: {str(tool.get('description') or '')[:2000]}"


class ToolIndex:
    """BM25F over ``(canonical name, server, tool)`` entries (and each server's
    ``domains``, given as ``{server: [domain, ...]}``)."""

    def __init__(self, entries: Iterable[tuple[str, str, Mapping[str, Any]]],
                 domains: Mapping[str, Sequence[str]] | None = None) -> None:
        # The index is hundreds of thousands of containers made at once, with no cycle
        # among them: the cyclic collector would walk them again and again while they are
        # made (a quarter of the build time for 10,000 tools). It is paused, then resumed.
        paused = gc.isenabled()
        gc.disable()
        try:
            self._build(entries, domains)
        finally:
            if paused:
                gc.enable()

    def _build(self, entries: Iterable[tuple[str, str, Mapping[str, Any]]],
               domains: Mapping[str, Sequence[str]] | None) -> None:
        self.names: list[str] = []
        self.descriptions: list[str] = []
        self.servers: list[str] = []
        self._server_terms: dict[str, frozenset[str]] = {}
        self._name_terms: list[frozenset[str]] = []
        order = list(FIELDS)
        rows: list[list[Counter[str]]] = []  # per tool, per field: term -> count
        lengths: list[list[int]] = [[] for _ in order]
        no_domains: Sequence[str] = ()
        for canonical, server, tool in entries:
            fields = _fields(server, tool, (domains or {}).get(server, no_domains))
            self.names.append(canonical)
            self.servers.append(server)
            self.descriptions.append(str(tool.get("description") or ""))
            self._server_terms.setdefault(server, frozenset(fields["server"]))
            self._name_terms.append(frozenset(fields["name"]))
            row = []
            for slot, field in enumerate(order):
                terms = fields[field]
                lengths[slot].append(len(terms))
                counted = Counter(terms)
                if field in _PAIR_FIELDS and len(terms) > 1:
                    counted.update([a + PAIR + b for a, b in pairwise(terms)])
                row.append(counted)
            rows.append(row)
        total = len(rows)
        averages = [max(1.0, sum(found) / total) if total else 1.0 for found in lengths]
        shape = [(FIELDS[f][0], FIELDS[f][1]) for f in order]
        #: term -> ([tool, ...], [its saturated weighted frequency, ...]); the term's idf
        #: is applied at query time, from the posting's length (its document frequency).
        #: Two flat lists, not tuples: 10,000 tools make 400,000 entries, and tuples would
        #: be that many objects for the garbage collector to walk.
        self.postings: dict[str, tuple[list[int], list[float]]] = {}
        postings = self.postings
        k1, k1_plus = K1, K1 + 1.0
        for i, row in enumerate(rows):
            weighted: dict[str, float] = {}
            get = weighted.get
            for slot, counted in enumerate(row):
                if not counted:
                    continue
                weight, b = shape[slot]
                factor = weight / (1.0 - b + b * lengths[slot][i] / averages[slot])
                for term, n in counted.items():
                    weighted[term] = get(term, 0.0) + n * factor
            for term, tf in weighted.items():
                found = postings.get(term)
                if found is None:
                    postings[term] = ([i], [tf * k1_plus / (tf + k1)])
                else:
                    found[0].append(i)
                    found[1].append(tf * k1_plus / (tf + k1))
        self._total = total
        self._vocabulary: list[str] | None = None
        logger.debug("search index: %d tools, %d terms", total, len(self.postings))

    def __len__(self) -> int:
        return len(self.names)

    def related(self, word: str) -> list[str]:
        """Words of the index that ``word`` begins with, or that begin with it (at least
        :data:`MIN_PREFIX` letters in common): what a stemmer leaves apart
        ("relationship", "relat"; "config", "configur")."""
        if len(word) < MIN_PREFIX:
            return []
        if self._vocabulary is None:
            self._vocabulary = sorted(term for term in self.postings if PAIR not in term)
        vocabulary = self._vocabulary
        out = [word[:end] for end in range(len(word) - 1, MIN_PREFIX - 1, -1)
               if word[:end] in self.postings][:1]
        start = bisect.bisect_left(vocabulary, word)
        longer = []
        for term in vocabulary[start:start + 50]:
            if not term.startswith(word):
                break
            longer.append(term)
        return out + sorted(longer, key=len)[:3]

    def idf(self, term: str) -> float:
        """How rare ``term`` is among the tools (0 when no tool has it)."""
        posting = self.postings.get(term)
        if not posting:
            return 0.0
        df = len(posting[0])
        return math.log(1.0 + (self._total - df + 0.5) / (df + 0.5))

    def scores(self, concepts: Sequence[Concept]) -> tuple[dict[int, float], Counter[int], int]:
        """Each matching tool's score (per concept its best alternative, summed), how many
        of the query's words it matched, and how many words the index knew."""
        scores: dict[int, float] = {}
        get = scores.get
        matched: Counter[int] = Counter()
        words_asked = 0
        for concept in concepts:
            present = [(self.postings[term], weight * self.idf(term)) for term, weight in concept
                       if term in self.postings]
            if not present:
                continue
            is_word = PAIR not in concept[0][0]
            words_asked += is_word
            if len(present) == 1:  # most concepts: no best alternative to pick
                (tools, values), scale = present[0]
                for i, value in zip(tools, values):
                    scores[i] = get(i, 0.0) + value * scale
                if is_word:
                    matched.update(tools)
                continue
            best: dict[int, float] = {}
            best_get = best.get
            for (tools, values), scale in present:
                for i, value in zip(tools, values):
                    value *= scale
                    if value > best_get(i, 0.0):
                        best[i] = value
            for i, value in best.items():
                scores[i] = get(i, 0.0) + value
            if is_word:
                matched.update(best.keys())
        return scores, matched, words_asked

    def ranked(self, query: str, limit: int | None = None) -> list[tuple[int, float]]:
        """The matching tools, best first: ``(position, score)`` (the ``limit`` best, or
        all). A score is scaled by the share of the query's words the tool has, so that a
        tool matching one rare word strongly does not beat one matching most of what was
        asked; with a ``limit``, only the :data:`CANDIDATES` best before that are scaled."""
        concepts = query_concepts(query, known=self.postings.__contains__, related=self.related)
        scores, matched, words_asked = self.scores(concepts)
        if limit is not None and len(scores) > CANDIDATES:
            items = heapq.nlargest(CANDIDATES, scores.items(), key=itemgetter(1))
        else:
            items = list(scores.items())
        if COORDINATION and words_asked:
            items = [(i, score * (max(1, matched[i]) / words_asked) ** COORDINATION) for i, score in items]
        asked = {term for concept in concepts for term, _ in concept}
        if NAME_PRECISION:  # of two tools that match alike, the one whose name says less else
            names_of = self._name_terms
            items = [(i, score * (1.0 + NAME_PRECISION * len(names_of[i] & asked) / max(1, len(names_of[i]))))
                     for i, score in items]
        server_hits = {server: len(asked & terms) for server, terms in self._server_terms.items()}
        servers, names = self.servers, self.names
        items.sort(key=lambda item: (-round(item[1], 9), -server_hits[servers[item[0]]], names[item[0]]))
        return items if limit is None else items[:limit]

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` best tools for ``query``: ``{"name", "score", "description"}``."""
        return [self.hit(i, score) for i, score in self.ranked(query, limit)]

    def hit(self, i: int, score: float) -> dict[str, Any]:
        """The answer for the tool at ``i``."""
        return {"name": self.names[i], "score": round(score, 4), "description": self.descriptions[i]}


def fuse(*rankings: Sequence[int], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each ranking (positions, best first) gives ``1 / (k + rank)``
    to each of its items; the sums, best first (ties: the earlier ranking's order)."""
    fused: dict[int, float] = {}
    first: dict[int, tuple[int, int]] = {}
    for which, ranking in enumerate(rankings):
        for rank, i in enumerate(ranking, start=1):
            fused[i] = fused.get(i, 0.0) + 1.0 / (k + rank)
            first.setdefault(i, (which, rank))
    return sorted(fused.items(), key=lambda item: (-item[1], first[item[0]]))
