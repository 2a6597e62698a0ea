"""The words of tool search: tokens, stems, stop words, and what a user's word may also mean.

Layer 4 (pure). :func:`words` turns text into stemmed search terms (split on anything that
is not a letter or digit and on camelCase, lower-cased, stop words dropped, Porter2
stems from :mod:`~mcphost.host.stem`). :func:`query_concepts` turns a query into
*concepts*: each of the query's words with the words that mean the same, plus what its
multi-word phrases mean and its adjacent pairs as phrases.

The thesaurus is built so that an expansion can never turn a word into an unrelated one:

- every entry is a set of words that mean the same thing in the vocabulary of tools
  ("folder" and "directory"), or a one-way hint from an everyday word to the words tools
  use for it ("remember" -> "memory", "observation");
- an expansion weighs less than the word itself, and a concept scores by its best
  alternative, never their sum, so a synonym only helps where the word itself is absent;
- words are stemmed before the lookup, so "news" stays "news" (the Porter2 exception)
  and is never "new".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Final

from .search_vocabulary import PHRASES, VOCABULARY
from .stem import stem

__all__ = ["Concept", "PAIR", "query_concepts", "stem_cached", "words"]

logger = logging.getLogger("mcphost.host.search_words")

_SPLIT: Final = re.compile(r"[^A-Za-z0-9]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: How a pair of adjacent words is spelled as one term ("pull request").
PAIR: Final = " "

_STOP: Final = frozenset(["a", "an", "and", "are", "as", "at", "be", "been", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "this", "these", "those", "to", "with", "i", "me", "my", "mine", "you", "your", "yours", "we", "us", "our", "they", "them", "their", "he", "him", "his", "she", "her", "hers", "please", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "do", "does", "did", "done", "doing", "have", "has", "had", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "there", "here", "some", "any", "all", "just", "let", "want", "wants", "need", "so", "if", "then", "than", "also", "very", "s", "t", "d", "ll", "m", "re", "ve", "o", "y", "everything", "something", "anything", "nothing", "every", "each", "under", "take", "give", "about"])

# A word beyond these many characters is not a word a user types; it is skipped.
_MAX_WORD: Final = 40

_STEMS: dict[str, str] = {}
_STEMS_MAX: Final = 200_000  # the cache is cleared past this: memory bounded, speed kept


def stem_cached(word: str) -> str:
    """:func:`~mcphost.host.stem.stem`, remembered (tool texts repeat their words)."""
    found = _STEMS.get(word)
    if found is None:
        if len(_STEMS) >= _STEMS_MAX:
            _STEMS.clear()
        found = _STEMS[word] = stem(word)
    return found


_TOKEN: Final = re.compile(r"[A-Za-z0-9]+")
_TERMS: dict[str, tuple[str, ...]] = {}  # a token as written -> its terms (camelCase: whole, then parts)


def _terms_of(token: str) -> tuple[str, ...]:
    parts = _CAMEL.split(token)
    if len(parts) > 1:
        parts.insert(0, token)
    terms = []
    for part in parts:
        if 2 <= len(part) <= _MAX_WORD:
            word = part.lower()
            if word not in _STOP:
                terms.append(stem_cached(word) if word.isalpha() else word)  # "mp3", "v2", "404" as written
    found = tuple(terms)
    if len(_TERMS) >= _STEMS_MAX:
        _TERMS.clear()
    _TERMS[token] = found
    return found


def _groups(text: str) -> list[tuple[str, ...]]:
    """Per word of ``text``: its stem, or for a camelCase word its own stem then its
    parts' ("GitHub": "github", "git", "hub")."""
    get = _TERMS.get
    out = []
    for token in _TOKEN.findall(text):
        terms = get(token)
        if terms is None:
            terms = _terms_of(token)
        if terms:
            out.append(terms)
    return out


def words(text: str) -> list[str]:
    """The search terms of ``text``, in order; a camelCase word gives itself and its
    parts, so that both spellings meet."""
    get = _TERMS.get
    out: list[str] = []
    for token in _TOKEN.findall(text):
        terms = get(token)
        if terms is None:
            terms = _terms_of(token)
        out += terms
    return out


# Sets of words that mean the same to someone asking for a tool (general vocabulary of
# tools, written before any query was tried).
_SAME: Final = [
    "directory folder dir",
    "delete remove erase",
    "search find lookup locate",
    "image picture photo png jpg jpeg gif",
    "audio sound mp3 wav",
    "video clip movie",
    "web internet online",
    "edit modify",
    "rename move",
    "repository repo",
    "issue bug ticket",
    "url link website webpage",
    "click press tap",
    "compress zip gzip",
    "environment env",
    "javascript js",
    "dropdown select",
    "dialog popup alert",
    "pr pull_request",
    "mr merge_request",
    "permit allow",
    "sum total",
    "switch toggle",
    "create make generate",
    "multiple several many various",
]

# One-way hints: an everyday word (or a shell command), and the words tools use for what
# it asks. MCP's own words are here too: asking the user is "elicitation", asking the
# client's model is "sampling", the memory server keeps a knowledge graph.
_HINTS: Final = {
    "remember": "memory",
    "recall": "memory",
    "forget": "delete memory",
    "llm": "sampling",
    "save": "write",
    "store": "write",
    "open": "read",
    "show": "get list read",
    "view": "read get",
    "display": "read get",
    "print": "read get",
    "load": "read",
    "google": "web search",
    "mkdir": "create directory",
    "ls": "list directory",
    "grep": "search",
    "rm": "delete",
    "mv": "move",
    # added while tuning (each for a miss of the tuning half; words, not queries)
    "fix": "edit",
    "append": "add",
    "two": "multiple",
    "three": "multiple",
    "inside": "content",
    "disk": "file",
    "space": "size",
    "big": "size",
    "large": "size",
    "change": "modified edit update",
    "fact": "observation",
    "record": "create add",
    "know": "knowledge",
    "connection": "relation",
    "entry": "entity node",
    "repeat": "echo",
    "plus": "sum",
    "calculate": "sum compute",
    "share": "roots",
    "notification": "update subscription",
    "report": "create",
    "propose": "create",
    "reply": "comment",
    "answer": "reply comment",
    "one": "single",
    "read": "get",
    "tell": "send post message",
    "street": "address",
    "restaurant": "place business",
    "cafe": "place business",
    "shop": "place business",
    "museum": "place",
    "hotel": "place",
}

# Phrases whose words mean more together: what they mean, added as one concept.
_PHRASES: Final = {
    "ask the user": "elicitation",
    "client's model": "sampling",
    "pull request": "pull_request",
    "merge request": "merge_request",
    "knowledge graph": "memory",
    "look up": "=search",
    "last changed": "=modified, time",
    "last modified": "=modified, time",
    "opening hours": "details place",
}


def _stems(text: str) -> list[str]:
    """The terms of a table's words; "pull_request" is the pair "pull request"."""
    return [PAIR.join(stem_cached(part) for part in w.split("_")) for w in text.lower().split()]


def _table() -> dict[str, list[tuple[str, float]]]:
    table: dict[str, list[tuple[str, float]]] = {}

    def add(word: str, alt: str, weight: float) -> None:
        if alt != word and all(alt != a for a, _ in table.get(word, ())):
            table.setdefault(word, []).append((alt, weight))

    for group in _SAME:
        members = _stems(group)
        for word in members:
            for alt in members:
                add(word, alt, SYNONYM_WEIGHT)
    for hints in (_HINTS, VOCABULARY):
        for word, alts in hints.items():
            for alt in _stems(alts):
                add(stem_cached(word), alt, HINT_WEIGHT)
    return table


#: What an alternative weighs against the word itself.
SYNONYM_WEIGHT: Final = 0.8
HINT_WEIGHT: Final = 0.55
PHRASE_WEIGHT: Final = 1.0
PAIR_WEIGHT: Final = 0.6
QUESTION_WEIGHT: Final = 0.7
PREFIX_WEIGHT: Final = 0.6
NUMBERS_WEIGHT: Final = 0.55

_TABLE: Final = _table()
# A meaning that starts with "=" replaces the phrase's words (an idiom: "how long" is not
# about length); any other meaning is added beside them ("pull request").
# Phrases are matched on every word but articles ("how long" keeps its "how"). A meaning
# is alternatives ("time duration": either), or concepts apart ("create, issue": both).
_ARTICLES: Final = frozenset(["a", "an", "the", "my", "your", "our", "their", "this", "that", "these", "those", "some"])


def _phrase_words(text: str) -> list[str]:
    return [stem_cached(w) for w in _TOKEN.findall(text.lower()) if w not in _ARTICLES]


def _meaning(text: str) -> tuple[bool, tuple[tuple[str, ...], ...]]:
    return text.startswith("="), tuple(tuple(_stems(part)) for part in text.lstrip("=").split(","))


_PHRASE_TABLE: Final = {tuple(_phrase_words(k)): _meaning(v) for k, v in {**PHRASES, **_PHRASES}.items()}
_PHRASE_MAX: Final = max(len(k) for k in _PHRASE_TABLE)

#: One concept of a query: its alternatives, ``(term, weight)``; it scores by the best one.
Concept = tuple[tuple[str, float], ...]


_EXTENSIONS: Final = {
    "image": "png jpg jpeg gif svg webp bmp ico tiff",
    "audio": "mp3 wav ogg flac m4a aac",
    "video": "mp4 mov avi mkv webm",
    "text": "txt md rst csv tsv log json yaml yml toml ini cfg conf xml html htm css js ts py rb go rs java c h cpp sh",
    "": "pdf doc docx xls xlsx ppt pptx zip tar gz",
}
# File types named as a bare word that mean a file ("open a png"); not "go", "log" or "c".
_FILE_TYPES: Final = frozenset(
    ["png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "tiff", "mp3", "wav", "ogg", "flac", "m4a", "mp4", "mov", "avi", "mkv", "webm", "pdf", "csv", "tsv", "docx", "xlsx", "pptx"])
_KIND_OF: Final = {ext: kind for kind, exts in _EXTENSIONS.items() for ext in exts.split()}
# A file's name ("notes.txt", ".log"): the query speaks of a file of that kind.
_FILE_NAME: Final = re.compile(r"(?<![\w.])([\w-]*)\.([A-Za-z0-9]{1,5})\b(?!\.\w)")
# A code identifier ("asyncio.TaskGroup", "read_text", "getUser()"): the query is about code.
_IDENTIFIER: Final = re.compile(r"\b(?:[a-z_]\w*\.[A-Za-z_]\w*|[a-z]+[A-Z]\w*|[A-Za-z]+_\w+)(?:\(\))?")


_URL: Final = re.compile(r"\bhttps?://\S+|\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|ai|app|co|edu|gov|uk|de|fr)\b(?:/\S*)?",
                         re.IGNORECASE)
_NAMED_FILE: Final = re.compile(r"\b(?:[A-Za-z]+file|readme|license|changelog|dockerfile)\b", re.IGNORECASE)
_CHANNEL: Final = re.compile(r"(?<![\w&])#[A-Za-z][\w-]*")
_LAT_LONG: Final = re.compile(r"(?<![\w.])-?\d{1,3}\.\d+\s*,\s*-?\d{1,3}\.\d+(?![\w.])")
_NUMBER: Final = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


_QUESTION_WORDS: Final = frozenset(["what", "which", "who", "where", "when", "how", "is", "are", "do", "does", "did",
                                     "has", "have", "can"])


def _special(text: str) -> tuple[str, list[Concept]]:
    """File names and code identifiers of a query: the text without their extensions,
    and what they say (a file of a kind, several files, code)."""
    concepts: list[Concept] = []
    kinds: list[str] = []

    def file_name(match: re.Match[str]) -> str:
        kind = _KIND_OF.get(match.group(2).lower())
        if kind is None:
            return match.group(0)
        kinds.append(kind)
        return match.group(1)

    text = _FILE_NAME.sub(file_name, text)
    if kinds:
        concepts.append(((stem_cached("file"), 1.0),))
        concepts.extend(((stem_cached(kind), SYNONYM_WEIGHT),) for kind in sorted(set(kinds)) if kind)
        if len(kinds) > 1:
            concepts.append(((stem_cached("multiple"), SYNONYM_WEIGHT),))
    else:
        for word in _SPLIT.split(text.lower()):
            if word in _FILE_TYPES:  # "open a png": a file too
                concepts.append(((stem_cached("file"), SYNONYM_WEIGHT),))
                break
    if _URL.search(text):  # "go to example.com": a page to open
        text = _URL.sub(" ", text)
        concepts.append(((stem_cached("url"), 1.0), (stem_cached("navigate"), SYNONYM_WEIGHT)))
    if _NAMED_FILE.search(text) and not kinds:  # "the Dockerfile", "the README"
        concepts.append(((stem_cached("file"), SYNONYM_WEIGHT),))
    if _LAT_LONG.search(text):  # "48.85, 2.35": a place's coordinates
        text = _LAT_LONG.sub(" ", text)
        concepts.append(((stem_cached("coordinates"), 1.0),))
    if len(_NUMBER.findall(text)) >= 2:  # "add 2 and 3": numbers to work on
        concepts.append(((stem_cached("numbers"), NUMBERS_WEIGHT),))
    if _CHANNEL.search(text):  # "#general": a chat channel
        concepts.append(((stem_cached("channel"), SYNONYM_WEIGHT),))
    if _IDENTIFIER.search(text):
        concepts.append(((stem_cached("code"), SYNONYM_WEIGHT),))
    # What a question asks for: "what files are in ..." a list, "when ..." a time, "who ..." users.
    lowered = _SPLIT.split(text.lower().strip())
    if lowered and lowered[0] in ("what", "which") and any(
            len(w) > 3 and w.endswith("s") and not w.endswith("ss") and stem_cached(w) != w for w in lowered[1:]):
        concepts.append(((stem_cached("list"), QUESTION_WEIGHT),))
    if lowered and lowered[0] in _QUESTION_WORDS:  # a question asks to read, not to change
        concepts.append(tuple((stem_cached(w), QUESTION_WEIGHT) for w in ("get", "read", "search", "list")))
    if "when" in lowered:
        concepts.append(((stem_cached("time"), QUESTION_WEIGHT), (stem_cached("date"), QUESTION_WEIGHT)))
    if "who" in lowered:
        concepts.append(((stem_cached("user"), QUESTION_WEIGHT),))
    return text, concepts


def query_concepts(text: str, *, expand: bool = True, known: Callable[[str], bool] | None = None,
                   related: Callable[[str], list[str]] | None = None) -> list[Concept]:
    """The concepts of a query: one per distinct word (with its synonyms and hints), one
    per known phrase (with what it means), one per adjacent pair (as a phrase), and what
    its file names, code identifiers and question words say. A camelCase word counts as
    itself where ``known`` knows it ("GitHub"), else as its parts ("TaskGroup"). A word
    ``known`` does not know also stands for the ``related`` words (the index's words it
    begins with or that begin with it: "relationship" and "relation")."""
    special: list[Concept] = []
    if expand:
        text, special = _special(text)
    # Every word but articles, for phrases; then the words that stay, for the rest.
    tokens = [t for t in _TOKEN.findall(text) if t.lower() not in _ARTICLES]
    keys = [stem_cached(t.lower()) for t in tokens]
    meanings: list[Concept] = []
    idioms: set[int] = set()
    if expand:
        for size in range(min(_PHRASE_MAX, len(keys)), 1, -1):
            for i in range(len(keys) - size + 1):
                entry = _PHRASE_TABLE.get(tuple(keys[i:i + size]))
                if entry and not idioms.intersection(range(i, i + size)):
                    replaces, parts = entry
                    meanings.extend(tuple((m, PHRASE_WEIGHT) for m in part) for part in parts)
                    if replaces:
                        idioms.update(range(i, i + size))
    found: list[str] = []
    for position, token in enumerate(tokens):
        if position in idioms:
            continue
        group = _TERMS.get(token) or _terms_of(token)
        if len(group) == 1 or (group and known is not None and known(group[0])):
            found.append(group[0])
        else:
            found.extend(group[1:])
    concepts: list[Concept] = []
    seen: set[str] = set()
    for word in found:
        if word in seen:
            continue
        seen.add(word)
        alts: list[tuple[str, float]] = [(word, 1.0)]
        if expand:
            alts.extend(_TABLE.get(word, ()))
            if related is not None and known is not None and not known(word):
                alts.extend((alt, PREFIX_WEIGHT) for alt in related(word))
        concepts.append(tuple(alts))
    concepts.extend(meanings)
    pairs = {found[i] + PAIR + found[i + 1] for i in range(len(found) - 1) if found[i] != found[i + 1]}
    concepts.extend(((pair, PAIR_WEIGHT),) for pair in sorted(pairs))

    heads = {concept[0][0] for concept in concepts}
    concepts.extend(c for c in special if c[0][0] not in heads)
    return concepts


def pairs_of(terms: Iterable[str]) -> list[str]:
    """The adjacent pairs of a field's terms, spelled as one term."""
    seq = list(terms)
    return [seq[i] + PAIR + seq[i + 1] for i in range(len(seq) - 1)]
