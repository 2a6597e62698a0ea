"""Bounds on compiling schemas that come from untrusted servers.

This module owns the size budget of a compilation: :func:`compile_cost` (an estimate of
the work, checked against ``compile(max_nodes=...)`` before anything is built, and for the
host to decide whether to compile in a worker thread instead of the event loop), and
:func:`gc_paused`, which keeps Python's cyclic garbage collector from making a large
compilation superlinear.

Why the collector: compiling allocates a closure and a few small objects per schema node,
all of which stay alive. Each full collection walks every live object, and with the heap
growing throughout, a 1 MB schema took 3-4x longer with the collector running than
without (and the ratio grew with the size). Compiled validators contain reference cycles
only by design (recursive schemas), so pausing collection for the duration loses nothing.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "DEFAULT_MAX_NODES", "PATTERN_CHARS_PER_NODE", "PATTERN_NODES", "compile_cost", "gc_paused",
    "node_budget", "PROPERTY_NODES",
]

#: compile(max_nodes=...) default: about 4-8 MB of typical schema JSON.
DEFAULT_MAX_NODES = 100_000
#: A regular expression costs more to compile (parse, analyse, build for re) than a
#: plain value, about as much as PATTERN_NODES values, plus one per
#: PATTERN_CHARS_PER_NODE characters (measured: ~160 us per short pattern, 6-14 us per
#: other value; the analysis may take ~5 us per character of the pattern).
PATTERN_NODES = 16
PATTERN_CHARS_PER_NODE = 2
#: A Unicode property escape (``\\p{L}``: hundreds of ranges, ~5 ms in ``re``'s charset
#: compiler) costs this many more.
PROPERTY_NODES = 512


def compile_cost(schema: Any) -> int:
    """An estimate of the work of compiling ``schema``, in nodes.

    Every JSON value counts one (objects, arrays, strings, numbers, booleans, nulls, at
    any depth; object keys belong to their object); each ``pattern`` value and
    ``patternProperties`` key counts :data:`PATTERN_NODES` more, plus one per
    :data:`PATTERN_CHARS_PER_NODE` characters and :data:`PROPERTY_NODES` per Unicode
    property escape. The walk is iterative: any nesting depth is counted, none
    raises RecursionError. It takes well under a microsecond per value.
    """
    cost = 0
    stack = [schema]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        cost += 1
        if isinstance(v, dict):
            for k, child in v.items():
                if k == "pattern" and isinstance(child, str):
                    cost += _pattern_cost(child)
                elif k == "patternProperties" and isinstance(child, dict):
                    cost += sum(_pattern_cost(p) for p in child)
                push(child)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return cost


def node_budget(cost: int, max_nodes: int) -> int:
    """How many subschemas a compilation of ``cost`` may build.

    Normally each schema object is compiled once, but once per distinct ``$dynamicRef``
    scope when dynamic anchors are in play, and a few hundred bytes of hostile schema can
    multiply the scopes exponentially. Legitimate schemas stay far below 8 per node (plus
    the bundled meta-schemas, which ``cost`` does not count).
    """
    return min(max_nodes, 8 * cost + 5000)


def _pattern_cost(pattern: str) -> int:
    properties = pattern.count("\\p{") + pattern.count("\\P{")
    return PATTERN_NODES + len(pattern) // PATTERN_CHARS_PER_NODE + PROPERTY_NODES * properties


_lock = threading.Lock()
_paused = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (re-entrant, thread-safe, restores its state)."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
