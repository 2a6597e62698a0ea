"""ECMA-262 regular expressions for ``pattern``, ``patternProperties`` and ``format: regex``.

JSON Schema patterns are ECMA-262 regular expressions (JSON Schema 2020-12 core, section
6.4), which differ from Python's ``re`` in ways that change results: ``\\d`` and ``\\w`` are
ASCII-only, ``$`` never matches before a trailing newline, ``.`` excludes every line
terminator, ``\\s`` is a specific set of code points and ``\\p{...}`` property escapes
exist. This module owns parsing a pattern into a small AST, translating it for ``re``, and
choosing, once per pattern, the engine that searches with it:

* ``re`` (C, fast) when :mod:`mcphost.schema.ambiguity` proves backtracking linear for it;
* otherwise the linear-time NFA simulation of :mod:`mcphost.schema.linear` (a hostile
  schema cannot make a search exponential, or even quadratic);
* for back-references, which no automaton can match, the step-budgeted backtracker of
  :mod:`mcphost.schema.backtrack`.

Before that choice the AST is *trimmed* (:func:`trim`): a search only asks whether the
pattern matches somewhere, so a leading or trailing ``X*`` can go and ``X+`` becomes
``X``. The rule is documented in ``docs/schema.md``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from mcphost.schema.ambiguity import analysis_budget, backtracking_safe
from mcphost.schema.backtrack import Backtracker
from mcphost.schema.linear import LinearMatcher
from mcphost.schema.nfa import Program, RegexError, max_length

__all__ = [
    "MAX_NESTING", "MAX_PATTERN_LENGTH", "MAX_RE_RANGES", "Pattern", "RegexError", "compile_pattern",
    "is_ecma_regex", "parse", "trim",
]

#: Longer patterns are refused outright: no real tool schema needs them, and both the
#: parser and the NFA are proportional to the pattern's size.
MAX_PATTERN_LENGTH = 4096
#: Deeper group nesting is refused: the parser and the analyses recurse on it.
MAX_NESTING = 50
#: Ranges in large character classes a pattern may have and still be compiled by ``re``,
#: whose charset optimiser takes ~5 ms per ``\\p{L}`` (650 ranges); beyond, the linear
#: matcher (which builds each class once, cheaply) runs it.
MAX_RE_RANGES = 2_000
_MAX_CP = 0x10FFFF

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


@lru_cache(maxsize=1)
def _all_categories() -> dict[str, list[tuple[int, int]]]:
    """Code point ranges of every two-letter general category: one scan of all code
    points (about 0.2 s, once per process), however many categories patterns use."""
    category = unicodedata.category
    out: dict[str, list[tuple[int, int]]] = {}
    prev, start = category("\0"), 0
    for cp in range(1, _MAX_CP + 1):
        c = category(chr(cp))
        if c != prev:
            out.setdefault(prev, []).append((start, cp - 1))
            prev, start = c, cp
    out.setdefault(prev, []).append((start, _MAX_CP))
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


EMPTY: Ast = ("cat", [])


def _trim_side(node: Ast, left: bool) -> tuple[Ast, bool]:
    """``node`` simplified for a search that is not anchored on that side; True when
    nothing of it is needed any more."""
    kind = node[0]
    if kind == "repeat":
        body, lo = node[1], node[2]
        if lo == 0:
            return EMPTY, True
        if lo == 1:
            return _trim_side(body, left)
        return ("repeat", body, lo, lo, node[4]), False
    if kind in ("group", "ncgroup"):
        inner, empty = _trim_side(node[1], left)
        return (EMPTY, True) if empty else ((kind, inner, *node[2:]), False)
    if kind == "cat":
        items = list(node[1])
        while items:
            i = 0 if left else len(items) - 1
            new, empty = _trim_side(items[i], left)
            if not empty:
                items[i] = new
                break
            del items[i]
        if not items:
            return EMPTY, True
        return (items[0] if len(items) == 1 else ("cat", items)), False
    if kind == "alt":
        branches = [_trim_side(b, left) for b in node[1]]
        if any(empty for _, empty in branches):
            return EMPTY, True
        return ("alt", [b for b, _ in branches]), False
    return node, False  # a character, an assertion or a look-around: needed as it is


def trim(node: Ast) -> Ast:
    """Drop what a yes/no search does not need: ``X*`` at either end, ``X{n,m}`` there
    becomes ``X{n}`` (and ``X+`` becomes ``X``).

    A search asks whether *some* substring matches. If ``X{k}R`` matches at i with
    k >= n, then ``X{n}R`` matches at the start of the last n copies, and conversely;
    likewise at the end. Only valid without back-references (captures change).
    """
    node, empty = _trim_side(node, True)
    if empty:
        return EMPTY
    node, empty = _trim_side(node, False)
    return EMPTY if empty else node


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


# --- public ----------------------------------------------------------------------------


class Pattern:
    """A compiled ECMA-262 pattern.

    Attributes:
        source: the pattern as written in the schema.
        search: ``search(text) -> bool``, true when the pattern matches anywhere in text.
        engine: ``"re"``, or the linear matcher's mode (``"dfa"``, ``"pike"``,
            ``"pike+look"``), or ``"backtrack"``.
        linear: true when the pattern does not run on ``re``.
        matcher: the :class:`~mcphost.schema.linear.LinearMatcher` or
            :class:`~mcphost.schema.backtrack.Backtracker` (None for ``re``); its
            ``run(text)`` returns ``(matched, steps)``.
    """

    __slots__ = ("engine", "linear", "matcher", "search", "source")

    def __init__(
        self,
        source: str,
        search: Callable[[str], bool],
        engine: str,
        matcher: LinearMatcher | Backtracker | None = None,
    ) -> None:
        self.source = source
        self.search = search
        self.engine = engine
        self.linear = engine != "re"
        self.matcher = matcher


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


def _python_re(ast: Ast) -> Callable[[str], bool] | None:
    try:
        fast = re.compile(_emit(ast)).search
    except (re.error, OverflowError, RecursionError):
        return None  # e.g. variable-width look-behind, which Python lacks
    return lambda text: fast(text) is not None


@lru_cache(maxsize=1024)
def compile_pattern(source: str, strict: bool = False) -> Pattern:
    """Compile an ECMA-262 pattern, choosing its engine (see the module docstring).

    Args:
        source: the pattern.
        strict: refuse patterns with nested quantifiers, and patterns that can only run
            under a step budget (back-references; look-around the analysis cannot prove
            cheap), instead of matching them.

    Returns:
        The compiled pattern; its ``search`` tells whether it matches anywhere.

    Raises:
        RegexError: the pattern is invalid, unsupported, too large, or refused in strict
            mode.
    """
    ast, ngroups = parse(source)
    if strict and _is_risky(ast):
        raise RegexError(
            f"pattern {source!r} has nested quantifiers (catastrophic backtracking risk)"
        )
    if any(_walk_kinds(ast, "backref")):
        if strict:
            raise RegexError(
                f"pattern {source!r} has back-references, which can only be matched "
                "under a step budget (strict mode)"
            )
        bt = Backtracker(Program(ast, ngroups, captures=True), source)
        return Pattern(source, bt.search, bt.mode, bt)
    ast = trim(ast)
    try:
        analysed = Program(ast, ngroups, reduce=True)
        safe = backtracking_safe(
            analysed, max_length(ast) is not None, analysis_budget(len(source))
        )
    except RegexError:
        safe = False  # too large to analyse: not proven safe
    if safe and _class_ranges(ast) <= MAX_RE_RANGES:
        fast = _python_re(ast)
        if fast is not None:
            return Pattern(source, fast, "re")
    lm = LinearMatcher(Program(ast, ngroups), source)
    if strict and lm.mode == "pike+look":
        raise RegexError(
            f"pattern {source!r} has look-around that can only be matched under a step "
            "budget (strict mode)"
        )
    return Pattern(source, lm.search, lm.mode, lm)


def _class_ranges(ast: Ast) -> int:
    """Ranges in the pattern's larger character classes: what ``re``'s charset compiler
    spends its time on (single characters and small classes cost it next to nothing)."""
    return sum(len(n[1]) for n in _walk_kinds(ast, "set") if len(n[1]) > 16)


def _walk_kinds(node: Ast, kind: str) -> list[Ast]:
    """Every node of ``kind`` in the AST."""
    found: list[Ast] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n[0] == kind:
            found.append(n)
        if n[0] in ("cat", "alt"):
            stack.extend(n[1])
        elif n[0] in ("group", "ncgroup", "look", "repeat"):
            stack.append(n[1])
    return found


def is_ecma_regex(source: str) -> bool:
    """True when ``source`` is a valid ECMA-262 regular expression (``format: regex``)."""
    try:
        parse(source)
    except RegexError:
        return False
    return True
