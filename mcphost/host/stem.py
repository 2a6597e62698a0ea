"""The English (Porter2) stemmer of the Snowball project, for tool search.

Layer 4 (pure, no state). :func:`stem` maps a lower-case English word to its stem the way
the current Snowball ``english`` algorithm does (snowballstem.org/algorithms/english),
including its newer rules: the ``gener``/``commun``/``arsen``/``past``/``univers``/``later``/
``emerg``/``organ``/``inter`` region exceptions, ``-ogist`` to ``-og``, and the ``-ing`` cases
(``dying`` to ``die``, ``inning`` kept). ``tests/host/test_search_stem.py`` checks it
against a sample of the project's published vocabulary and its expected output.

A real stemmer matters for search: the word a user types ("news", "listing", "organize")
must meet the word a tool's description uses without a hand-written table that can turn
one word into an unrelated one ("news" is not "new").

The algorithm works on a list of characters with two region marks (R1, R2); each step
looks at the word's end, as the Snowball source does in its backward mode.
"""

from __future__ import annotations

import logging
from typing import Final

__all__ = ["stem"]

logger = logging.getLogger("mcphost.host.stem")

_VOWELS: Final = frozenset("aeiouy")
_NOT_SHORT_END: Final = frozenset("wxY")  # a short syllable does not end in these
_VALID_LI: Final = frozenset("cdeghkmnrt")
_DOUBLES: Final = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_APOSTROPHE: Final = "'"

# Whole words with a fixed stem, and words left as they are (not plurals, or the rules
# would get them wrong).
_EXCEPTIONS: Final = {
    "skis": "ski", "skies": "sky", "idly": "idl", "gently": "gentl", "ugly": "ugli",
    "early": "earli", "only": "onli", "singly": "singl",
    "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos",
    "bias": "bias", "andes": "andes",
}
# Prefixes whose R1 starts right after them (generate/general/generic all stem to "gener").
_R1_PREFIXES: Final = ("gener", "commun", "arsen", "past", "univers", "later", "emerg", "organ", "inter")

_STEP2: Final = (  # longest suffix first; (suffix, replacement)
    ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"),
    ("iveness", "ive"), ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"),
    ("entli", "ent"), ("ation", "ate"), ("alism", "al"), ("aliti", "al"), ("ousli", "ous"),
    ("iviti", "ive"), ("fulli", "ful"), ("ogist", "og"), ("enci", "ence"), ("anci", "ance"),
    ("abli", "able"), ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"),
    ("ogi", "og"), ("li", ""),
)
_STEP3: Final = (
    ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
    ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
)
_STEP4: Final = (
    "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous",
    "ive", "ize", "ion", "al", "er", "ic",
)


def _is_vowel(w: str, i: int) -> bool:
    return w[i] in _VOWELS


def _regions(w: str) -> tuple[int, int]:
    """R1 and R2: after the first non-vowel that follows a vowel (R1 after a listed
    prefix instead), and the same again inside R1."""
    n = len(w)

    def after_vc(start: int) -> int:
        i = start
        while i < n and not _is_vowel(w, i):
            i += 1
        while i < n and _is_vowel(w, i):
            i += 1
        return i + 1 if i < n else n

    p1 = n
    for prefix in _R1_PREFIXES:
        if w.startswith(prefix):
            p1 = len(prefix)
            break
    else:
        p1 = after_vc(0)
    p2 = after_vc(p1) if p1 < n else n
    return p1, p2


def _short_syllable_ends(w: str, end: int) -> bool:
    """Whether ``w[:end]`` ends in a short syllable: non-vowel, vowel, non-vowel (the last
    not w, x or Y), or a vowel then a non-vowel at the word's start; or "past"."""
    if end >= 3 and w[end - 1] not in _VOWELS and w[end - 1] not in _NOT_SHORT_END \
            and w[end - 2] in _VOWELS and w[end - 3] not in _VOWELS:
        return True
    if end == 2 and w[1] not in _VOWELS and w[0] in _VOWELS:
        return True
    return end >= 4 and w[end - 4:end] == "past"


def _has_vowel(w: str, end: int) -> bool:
    return any(c in _VOWELS for c in w[:end])


def _step1a(w: str) -> str:
    for suffix in ("'s'", "'s", _APOSTROPHE):
        if w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(("ied", "ies")):
        return w[:-2] if len(w) > 4 else w[:-1]  # ties -> tie, cries -> cri
    if w.endswith(("us", "ss")):
        return w
    if w.endswith("s") and _has_vowel(w, len(w) - 2):  # gaps -> gap, gas stays
        return w[:-1]
    return w


def _step1b(w: str, p1: int) -> str:
    for suffix in ("eedly", "eed"):
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start >= p1 and w[:start] not in ("proc", "exc", "succ"):
                return w[:start] + "ee"
            return w
    if w.endswith("ing") and not w.endswith("ingly"):
        start = len(w) - 3
        if start >= 1 and w[start - 1] == "y":
            if start == 2 and w[0] not in _VOWELS:  # dying -> die
                return w[0] + "ie"
        elif w[:start] in ("inn", "out", "cann", "herr", "earr", "even"):
            return w  # inning, outing, evening
    for suffix in ("ingly", "edly", "ing", "ed"):
        if w.endswith(suffix):
            break
    else:
        return w
    start = len(w) - len(suffix)
    if not _has_vowel(w, start):
        return w
    w = w[:start]
    if w.endswith(("at", "bl", "iz")):
        return w + "e"
    if w.endswith(_DOUBLES):
        if len(w) == 3 and w[0] in "aeo":  # add, egg, odd keep their double letter
            return w
        return w[:-1]
    if len(w) == p1 and _short_syllable_ends(w, len(w)):
        return w + "e"
    return w


def _step1c(w: str) -> str:
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _VOWELS:
        return w[:-1] + "i"
    return w


def _step2(w: str, p1: int) -> str:
    for suffix, repl in _STEP2:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < p1:
                return w
            if suffix == "ogi":
                return w[:start] + repl if start > 0 and w[start - 1] == "l" else w
            if suffix == "li":
                return w[:start] if start > 0 and w[start - 1] in _VALID_LI else w
            return w[:start] + repl
    return w


def _step3(w: str, p1: int, p2: int) -> str:
    for suffix, repl in _STEP3:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < p1 or (suffix == "ative" and start < p2):
                return w
            return w[:start] + repl
    return w


def _step4(w: str, p2: int) -> str:
    for suffix in _STEP4:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < p2:
                return w
            if suffix == "ion":
                return w[:start] if start > 0 and w[start - 1] in "st" else w
            return w[:start]
    return w


def _step5(w: str, p1: int, p2: int) -> str:
    start = len(w) - 1
    if w.endswith("e"):
        if start >= p2 or (start >= p1 and not _short_syllable_ends(w, start)):
            return w[:start]
    elif w.endswith("l") and start >= p2 and start > 0 and w[start - 1] == "l":
        return w[:start]
    return w


def _mark_y(w: str) -> str:
    """Initial y, and y after a vowel, become Y (a consonant) for the steps."""
    chars = list(w)
    for i, c in enumerate(chars):
        if c == "y" and (i == 0 or chars[i - 1] in _VOWELS):
            chars[i] = "Y"
    return "".join(chars)


def stem(word: str) -> str:
    """The Porter2 stem of ``word`` (lower-case letters and apostrophes)."""
    fixed = _EXCEPTIONS.get(word)
    if fixed is not None:
        return fixed
    if len(word) < 3:
        return word
    w = word[1:] if word.startswith(_APOSTROPHE) else word
    w = _mark_y(w)
    p1, p2 = _regions(w)
    w = _step1a(w)
    w = _step1b(w, p1)
    w = _step1c(w)
    w = _step2(w, p1)
    w = _step3(w, p1, p2)
    w = _step4(w, p2)
    w = _step5(w, p1, p2)
    return w.replace("Y", "y")
