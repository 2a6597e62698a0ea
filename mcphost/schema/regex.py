"""ECMA-262 regular expressions for ``pattern``, ``patternProperties`` and ``format: regex``.

JSON Schema patterns are ECMA-262 regular expressions (JSON Schema 2020-12 core, section
6.4), which differ from Python's ``re`` in ways that change results: ``\\d`` and ``\\w`` are
ASCII-only, ``$`` never matches before a trailing newline, ``.`` excludes every line
terminator, ``\\s`` is a specific set of code points and ``\\p{...}`` property escapes
exist. This module owns choosing, once per pattern, the engine that searches with it
(parsing is :mod:`mcphost.schema.regex_syntax`, the translation for ``re``
:mod:`mcphost.schema.regex_translate`):

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
from collections.abc import Callable
from functools import lru_cache

from mcphost.schema.ambiguity import analysis_budget, backtracking_safe
from mcphost.schema.backtrack import Backtracker
from mcphost.schema.linear import LinearMatcher
from mcphost.schema.nfa import Program, RegexError, max_length
from mcphost.schema.regex_syntax import MAX_NESTING, MAX_PATTERN_LENGTH, Ast, parse
from mcphost.schema.regex_translate import to_python

__all__ = [
    "MAX_NESTING", "MAX_PATTERN_LENGTH", "MAX_RE_RANGES", "Pattern", "RegexError", "compile_pattern",
    "is_ecma_regex", "parse", "trim",
]

#: Ranges in large character classes a pattern may have and still be compiled by ``re``,
#: whose charset optimiser takes ~5 ms per ``\\p{L}`` (650 ranges); beyond, the linear
#: matcher (which builds each class once, cheaply) runs it.
MAX_RE_RANGES = 2_000


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


def _python_re(ast: Ast) -> Callable[[str], bool] | None:
    try:
        fast = re.compile(to_python(ast)).search
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
