"""Deciding, per pattern, whether Python's backtracking ``re`` is safe to run on it.

This module owns the proof obligation behind using ``re``: a search must cost time linear
in the length of the string. ``re`` backtracks, so its cost is the number of *runs* of the
pattern's NFA it explores (a run: one way of reading a prefix of the string, state by
state). The rule, checked on the NFA (:class:`~mcphost.schema.nfa.Program`, with counted
repetition clipped to three mandatory and three optional copies):

1. **Runs never re-merge.** Two different runs over the same characters must never be
   in the same state at the same time. Then at every position the runs are in pairwise
   different states, so there are at most as many runs as states, and one attempt explores
   O(len(text) x states) steps. Checked on the product automaton: starting from every
   point where two runs can diverge (two ways to read the same next character), no pair of
   runs may reach a common state. Two ``ε``-paths from one state to the same consuming state
   (``(a+)+``: one ``a`` continues both loops) count as a re-merge, an ``ε``-cycle
   (``(a*)*``) as infinitely many.
   This refuses ``(a|a)*``, ``(a|aa)*b``, ``(a+)+``, ``(a?){30}a{30}``, ``\\d+\\d+``
   (quadratic: the runs switching from the first to the second ``\\d+`` at different
   places all end in the same state), ``(.*a){20}``, and accepts ``^[a-z]+(-[a-z]+)*$``,
   ``^.*bar$``, ``^(GET|POST|PUT)$``.
2. **Bounded attempts.** ``re.search`` starts a new attempt at every position; with an
   unbounded pattern that is quadratic (``a*b`` on ``"aaaa..."``). So the pattern must be
   anchored at the start (``^`` before anything is read) or match strings of bounded length
   (after :func:`mcphost.schema.regex.trim` removed what a yes/no search does not need:
   a leading or trailing ``X*``, ``X+`` → ``X``).
3. **Look-arounds** are checked by rule 1 like the rest, and a look-around body must have
   a bounded length, unless it can only be evaluated at the start of an anchored pattern
   (``^(?=.*\\d)...``): otherwise each of up to len(text) evaluations could scan the rest
   of the string.
4. The analysis itself is bounded (:func:`analysis_budget` steps, proportional to the
   pattern's length): a pattern too costly to analyse is simply not proven safe.

Patterns that fail a rule are matched by :mod:`mcphost.schema.linear`. ``ASSERT``
conditions are ignored (a path through ``$`` counts even where ``$`` would fail), which only
makes the analysis more conservative.
"""

from __future__ import annotations

from mcphost.schema.nfa import ASSERT, BACKREF, CHAR, LOOK, MATCH, SPLIT, Program, Ranges

__all__ = ["ANALYSIS_BASE", "ANALYSIS_PER_CHAR", "analysis_budget", "backtracking_safe"]

#: Work allowed for one analysis (closure steps + product-automaton edges), about a
#: microsecond each: ANALYSIS_BASE plus ANALYSIS_PER_CHAR per character of the pattern,
#: which is what compile_cost (mcphost.schema.bounds) charges for a pattern.
ANALYSIS_BASE = 5_000
ANALYSIS_PER_CHAR = 4


def analysis_budget(pattern_length: int) -> int:
    """The steps the analysis of a pattern of ``pattern_length`` characters may take."""
    return ANALYSIS_BASE + ANALYSIS_PER_CHAR * pattern_length


class _Unsafe(Exception):
    pass


def _overlap(a: Ranges, b: Ranges) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


class _Analysis:
    def __init__(self, prog: Program, budget: int) -> None:
        self.prog = prog
        self.work = 0
        self.budget = budget
        #: entry pc -> the CHAR states its ε-closure reaches (each at most once)
        self.cons: dict[int, tuple[int, ...]] = {}
        #: entry pc -> the LOOK states its ε-closure reaches
        self.looks: dict[int, set[int]] = {}
        #: every path from the start to something that reads (or accepts) passes a '^'
        self.anchored = True
        #: LOOK states reached from the start only after a '^'
        self.start_looks: set[int] = set()
        self._overlaps: dict[tuple[int, int], bool] = {}

    def spend(self, n: int) -> None:
        self.work += n
        if self.work > self.budget:
            raise _Unsafe

    def no_epsilon_cycle(self) -> None:
        """Refuse a loop whose body can match the empty string (``(a*)*``): its ε-paths
        are infinitely many. Iterative depth-first search over the ε-edges."""
        prog = self.prog
        op, x, y = prog.op, prog.x, prog.y
        state = [0] * len(op)  # 0 new, 1 on the DFS stack, 2 done
        for root in range(len(op)):
            if state[root]:
                continue
            stack = [(root, 0)]
            state[root] = 1
            while stack:
                pc, i = stack.pop()
                o = op[pc]
                if o in (CHAR, BACKREF, MATCH):
                    succ: tuple[int, ...] = ()
                elif o == SPLIT:
                    succ = (x[pc], y[pc])
                else:
                    succ = (x[pc],)
                self.spend(1)
                if i < len(succ):
                    stack.append((pc, i + 1))
                    nxt = succ[i]
                    if state[nxt] == 1:
                        raise _Unsafe
                    if state[nxt] == 0:
                        state[nxt] = 1
                        stack.append((nxt, 0))
                else:
                    state[pc] = 2

    def closure(self, entry: int, is_start: bool = False) -> tuple[int, ...]:
        """Enumerate every ε-path from ``entry``; refuse paths that re-merge."""
        found = self.cons.get(entry)
        if found is not None:
            return found
        prog = self.prog
        op, x, y = prog.op, prog.x, prog.y
        reached: list[int] = []
        seen: set[int] = set()
        looks: set[int] = set()
        # (pc, has a '^' been passed on the way)
        stack: list[tuple[int, bool]] = [(entry, False)]
        while stack:
            pc, anchored = stack.pop()
            self.spend(1)
            o = op[pc]
            if o == CHAR:
                if pc in seen:
                    raise _Unsafe  # two ε-paths to one state: the runs re-merge
                seen.add(pc)
                reached.append(pc)
            elif o == BACKREF:
                raise _Unsafe  # what it reads is unknown: no proof possible
            elif o == SPLIT:
                stack.append((y[pc], anchored))
                stack.append((x[pc], anchored))
                continue
            elif o != MATCH:
                if o == ASSERT and prog.arg[pc] == "bol":
                    anchored = True
                elif o == LOOK:
                    looks.add(pc)
                    if is_start and anchored:
                        self.start_looks.add(pc)
                stack.append((x[pc], anchored))
                continue
            if is_start and not anchored:
                self.anchored = False
        result = tuple(reached)
        self.cons[entry] = result
        self.looks[entry] = looks
        return result

    def overlap(self, p: int, q: int) -> bool:
        key = (p, q) if p < q else (q, p)
        hit = self._overlaps.get(key)
        if hit is None:
            arg = self.prog.arg
            hit = self._overlaps[key] = _overlap(arg[p][0], arg[q][0])
        return hit

    def succ(self, pc: int) -> tuple[int, ...]:
        """The CHAR states that can read the character after CHAR state ``pc``."""
        return self.closure(self.prog.x[pc], False)

    def check(self) -> None:
        """Rule 1 on the product automaton; raises _Unsafe on a re-merge."""
        prog = self.prog
        todo: list[tuple[int, int]] = []
        seen: set[tuple[int, int]] = set()

        def diverge(cons: tuple[int, ...]) -> None:
            for i, p in enumerate(cons):
                for q in cons[i + 1 :]:
                    self.spend(1)
                    if self.overlap(p, q) and (p, q) not in seen:
                        seen.add((p, q))
                        todo.append((p, q))

        # Runs diverge where one entry point (the start, a look-around body's start, the
        # state after any character) offers two ways to read the same character.
        for e in [prog.start] + [prog.arg[pc][0] for pc in prog.looks]:
            diverge(self.closure(e))
        for pc, o in enumerate(prog.op):
            if o == CHAR:
                diverge(self.succ(pc))
        while todo:
            p, q = todo.pop()
            sp, sq = self.succ(p), self.succ(q)
            self.spend(len(sp) * len(sq))
            for p2 in sp:
                for q2 in sq:
                    if not self.overlap(p2, q2):
                        continue
                    if p2 == q2:
                        raise _Unsafe  # two runs over the same string meet again
                    pair = (p2, q2) if p2 < q2 else (q2, p2)
                    if pair not in seen:
                        seen.add(pair)
                        todo.append(pair)


def backtracking_safe(prog: Program, bounded: bool, budget: int) -> bool:
    """Whether ``re`` (a backtracking matcher) searches this pattern in linear time.

    Args:
        prog: the pattern's program, built with ``reduce=True`` and no captures.
        bounded: the pattern matches strings of bounded length only.
        budget: the steps the analysis may take (:func:`analysis_budget`).

    Returns:
        True when rules 1-4 of the module docstring hold.
    """
    a = _Analysis(prog, budget)
    try:
        a.no_epsilon_cycle()
        a.closure(prog.start, True)
        a.check()
    except _Unsafe:
        return False
    if not (a.anchored or bounded):
        return False
    # A look-around evaluated only once per search (reached from the start of an
    # anchored pattern, from no other entry) may scan the whole string; any other must
    # have a bounded body.
    entries = [prog.x[pc] for pc, o in enumerate(prog.op) if o == CHAR]
    entries += [prog.arg[pc][0] for pc in prog.looks]
    later: set[int] = set().union(*(a.looks[e] for e in entries))
    for pc in prog.looks:
        if prog.arg[pc][3] is None and (not a.anchored or pc in later or pc not in a.start_looks):
            return False
    return True
