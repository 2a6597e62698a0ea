"""Linear-time search: a Pike VM over :class:`~mcphost.schema.nfa.Program`, cached as a lazy DFA.

This module owns matching a pattern without backtracking. All threads of the NFA advance
together, one character at a time (Thompson's simulation, Pike's VM, as in RE2 and Go's
``regexp``), so a search costs at most O((len(text) + 1) x states) steps whatever the
pattern: ``^(a|a)*$``, ``(a+)+$`` or ``\\d+\\d+\\d+x`` cannot make it exponential or
polynomial. Only a yes/no answer is needed (JSON Schema asks whether the pattern matches
anywhere), so greedy and lazy quantifiers are the same and no captures are tracked.

Three modes, chosen per pattern:

* **lazy DFA** (no look-around, no ``\\b``): the set of live NFA states after each
  character is a DFA state, built on first use and cached with its transitions, so a
  character usually costs one dict lookup. The cache is bounded per pattern
  (:data:`DFA_MAX_STATES`, :data:`DFA_MAX_TRANSITIONS`) and for the whole process
  (:data:`DFA_CACHE_BYTES`: a server controls both its patterns and the strings they
  see, and could otherwise fill thousands of caches); past a bound the simulation goes
  on uncached, still linear.
* **Pike VM** (``\\b``/``\\B``): the same simulation without the cache, because the
  assertions depend on the neighbouring characters.
* **Pike VM with look-around**: a look-around at a position is a sub-search of its body
  from there (forwards for look-ahead, backwards for look-behind), memoised per (look-around,
  position). A look-around inside a loop can make that quadratic, so these searches run
  under a step budget (:func:`budget`); past it they raise
  :class:`~mcphost.schema.nfa.PatternTooExpensive` (a SchemaError), never stall.

Every search counts its steps (an NFA state visited, a character tested, or a cached
transition taken); :meth:`LinearMatcher.run` returns them so tests can bound them.
"""

from __future__ import annotations

import threading
import weakref

from mcphost.schema.nfa import (
    ASSERT,
    CHAR,
    LOOK,
    MATCH,
    SPLIT,
    PatternTooExpensive,
    Program,
    assertion,
)

__all__ = [
    "BUDGET_BASE", "BUDGET_PER_STEP", "DFA_CACHE_BYTES", "DFA_MAX_STATES", "DFA_MAX_TRANSITIONS",
    "LinearMatcher", "budget",
]

#: Lazy DFA cache bounds, per pattern: past them, new states and transitions are computed
#: but not stored (memory stays bounded, time stays linear).
DFA_MAX_STATES = 2_000
DFA_MAX_TRANSITIONS = 50_000
#: Approximate memory all lazy DFA caches together may hold; a matcher's share returns
#: when it is garbage-collected.
DFA_CACHE_BYTES = 64 * 1024 * 1024
_STATE_BYTES, _CONS_BYTES, _TRANS_BYTES = 400, 8, 100


class _CacheMemory:
    """The process-wide allowance for lazy DFA caches (approximate bytes)."""

    def __init__(self, total: int) -> None:
        self.free = total
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            if self.free < n:
                return False
            self.free -= n
            return True

    def give(self, n: list[int]) -> None:
        with self._lock:
            self.free += n[0]


_memory = _CacheMemory(DFA_CACHE_BYTES)

#: The step budget of a search that is not linear by construction (look-around here,
#: back-references in :mod:`mcphost.schema.backtrack`): BUDGET_BASE plus BUDGET_PER_STEP
#: for every (character + 1) x (program state), i.e. a small multiple of what a linear
#: simulation of the same program costs.
BUDGET_BASE = 100_000
BUDGET_PER_STEP = 4

# Contexts of a position for the lazy DFA: only ^ and $ depend on it (no \b there).
_MID, _START, _END, _BOTH = 0, 1, 2, 3


def budget(text_length: int, states: int) -> int:
    """The step budget for searching a text of ``text_length`` with a program of ``states``."""
    return BUDGET_BASE + BUDGET_PER_STEP * (text_length + 1) * states


def too_expensive(source: str, n: int, steps: int) -> PatternTooExpensive:
    """The error for a search that ran out of budget (names the pattern, not the value)."""
    return PatternTooExpensive(
        f"pattern {source!r} is too expensive to match against a string of {n} "
        f"characters (more than {steps} steps); the schema is at fault"
    )


class _DState:
    """A lazy DFA state: the NFA's CHAR states alive at one position."""

    __slots__ = ("cons", "end", "kept", "matched", "trans")

    def __init__(self, cons: tuple[int, ...], matched: bool) -> None:
        self.cons = cons
        self.matched = matched
        self.kept = False  # in the cache (only cached states are linked from transitions)
        self.trans: dict[str, _DState] = {}
        self.end: dict[str, bool] = {}


class _Run:
    """One search with the uncached Pike VM: text, step count and look-around memo."""

    __slots__ = ("limit", "memo", "prog", "source", "steps", "text")

    def __init__(self, prog: Program, text: str, limit: int | None, source: str) -> None:
        self.prog = prog
        self.text = text
        self.steps = 0
        self.limit = limit
        self.memo: dict[tuple[int, int], bool] = {}
        self.source = source

    def closure(self, pcs: list[int], pos: int) -> tuple[list[int], bool]:
        """The CHAR states reachable from ``pcs`` without consuming, and whether MATCH is."""
        prog = self.prog
        op, x, y, arg = prog.op, prog.x, prog.y, prog.arg
        stack = pcs[::-1]
        seen: set[int] = set()
        cons: list[int] = []
        steps = 0
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            steps += 1
            o = op[pc]
            if o == CHAR:
                cons.append(pc)
            elif o == MATCH:
                self.steps += steps
                return cons, True
            elif o == SPLIT:
                stack.append(y[pc])
                stack.append(x[pc])
            elif o == ASSERT:
                if assertion(arg[pc], self.text, pos):
                    stack.append(x[pc])
            elif o == LOOK:
                self.steps += steps
                steps = 0
                if self.look(pc, pos) != arg[pc][2]:
                    stack.append(x[pc])
            else:  # JMP and the capture bookkeeping, which only the backtracker uses
                stack.append(x[pc])
        self.steps += steps
        self.check()
        return cons, False

    def check(self) -> None:
        if self.limit is not None and self.steps > self.limit:
            raise too_expensive(self.source, len(self.text), self.limit)

    def look(self, pc: int, pos: int) -> bool:
        """Whether the body of look-around ``pc`` matches at ``pos`` (memoised)."""
        key = (pc, pos)
        found = self.memo.get(key)
        if found is None:
            sub_start, behind, _neg, _len = self.prog.arg[pc]
            found = self.simulate(sub_start, pos, -1 if behind else 1, anchored=True)
            self.memo[key] = found
        return found

    def simulate(self, start: int, pos: int, step: int, anchored: bool) -> bool:
        """Advance all threads from ``pos`` in direction ``step`` until MATCH or none left.

        ``anchored``: threads start only at ``pos`` (a look-around body); otherwise a new
        thread starts at every position (the unanchored top-level search).
        """
        prog, text = self.prog, self.text
        x, arg = prog.x, prog.arg
        end = len(text) if step > 0 else 0
        cons, matched = self.closure([start], pos)
        while not matched:
            if pos == end or (anchored and not cons):
                return False
            ch = text[pos] if step > 0 else text[pos - 1]
            self.steps += len(cons)
            nxt = [x[pc] for pc in cons if arg[pc][1](ch)]
            pos += step
            if not anchored:
                nxt.append(start)
            cons, matched = self.closure(nxt, pos)
        return True


class LinearMatcher:
    """Searches for a pattern anywhere in a string in linear time (see the module doc).

    Attributes:
        prog: the program (built without captures).
        mode: ``"dfa"``, ``"pike"`` or ``"pike+look"`` (the last one is budgeted).
    """

    def __init__(self, prog: Program, source: str) -> None:
        if prog.has_backref:
            raise ValueError("back-references need the backtracking matcher")
        self.prog = prog
        self.source = source
        self.mode = "pike+look" if prog.has_look else ("pike" if prog.has_word else "dfa")
        self._states: dict[tuple[frozenset[int], int], _DState] = {}
        self._ntrans = 0
        self._start = frozenset([prog.start])
        self._initial: _DState | None = None
        self._dead: _DState | None = None
        self._scratch = [0]  # the step count of search(), which nobody reads
        self._held = [0]  # bytes of the process-wide cache allowance this matcher holds
        weakref.finalize(self, _memory.give, self._held)

    def _keep(self, n: int) -> bool:
        """Whether ``n`` more bytes of cache may be kept (and account for them)."""
        if _memory.take(n):
            self._held[0] += n
            return True
        return False

    def search(self, text: str) -> bool:
        """True when the pattern matches somewhere in ``text``."""
        if self.mode == "dfa":
            return self._run_dfa(text, self._scratch)
        return self.run(text)[0]

    def run(self, text: str) -> tuple[bool, int]:
        """``(matched, steps)``."""
        if self.mode == "dfa":
            cost = [0]
            found = self._run_dfa(text, cost)
            return found, cost[0]
        limit = budget(len(text), len(self.prog)) if self.mode == "pike+look" else None
        r = _Run(self.prog, text, limit, self.source)
        found = r.simulate(self.prog.start, 0, 1, anchored=False)
        return found, r.steps

    # --- the lazy DFA ------------------------------------------------------------------

    def _state(self, kernel: frozenset[int], ctx: int, cost: list[int]) -> _DState:
        key = (kernel, ctx)
        d = self._states.get(key)
        if d is not None:
            return d
        prog = self.prog
        op, x, y, arg = prog.op, prog.x, prog.y, prog.arg
        stack = sorted(kernel)
        seen: set[int] = set()
        cons: list[int] = []
        matched = False
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            o = op[pc]
            if o == CHAR:
                cons.append(pc)
            elif o == MATCH:
                matched = True
                break
            elif o == SPLIT:
                stack.append(y[pc])
                stack.append(x[pc])
            elif o == ASSERT:
                kind = arg[pc]
                if (kind == "bol" and ctx & _START) or (kind == "eol" and ctx & _END):
                    stack.append(x[pc])
            else:
                stack.append(x[pc])
        cost[0] += len(seen)
        d = _DState(tuple(sorted(cons)), matched)
        if len(self._states) < DFA_MAX_STATES and self._keep(
            _STATE_BYTES + _CONS_BYTES * (len(cons) + len(kernel))
        ):
            self._states[key] = d
            d.kept = True
        return d

    def _next(self, d: _DState, ch: str, ctx: int, cost: list[int]) -> _DState:
        prog = self.prog
        x, arg = prog.x, prog.arg
        cost[0] += len(d.cons)
        kernel = frozenset([x[pc] for pc in d.cons if arg[pc][1](ch)] + [prog.start])
        return self._state(kernel, ctx, cost)

    def _run_dfa(self, text: str, cost: list[int]) -> bool:
        """The search; adds its steps to ``cost[0]`` (one per character, plus the work of
        building states and transitions not yet cached)."""
        n = len(text)
        cost[0] += n
        start = self._start
        if n == 0:
            return self._state(start, _BOTH, cost).matched
        d = self._initial
        if d is None:
            d = self._state(start, _START, cost)
            if d.kept:
                self._initial = d
        if d.matched:
            return True
        dead = self._dead
        if dead is None:
            # The state holding only the (re)start thread, mid-text. If it has no live
            # thread, the pattern is anchored and a search that reaches it has failed
            # everywhere but possibly at the very end.
            dead = self._state(start, _MID, cost)
            if dead.cons or dead.matched:
                dead = _DState((), False)  # a sentinel no real state is identical to
            self._dead = dead
        for ch in text[: n - 1]:
            nd = d.trans.get(ch)
            if nd is None:
                nd = self._next(d, ch, _MID, cost)
                if nd.kept and self._ntrans < DFA_MAX_TRANSITIONS and self._keep(_TRANS_BYTES):
                    self._ntrans += 1
                    d.trans[ch] = nd
            if nd.matched:
                return True
            if nd is dead:
                return self._state(start, _END, cost).matched
            d = nd
        ch = text[n - 1]
        found = d.end.get(ch)
        if found is None:
            found = self._next(d, ch, _END, cost).matched
            if self._ntrans < DFA_MAX_TRANSITIONS and self._keep(_TRANS_BYTES):
                self._ntrans += 1
                d.end[ch] = found
        return found
