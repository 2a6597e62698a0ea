"""Thompson NFA programs for ECMA-262 patterns: the one representation every matcher shares.

This module owns turning a parsed pattern (the AST of :mod:`mcphost.schema.regex`) into a
flat instruction list, a Thompson NFA (Thompson 1968; the layout follows Russ Cox,
"Regular Expression Matching: the Virtual Machine Approach", 2009). Three consumers read it:

* :mod:`mcphost.schema.linear` simulates it breadth-first (Pike VM, lazy DFA): time
  O(len(text) x states), never exponential;
* :mod:`mcphost.schema.backtrack` walks it depth-first with a step budget, for what an
  automaton cannot do (back-references);
* :mod:`mcphost.schema.ambiguity` inspects its shape to decide whether Python's
  backtracking ``re`` is safe for the pattern.

Counted repetition ``X{n,m}`` is expanded into copies of ``X``, so the program's size is
bounded (:data:`MAX_STATES`) and a pattern whose expansion is larger is refused. For the
ambiguity analysis the counts are clipped (``reduce=True``): three mandatory and three
optional copies show every way two copies can meet, and keep the analysis small.

Captures, ECMA's per-iteration capture reset and its empty-iteration check (ECMA-262
22.2.2.3.1 RepeatMatcher, steps 2.b and 4) only matter to back-references, so they are
emitted only with ``captures=True`` (the backtracker).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from mcphost.errors import SchemaError

__all__ = [
    "ASSERT", "BACKREF", "CHAR", "CHECK", "JMP", "LOOK", "MARK", "MATCH", "MAX_STATES",
    "PatternTooExpensive", "Program", "RESET", "RegexError", "SAVE", "SPLIT", "assertion",
    "char_test", "max_length", "word_at",
]

#: Instructions. CHAR consumes one code point in ``arg`` (ranges, test); SPLIT forks to
#: ``x`` (preferred) and ``y``; JMP, SAVE, RESET, MARK go on to ``x``; ASSERT passes when
#: its condition (bol, eol, wordb, nwordb) holds; LOOK runs a sub-program (look-around);
#: BACKREF consumes what a group captured; CHECK fails an iteration that consumed nothing;
#: MATCH accepts (the whole pattern, or one look-around body).
CHAR, SPLIT, JMP, ASSERT, LOOK, SAVE, BACKREF, RESET, MARK, CHECK, MATCH = range(11)

#: Expanded programs larger than this are refused: both the linear matcher's time per
#: character and the analysis are proportional to the program's size.
MAX_STATES = 20_000

Ast = tuple[Any, ...]
Ranges = tuple[tuple[int, int], ...]


class RegexError(ValueError):
    """The pattern is not a valid (or supported) ECMA-262 regular expression."""


class PatternTooExpensive(SchemaError):
    """A pattern that needs a step budget (look-around, back-references) exceeded it.

    It is a :class:`~mcphost.errors.SchemaError`: the schema asked for more work than the
    host grants a pattern, which is the server's fault, not the data's.
    """


def char_test(ranges: Ranges) -> Callable[[str], bool]:
    """A fast membership test for a set of code point ranges."""
    size = sum(hi - lo + 1 for lo, hi in ranges)
    if size <= 256:
        members = frozenset(chr(c) for lo, hi in ranges for c in range(lo, hi + 1))
        return members.__contains__
    starts = [lo for lo, _ in ranges]
    ends = [hi for _, hi in ranges]

    def test(ch: str) -> bool:
        cp = ord(ch)
        i = bisect_right(starts, cp) - 1
        return i >= 0 and cp <= ends[i]

    return test


def max_length(node: Ast) -> int | None:
    """The longest string ``node`` can match, or None when unbounded (back-references
    count as unbounded: what they match is not known from the pattern)."""
    kind = node[0]
    if kind == "set":
        return 1
    if kind in ("cat", "alt"):
        lengths = [max_length(n) for n in node[1]]
        if any(n is None for n in lengths):
            return None
        known = [n for n in lengths if n is not None]
        if kind == "cat":
            return sum(known)
        return max(known, default=0)
    if kind in ("group", "ncgroup"):
        return max_length(node[1])
    if kind == "repeat":
        inner = max_length(node[1])
        if inner == 0:
            return 0
        if inner is None or node[3] is None:
            return None
        return int(inner * node[3])
    if kind == "backref":
        return None
    return 0  # assertions and look-arounds consume nothing


def _groups_in(node: Ast) -> tuple[int, int] | None:
    """The smallest and largest capture group index inside ``node``."""
    found: list[int] = []
    stack = [node]
    while stack:
        n = stack.pop()
        kind = n[0]
        if kind == "group":
            found.append(n[3])
        if kind in ("cat", "alt"):
            stack.extend(n[1])
        elif kind in ("group", "ncgroup", "repeat", "look"):
            stack.append(n[1])
    return (min(found), max(found)) if found else None


class Program:
    """A Thompson NFA as parallel lists indexed by instruction number (pc).

    Attributes:
        op, x, y, arg, back: opcode, successors, operand, and for CHAR/BACKREF whether it
            reads leftwards (inside a look-behind, which ECMA matches right to left).
        start: the first instruction of the pattern.
        ngroups, nregs: capture groups and empty-check registers (``captures=True``).
        has_look, has_word, has_backref: which features the program uses.
        looks: LOOK pcs.
    """

    def __init__(
        self,
        ast: Ast,
        ngroups: int,
        *,
        captures: bool = False,
        reduce: bool = False,
        max_states: int = MAX_STATES,
    ) -> None:
        self.op: list[int] = []
        self.x: list[int] = []
        self.y: list[int] = []
        self.arg: list[Any] = []
        self.back: list[bool] = []
        self.captures = captures
        self.reduce = reduce
        self.max_states = max_states
        self.ngroups = ngroups
        self.nregs = 0
        self.has_look = self.has_word = self.has_backref = False
        self.looks: list[int] = []
        self._tests: dict[Ranges, Callable[[str], bool]] = {}
        match = self._new(MATCH, None)
        self.start = self._build(ast, match, False)

    def __len__(self) -> int:
        return len(self.op)

    def _new(self, op: int, arg: Any, x: int = -1, y: int = -1, back: bool = False) -> int:
        if len(self.op) >= self.max_states:
            raise RegexError(
                f"pattern expands to more than {self.max_states} automaton states "
                "(counted repetition is too large)"
            )
        self.op.append(op)
        self.arg.append(arg)
        self.x.append(x)
        self.y.append(y)
        self.back.append(back)
        return len(self.op) - 1

    def _char(self, ranges: Ranges, nxt: int, back: bool) -> int:
        if self.reduce:  # the analysis reads the ranges only
            return self._new(CHAR, (ranges, None), nxt, back=back)
        test = self._tests.get(ranges)
        if test is None:
            test = self._tests[ranges] = char_test(ranges)
        return self._new(CHAR, (ranges, test), nxt, back=back)

    def _build(self, node: Ast, nxt: int, back: bool) -> int:
        kind = node[0]
        if kind == "set":
            return self._char(node[1], nxt, back)
        if kind == "cat":
            # Built from the continuation backwards; a look-behind body reads right to
            # left, so its first element is the last to be matched (ECMA-262 22.2.2.5).
            for child in (node[1] if back else reversed(node[1])):
                nxt = self._build(child, nxt, back)
            return nxt
        if kind == "alt":
            entries = [self._build(b, nxt, back) for b in node[1]]
            cur = entries[-1]
            for e in reversed(entries[:-1]):
                cur = self._new(SPLIT, None, e, cur)
            return cur
        if kind == "group":
            if not self.captures:
                return self._build(node[1], nxt, back)
            first, last = (2 * node[3] + 1, 2 * node[3]) if back else (
                2 * node[3], 2 * node[3] + 1
            )
            end = self._new(SAVE, last, nxt)
            return self._new(SAVE, first, self._build(node[1], end, back))
        if kind == "ncgroup":
            return self._build(node[1], nxt, back)
        if kind == "repeat":
            return self._repeat(node, nxt, back)
        if kind in ("bol", "eol", "wordb", "nwordb"):
            if kind in ("wordb", "nwordb"):
                self.has_word = True
            return self._new(ASSERT, kind, nxt)
        if kind == "look":
            self.has_look = True
            body, behind, negative = node[1], node[2], node[3]
            sub_match = self._new(MATCH, None)
            sub_start = self._build(body, sub_match, behind)
            pc = self._new(LOOK, (sub_start, behind, negative, max_length(body)), nxt)
            self.looks.append(pc)
            return pc
        if kind == "backref":
            self.has_backref = True
            return self._new(BACKREF, node[1], nxt, back=back)
        raise AssertionError(kind)  # pragma: no cover

    def _repeat(self, node: Ast, nxt: int, back: bool) -> int:
        body, lo, hi, lazy = node[1], node[2], node[3], node[4]
        if self.reduce:
            # Enough copies for every kind of meeting between copies (mandatory-mandatory,
            # mandatory-optional, optional-optional, optional-follower) to appear.
            lo, hi = min(lo, 3), (None if hi is None else min(lo, 3) + min(hi - lo, 3))
        groups = _groups_in(body) if self.captures else None

        def iteration(then: int, optional: bool) -> int:
            # ECMA-262 22.2.2.3.1 RepeatMatcher: captures inside the body are reset at
            # each iteration (step 4), and once the minimum is reached an iteration that
            # matches the empty string fails (step 2.b).
            if optional and self.captures:
                reg = self.nregs
                self.nregs += 1
                check = self._new(CHECK, reg, then)
                entry = self._new(MARK, reg, self._build(body, check, back))
            else:
                entry = self._build(body, then, back)
            if groups is not None:
                entry = self._new(RESET, groups, entry)
            return entry

        def fork(body_pc: int, exit_pc: int, split: int = -1) -> int:
            a, b = (exit_pc, body_pc) if lazy else (body_pc, exit_pc)
            if split < 0:
                return self._new(SPLIT, None, a, b)
            self.x[split], self.y[split] = a, b
            return split

        if hi is None:
            loop = self._new(SPLIT, None)
            cur = fork(iteration(loop, True), nxt, loop)
        else:
            cur = nxt
            for _ in range(hi - lo):
                cur = fork(iteration(cur, True), nxt)
        for _ in range(lo):
            cur = iteration(cur, False)
        return cur


def word_at(text: str, i: int) -> bool:
    """Whether text[i] is an ECMA word character (``\\w`` is ASCII, 22.2.2.9)."""
    if 0 <= i < len(text):
        c = text[i]
        return c == "_" or ("0" <= c <= "9") or ("a" <= c <= "z") or ("A" <= c <= "Z")
    return False


def assertion(kind: str, text: str, pos: int) -> bool:
    """ECMA ``^ $ \\b \\B`` without the multiline flag (22.2.2.6 AssertionEvaluation)."""
    if kind == "bol":
        return pos == 0
    if kind == "eol":
        return pos == len(text)
    boundary = word_at(text, pos - 1) != word_at(text, pos)
    return boundary if kind == "wordb" else not boundary
