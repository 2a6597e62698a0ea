"""ECMA-262 regular expressions for ``pattern``, ``patternProperties`` and ``format: regex``.

JSON Schema patterns are ECMA-262 regular expressions (JSON Schema 2020-12 core, section
6.4), which differ from Python's ``re`` in ways that change results: ``\\d`` and ``\\w`` are
ASCII-only, ``$`` never matches before a trailing newline, ``.`` excludes every line
terminator, ``\\s`` is a specific set of code points and ``\\p{...}`` property escapes
exist. This module owns the translation. It parses a pattern into a small AST, then either

* emits an equivalent Python ``re`` pattern (the normal, fast path), or
* for a pattern with nested unbounded quantifiers (``(a+)+``, the shape behind
  catastrophic backtracking), builds a Thompson NFA and matches by simulating it, which is
  linear in the length of the string, so a hostile schema cannot hang the host.

The stance on pathological patterns is documented in ``docs/schema.md``.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["MAX_PATTERN_LENGTH", "Pattern", "RegexError", "compile_pattern", "is_ecma_regex"]

#: Longer patterns are refused outright: no real tool schema needs them, and both the
#: parser and the NFA are proportional to the pattern's size.
MAX_PATTERN_LENGTH = 4096
#: The NFA expands counted repetition; refuse patterns whose expansion is absurdly large.
_MAX_NFA_STATES = 20000
_MAX_CP = 0x10FFFF


class RegexError(ValueError):
    """The pattern is not a valid (or supported) ECMA-262 regular expression."""


Ranges = tuple[tuple[int, int], ...]


def _norm(ranges: list[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _neg(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX_CP:
        out.append((nxt, _MAX_CP))
    return tuple(out)


# ECMA-262 22.2.2.9 CharacterClassEscape: \d and \w are ASCII; \s is WhiteSpace plus
# LineTerminator (not Python's str.isspace, which adds U+001C..U+001F and omits U+FEFF).
_DIGIT: Ranges = ((0x30, 0x39),)
_WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE: Ranges = _norm(
    [(9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
     (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
)
_LINE_TERMINATORS: Ranges = ((10, 10), (13, 13), (0x2028, 0x2029))
_DOT: Ranges = _neg(_LINE_TERMINATORS)
_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": _DIGIT, "D": _neg(_DIGIT), "w": _WORD, "W": _neg(_WORD),
    "s": _SPACE, "S": _neg(_SPACE),
}
_CONTROL = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
_SYNTAX = set("^$\\.*+?()[]{}|/")

# Unicode general categories, by short and long name (ECMA-262 table 67).
_CATEGORY_NAMES = {
    "L": "Letter", "LC": "Cased_Letter", "Lu": "Uppercase_Letter", "Ll": "Lowercase_Letter",
    "Lt": "Titlecase_Letter", "Lm": "Modifier_Letter", "Lo": "Other_Letter", "M": "Mark",
    "Mn": "Nonspacing_Mark", "Mc": "Spacing_Mark", "Me": "Enclosing_Mark", "N": "Number",
    "Nd": "Decimal_Number", "Nl": "Letter_Number", "No": "Other_Number", "P": "Punctuation",
    "Pc": "Connector_Punctuation", "Pd": "Dash_Punctuation", "Ps": "Open_Punctuation",
    "Pe": "Close_Punctuation", "Pi": "Initial_Punctuation", "Pf": "Final_Punctuation",
    "Po": "Other_Punctuation", "S": "Symbol", "Sm": "Math_Symbol", "Sc": "Currency_Symbol",
    "Sk": "Modifier_Symbol", "So": "Other_Symbol", "Z": "Separator", "Zs": "Space_Separator",
    "Zl": "Line_Separator", "Zp": "Paragraph_Separator", "C": "Other", "Cc": "Control",
    "Cf": "Format", "Cs": "Surrogate", "Co": "Private_Use", "Cn": "Unassigned",
}
_CATEGORY_BY_NAME = {**{v: k for k, v in _CATEGORY_NAMES.items()}, **{k: k for k in _CATEGORY_NAMES}}
_CATEGORY_BY_NAME["digit"] = "Nd"


@lru_cache(maxsize=64)
def _category_ranges(cat: str) -> Ranges:
    """Code point ranges of a general category (computed once: a scan of all code points)."""
    ranges: list[tuple[int, int]] = []
    start = -1
    for cp in range(_MAX_CP + 2):
        inside = False
        if cp <= _MAX_CP:
            c = unicodedata.category(chr(cp))
            inside = c == cat or (len(cat) == 1 and c[0] == cat) or (
                cat == "LC" and c in ("Lu", "Ll", "Lt")
            )
        if inside and start < 0:
            start = cp
        elif not inside and start >= 0:
            ranges.append((start, cp - 1))
            start = -1
    return tuple(ranges)


# AST nodes are tuples: ("set", ranges) ("cat", [..]) ("alt", [..]) ("group", node, name)
# ("ncgroup", node) ("repeat", node, min, max|None, lazy) ("bol",) ("eol",) ("wordb",)
# ("nwordb",) ("look", node, behind, negative) ("backref", int|str)
Ast = tuple[Any, ...]


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0
        self.groups = 0
        self.names: set[str] = set()
        self.backrefs: list[int | str] = []

    def error(self, msg: str) -> RegexError:
        return RegexError(f"{msg} at position {self.i} in {self.src!r}")

    def peek(self) -> str:
        return self.src[self.i] if self.i < len(self.src) else ""

    def parse(self) -> Ast:
        node = self.alt()
        if self.i < len(self.src):
            raise self.error("unbalanced ')'")
        for ref in self.backrefs:
            if isinstance(ref, int) and ref > self.groups:
                raise self.error(f"back-reference \\{ref} to a missing group")
            if isinstance(ref, str) and ref not in self.names:
                raise self.error(f"back-reference to unknown group name {ref!r}")
        return node

    def alt(self) -> Ast:
        branches = [self.seq()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.seq())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def seq(self) -> Ast:
        items: list[Ast] = []
        while self.i < len(self.src) and self.peek() not in "|)":
            atom = self.atom()
            items.append(self.quantifier(atom))
        return items[0] if len(items) == 1 else ("cat", items)

    def quantifier(self, atom: Ast) -> Ast:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{":
            m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.src, self.i)
            if m is None:
                return atom
            self.i = m.end()
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
            if hi is not None and hi < lo:
                raise self.error("numbers out of order in {} quantifier")
        else:
            return atom
        if atom[0] in ("bol", "eol", "wordb", "nwordb") or (atom[0] == "look" and atom[2]):
            raise self.error("nothing to repeat")
        lazy = self.peek() == "?"
        if lazy:
            self.i += 1
        return ("repeat", atom, lo, hi, lazy)

    def atom(self) -> Ast:
        c = self.src[self.i]
        self.i += 1
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == ".":
            return ("set", _DOT)
        if c in "*+?":
            raise self.error("nothing to repeat")
        if c == "{" and re.compile(r"\d+(,\d*)?\}").match(self.src, self.i):
            raise self.error("nothing to repeat")
        if c == "(":
            return self.group()
        if c == "[":
            return ("set", self.char_class())
        if c == "\\":
            return self.escape()
        return ("set", ((ord(c), ord(c)),))

    def group(self) -> Ast:
        src = self.src
        if src.startswith("?:", self.i):
            self.i += 2
            kind: tuple[Any, ...] = ("ncgroup",)
        elif src.startswith("?=", self.i) or src.startswith("?!", self.i):
            kind = ("look", False, src[self.i + 1] == "!")
            self.i += 2
        elif src.startswith("?<=", self.i) or src.startswith("?<!", self.i):
            kind = ("look", True, src[self.i + 2] == "!")
            self.i += 3
        elif src.startswith("?<", self.i):
            m = re.compile(r"\?<([A-Za-z_$][A-Za-z0-9_$]*)>").match(src, self.i)
            if m is None:
                raise self.error("invalid group name")
            name = m.group(1)
            if name in self.names:
                raise self.error(f"duplicate group name {name!r}")
            self.names.add(name)
            self.groups += 1
            self.i = m.end()
            kind = ("group", name)
        elif src.startswith("?", self.i):
            raise self.error("invalid group")
        else:
            self.groups += 1
            kind = ("group", None)
        body = self.alt()
        if self.peek() != ")":
            raise self.error("missing ')'")
        self.i += 1
        if kind[0] == "look":
            return ("look", body, kind[1], kind[2])
        if kind[0] == "group":
            return ("group", body, kind[1])
        return ("ncgroup", body)

    def hex(self, n: int) -> int:
        digits = self.src[self.i : self.i + n]
        if len(digits) != n or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise self.error("invalid hexadecimal escape")
        self.i += n
        return int(digits, 16)

    def escape_char(self, in_class: bool) -> int | Ranges:
        """A character escape (code point) or a class escape (ranges), after the '\\'."""
        if self.i >= len(self.src):
            raise self.error("pattern ends with a backslash")
        c = self.src[self.i]
        self.i += 1
        if c in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c]
        if c in _CONTROL:
            return _CONTROL[c]
        if c in ("p", "P"):
            m = re.compile(r"\{([A-Za-z_]+)(=([A-Za-z_]+))?\}").match(self.src, self.i)
            if m is None:
                raise self.error("invalid unicode property escape")
            self.i = m.end()
            name = m.group(3) if m.group(1) in ("General_Category", "gc") else m.group(1)
            if m.group(3) and m.group(1) not in ("General_Category", "gc"):
                raise RegexError(f"unsupported unicode property {m.group(0)!r}")
            if name not in _CATEGORY_BY_NAME:
                raise RegexError(f"unsupported unicode property {m.group(0)!r}")
            ranges = _category_ranges(_CATEGORY_BY_NAME[name])
            return _neg(ranges) if c == "P" else ranges
        if c == "c":
            letter = self.peek()
            if not ("a" <= letter <= "z" or "A" <= letter <= "Z"):
                raise self.error("invalid control escape")
            self.i += 1
            return ord(letter) % 32
        if c == "x":
            return self.hex(2)
        if c == "u":
            if self.peek() == "{":
                end = self.src.find("}", self.i)
                digits = self.src[self.i + 1 : end] if end > 0 else ""
                if not digits or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise self.error("invalid unicode escape")
                self.i = end + 1
                cp = int(digits, 16)
                if cp > _MAX_CP:
                    raise self.error("unicode escape out of range")
                return cp
            return self.hex(4)
        if c == "0" and not self.peek().isdigit():
            return 0
        if c == "b" and in_class:
            return 8
        if c == "-" and in_class:
            return ord("-")
        if c in _SYNTAX:
            return ord(c)
        raise self.error(f"invalid escape '\\{c}'")

    def escape(self) -> Ast:
        c = self.peek()
        if c == "b":
            self.i += 1
            return ("wordb",)
        if c == "B":
            self.i += 1
            return ("nwordb",)
        if c.isdigit() and c != "0":
            m = re.compile(r"\d+").match(self.src, self.i)
            assert m is not None
            self.i = m.end()
            self.backrefs.append(int(m.group()))
            return ("backref", int(m.group()))
        if c == "k":
            m = re.compile(r"k<([A-Za-z_$][A-Za-z0-9_$]*)>").match(self.src, self.i)
            if m is None:
                raise self.error("invalid named back-reference")
            self.i = m.end()
            self.backrefs.append(m.group(1))
            return ("backref", m.group(1))
        r = self.escape_char(False)
        return ("set", ((r, r),)) if isinstance(r, int) else ("set", r)

    def class_atom(self) -> int | Ranges:
        c = self.src[self.i]
        self.i += 1
        if c == "\\":
            return self.escape_char(True)
        return ord(c)

    def char_class(self) -> Ranges:
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        items: list[tuple[int, int]] = []
        while True:
            if self.i >= len(self.src):
                raise self.error("missing ']'")
            if self.peek() == "]":
                self.i += 1
                break
            lo = self.class_atom()
            if self.peek() == "-" and self.i + 1 < len(self.src) and self.src[self.i + 1] != "]":
                self.i += 1
                hi = self.class_atom()
                if isinstance(lo, tuple) or isinstance(hi, tuple):
                    raise self.error("class escape used as a range bound")
                if hi < lo:
                    raise self.error("range out of order in character class")
                items.append((lo, hi))
            elif isinstance(lo, tuple):
                items.extend(lo)
            else:
                items.append((lo, lo))
        ranges = _norm(items)
        return _neg(ranges) if negate else ranges


# --- analysis ----------------------------------------------------------------------------


def _has_unbounded(node: Ast) -> bool:
    kind = node[0]
    if kind == "repeat":
        return node[3] is None or _has_unbounded(node[1])
    if kind in ("cat", "alt"):
        return any(_has_unbounded(n) for n in node[1])
    if kind in ("group", "ncgroup", "look"):
        return _has_unbounded(node[1])
    return False


def _is_risky(node: Ast) -> bool:
    """Nested quantifiers: a repeat (max > 1) around an unbounded repeat, e.g. ``(a+)+``."""
    kind = node[0]
    if kind == "repeat":
        hi = node[3]
        if (hi is None or hi > 1) and _has_unbounded(node[1]):
            return True
        return _is_risky(node[1])
    if kind in ("cat", "alt"):
        return any(_is_risky(n) for n in node[1])
    if kind in ("group", "ncgroup", "look"):
        return _is_risky(node[1])
    return False


def _has(node: Ast, kinds: tuple[str, ...]) -> bool:
    if node[0] in kinds:
        return True
    if node[0] in ("cat", "alt"):
        return any(_has(n, kinds) for n in node[1])
    if node[0] in ("group", "ncgroup", "look", "repeat"):
        return _has(node[1], kinds)
    return False


# --- emission as a Python ``re`` pattern ------------------------------------------------


def _cp(c: int) -> str:
    ch = chr(c)
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\U{c:08x}"


def _emit_set(ranges: Ranges) -> str:
    if not ranges:
        return "(?!)"
    if ranges == ((0, _MAX_CP),):
        return r"[\s\S]"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _cp(ranges[0][0])
    parts = [_cp(lo) if lo == hi else f"{_cp(lo)}-{_cp(hi)}" for lo, hi in ranges]
    return "[" + "".join(parts) + "]"


_W = "[0-9A-Za-z_]"


def _emit(node: Ast) -> str:
    kind = node[0]
    if kind == "set":
        return _emit_set(node[1])
    if kind == "cat":
        return "".join(_emit(n) if n[0] != "alt" else f"(?:{_emit(n)})" for n in node[1])
    if kind == "alt":
        return "|".join(_emit(n) for n in node[1])
    if kind == "group":
        name = node[2]
        return f"(?P<{name}>{_emit(node[1])})" if name else f"({_emit(node[1])})"
    if kind == "ncgroup":
        return f"(?:{_emit(node[1])})"
    if kind == "repeat":
        body = _emit(node[1])
        if not (node[1][0] in ("group", "ncgroup") or (node[1][0] == "set" and len(body) <= 1)):
            body = f"(?:{body})"
        lo, hi = node[2], node[3]
        q = "{%d,%s}" % (lo, "" if hi is None else hi)  # noqa: UP031 - braces in the format
        q = {"{0,}": "*", "{1,}": "+", "{0,1}": "?"}.get(q, q)
        return body + q + ("?" if node[4] else "")
    if kind == "bol":
        return "^"
    if kind == "eol":
        # ECMA '$' (no multiline flag) matches only at the very end, never before a
        # trailing newline as Python's '$' does.
        return r"\Z"
    if kind == "wordb":
        return f"(?:(?<={_W})(?!{_W})|(?<!{_W})(?={_W}))"
    if kind == "nwordb":
        return f"(?:(?<={_W})(?={_W})|(?<!{_W})(?!{_W}))"
    if kind == "look":
        op = ("?<" if node[2] else "?") + ("!" if node[3] else "=")
        return f"({op}{_emit(node[1])})"
    if kind == "backref":
        ref = node[1]
        return f"(?P={ref})" if isinstance(ref, str) else f"(?:\\{ref})"
    raise AssertionError(kind)  # pragma: no cover


# --- linear-time matching for risky patterns -------------------------------------------

_SET, _SPLIT, _ASSERT, _MATCH = 0, 1, 2, 3


class _NFA:
    """A Thompson NFA, simulated breadth-first: time is O(len(text) * states)."""

    def __init__(self, ast: Ast) -> None:
        self.kind: list[int] = []
        self.arg: list[Any] = []
        self.out: list[list[int]] = []
        match = self._new(_MATCH, None, [])
        self.start = self._build(ast, match)

    def _new(self, kind: int, arg: Any, out: list[int]) -> int:
        if len(self.kind) >= _MAX_NFA_STATES:
            raise RegexError("pattern too large for the linear-time matcher")
        self.kind.append(kind)
        self.arg.append(arg)
        self.out.append(out)
        return len(self.kind) - 1

    def _build(self, node: Ast, nxt: int) -> int:
        kind = node[0]
        if kind == "set":
            ranges = node[1]
            starts = [lo for lo, _ in ranges]
            ends = [hi for _, hi in ranges]
            return self._new(_SET, (starts, ends), [nxt])
        if kind == "cat":
            for child in reversed(node[1]):
                nxt = self._build(child, nxt)
            return nxt
        if kind == "alt":
            return self._new(_SPLIT, None, [self._build(b, nxt) for b in node[1]])
        if kind in ("group", "ncgroup"):
            return self._build(node[1], nxt)
        if kind == "repeat":
            body, lo, hi = node[1], node[2], node[3]
            if hi is None:
                loop = self._new(_SPLIT, None, [])
                self.out[loop] = [self._build(body, loop), nxt]
                cur = loop
            else:
                cur = nxt
                for _ in range(hi - lo):
                    cur = self._new(_SPLIT, None, [self._build(body, cur), nxt])
                    nxt = cur
            for _ in range(lo):
                cur = self._build(body, cur)
            return cur
        if kind in ("bol", "eol", "wordb", "nwordb"):
            return self._new(_ASSERT, kind, [nxt])
        raise RegexError("look-around and back-references are not supported here")

    def _closure(self, states: list[int], seen: set[int], st: int, text: str, pos: int) -> bool:
        stack = [st]
        kinds, outs, args = self.kind, self.out, self.arg
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            k = kinds[s]
            if k == _MATCH:
                return True
            if k == _SET:
                states.append(s)
            elif k == _SPLIT:
                stack.extend(reversed(outs[s]))
            elif _assert(args[s], text, pos):
                stack.append(outs[s][0])
        return False

    def search(self, text: str) -> bool:
        current: list[int] = []
        seen: set[int] = set()
        for pos in range(len(text) + 1):
            if self._closure(current, seen, self.start, text, pos):
                return True
            if pos == len(text):
                break
            cp = ord(text[pos])
            nxt: list[int] = []
            nseen: set[int] = set()
            for s in current:
                starts, ends = self.arg[s]
                i = bisect_right(starts, cp) - 1
                if i >= 0 and cp <= ends[i] and self._closure(
                    nxt, nseen, self.out[s][0], text, pos + 1
                ):
                    return True
            current, seen = nxt, nseen
        return False


def _is_word(text: str, i: int) -> bool:
    if 0 <= i < len(text):
        c = text[i]
        return c == "_" or ("0" <= c <= "9") or ("a" <= c <= "z") or ("A" <= c <= "Z")
    return False


def _assert(kind: str, text: str, pos: int) -> bool:
    if kind == "bol":
        return pos == 0
    if kind == "eol":
        return pos == len(text)
    boundary = _is_word(text, pos - 1) != _is_word(text, pos)
    return boundary if kind == "wordb" else not boundary


# --- public ----------------------------------------------------------------------------


class Pattern:
    """A compiled ECMA-262 pattern.

    Attributes:
        source: the pattern as written in the schema.
        search: ``search(text) -> bool``, true when the pattern matches anywhere in text.
        linear: true when the linear-time NFA is used instead of ``re``.
    """

    __slots__ = ("linear", "search", "source")

    def __init__(self, source: str, search: Callable[[str], bool], linear: bool) -> None:
        self.source = source
        self.search = search
        self.linear = linear


def _parse(source: str) -> Ast:
    if len(source) > MAX_PATTERN_LENGTH:
        raise RegexError(f"pattern longer than {MAX_PATTERN_LENGTH} characters")
    return _Parser(source).parse()


@lru_cache(maxsize=1024)
def compile_pattern(source: str, strict: bool = False) -> Pattern:
    """Compile an ECMA-262 pattern.

    Args:
        source: the pattern.
        strict: refuse patterns with nested quantifiers instead of matching them with
            the (slower, linear-time) NFA.

    Returns:
        The compiled pattern; its ``search`` tells whether it matches anywhere.

    Raises:
        RegexError: the pattern is invalid, unsupported, or refused in strict mode.
    """
    ast = _parse(source)
    if _is_risky(ast):
        if strict:
            raise RegexError(
                f"pattern {source!r} has nested quantifiers (catastrophic backtracking risk)"
            )
        if not _has(ast, ("look", "backref")):
            nfa = _NFA(ast)
            return Pattern(source, nfa.search, True)
        raise RegexError(
            f"pattern {source!r} has nested quantifiers together with look-around or "
            "back-references, which cannot be matched in linear time"
        )
    try:
        compiled = re.compile(_emit(ast))
    except re.error as exc:  # e.g. variable-width look-behind, which Python lacks
        raise RegexError(f"unsupported pattern {source!r}: {exc}") from None
    fast = compiled.search

    def search(text: str) -> bool:
        return fast(text) is not None

    return Pattern(source, search, False)


def is_ecma_regex(source: str) -> bool:
    """True when ``source`` is a valid ECMA-262 regular expression (``format: regex``)."""
    try:
        _parse(source)
    except RegexError:
        return False
    return True
