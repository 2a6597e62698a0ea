"""The syntax of ECMA-262 regular expressions: a pattern parsed into a small AST.

This module owns reading a JSON Schema ``pattern`` (JSON Schema 2020-12 core, section 6.4:
an ECMA-262 regular expression) into the tuple AST every matcher of :mod:`mcphost.schema`
starts from, and the code point sets its escapes and classes stand for. ECMA's sets differ
from Python's: ``\\d`` and ``\\w`` are ASCII-only, ``.`` excludes every line terminator,
``\\s`` is a specific set of code points and ``\\p{...}`` property escapes exist. The limits
(:data:`MAX_PATTERN_LENGTH`, :data:`MAX_NESTING`) are enforced here, while parsing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from mcphost.schema.nfa import RegexError

__all__ = ["MAX_CP", "MAX_NESTING", "MAX_PATTERN_LENGTH", "Ast", "Ranges", "parse"]

#: Longer patterns are refused outright: no real tool schema needs them, and both the
#: parser and the NFA are proportional to the pattern's size.
MAX_PATTERN_LENGTH = 4096
#: Deeper group nesting is refused: the parser and the analyses recurse on it.
MAX_NESTING = 50
#: The largest Unicode code point.
MAX_CP = 0x10FFFF

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
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
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


@lru_cache(maxsize=1)
def _all_categories() -> dict[str, list[tuple[int, int]]]:
    """Code point ranges of every two-letter general category: one scan of all code
    points (about 0.2 s, once per process), however many categories patterns use."""
    category = unicodedata.category
    out: dict[str, list[tuple[int, int]]] = {}
    prev, start = category("\0"), 0
    for cp in range(1, MAX_CP + 1):
        c = category(chr(cp))
        if c != prev:
            out.setdefault(prev, []).append((start, cp - 1))
            prev, start = c, cp
    out.setdefault(prev, []).append((start, MAX_CP))
    return out


@lru_cache(maxsize=64)
def _category_ranges(cat: str) -> Ranges:
    """Code point ranges of a general category (``Lu``), a group (``L``) or ``LC``."""
    table = _all_categories()
    wanted = ("Lu", "Ll", "Lt") if cat == "LC" else [c for c in table if c.startswith(cat)]
    return _norm([r for c in wanted for r in table.get(c, [])])


# AST nodes are tuples: ("set", ranges) ("cat", [..]) ("alt", [..]) ("group", node, name, index)
# ("ncgroup", node) ("repeat", node, min, max|None, lazy) ("bol",) ("eol",) ("wordb",)
# ("nwordb",) ("look", node, behind, negative) ("backref", int|str)
Ast = tuple[Any, ...]




class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0
        self.groups = 0
        self.names: dict[str, int] = {}
        self.backrefs: list[int | str] = []
        self.depth = 0

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
        return _resolve_backrefs(node, self.names) if self.backrefs else node

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
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"groups nested deeper than {MAX_NESTING}")
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
            self.groups += 1
            self.names[name] = self.groups
            self.i = m.end()
            kind = ("group", name, self.groups)
        elif src.startswith("?", self.i):
            raise self.error("invalid group")
        else:
            self.groups += 1
            kind = ("group", None, self.groups)
        body = self.alt()
        if self.peek() != ")":
            raise self.error("missing ')'")
        self.i += 1
        self.depth -= 1
        if kind[0] == "look":
            return ("look", body, kind[1], kind[2])
        if kind[0] == "group":
            return ("group", body, kind[1], kind[2])
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
                if cp > MAX_CP:
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


def _resolve_backrefs(node: Ast, names: dict[str, int]) -> Ast:
    """Named back-references (``\\k<y>``) become group numbers, as the matchers want."""
    kind = node[0]
    if kind == "backref":
        ref = node[1]
        return ("backref", names[ref]) if isinstance(ref, str) else node
    if kind in ("cat", "alt"):
        return (kind, [_resolve_backrefs(n, names) for n in node[1]])
    if kind in ("group", "ncgroup", "look", "repeat"):
        return (kind, _resolve_backrefs(node[1], names), *node[2:])
    return node


def parse(source: str) -> tuple[Ast, int]:
    """Parse an ECMA-262 pattern: ``(ast, number of capture groups)``.

    Raises:
        RegexError: invalid, unsupported, longer than :data:`MAX_PATTERN_LENGTH` or
            nested deeper than :data:`MAX_NESTING`.
    """
    if len(source) > MAX_PATTERN_LENGTH:
        raise RegexError(f"pattern longer than {MAX_PATTERN_LENGTH} characters")
    parser = _Parser(source)
    return parser.parse(), parser.groups
