"""A step-budgeted backtracking matcher, for the patterns no automaton can match.

This module owns back-references (``\\1``, ``\\k<name>``): what they match depends on
what a group captured, which a finite automaton cannot remember, so a pattern with them is
matched here, by depth-first search over a :class:`~mcphost.schema.nfa.Program` built with
captures. Backtracking can take exponential time, and Python offers no way to interrupt
``re``; this matcher counts its steps instead and raises
:class:`~mcphost.schema.nfa.PatternTooExpensive` (a SchemaError) once the budget of
:func:`mcphost.schema.linear.budget` is spent, so a hostile pattern costs a bounded
amount of work and then fails as a server error.

It follows ECMA-262 22.2.2 (Pattern Semantics) where the answer can depend on it:

* a back-reference to a group that has not captured (or was reset) matches the empty
  string (22.2.2.7.2 BackreferenceMatcher, step 2.b; Python's ``re`` fails instead);
* captures inside a quantified group are reset at each iteration, and an optional
  iteration that consumes nothing fails (22.2.2.3.1 RepeatMatcher, steps 4 and 2.b);
* look-arounds are atomic; a positive one keeps the captures of its first match
  (22.2.2.4 Assertion, ``(?=`` step 2.h); look-behind matches right to left.
"""

from __future__ import annotations

from mcphost.schema.linear import budget, too_expensive
from mcphost.schema.nfa import (
    ASSERT,
    BACKREF,
    CHAR,
    CHECK,
    JMP,
    LOOK,
    MARK,
    MATCH,
    RESET,
    SAVE,
    SPLIT,
    Program,
    assertion,
)

__all__ = ["Backtracker"]

Caps = tuple[int | None, ...]


class Backtracker:
    """Searches with backtracking under a step budget.

    Attributes:
        prog: the program (built with captures).
        mode: ``"backtrack"``.
    """

    mode = "backtrack"

    def __init__(self, prog: Program, source: str, limit: int | None = None) -> None:
        if not prog.captures:
            raise ValueError("the backtracker needs a program built with captures")
        self.prog = prog
        self.source = source
        self.limit = limit

    def search(self, text: str) -> bool:
        """True when the pattern matches somewhere in ``text``."""
        return self.run(text)[0]

    def run(self, text: str, limit: int | None = None) -> tuple[bool, int]:
        """``(matched, steps)``; ``limit`` overrides the budget (for tests)."""
        if limit is None:
            limit = self.limit if self.limit is not None else budget(len(text), len(self.prog))
        search = _Search(self.prog, text, limit, self.source)
        caps: Caps = (None,) * (2 * self.prog.ngroups + 2)
        regs: Caps = (None,) * self.prog.nregs
        for pos in range(len(text) + 1):
            if search.match(self.prog.start, pos, caps, regs) is not None:
                return True, search.steps
        return False, search.steps


class _Search:
    __slots__ = ("limit", "prog", "source", "steps", "text")

    def __init__(self, prog: Program, text: str, limit: int, source: str) -> None:
        self.prog = prog
        self.text = text
        self.limit = limit
        self.source = source
        self.steps = 0

    def match(self, pc: int, pos: int, caps: Caps, regs: Caps) -> Caps | None:
        """Run from ``pc`` at ``pos``; the captures at the first MATCH reached, or None."""
        prog, text = self.prog, self.text
        op, x, y, arg, back = prog.op, prog.x, prog.y, prog.arg, prog.back
        n = len(text)
        stack: list[tuple[int, int, Caps, Caps]] = [(pc, pos, caps, regs)]
        steps, limit = self.steps, self.limit
        try:
            while stack:
                pc, pos, caps, regs = stack.pop()
                while True:
                    steps += 1
                    if steps > limit:
                        raise too_expensive(self.source, n, limit)
                    o = op[pc]
                    if o == CHAR:
                        if back[pc]:
                            if pos > 0 and arg[pc][1](text[pos - 1]):
                                pos -= 1
                                pc = x[pc]
                                continue
                        elif pos < n and arg[pc][1](text[pos]):
                            pos += 1
                            pc = x[pc]
                            continue
                        break
                    if o == SPLIT:
                        stack.append((y[pc], pos, caps, regs))
                        pc = x[pc]
                    elif o == JMP:
                        pc = x[pc]
                    elif o == SAVE:
                        i = arg[pc]
                        caps = (*caps[:i], pos, *caps[i + 1 :])
                        pc = x[pc]
                    elif o == RESET:
                        lo, hi = arg[pc]
                        caps = caps[: 2 * lo] + (None,) * (2 * (hi - lo + 1)) + caps[2 * hi + 2 :]
                        pc = x[pc]
                    elif o == MARK:
                        r = arg[pc]
                        regs = (*regs[:r], pos, *regs[r + 1 :])
                        pc = x[pc]
                    elif o == CHECK:
                        if regs[arg[pc]] == pos:
                            break
                        pc = x[pc]
                    elif o == ASSERT:
                        if not assertion(arg[pc], text, pos):
                            break
                        pc = x[pc]
                    elif o == BACKREF:
                        g = arg[pc]
                        s, e = caps[2 * g], caps[2 * g + 1]
                        if s is not None and e is not None:
                            sub = text[s:e]
                            steps += len(sub)
                            if back[pc]:
                                if pos < len(sub) or text[pos - len(sub) : pos] != sub:
                                    break
                                pos -= len(sub)
                            else:
                                if not text.startswith(sub, pos):
                                    break
                                pos += len(sub)
                        pc = x[pc]
                    elif o == LOOK:
                        sub_start, _behind, negative, _len = arg[pc]
                        self.steps = steps
                        inner = self.match(sub_start, pos, caps, regs)
                        steps = self.steps
                        if negative:
                            if inner is not None:
                                break
                        else:
                            if inner is None:
                                break
                            caps = inner
                        pc = x[pc]
                    else:  # MATCH
                        assert o == MATCH
                        return caps
            return None
        finally:
            self.steps = steps
